"""Batched parsing: the one core that the `unsupervised-parsing` pipeline, `hf-structure parse` and `hf-structure
evaluate` share.

Each sentence is checked (`check_words`, `checked_sentence`: words, the model's limits, its punctuation policy);
the ones to parse are sorted by length and parsed in batches (`parse_in_order`); a batch that fails is parsed again
one sentence at a time, so that a model's refusal of one sentence (a `ValueError` of its `parse`, the parsing
contract's way) is that sentence's error alone (`parse_batch`): raised as a `SentenceError` naming it, or, with
`on_error="record"`, kept as its `error` while the others are parsed. Results come back in input order, as soon as
each is complete, so that a caller can stream them.

This file travels with the pipeline's in a saved model folder: it imports nothing but the standard library.
"""

import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

# ASCII punctuation, dashes, the ellipsis, typographic quotes (‘ ’ ‚ ‛ “ ” „ ‟ « » ‹ ›), ¡ ¿ and fullwidth ！ ？.
PUNCTUATION = re.compile(
    r"^(?:[.,;:!?'\"`()\[\]{}\-\u2013\u2014\u2015\u2026$#"
    r"\u2018-\u201f\u00ab\u00bb\u2039\u203a\u00a1\u00bf\uff01\uff1f]+|-[LR][RCS]B-)$"
)


def is_punctuation(token: str) -> bool:
    return bool(PUNCTUATION.match(token))


class SentenceError(ValueError):
    """A sentence that cannot be parsed; the message says why (and which item of a batch)."""


# A lone surrogate (U+D800-U+DFFF, Unicode category Cs) is no character of text, and the tokenizers fail on it with
# an unrelated TypeError that loses the whole batch. Python makes one (U+DC80-U+DCFF) of each byte that is not UTF-8
# where it decodes with "surrogateescape", as it does command-line arguments.
LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def lone_surrogate_error(text: str) -> str | None:
    """What is wrong with `text` where it holds a lone surrogate (which character, counted from 1), or None."""
    match = LONE_SURROGATE.search(text)
    if match is None:
        return None
    code = ord(match[0])
    byte = f", which stands for the byte 0x{code - 0xDC00:02X} of input that is not UTF-8" if code >= 0xDC80 else ""
    return f"character {match.start() + 1} is a lone surrogate (U+{code:04X}{byte}), not text"


