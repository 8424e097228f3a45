"""Word-level tokenizers that map raw words the way the Mikolov PTB language-model text was made."""

from collections import Counter
from collections.abc import Iterable

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
