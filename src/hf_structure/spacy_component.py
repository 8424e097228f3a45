"""hf_structure's parsers as a spaCy pipeline component (`pip install 'hf_structure[spacy]'`).

    import spacy
    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": "arc-hybrid-ewt"})
    doc = nlp("The old man sat on the bench. It rained.")

spaCy finds the factory (`hf_structure_spacy.make_component`, a module apart so that spaCy's other pipelines do not
import hf_structure) through the `spacy_factories` entry point, so nothing needs importing first. The component
parses spaCy's own tokens; sentences are those an earlier component set, else hf_structure's own splitter's. What it
sets depends on what the model gives:

- heads (StructFormer, G2GTr, arc-hybrid): `token.head` and `token.dep_` (the root's label is spaCy's `ROOT`; a model
  without labels, StructFormer, gives `dep` to its induced arcs, which its card calls unlabelled, and `punct` to the
  punctuation it never sees, which the pipeline attaches by rule); whitespace tokens are left out of the parse and
  hang on the word before them, label `dep`. spaCy derives `doc.sents` from the trees, so displaCy and spaCy's
  scorer work unchanged.
- word tags (a dependency model with taggers, e.g. the bundled EWT parsers): `token.pos_` (UPOS), `token.tag_`
  (XPOS) and `token.morph` (FEATS); tags the model does not give are left as they were.
- constituents (StructFormer, R2D2): `doc.spans[spans_key]` (default `"constituents"`), every constituent of two or
  more words, with the label `X`. A model of heads only sets no span group. displaCy's default call draws arcs only
  (a doc without heads: warning W005 and nothing drawn); `render(doc)` draws the constituents where there are no arcs.
- constituents only (R2D2): heads and labels are left unset (spaCy's default) and the sentences are marked
  (`token.is_sent_start`), unless an earlier component marked them.

A sentence the model cannot parse (too long for it, refused by it) goes to the component's error handler (spaCy's
`nlp.set_error_handler` or `component.set_error_handler`) as a `SentenceError` naming the doc and the sentence: by
default it is raised; a handler that returns leaves that sentence's tokens without a parse (each its own head,
label missing), and the doc's other sentences and the other docs are parsed as usual.

The model loads when the component first parses (`component.parser`: the transformers pipeline), or at once in a
pipeline that `spacy.load` reads. `nlp.to_disk(path)` writes in the component's folder where the model comes from: a
bundled short name or Hub id as given, a folder by its absolute path. With the setting `save_model=True` it also
saves the model itself there (`save_pretrained`: weights, config and tokenizer, the weights in the precision they are
stored in), so that the saved pipeline needs nothing else; saving over a folder replaces its `model/` whole (only
that subfolder, ours: files of the user's beside it stay). `spacy.load(path)` parses with the model so named or
saved, unless its config is given another `model`. The setting `quantize="int8"` parses with the encoder on int8
(the pipeline's option: on the CPU, for the dependency parsers); the saved model stays as stored.
"""

import json
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import cast

import srsly
from spacy import util
from spacy.tokens import Doc, MorphAnalysis, Span
from thinc.types import Ints2d

from .bundled import load_model_and_tokenizer, quiet_weight_files, resolve_model_path
from .pipelines import load_parser
from .pipelines.batched_parsing import SentenceError, is_punctuation
from .pipelines.parser import accepted_options
from .pipelines.unsupervised_parsing import UnsupervisedParsingPipeline
from .pipelines.word_tokenization import sentence_offsets

# In the component's folder of a saved pipeline: where its model comes from (JSON), and the model where it is saved.
SOURCE_FILE, MODEL_FOLDER = "source.json", "model"


