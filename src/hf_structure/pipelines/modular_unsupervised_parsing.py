"""The `unsupervised-parsing` pipeline: transformers' way into `Parser` (`parser.py`), for any hf_structure model.

The pipeline reads its inputs (a text, a word list, a list of them, a Dataset or a generator) into sentences, and
`Parser` parses them: one scheduler for every kind of input (sentences of similar lengths batched across items, a
stream held a window at a time), one policy for a sentence that cannot be parsed (`on_error`). The contract a model
answers, the punctuation policy and the word conventions are `Parser`'s (see parser.py).

The pipeline's file travels with a pushed model folder, so it imports only transformers and its siblings.
"""

# The modular source of unsupervised_parsing.py, the standalone file that scripts/modular_converter.py generates
# (hf_structure's definitions inlined): edit this file, then run the converter.

from collections.abc import Iterable, Iterator
from typing import Any, cast

from transformers import Pipeline

from ..threads import check_num_threads
from .batched_parsing import Sentence, SentenceError, check_on_error, check_words
from .parser import Parser, ParseResult, ParsingModel, check_options, check_word_convention
from .quantization import quantized

# How many batches of a Dataset's or generator's sentences are held at once and sorted by length.
STREAM_WINDOW_BATCHES = 4
# The parse options that the pipeline honours itself (`Parser.results`); the others are the model's.
PIPELINE_PARSE_OPTIONS = ("structures", "keep_punctuation", "return_scores")


