"""Data: gold treebanks, raw training text, word tokenizers and the masked-LM collator."""