class StructureParser:
    """A spaCy component that parses with an hf_structure model (a bundled name, a folder or a Hub id); what it
    sets and how it is saved: the module's docstring."""

    def __init__(
        self,
        model: str,
        batch_size: int = 32,
        spans_key: str = "constituents",
        num_threads: int | None = None,
        save_model: bool = False,
        quantize: str | None = None,
        name: str = "hf_structure",
    ):
        self.name = name  # the component's name in its pipeline, which errors name
        self.model_name_or_path, self.batch_size, self.spans_key = model, batch_size, spans_key
        self.num_threads, self.save_model, self.quantize = num_threads, save_model, quantize
        # Where the model loads from: a folder by its absolute path, so that a change of directory keeps it.
        self.model_location = str(Path(model).resolve()) if Path(model).exists() else model
        self._parser: UnsupervisedParsingPipeline | None = None
        self._error_handler: Callable = util.raise_error

    @property
    def parser(self) -> UnsupervisedParsingPipeline:
        """The `unsupervised-parsing` pipeline over the model, loaded when first needed."""
        if self._parser is None:
            self._parser = self._load()
        return self._parser

    def __call__(self, doc: Doc) -> Doc:
        return next(self.pipe([doc]))

    def get_error_handler(self) -> Callable:
        """What a sentence the model cannot parse is handed to (spaCy's pipe API): `util.raise_error` by default."""
        return self._error_handler

    def set_error_handler(self, error_handler: Callable) -> None:
        """Called by `nlp.set_error_handler`: `error_handler(name, component, docs, error)`."""
        self._error_handler = error_handler

    def pipe(self, docs: Iterable[Doc], batch_size: int | None = None) -> Iterator[Doc]:
        """Parse `docs`, the sentences of `batch_size` docs (default: the component's) at a time."""
        batch = []
        for doc in docs:
            batch.append(doc)
            if len(batch) >= (batch_size or self.batch_size):
                yield from self._parse(batch)
                batch = []
        yield from self._parse(batch)

    def to_disk(self, path: str | Path, *, exclude: Iterable[str] = ()) -> None:
        """Write where the model comes from (`source.json`) and, with `save_model`, the model itself (`model/`, in
        place of any earlier one). Without it, an earlier `model/` goes, unless the model loads from it."""
        saves_model = self.save_model and MODEL_FOLDER not in exclude
        source = {"model": self.model_name_or_path, "location": self.model_location, "saved": saves_model}
        writers = {SOURCE_FILE: lambda file: srsly.write_json(file, source)}
        if saves_model:
            writers[MODEL_FOLDER] = self._save_model
        util.to_disk(path, writers, exclude)
        stale = Path(path) / MODEL_FOLDER
        if not saves_model and stale.is_dir() and stale.resolve() != Path(self.model_location).resolve():
            shutil.rmtree(stale)  # another model's weights, which source.json no longer names

    def from_disk(self, path: str | Path, *, exclude: Iterable[str] = ()) -> "StructureParser":
        """Load the model `to_disk` wrote down, unless this component's config names another model. As with spaCy's
        own components, the loaded pipeline reads nothing more from its folder."""

        def read_source(file: Path) -> None:
            try:
                source = json.loads(file.read_text(encoding="utf-8"))
            except json.JSONDecodeError as error:
                raise ValueError(
                    f"{file} is not valid JSON (line {error.lineno}, column {error.colno}): {error.msg}; "
                    "save the pipeline again"
                ) from None
            if source["model"] != self.model_name_or_path:
                return  # `spacy.load(path, config=...)` named another model: that one loads
            saved = file.parent.resolve() / MODEL_FOLDER
            self.model_location = str(saved) if source["saved"] else source["location"]

        util.from_disk(path, {SOURCE_FILE: read_source}, exclude)
        self._parser = self._load()
        return self

    def _load(self) -> UnsupervisedParsingPipeline:
        return load_parser(self.model_location, num_threads=self.num_threads, quantize=self.quantize)

    def _save_model(self, folder: Path) -> None:
        """Save the model in a new folder beside `folder`, then put it in `folder`'s place. Writing into `folder`
        itself would leave another model's files there (its code, its shards), and, where the model was loaded from
        `folder`, overwrite the weights it reads (safetensors are memory-mapped) and the file whose precision the
        saved weights keep. The old folder is moved away only once the new one is complete."""
        from .hub.export import keep_stored_precision

        # The model as stored, in its parsing class: the pipeline's model may be quantized (made when it loads) or a
        # base model without the checkpoint's language-model head (StructFormer's, R2D2's), which the saved folder
        # keeps so that it scores perplexity as the original does (`evaluate` refuses a folder without it).
        model, tokenizer = load_model_and_tokenizer(self.model_location)
        # Beside `folder`, so that renaming is no copy; deleted at the end, with the old model or a failed save's.
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-saving-", dir=folder.parent))
        try:
            new = staging / "new"
            with quiet_weight_files():
                model.save_pretrained(new)
            tokenizer.save_pretrained(new)
            # Weights stored in half precision (the bundled parsers) load in float32: saved as stored, not twice the
            # size. The stored file is still the one the model came from, even when that is `folder`'s.
            stored = Path(resolve_model_path(self.model_location)) / "model.safetensors"
            keep_stored_precision(stored, new / "model.safetensors")
            if folder.exists():
                folder.rename(staging / "old")
            new.rename(folder)
        finally:
            # Unlinking a memory-mapped file leaves the mapping valid: a model loaded from the old folder still parses.
            shutil.rmtree(staging)

    def _parse(self, docs: list[Doc]) -> list[Doc]:
        structures = accepted_options(self.parser.parser.model)["structures"]
        reattaches = getattr(self.parser.parser.model.config, "punctuation_policy", "keep") == "reattach"
        # Per doc, per sentence: the indices of its word tokens (whitespace tokens are no words).
        spans_of_docs = [_sentences(doc) for doc in docs]
        sentences = [[[t.i for t in sentence if not t.is_space] for sentence in spans] for spans in spans_of_docs]
        parser = self.parser.parser
        checked = [
            sentence
            for number, (doc, doc_sentences) in enumerate(zip(docs, sentences), 1)
            for count, indices in enumerate((indices for indices in doc_sentences if indices), 1)
            for sentence in parser.sentences(
                [doc[i].text for i in indices],
                is_split_into_words=True,
                name=f"doc {number} of the batch ({doc.text[:40]!r}), sentence {count}",
                on_error="record",
            )
        ]
        parsed = parser.results(checked, batch_size=self.batch_size, on_error="record")
        parses = iter([result for done in parsed for _, result in done])
        for doc, doc_spans, doc_sentences in zip(docs, spans_of_docs, sentences):
            heads, deps, constituents = list(range(len(doc))), ["dep"] * len(doc), []
            for indices in doc_sentences:
                if not indices:
                    continue
                parse = next(parses)
                if "error" in parse:  # the handler raises, or the sentence stays unparsed: own heads, no label
                    self._error_handler(self.name, self, [doc], SentenceError(parse["error"]))
                    for index in indices:
                        deps[index] = ""
                    continue
                # A model without labels (StructFormer: its induced dependencies are unlabelled) gives `dep`, and
                # `punct` to the punctuation it never saw, which the pipeline attached by rule.
                labels = parse.get("deprels") or [
                    "punct" if reattaches and is_punctuation(word) else "dep" for word in parse["words"]
                ]
                for index, head, label in zip(indices, parse.get("heads", ()), labels):
                    heads[index] = index if head == 0 else indices[head - 1]
                    deps[index] = "ROOT" if head == 0 else label
                for k, index in enumerate(indices):  # the word tags of a model with taggers
                    if "upos" in parse:
                        doc[index].pos_ = parse["upos"][k]
                    if "xpos" in parse:
                        doc[index].tag_ = parse["xpos"][k]
                    if "feats" in parse and parse["feats"][k] != "_":
                        doc[index].morph = MorphAnalysis(doc.vocab, parse["feats"][k])
                constituents += [
                    Span(doc, indices[start], indices[end - 1] + 1, label="X")
                    for start, end in parse.get("spans", ())
                    if end - start > 1
                ]
            if "dependency" in structures and any(doc_sentences):
                for token in doc:  # whitespace: on the word before it (or after it, at the start of the doc)
                    if token.is_space:
                        words = [t.i for t in doc if not t.is_space]
                        heads[token.i] = max((i for i in words if i < token.i), default=min(words))
                _set_heads(doc, heads, deps)
            elif not doc.has_annotation("SENT_START"):
                for token in doc:
                    token.is_sent_start = token.i == 0
                for sentence in doc_spans:
                    if len(sentence):
                        doc[sentence.start].is_sent_start = True
            if "constituency" in structures:
                doc.spans[self.spans_key] = constituents
        return docs


