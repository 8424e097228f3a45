"""`Parser`: sentences in, one parse per sentence out, for any model that answers the parsing contract
(`ParsingModel`). Every way into hf_structure's models parses through it: the `unsupervised-parsing` pipeline,
`hf-structure parse` and `evaluate`, the demo and its Space, the spaCy component, teachers' trees and the
training-time evaluation; so a refused sentence costs that sentence alone, everywhere, under one policy (`on_error`:
`"raise"` a `SentenceError` naming it, or `"record"` it as its result's `error` while the others parse).

The contract: `model.parse(sentences, tokenizer, **options)` takes a batch of word lists and returns one dict per
sentence with what the model gives of `spans` (constituents, 0-based `[start, end)`), `heads` (1-based, 0 = root),
`deprels` and `scores` (model-specific extras); a sentence the model cannot parse raises `ValueError`. The model
class declares what `parse` takes and gives (`parse_options`, `parse_outputs`): every call is checked against them
before anything is parsed (`check_options`), and an option the model does not take, or a value it does not know,
is an `UnsupportedOptionError` naming the option, the model and what it takes. A model may also state
`max_parse_words`, or answer `parse_length_error(words, tokenizer)` (a message, or None), so that longer sentences
are refused before any batch runs, named as the caller names them.

What a model sees is its own business, stated by its config's `punctuation_policy`: `"reattach"` (trained without
punctuation: punctuation tokens are removed before the model and put back afterwards, each attached to the root
word and lying inside the smallest constituent that contains both its neighbours) or `"keep"` (the default: the
model sees every word). Raw text is cut into words as the model's training text was: its config's
`word_convention` (`"ptb"` where it states none; `"ud"`, UD English-EWT's), which a call may override.

This file travels with an exported model's pipeline: it imports torch, the standard library and its siblings.
"""

# The modular source of parser.py, the standalone file that scripts/modular_converter.py generates (hf_structure's
# definitions inlined): edit this file, then run the converter.

import contextlib
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypedDict

import torch

from ..structs.trees import spans_to_bracketed
from ..threads import LoadMeasurement, check_num_threads, parsing_threads
from .batched_parsing import (
    Sentence,
    SentenceError,
    check_on_error,
    check_words,
    checked_sentence,
    lone_surrogate_error,
    parse_in_order,
    unparsable_sentence,
)
from .word_tokenization import WORD_CONVENTIONS, sentence_offsets, tokenize_with_offsets


class ParsingModel(Protocol):
    """What `Parser` needs of a model (every hf_structure model class has it): `parse`, what it takes
    (`parse_options`: each keyword option with the values it takes) and gives (`parse_outputs`: the keys a parse
    holds), a `config` (read for `punctuation_policy`, `word_convention` and `model_type`), its name, and
    `eval`/`train`/`training` as any torch module. `max_parse_words` and `parse_length_error` are optional."""

    @property
    def config(self) -> Any: ...

    @property
    def name_or_path(self) -> str | None: ...

    @property
    def parse_outputs(self) -> Sequence[str]: ...

    @property
    def parse_options(self) -> Mapping[str, tuple]: ...

    @property
    def training(self) -> bool: ...

    def parse(self, sentences: list[list[str]], tokenizer: Any, **options: Any) -> list[dict]: ...

    def eval(self) -> Any: ...

    def train(self, mode: bool = True) -> Any: ...


class ParseResult(TypedDict, total=False):
    """One sentence's result: its `words` (with `offsets` and the sentence's `text` for raw text), and what the
    model gives of `tree` and `spans` (constituents), `heads` and `deprels` (dependencies), `upos`, `xpos` and
    `feats` (word tags: a model with taggers) and `scores`; or, for a sentence recorded under `on_error="record"`,
    its `error` instead of any structure."""

    words: list[str]
    offsets: list[list[int]]
    text: str | None
    tree: str
    spans: list[list[int]]
    heads: list[int]
    deprels: list[str]
    upos: list[str]
    xpos: list[str]
    feats: list[str]
    scores: Any
    error: str


# The word tags a parse can hold (a model with taggers), and each one's tag of a word the model did not see
# (punctuation): UD's punctuation class, and CoNLL-U's empty column where the tag depends on the mark.
UNSEEN_WORD_TAGS = {"upos": "PUNCT", "xpos": "_", "feats": "_"}

# The structures a parse can hold, and the keys of a model's parse that carry each (the first always).
STRUCTURES = {"constituency": ("spans",), "dependency": ("heads", "deprels")}


class UnsupportedOptionError(ValueError):
    """An option a model does not take, or a value of it the model does not know; raised before anything is parsed,
    naming the option, the model and the options it takes. `options`: the names of the refused options."""

    def __init__(self, message: str, options: tuple[str, ...] = ()):
        super().__init__(message)
        self.options = options