class UnsupervisedParsingPipeline(Pipeline):
    """Parse sentences with any hf_structure model.

    Inputs: a string, a list of strings, a list of words with `is_split_into_words=True`, a list of word lists,
    or a `datasets.Dataset` / generator (use `KeyDataset` for a column). A batch mixing strings and word lists is
    rejected. A string is raw text: split into sentences (`split_sentences=False`: the whole string is one) and
    words, cut as the model's training text was (`word_convention`: `"ptb"`, the Penn Treebank's words; `"ud"`, UD
    English-EWT's, which splits hyphens and slashes between words off; default: the model config's
    `word_convention`, "ptb" where it has none), it gives a LIST of parses, one per sentence, in order (a list of
    strings: a list of such lists); each also holds `offsets` (`[start, end]` of each word in the string) and
    `text` (the sentence's own text in the string): each word is the string's own characters. A word list gives
    one parse. Each parse is a dict with
    `words` (the input words, or the split of the text) and what the model gives: `tree` (bracketed,
    brackets in words escaped as `-LRB-`/`-RRB-`) and `spans` (0-based
    `[start, end)`, two or more words, whole sentence first) for constituents; `heads` (1-based, 0 = root) and
    `deprels` for dependencies. Options: `structures` (`"constituency"`,
    `"dependency"` or a list of them: only these in the output, and a model that can skip the work for the others
    skips it; default: all the model gives), `keep_punctuation=False` (drop
    re-attached punctuation from the output: models with `punctuation_policy="reattach"` only), `return_scores=True`
    (the model's extras under `scores`, where its parses have them), `num_threads` (torch's CPU threads for the
    model's parse, at construction or per call; the caller's `torch.get_num_threads()` is restored after; default:
    one per core that other processes leave free, at most the caller's count: see `default_num_threads`);
    at construction only, `quantize="int8"` (the encoder's linear layers on int8, on the CPU, for models that name
    their `int8_modules`: see `quantization.py`; the saved weights are not changed). Any other
    option is the model's and goes to its
    `parse`, e.g.
    `head_decoding` for models that decode heads from arc scores (`"argmax"`, `"eisner"`, `"chu-liu-edmonds"`;
    default: the model's config). An option the model does not take (see `accepted_options`), or a value it does not
    know, is an `UnsupportedOptionError` naming it, raised before anything is parsed. The results are data: CoNLL-U
    (which this file, travelling without the `conllu` library, does not write) is `hf_structure.data.conllu_format`'s
    `parses_to_conllu(results)` or `hf-structure parse --conllu`.
    """

    # transformers reads these as booleans (None: as the model folder has it) but annotates them as None.
    _load_processor = False  # type: ignore[assignment]
    _load_image_processor = False  # type: ignore[assignment]
    _load_feature_extractor = False  # type: ignore[assignment]
    _load_tokenizer = True  # type: ignore[assignment]

    def __init__(self, *args, quantize: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.model = quantized(self.model, self.tokenizer, quantize, self.device)
        # The parser of every way in that reaches the model through this pipeline (the CLI, the demo, spaCy).
        # Any hf_structure model answers the parsing contract; `accepted_options` refuses one that does not.
        model = cast(ParsingModel, self.model)
        self.parser = Parser(model, self.tokenizer, self._forward_params.get("num_threads"))

    def save_pretrained(self, *args, **kwargs):
        if getattr(self.model, "quantization", None):
            raise ValueError(
                f"this pipeline's model is quantized ({self.model.quantization}) for parsing only; save the model "
                "it was loaded from instead"
            )
        super().save_pretrained(*args, **kwargs)

    def _sanitize_parameters(
        self,
        is_split_into_words=None,
        split_sentences=None,
        word_convention=None,
        on_error=None,
        num_threads=None,
        **parse_options,
    ):
        """The reading options (preprocess) and the parse's (forward), each checked before anything is parsed."""
        # The pipeline's own options first, so that an error names them in the order the pipeline documents.
        check_options(self.model, {**dict.fromkeys(PIPELINE_PARSE_OPTIONS), **parse_options})
        reading: dict[str, Any] = {}
        if is_split_into_words is not None:
            reading["is_split_into_words"] = bool(is_split_into_words)
        if split_sentences is not None:
            if not isinstance(split_sentences, bool):
                raise TypeError(f"split_sentences must be True or False, got {split_sentences!r}")
            reading["split_sentences"] = split_sentences
        if word_convention is not None:
            reading["word_convention"] = check_word_convention(word_convention)
        parsing = {name: value for name, value in parse_options.items() if value is not None}
        if on_error is not None:
            parsing["on_error"] = check_on_error(on_error)
        if num_threads is not None:
            parsing["num_threads"] = check_num_threads(num_threads)
        return reading, parsing, {}

    def __call__(self, inputs, *args, num_workers=None, batch_size=None, **kwargs):
        if args:
            raise TypeError(f"options are given by name, not as {len(args)} more positional argument(s)")
        batch_size = batch_size or self._batch_size or 1  # `num_workers`: the parse runs in this process
        reading, parsing, _ = self._sanitize_parameters(**kwargs)
        reading = {**self._preprocess_params, **reading}  # this call's options over those given at construction
        parsing = {"batch_size": batch_size, **self._forward_params, **parsing}
        split = reading.pop("is_split_into_words", False)
        if isinstance(inputs, str):
            if split:
                check_words(inputs, "the sentence")  # the TypeError for a string given as words
            return self._parsed(self._read(inputs, False, None, reading, parsing), parsing)
        if inputs is None or isinstance(inputs, (int, float, bytes, dict)):
            raise TypeError(f"expected a string, a list of words or a batch of them, got {type(inputs).__name__}")
        if not isinstance(inputs, (list, tuple)):
            return self._stream(inputs, split, reading, parsing)  # a Dataset or generator: read as it is consumed
        if not inputs:
            raise SentenceError("empty word list" if split else "no sentence to parse: the input list is empty")
        # A list of words with is_split_into_words is one sentence, not a batch of one-word sentences.
        single = split and not any(isinstance(item, (list, tuple)) for item in inputs)
        batch = [inputs] if single else list(inputs)
        as_words = single or isinstance(batch[0], (list, tuple))
        kind = "sentence" if as_words else "item"
        groups = []
        for index, item in enumerate(batch):
            if isinstance(item, (list, tuple)) != as_words:
                first = "word lists" if as_words else "strings"
                raise TypeError(
                    f"{kind} {index + 1}: a batch must be all strings or all word lists; item 1 makes it "
                    f"{first}, item {index + 1} is a {type(item).__name__}"
                )
            name = "the sentence" if single else f"{kind} {index + 1}"
            groups.append(self._read(item, as_words, name, reading, parsing))
        # The sentences of every item are parsed together, in batches of similar lengths across items.
        results = iter(self._parsed([sentence for group in groups for sentence in group], parsing))
        if as_words:
            outputs = [next(results) for _ in groups]
            return outputs[0] if single else outputs
        return [[next(results) for _ in group] for group in groups]

    def _read(self, item, as_words: bool, name: str | None, reading: dict, parsing: dict) -> list[Sentence]:
        on_error = parsing.get("on_error", "raise")
        return self.parser.sentences(item, is_split_into_words=as_words, name=name, on_error=on_error, **reading)

    def _parsed(self, sentences: Iterable[Sentence], parsing: dict, window: int | None = None) -> list[ParseResult]:
        return [result for done in self.parser.results(sentences, window=window, **parsing) for _, result in done]

    def _stream(self, items: Iterable, split: bool, reading: dict, parsing: dict) -> Iterator:
        """The results of a Dataset's or generator's items, one per item as it is complete (a list for a text),
        the items read as they are consumed and their sentences parsed STREAM_WINDOW_BATCHES batches at a time."""
        counts: list[tuple[bool, int]] = []  # for each item read and not yet given: whether a text, its sentences

        def sentences() -> Iterator[Sentence]:
            for item in items:
                as_words = split or isinstance(item, (list, tuple))
                read = self._read(item, as_words, None, reading, parsing)
                counts.append((not as_words, len(read)))
                yield from read

        window = parsing["batch_size"] * STREAM_WINDOW_BATCHES
        results: list[ParseResult] = []
        for done in self.parser.results(sentences(), window=window, **parsing):
            results.extend(result for _, result in done)
            while counts and counts[0][1] <= len(results):
                as_text, count = counts.pop(0)
                yield results[:count] if as_text else results[0]
                del results[:count]
        for _ in counts:  # texts with no sentence, read after the last one parsed
            yield []

    # transformers' steps, for a caller that runs one input through them: the same reading and parsing.
    def preprocess(self, input_: Any, **preprocess_parameters: Any) -> dict[str, Any]:
        split = preprocess_parameters.pop("is_split_into_words", False) or isinstance(input_, (list, tuple))
        sentences = self.parser.sentences(input_, is_split_into_words=split, **preprocess_parameters)
        return {"sentences": sentences, "as_text": not split}

    def _forward(self, input_tensors: dict[str, Any], **forward_parameters: Any) -> Any:
        forward_parameters.pop("batch_size", None)
        return {**input_tensors, "results": self._parsed(input_tensors["sentences"], forward_parameters)}

    def postprocess(self, model_outputs: Any, **postprocess_parameters: Any) -> Any:
        return model_outputs["results"] if model_outputs["as_text"] else model_outputs["results"][0]
