"""Several constituency parsers as one: each parses the sentence, and the ensemble's tree is their average (tree
averaging, Shayegh et al., ICLR 2024: the binary tree holding the most of their spans, `structs.average_trees`).

Members are parsing pipelines (any hf_structure model that gives constituents) and trees files (JSON lines with
`words` and `spans`, matched to a sentence by its words). The first pipeline decides the sentences and their words;
every other member parses the same sentence in its own words (raw text is cut into words as each model's training
text was), and its spans are carried onto the first member's words by character offsets (`spans_across_words`). A
span that does not begin and end on the first member's word boundaries gives no vote.

With two members most spans hold one vote and many trees tie: the tie-break is part of the method
(`structs.decoding.TIE_BREAKS`; default `"right"`, toward right-branching, which led on the PTB dev sample for every
set of teachers; `"random"` shows what the votes alone give)."""

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from ..data.trees_files import read_trees_file
from ..structs.decoding import TIE_BREAKS, average_trees
from ..structs.trees import Span, spans_to_bracketed
from .batched_parsing import Sentence, SentenceError, check_on_error
from .parser import ParseResult, UnsupportedOptionError, accepted_options, model_description

# The pipeline options an ensemble takes: how the input is read, batched and threaded, and what to do with errors.
ENSEMBLE_OPTIONS = (
    "batch_size",
    "num_threads",
    "on_error",
    "split_sentences",
    "word_convention",
    "is_split_into_words",
)


def spans_across_words(
    spans: Iterable[Span],
    words: Sequence[str],
    offsets: Sequence[Sequence[int]] | None,
    reference_words: Sequence[str],
    reference_offsets: Sequence[Sequence[int]] | None,
) -> list[Span]:
    """One parser's spans over its own `words`, as spans over `reference_words`, another parser's words of the same
    sentence. Where the words are the same, the spans are. Otherwise both need their `[start, end]` character offsets
    (each counted from its own first word: the same sentence text may start at different places in two inputs): a
    span is kept where its first character starts a reference word and its last ends one, and dropped otherwise
    (e.g. `did n't` against `didn't` keeps the span of both words, not the span of `did` alone). Spans of fewer than
    two reference words are dropped."""
    if list(words) == list(reference_words):
        return [(start, end) for start, end in spans if end - start > 1]
    if offsets is None or reference_offsets is None or not words or not reference_words:
        raise SentenceError(
            f"the words differ ({len(words)} against {len(reference_words)}) and carry no character offsets to "
            "align them by"
        )
    base, reference_base = offsets[0][0], reference_offsets[0][0]
    starts = {first - reference_base: index for index, (first, _) in enumerate(reference_offsets)}
    ends = {last - reference_base: index + 1 for index, (_, last) in enumerate(reference_offsets)}
    carried = []
    for start, end in spans:
        first, last = starts.get(offsets[start][0] - base), ends.get(offsets[end - 1][1] - base)
        if first is not None and last is not None and last - first > 1:
            carried.append((first, last))
    return carried


