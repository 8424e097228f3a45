"""Words as a model reads them: word-level tokenizers that map raw words the way the Mikolov PTB language-model text
was made (`build_word_tokenizer`, `encode_words`), and pre-split sentences as word pieces with where each word
starts (`encode_word_pieces`: the supervised parsers read a word at its first piece)."""

import math
from collections import Counter
from collections.abc import Iterable

import torch
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers
from transformers import PreTrainedTokenizerFast

PAD, MASK, UNK = "<pad>", "<mask>", "<unk>"
# A whole word that is a number (1,000 / 3.5 / 1\/2 / 10:30) became `N` in the PTB LM text; words that only
# contain digits (1980s, 30-day) were kept as they are.
NUMBER = r"(?<!\S)[-+]?[0-9.,:\\/]*[0-9][0-9.,:\\/]*(?!\S)"
# The text's own number token: read as a number before lower-casing, which would make it `n`, another word.
NUMBER_TOKEN = r"(?<!\S)N(?!\S)"


def build_word_tokenizer(sentences: Iterable[str], max_vocab_size: int | None = None) -> PreTrainedTokenizerFast:
    """A `PreTrainedTokenizerFast` over the space-separated words of `sentences`, most frequent first.

    Special tokens: `<pad>` (id 0), `<mask>` (id 1), `<unk>` (id 2). Input is lower-cased and numbers become `N`
    before lookup, the text's own `N` among them; unknown words map to `<unk>`. No special tokens are added around a
    sentence.
    """
    counts = Counter(word for sentence in sentences for word in sentence.split())
    counts.pop(UNK, None)
    words = [word for word, _ in counts.most_common(max_vocab_size)]
    vocab = {token: index for index, token in enumerate([PAD, MASK, UNK, *words])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    backend.normalizer = normalizers.Sequence(
        [
            normalizers.Replace(Regex(NUMBER_TOKEN), "0"),
            normalizers.Lowercase(),
            normalizers.Replace(Regex(NUMBER), "N"),
        ]
    )
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token=PAD,
        mask_token=MASK,
        unk_token=UNK,
        model_input_names=["input_ids", "attention_mask"],
        clean_up_tokenization_spaces=False,
    )


def encode_words(sentences, tokenizer, max_words: int):
    """Tokenise pre-split sentences for a word-level model (one token per word): a padded `BatchEncoding` of
    `input_ids` and `attention_mask` tensors. Raises ValueError naming the first sentence that is empty, longer than
    `max_words`, or not one token per word. Self-contained: word-level models' generated Hub code carries it."""
    for index, words in enumerate(sentences):
        if not words:
            raise ValueError(f"sentence {index}: no word")
        if len(words) > max_words:
            raise ValueError(f"sentence {index}: {len(words)} words; this model accepts at most {max_words}")
    encoded = tokenizer(
        [list(words) for words in sentences],
        is_split_into_words=True,
        padding=True,
        return_tensors="pt",
        return_token_type_ids=False,
    )
    for index, (words, length) in enumerate(zip(sentences, encoded["attention_mask"].sum(dim=-1).tolist())):
        if length != len(words):
            raise ValueError(
                f"sentence {index}: the tokenizer made {length} tokens of {len(words)} words; this model needs "
                "one token per word"
            )
    return encoded


def first_piece_positions(word_ids: list, length: int) -> list[int]:
    """Position of each word's first piece, ROOT (`[CLS]`, position 0) first: `first[word]`, word 0..n."""
    first = [0] * (length + 1)
    for position in reversed(range(len(word_ids))):
        if word_ids[position] is not None:
            first[word_ids[position] + 1] = position
    return first


def encode_word_pieces(sentences: list[list[str]], tokenizer, max_pieces: float) -> dict:
    """Tokenise pre-split sentences for an encoder that reads each word at its first piece: `input_ids`,
    `attention_mask` `(B, T)`, `first_pieces` `(B, P)` (the piece of ROOT, `[CLS]`, and of each word's first piece;
    P = longest sentence + 2) and `lengths` `(B,)`. A word the tokenizer turns into no piece (e.g. a control
    character) is read as the unknown token. Raises ValueError naming the first sentence that is empty or longer
    than `max_pieces` pieces (`math.inf`: no limit)."""
    for index, words in enumerate(sentences):
        if not words:
            raise ValueError(f"sentence {index}: no word")
    sentences = [list(words) for words in sentences]
    # verbose=False: the length is checked below, in the caller's terms, without transformers' "indexing errors".
    encoded = tokenizer(sentences, is_split_into_words=True, padding=True, return_tensors="pt", verbose=False)
    word_ids = [encoded.word_ids(b) for b in range(len(sentences))]
    if any(len({w for w in ids if w is not None}) != len(words) for ids, words in zip(word_ids, sentences)):
        sentences = [
            [word if tokenizer.tokenize(word) else tokenizer.unk_token for word in words] for words in sentences
        ]
        encoded = tokenizer(sentences, is_split_into_words=True, padding=True, return_tensors="pt", verbose=False)
        word_ids = [encoded.word_ids(b) for b in range(len(sentences))]
    piece_counts = encoded["attention_mask"].sum(-1).tolist()
    for index, count in enumerate(piece_counts):
        if count > max_pieces:
            raise ValueError(f"sentence {index}: {too_many_pieces(count, max_pieces)}")
    first_pieces = torch.zeros(len(sentences), max(map(len, sentences)) + 2, dtype=torch.long)
    for b, (ids, words) in enumerate(zip(word_ids, sentences)):
        first_pieces[b, : len(words) + 1] = torch.tensor(first_piece_positions(ids, len(words)))
    return {
        "input_ids": encoded["input_ids"],
        "attention_mask": encoded["attention_mask"],
        "first_pieces": first_pieces,
        "lengths": torch.tensor([len(words) for words in sentences]),
    }


def too_many_pieces(count: int, max_pieces: float) -> str:
    """The length error of a sentence of `count` pieces, for a model that reads at most `max_pieces`."""
    return f"{count} word pieces; this model reads at most {max_pieces}"


def word_piece_length_error(words: list[str], tokenizer, max_pieces: int) -> str | None:
    """Why `encode_word_pieces` would refuse `words` for their length (as many pieces as it counts, special tokens
    and unknown pieces included), or None. A model's `parse_length_error`: the pipeline asks it for each sentence
    before batching, so that its error names the caller's item rather than a position in a batch."""
    if len(words) > max_pieces:  # every word is a piece at least: no need to cut a huge sentence into pieces
        return f"{len(words)} words; this model reads at most {max_pieces} word pieces"
    # A piece holds one byte of its word at least (a word of no piece is read as one unknown piece): a sentence of
    # fewer bytes than positions fits without being cut into pieces a first time (the parse cuts it).
    if sum(len(word.encode("utf-8")) or 1 for word in words) + tokenizer.num_special_tokens_to_add() <= max_pieces:
        return None
    count = int(encode_word_pieces([words], tokenizer, max_pieces=math.inf)["attention_mask"].sum())
    return too_many_pieces(count, max_pieces) if count > max_pieces else None