def model_description(model) -> str:
    """How errors name a model: its class, model type and folder or Hub id."""
    return f"{type(model).__name__} (model type {model.config.model_type!r}, {model.name_or_path})"


def accepted_options(model: ParsingModel) -> dict[str, tuple]:
    """Every option a call may give for `model`, with the values each takes: the pipeline's own options, as far as
    the model can honour them, then the keyword options of its `parse` (`model.parse_options`).

    `structures`: those the model's parses hold. `return_scores=True`: only a model whose parses hold `scores`.
    `keep_punctuation=False` drops the punctuation the pipeline took away and put back, so it needs
    `punctuation_policy="reattach"`; a model that sees every word attaches punctuation itself, and dropping it would
    leave words headed by nothing. An option at its default (`return_scores=False`, `keep_punctuation=True`) asks
    nothing and is always taken.
    """
    outputs = getattr(model, "parse_outputs", None)
    if outputs is None:
        raise TypeError(f"{type(model).__name__} declares no parse_outputs: it is not an hf_structure parsing model")
    reattaches = getattr(model.config, "punctuation_policy", "keep") == "reattach"
    return {
        "structures": tuple(name for name, keys in STRUCTURES.items() if keys[0] in outputs),
        "return_scores": (False, True) if "scores" in outputs else (False,),
        "keep_punctuation": (True, False) if reattaches else (True,),
        **model.parse_options,
    }


def check_options(model, options: dict) -> None:
    """An `UnsupportedOptionError` when `options` (None: not given) hold an option `model` does not take or a value
    it does not know (for a list, such as `structures`, each of its values), before anything is parsed."""
    accepted = accepted_options(model)
    refused = {}
    for name, value in options.items():
        if value is None:
            continue
        given = tuple(value) if isinstance(value, (list, tuple)) else (value,)
        if name not in accepted:
            refused[name] = f"the option {name}"
        elif not given or any(item not in accepted[name] for item in given):
            refused[name] = f"{name}={value!r}"
    if refused:
        takes = ", ".join(f"{name}={'|'.join(map(repr, values))}" for name, values in accepted.items())
        raise UnsupportedOptionError(
            f"{model_description(model)} does not take {', '.join(refused.values())}; it takes {takes}",
            tuple(refused),
        )


def model_word_convention(model) -> str:
    """How raw text is cut into words for `model`: its config's `word_convention`, `"ptb"` where it states none."""
    return getattr(model.config, "word_convention", None) or "ptb"


def check_word_convention(word_convention: str) -> str:
    """`word_convention` as given, or a ValueError naming the values it takes."""
    if word_convention not in WORD_CONVENTIONS:
        raise ValueError(f"word_convention must be one of {WORD_CONVENTIONS}, got {word_convention!r}")
    return word_convention


def split_text(
    text, item: str = "the text", split_sentences: bool = True, word_convention: str = "ptb"
) -> list[tuple[list[str], list, str]]:
    """The sentences of raw text (`sentence_offsets`; the whole text as one with `split_sentences=False`), each as
    its words (`tokenize_with_offsets` in the `word_convention` given), their `[start, end]` character offsets in
    `text` and its own text (none for an empty or whitespace-only text); or a SentenceError naming the item."""
    if not isinstance(text, str):
        raise TypeError(f"{item}: expected a string, got {type(text).__name__}")
    if not text.strip():
        return []
    control = next((c for c in text if unicodedata.category(c) == "Cc" and not c.isspace()), None)
    if control is not None:
        raise SentenceError(f"{item}: the text contains the control character {control!r}")
    if surrogate := lone_surrogate_error(text):
        raise SentenceError(f"{item}: {surrogate}")
    if split_sentences:
        spans = sentence_offsets(text)
    else:
        spans = [(len(text) - len(text.lstrip()), len(text.rstrip()))]
    sentences = []
    for start, end in spans:
        words, offsets = tokenize_with_offsets(text[start:end], word_convention)
        sentences.append((words, [[start + first, start + last] for first, last in offsets], text[start:end]))
    return sentences