# Exactly the characters `check_words` rejects inside a word: `str.isspace` and Unicode categories Cc and Cs.
NOT_IN_A_WORD = re.compile(r"[\s\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def check_words(words, item: str = "sentence") -> list[str]:
    """`words` as a list of strings, or a SentenceError naming the item and the bad word (counted from 1, as CoNLL-U
    IDs are)."""
    if not isinstance(words, (list, tuple)):
        raise TypeError(f"{item}: expected a list of words, got {type(words).__name__}")
    if not words:
        raise SentenceError(f"{item}: empty word list")
    # One regular-expression scan of the joined words clears a good sentence; the word-by-word loop below only
    # runs to name what is wrong (it was a tenth of a batched pipeline call).
    if all(isinstance(word, str) and word for word in words) and not NOT_IN_A_WORD.search("".join(words)):
        return list(words)
    for number, word in enumerate(words, 1):
        if not isinstance(word, str):
            raise TypeError(f"{item}: word {number} is a {type(word).__name__}, not a string")
        if not word or any(c.isspace() for c in word):
            raise SentenceError(f"{item}: word {number} ({word!r}) is empty or contains whitespace")
        if any(unicodedata.category(c) == "Cc" for c in word):
            raise SentenceError(f"{item}: word {number} ({word!r}) contains a control character")
        if surrogate := lone_surrogate_error(word):
            raise SentenceError(f"{item}: word {number} ({word!r}): {surrogate}")
    return list(words)


def parse_length_error(model, tokenizer, words: list[str]) -> str | None:
    """Why `model` cannot parse `words` for their length (longer than its `max_parse_words`, or what its own
    `parse_length_error` finds too long, a limit in word pieces say), or None."""
    limit = getattr(model, "max_parse_words", None)
    if limit is not None and len(words) > limit:
        return f"{len(words)} words; this model parses at most {limit}"
    length_error = getattr(model, "parse_length_error", None)
    if length_error is None:
        return None
    return length_error(words, tokenizer) or None


class Sentence(NamedTuple):
    """A checked sentence: its words, the indices of those the model sees, how errors name it (`"item 2, sentence
    1"`), for raw text the words' `[start, end]` offsets in the input string and the sentence's own text, and why
    it cannot be parsed where it cannot (recorded with `on_error="record"`)."""

    words: list[str]
    seen: list[int]
    name: str
    offsets: list[list[int]] | None = None
    text: str | None = None
    error: str | None = None

    @property
    def seen_words(self) -> list[str]:
        return [self.words[i] for i in self.seen]

    @property
    def to_parse(self) -> bool:
        """Whether the model has words of it to parse: not for a recorded error, nor for punctuation alone under
        `punctuation_policy="reattach"` (the pipeline gives that its own parse)."""
        return bool(self.seen) and self.error is None


ON_ERROR = ("raise", "record")


def check_on_error(on_error: str) -> str:
    """`on_error` as given, or a ValueError naming the values it takes."""
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
    return on_error


def unparsable_sentence(words, name: str, error: Exception, on_error: str, offsets=None, text=None) -> Sentence:
    """The sentence recorded with its error (`on_error="record"`), or the error raised."""
    if on_error != "record":
        raise error
    return Sentence(list(words), [], name, offsets, text, str(error))


def checked_sentence(
    model, tokenizer, words: list[str], name: str, offsets=None, text=None, reattach_punctuation: bool | None = None
) -> Sentence:
    """`words` with the indices of those the model sees, or a SentenceError naming the sentence (`name`) when the
    model cannot parse it (longer than `max_parse_words`, or what the model's `parse_length_error` finds too long).

    `reattach_punctuation` (default: the config's `punctuation_policy` is `"reattach"`): the model never sees
    punctuation, which the pipeline puts back after the parse; punctuation alone leaves it nothing to see."""
    if reattach_punctuation is None:
        reattach_punctuation = getattr(model.config, "punctuation_policy", "keep") == "reattach"
    if reattach_punctuation:
        seen = [i for i, word in enumerate(words) if not is_punctuation(word)]
        if not seen:
            return Sentence(words, seen, name, offsets, text)
    else:
        seen = list(range(len(words)))
    if message := parse_length_error(model, tokenizer, [words[i] for i in seen]):
        raise SentenceError(f"{name}: {message}")
    return Sentence(words, seen, name, offsets, text)


# What a model's `parse` raises for a batch that a smaller one may not fail: a sentence it refuses (`ValueError`,
# the contract's way), or a batch too large for the device (`RuntimeError`, out of memory).
PARSE_FAILURES = (ValueError, RuntimeError)

Parsed = tuple[Sentence, Any]  # a sentence and its parse (None where there is none: an error, nothing seen)


def parse_batch(model, tokenizer, sentences: Sequence[Sentence], options: dict, on_error: str = "raise") -> list:
    """Each sentence with its parse (`Parsed`), by `model.parse(words it sees, tokenizer, **options)` in one batch.
    A batch that fails is parsed again one sentence at a time, so that the failure is the sentence's own: with
    `on_error="record"` the sentence comes back with its `error` (and parse None), the others parsed; otherwise the
    model's ValueError is a SentenceError naming the sentence, and any other failure is raised as it is. A sentence
    with nothing to parse comes back as it is, with None."""
    parsable = [k for k, sentence in enumerate(sentences) if sentence.to_parse]
    results: list[Parsed] = [(sentence, None) for sentence in sentences]
    try:
        parses = model.parse([sentences[k].seen_words for k in parsable], tokenizer, **options) if parsable else []
    except PARSE_FAILURES as error:
        if len(parsable) == 1:
            results[parsable[0]] = _failed(sentences[parsable[0]], error, on_error)
            return results
        parses = [_parse_alone(model, tokenizer, sentences[k], options, on_error) for k in parsable]
        for k, parsed in zip(parsable, parses):
            results[k] = parsed
        return results
    for k, parse in zip(parsable, parses):
        results[k] = (sentences[k], parse)
    return results


def _parse_alone(model, tokenizer, sentence: Sentence, options: dict, on_error: str) -> Parsed:
    try:
        return sentence, model.parse([sentence.seen_words], tokenizer, **options)[0]
    except PARSE_FAILURES as error:
        return _failed(sentence, error, on_error)


def _failed(sentence: Sentence, error: Exception, on_error: str) -> Parsed:
    """The sentence whose parse alone raised `error`, recorded, or the error raised naming it."""
    if isinstance(error, ValueError):  # the model's refusal: in a batch of one, its own index is always 0
        failure: Exception = SentenceError(f"{sentence.name}: {str(error).removeprefix('sentence 0: ')}")
    else:
        failure = error
    if on_error != "record":
        if failure is error:
            raise error
        raise failure from error
    message = str(failure) if failure is not error else f"{sentence.name}: {type(error).__name__}: {error}"
    return sentence._replace(error=message), None


def parse_in_order(
    model,
    tokenizer,
    sentences: Iterable[Sentence],
    options: dict,
    batch_size: int = 64,
    on_error: str = "raise",
    window: int | None = None,
) -> Iterator[list[Parsed]]:
    """Parse `sentences` in batches of `batch_size`, each batch of similar lengths (sorted by the words the model
    sees), and after each batch yield, in input order, the sentences whose results are complete (`Parsed`; maybe
    none). A parse does not depend on its batch-mates, so only the order of the work changes.

    `window`: how many sentences are held and sorted at once (None: all of them), so that a stream of any length
    is parsed in bounded memory. Failures as `parse_batch`."""
    sentences = iter(sentences)
    while held := list(_first(sentences, window)):
        done: dict[int, Parsed] = {k: (sentence, None) for k, sentence in enumerate(held) if not sentence.to_parse}
        pending = sorted((k for k in range(len(held)) if k not in done), key=lambda k: len(held[k].seen))
        written = 0
        for start in range(0, max(len(pending), 1), batch_size):
            batch = pending[start : start + batch_size]
            done.update(zip(batch, parse_batch(model, tokenizer, [held[k] for k in batch], options, on_error)))
            complete = written
            while complete in done:
                complete += 1
            yield [done.pop(k) for k in range(written, complete)]
            written = complete


def _first(items: Iterator, count: int | None) -> Iterator:
    """The next `count` items (None: all)."""
    for number, item in enumerate(items, 1):
        yield item
        if number == count:
            return
