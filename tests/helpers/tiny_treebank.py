"""Two labelled sentences (one with a passive and a nominal modifier), their CoNLL-U text, and a tiny random BERT
checkpoint with a WordPiece tokenizer over their words: the stand-in for MiniLM in the supervised parsers' tests."""

from pathlib import Path
from typing import Any

import torch

SENTENCES: list[dict[str, Any]] = [
    {
        "id": "a",
        "words": ["the", "dog", "ran", "."],
        "heads": [2, 3, 0, 3],
        "deprels": ["det", "nsubj", "root", "punct"],
    },
    {
        "id": "b",
        "words": ["a", "hearing", "is", "scheduled", "on", "the", "issue", "today"],
        "heads": [2, 4, 4, 0, 7, 7, 2, 4],
        "deprels": ["det", "nsubj:pass", "aux:pass", "root", "case", "det", "nmod", "obl:tmod"],
    },
]
DEPRELS = sorted({label for sentence in SENTENCES for label in sentence["deprels"]})
# The tiny BERT's WordPiece vocabulary: BERT's special tokens, the sentences' words and a few more words and pieces.
WORD_PIECES = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    *sorted({w for s in SENTENCES for w in s["words"]} | {"##s", "##ing", "old", "man", "sat", "bench"}),
]


def word_piece_tokenizer():
    """The tiny BERT's WordPiece tokenizer (`WORD_PIECES`)."""
    from transformers import BertTokenizer  # transformers 5's fast one (BertTokenizerFast is its alias)

    return BertTokenizer(vocab={piece: index for index, piece in enumerate(WORD_PIECES)})


def write_tiny_bert(folder: Path) -> Path:
    """Save a tiny random BERT (3 layers of width 32) and its WordPiece tokenizer to `folder`."""
    from transformers import BertConfig, BertModel, BertTokenizer

    (folder / "vocab.txt").write_text("\n".join(WORD_PIECES) + "\n")
    tokenizer = BertTokenizer(vocab=str(folder / "vocab.txt"))
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def conllu_text(sentences) -> str:
    """CoNLL-U of `SENTENCES`-like dicts (`id`, `words`, `heads`, `deprels`), by the package's CoNLL-U writer."""
    from hf_structure.data.conllu_format import parse_to_conllu

    return "".join(parse_to_conllu(sentence, sentence["id"]) for sentence in sentences)