def _sentences(doc: Doc) -> list[Span]:
    """The doc's sentences as an earlier component set them, else by hf_structure's splitter (a token belongs to
    the sentence its first character is in)."""
    if doc.has_annotation("SENT_START"):
        return list(doc.sents)
    starts = [start for start, _ in sentence_offsets(doc.text)]
    sentences, first = [], 0
    for start in starts[1:]:
        boundary = next((t.i for t in doc[first:] if t.idx >= start), len(doc))
        sentences.append(doc[first:boundary])
        first = boundary
    return [*sentences, doc[first:]] if len(doc) else []


def _set_heads(doc: Doc, heads: list[int], deps: list[str]) -> None:
    """Every token's head and label at once (spaCy derives the sentences from the trees)."""
    import numpy
    from spacy.attrs import DEP, HEAD

    labels = [doc.vocab.strings.add(label) for label in deps]
    offsets = numpy.array(heads, dtype="int64") - numpy.arange(len(heads), dtype="int64")
    # spaCy stores a head as its offset from the token, in uint64 (a negative offset wraps around).
    array = numpy.stack([offsets.view("uint64"), numpy.array(labels, dtype="uint64")], axis=1)
    doc.from_array([HEAD, DEP], cast(Ints2d, array))


def render(doc: Doc, spans_key: str = "constituents", **kwargs) -> str:
    """displaCy's drawing of what the component set: the dependency arcs where the doc has heads, else the
    constituents of `doc.spans[spans_key]` (displaCy's span style), which displaCy's default call does not draw (a
    constituency model's doc, R2D2's: warning W005 and nothing drawn). `kwargs` go to `displacy.render` (`jupyter`,
    `options`, ...); a `style` given there is drawn as asked."""
    from spacy import displacy

    if "style" in kwargs or doc.has_annotation("DEP") or spans_key not in doc.spans:
        return displacy.render(doc, **kwargs)
    options = {"spans_key": spans_key, **kwargs.pop("options", {})}
    return displacy.render(doc, style="span", options=options, **kwargs)