class Parser:
    """Parses with `model` (a `ParsingModel`) and its `tokenizer`: `sentences` reads an input into checked
    sentences, `results` parses them into `ParseResult`s, `parse_words` parses word lists as they are (gold words,
    a teacher's sentences). Batches are of similar lengths and results come back in input order; the work runs in
    one execution context (`parsing`): the model in evaluation mode without gradients, on `num_threads` CPU threads
    (default: one per core other processes leave free, measured by `load`), the caller's settings restored after.

    `on_error` is one policy for every way in: `"raise"` a `SentenceError` naming the first sentence that cannot be
    parsed (too long, a bad word, refused by the model), or `"record"` each such sentence as its result's `error`
    (with its words), the others parsed."""

    def __init__(
        self, model: ParsingModel, tokenizer: Any, num_threads: int | None = None, load: LoadMeasurement | None = None
    ):
        self.model, self.tokenizer = model, tokenizer
        self.num_threads = None if num_threads is None else check_num_threads(num_threads)
        self.load = load or LoadMeasurement()

    @contextlib.contextmanager
    def parsing(self, num_threads: int | None = None) -> Iterator[None]:
        """The execution context of every parse: no gradients, the model in evaluation mode (a model being trained
        is put back in training mode after), torch's CPU threads as `parsing_threads` sets them."""
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad(), parsing_threads(num_threads or self.num_threads, self.load):
                yield
        finally:
            if was_training:
                self.model.train()

    def sentences(
        self,
        item: str | Sequence[str],
        *,
        is_split_into_words: bool = False,
        name: str | None = None,
        split_sentences: bool = True,
        on_error: str = "raise",
        word_convention: str | None = None,
    ) -> list[Sentence]:
        """The sentences of one input (a word list: one; a text: those of `split_text`, none for an empty text), each
        with the indices of the words the model sees (its punctuation policy applied: `checked_sentence`). A sentence
        the model cannot parse is a SentenceError (a ValueError) or TypeError naming the input (`name`; None: "the
        text" or "the sentence" of a single input) and, within a text, the sentence; with `on_error="record"` it is
        kept with the message as its `error` instead, and the others are parsed."""
        check_on_error(on_error)
        if is_split_into_words or isinstance(item, (list, tuple)):
            name = name or "the sentence"
            try:
                return [checked_sentence(self.model, self.tokenizer, check_words(item, name), name)]
            except (SentenceError, TypeError) as error:
                return [unparsable_sentence(item if isinstance(item, (list, tuple)) else [], name, error, on_error)]
        try:
            convention = word_convention or model_word_convention(self.model)
            sentences = split_text(item, name or "the text", split_sentences, convention)
        except (SentenceError, TypeError) as error:
            words = item.split() if isinstance(item, str) else []
            return [unparsable_sentence(words, name or "the text", error, on_error)]
        if split_sentences:  # a sentence is named by its place in the text's results, counted from 1
            names = [
                f"{name}, sentence {number}" if name else f"sentence {number}"
                for number in range(1, len(sentences) + 1)
            ]
        else:
            names = [name or "the text"]
        checked = []
        for sentence_name, (words, offsets, text) in zip(names, sentences):
            try:
                checked.append(checked_sentence(self.model, self.tokenizer, words, sentence_name, offsets, text))
            except SentenceError as error:
                checked.append(unparsable_sentence(words, sentence_name, error, on_error, offsets, text))
        return checked

    def results(
        self,
        sentences: Iterable[Sentence],
        *,
        batch_size: int = 64,
        on_error: str = "raise",
        window: int | None = None,
        num_threads: int | None = None,
        keep_punctuation: bool = True,
        return_scores: bool = False,
        structures: str | Sequence[str] | None = None,
        **model_options: Any,
    ) -> Iterator[list[tuple[Sentence, ParseResult]]]:
        """Each checked sentence (as `sentences` gives them) with its result, parsed in batches of similar lengths
        (`parse_in_order`: `window` sentences held and sorted at a time, None: all): after each batch, the sentences
        whose results are complete, in input order. Options are checked against what the model takes before
        anything is parsed: `keep_punctuation=False` drops punctuation the model never saw, `return_scores=True`
        keeps the model's `scores`, `structures` keeps only those structures (and a model that can skip the work for
        the others does); the rest go to the model's `parse`."""
        check_on_error(on_error)
        if isinstance(structures, str):
            structures = (structures,)
        check_options(
            self.model,
            {
                "structures": structures,
                "keep_punctuation": keep_punctuation,
                "return_scores": return_scores,
                **model_options,
            },
        )
        takes = self.model.parse_options
        forward = {
            name: value
            for name, value in {"structures": structures, **model_options}.items()
            if value is not None and name in takes
        }
        kept = tuple(structures) if structures is not None else None
        batches = parse_in_order(self.model, self.tokenizer, sentences, forward, batch_size, on_error, window)
        while True:
            # Entered for each batch, not across the yields: the caller's code between two batches runs with its
            # own gradient mode, threads and model mode.
            with self.parsing(num_threads):
                done = next(batches, None)
            if done is None:
                return
            yield [
                (sentence, self.result(parse, sentence, keep_punctuation, return_scores, kept))
                for sentence, parse in done
            ]

    def parse_words(
        self,
        word_lists: Sequence[Sequence[str]],
        *,
        names: Sequence[str] | None = None,
        on_error: str = "raise",
        batch_size: int = 64,
        num_threads: int | None = None,
        on_batch: Callable[[int], None] | None = None,
        **options: Any,
    ) -> list[ParseResult]:
        """The results of `word_lists` parsed as they are: no punctuation policy (gold words are scored words, a
        teacher's sentences its training text), each sentence named by `names` (default `sentence <k>`, from 1).
        `on_batch(k)` is called after each batch with the k sentences it completed (a progress bar's `update`)."""
        names = names or [f"sentence {number}" for number in range(1, len(word_lists) + 1)]
        checked = [self._words_as_they_are(words, name, on_error) for words, name in zip(word_lists, names)]
        results: list[ParseResult] = []
        for done in self.results(checked, batch_size=batch_size, on_error=on_error, num_threads=num_threads, **options):
            results.extend(result for _, result in done)
            if on_batch is not None:
                on_batch(len(done))
        return results

    def _words_as_they_are(self, words: Sequence[str], name: str, on_error: str) -> Sentence:
        try:
            return checked_sentence(
                self.model, self.tokenizer, check_words(words, name), name, reattach_punctuation=False
            )
        except (TypeError, ValueError) as error:
            return unparsable_sentence(words if isinstance(words, (list, tuple)) else [], name, error, on_error)

    def result(
        self,
        parse: dict | None,
        sentence: Sentence,
        keep_punctuation: bool = True,
        return_scores: bool = False,
        structures: tuple[str, ...] | None = None,
    ) -> ParseResult:
        """One sentence's result: the model's parse over the words it saw, mapped back onto the sentence's words. A
        sentence recorded with `on_error="record"` gives its words and `error`. Punctuation alone, which a model
        trained without it never sees, is parsed as punctuation is re-attached: the first mark heads the others and
        the sentence is its one constituent."""
        result: ParseResult
        if sentence.error is not None:
            result = {"words": sentence.words, "error": sentence.error}
            if sentence.offsets is not None:
                result["offsets"], result["text"] = sentence.offsets, sentence.text
            return result
        if parse is None:  # punctuation alone
            if not keep_punctuation:
                result = {"words": []}
                if sentence.offsets:
                    result["offsets"], result["text"] = [], sentence.text
                return result
            count = len(sentence.words)
            others = count - 1
            parse = {"spans": [[0, count]], "heads": [0] + [1] * others, "deprels": ["root"] + ["punct"] * others}
            parse = {key: value for key, value in parse.items() if key in self.model.parse_outputs}
            sentence = sentence._replace(seen=list(range(count)))
        if structures is not None:  # each one the model gives (`check_options`)
            dropped = {key for name, keys in STRUCTURES.items() if name not in structures for key in keys}
            parse = {key: value for key, value in parse.items() if key not in dropped}
        if keep_punctuation:
            kept = list(range(len(sentence.words)))
            position = sentence.seen  # position[k]: index in words of the k-th seen
        else:
            kept, position = sentence.seen, list(range(len(sentence.seen)))
        words = [sentence.words[i] for i in kept]
        result = {"words": words}
        if sentence.offsets is not None:
            result["offsets"] = [sentence.offsets[i] for i in kept]
            result["text"] = sentence.text
        if "spans" in parse:
            # A constituent over seen words s..e-1 covers every word between its first and last; the root all.
            inner = {(position[s], position[e - 1] + 1) for s, e in parse["spans"] if e - s > 1}
            inner.discard((position[0], position[-1] + 1))
            spans = [[0, len(words)]] + sorted(map(list, inner), key=lambda span: (span[0], -span[1]))
            result["tree"] = spans_to_bracketed(words, spans)
            result["spans"] = spans
        if "heads" in parse:
            root = position[parse["heads"].index(0)] + 1
            heads = [root] * len(words)  # words the model did not see (punctuation) attach to the root word
            for seen_index, head in enumerate(parse["heads"]):
                heads[position[seen_index]] = 0 if head == 0 else position[head - 1] + 1
            result["heads"] = heads
            if "deprels" in parse:
                deprels = ["punct"] * len(words)
                for seen_index, deprel in enumerate(parse["deprels"]):
                    deprels[position[seen_index]] = deprel
                result["deprels"] = deprels
        for name, unseen in UNSEEN_WORD_TAGS.items():
            if name in parse:
                tags = [unseen] * len(words)
                for seen_index, tag in enumerate(parse[name]):
                    tags[position[seen_index]] = tag
                result[name] = tags  # type: ignore[literal-required]
        if return_scores and "scores" in parse:
            result["scores"] = parse["scores"]
        return result