class EnsembleParser:
    """Parse with several constituency parsers at once and return their averaged tree.

    `models`: parsing pipelines, or names to load (bundled names, folders, Hub ids; `pipeline_options` go to each
    load, e.g. `device`); the first decides the sentences and words of raw text. `trees`: trees files, matched by a
    sentence's words (a file without the sentence makes that sentence an error naming the file). `tie_break`: which
    tree wins among those of equal votes (see the module). `seed`: the random tie-break's (the k-th sentence of a
    call is drawn from `seed` + k).

    Called as a pipeline is, on a string (raw text: a list of parses, one a sentence), a list of strings, a word
    list with `is_split_into_words=True`, or a list of word lists, with the pipeline's reading options
    (`ENSEMBLE_OPTIONS`). Each parse holds `words` (with `offsets` and `text` for raw text), `tree` and `spans`;
    a sentence that a member cannot parse is `{"words", "error"}` with the member named (`on_error="record"`) or a
    SentenceError (the default), and the other sentences are parsed."""

    parse_outputs = ("spans",)

    def __init__(
        self,
        models: Sequence,
        trees: Sequence[str | Path] = (),
        tie_break: str = "right",
        seed: int = 0,
        **pipeline_options,
    ):
        from . import load_parser

        if not models:
            raise ValueError("an ensemble parses with at least one model (trees files alone are scored by evaluate)")
        if len(models) + len(trees) < 2:
            raise ValueError("an ensemble needs two or more members (models and trees files)")
        if tie_break not in TIE_BREAKS:
            raise ValueError(f"tie_break must be one of {TIE_BREAKS}, got {tie_break!r}")
        self.pipelines = [
            load_parser(model, **pipeline_options) if isinstance(model, str) else model for model in models
        ]
        for pipeline in self.pipelines:
            if "constituency" not in accepted_options(pipeline.parser.model)["structures"]:
                raise UnsupportedOptionError(f"{model_description(pipeline.model)} gives no constituents to average")
        self.trees_files = [(str(path), read_trees_file(path)) for path in trees]
        self.tie_break, self.seed = tie_break, seed

    @property
    def names(self) -> list[str]:
        """The members, as results and errors name them."""
        return [str(pipeline.model.name_or_path) for pipeline in self.pipelines] + [
            path for path, _ in self.trees_files
        ]

    def check_options(self, options: dict) -> None:
        """An UnsupportedOptionError for an option the ensemble does not take (given, not None)."""
        refused = tuple(name for name, value in options.items() if value is not None and name not in ENSEMBLE_OPTIONS)
        structures = options.get("structures")
        if structures is not None and tuple([structures] if isinstance(structures, str) else structures) == (
            "constituency",
        ):
            refused = tuple(name for name in refused if name != "structures")
        if refused:
            raise UnsupportedOptionError(
                f"an ensemble gives averaged constituency trees only; it does not take {', '.join(refused)} "
                f"(it takes {', '.join(ENSEMBLE_OPTIONS)})",
                refused,
            )

    def __call__(self, inputs, **options):
        self.check_options(options)
        on_error = check_on_error(options.get("on_error", "raise"))
        split = bool(options.get("is_split_into_words"))
        reading = {"split_sentences": options.get("split_sentences", True), "on_error": on_error}
        reading["word_convention"] = options.get("word_convention")
        single_words = (
            split and isinstance(inputs, (list, tuple)) and not any(isinstance(i, (list, tuple)) for i in inputs)
        )
        if isinstance(inputs, str) or single_words:
            results = self.parse_sentences(self.sentences(inputs, is_split_into_words=split, **reading), options)
            return results[0] if single_words else results
        if not isinstance(inputs, (list, tuple)) or not inputs:
            raise TypeError("expected a string, a list of words or a non-empty list of them")
        groups = [
            self.sentences(item, is_split_into_words=isinstance(item, (list, tuple)), name=f"item {number}", **reading)
            for number, item in enumerate(inputs, 1)
        ]
        parses = iter(self.parse_sentences([sentence for group in groups for sentence in group], options))
        if isinstance(inputs[0], (list, tuple)):
            return [next(parses) for _ in groups]
        return [[next(parses) for _ in group] for group in groups]

    def sentences(self, item, **reading) -> list[Sentence]:
        """The sentences of one input, as the first member reads them (`Parser.sentences`, with its options)."""
        return self.pipelines[0].parser.sentences(item, **reading)

    def parse_sentences(self, sentences: list[Sentence], options: dict) -> list[ParseResult]:
        """One result per checked sentence, in order."""
        return [result for done in self.results(sentences, **options) for _, result in done]

    def results(
        self, sentences: Iterable[Sentence], window: int | None = None, **options
    ) -> Iterator[list[tuple[Sentence, ParseResult]]]:
        """As `Parser.results`: after each batch of the first member, its sentences, in input order, each with the
        ensemble's result; the other members parse those sentences then."""
        self.check_options(options)
        on_error = check_on_error(options.get("on_error", "raise"))
        member_options = {
            name: options[name] for name in ("batch_size", "num_threads") if options.get(name) is not None
        }
        member_options.update(structures=("constituency",), on_error="record")
        done_before = 0
        for done in self.pipelines[0].parser.results(sentences, window=window, **member_options):
            trees = [[self._own_spans(result) for _, result in done]]
            trees += [self._member_trees(pipeline, done, member_options) for pipeline in self.pipelines[1:]]
            trees += [[self._file_spans(table, result) for _, result in done] for _, table in self.trees_files]
            yield [
                (sentence, self._result(result, [member[row] for member in trees], done_before + row, on_error))
                for row, (sentence, result) in enumerate(done)
            ]
            done_before += len(done)

    @staticmethod
    def _own_spans(result: ParseResult) -> list[Span] | str:
        return result["error"] if "error" in result else [(start, end) for start, end in result.get("spans", [])]

    def _member_trees(
        self, pipeline, done: list[tuple[Sentence, ParseResult]], options: dict
    ) -> list[list[Span] | str]:
        """Another member's trees of the sentences, on the first member's words (or, per sentence, why not): it
        reads each sentence as it reads an input (the sentence's text, one sentence, in its own words; given words
        as they are)."""
        own: list[Sentence | str] = []
        for sentence, result in done:
            if "error" in result:
                own.append(result["error"])
                continue
            if sentence.offsets is None:
                reading = {"is_split_into_words": True}
                [read] = pipeline.parser.sentences(result["words"], name=sentence.name, on_error="record", **reading)
            else:
                reading = {"split_sentences": False}
                [read] = pipeline.parser.sentences(sentence.text, name=sentence.name, on_error="record", **reading)
            own.append(read if read.error is None else read.error)
        reads = [read for read in own if isinstance(read, Sentence)]
        parsed = iter(result for done in pipeline.parser.results(reads, **options) for _, result in done)
        trees: list[list[Span] | str] = []
        for (sentence, result), read in zip(done, own):
            if isinstance(read, str):
                trees.append(read)
                continue
            member = next(parsed)
            if "error" in member:
                trees.append(member["error"])
                continue
            try:
                spans = map(tuple, member.get("spans", []))
                trees.append(
                    spans_across_words(
                        spans, member["words"], member.get("offsets"), result["words"], result.get("offsets")
                    )
                )
            except SentenceError as error:
                trees.append(f"{sentence.name}: {error}")
        return trees

    @staticmethod
    def _file_spans(table: dict, result: ParseResult) -> list[Span] | str:
        if "error" in result:
            return result["error"]
        tree = table.get(tuple(result["words"]))
        return "no tree of these words" if tree is None else tree

    def _result(self, result: ParseResult, member_trees: list, index: int, on_error: str) -> ParseResult:
        """The ensemble's result of one sentence from the first member's result and every member's tree of it."""
        failed = [(name, tree) for name, tree in zip(self.names, member_trees) if isinstance(tree, str)]
        if failed:
            name, message = failed[0]
            error = message if "error" in result else f"{name}: {message}"
            if on_error != "record":
                raise SentenceError(error)
            return {"words": result["words"], "error": error, **_located(result)}
        words = result["words"]
        [tree] = average_trees([[tree] for tree in member_trees], [len(words)], self.tie_break, self.seed + index)
        spans = [list(span) for span in tree]
        return {"words": words, **_located(result), "tree": spans_to_bracketed(words, spans), "spans": spans}


def _located(result: ParseResult) -> ParseResult:
    located: ParseResult = {}
    if "offsets" in result:
        located["offsets"], located["text"] = result["offsets"], result.get("text")
    return located
