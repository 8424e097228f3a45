"""hf_structure's parsers as a spaCy pipeline component (`pip install 'hf_structure[spacy]'`).

    import spacy
    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": "arc-hybrid-ewt"})
    doc = nlp("The old man sat on the bench. It rained.")

spaCy finds the factory (`hf_structure_spacy.make_component`, a module apart so that spaCy's other pipelines do not
import hf_structure) through the `spacy_factories` entry point, so nothing needs importing first. The component
parses spaCy's own tokens (whitespace tokens are left out and attached to the word before them, label `dep`) and
sets `token.head` and `token.dep_` (the root's label is spaCy's `ROOT`; a model without labels gives `dep`), so
`doc.sents`, displaCy and spaCy's scorer work unchanged. Sentences are those an earlier component set, else
hf_structure's own splitter's. A model that gives constituents (StructFormer, R2D2) puts them in
`doc.spans[spans_key]` (default `"constituents"`), every constituent of two or more words with the label `X`. A model
that gives constituents only (R2D2) leaves heads and labels unset and marks the sentences (`token.is_sent_start`).
"""

from collections.abc import Iterable, Iterator

from spacy.tokens import Doc, Span

from .pipelines.word_tokenization import sentence_offsets


class StructureParser:
    """A spaCy component that parses with an hf_structure model (a bundled name, a folder or a Hub id)."""

    def __init__(
        self, model: str, batch_size: int = 32, spans_key: str = "constituents", num_threads: int | None = None
    ):
        from transformers import pipeline

        from . import pipelines  # noqa: F401  (registers the task and the bundled names)

        self.parser = pipeline("unsupervised-parsing", model=model, num_threads=num_threads)
        self.batch_size, self.spans_key = batch_size, spans_key

    def __call__(self, doc: Doc) -> Doc:
        return next(self.pipe([doc]))

    def pipe(self, docs: Iterable[Doc], batch_size: int | None = None) -> Iterator[Doc]:
        """Parse `docs`, the sentences of `batch_size` docs (default: the component's) at a time."""
        batch = []
        for doc in docs:
            batch.append(doc)
            if len(batch) >= (batch_size or self.batch_size):
                yield from self._parse(batch)
                batch = []
        yield from self._parse(batch)

    def _parse(self, docs: list[Doc]) -> list[Doc]:
        # Per doc, per sentence: the indices of its word tokens (whitespace tokens are no words).
        spans_of_docs = [_sentences(doc) for doc in docs]
        sentences = [[[t.i for t in sentence if not t.is_space] for sentence in spans] for spans in spans_of_docs]
        word_lists = [
            [doc[i].text for i in indices]
            for doc, doc_sentences in zip(docs, sentences)
            for indices in doc_sentences
            if indices
        ]
        parses = iter(self.parser(word_lists, batch_size=self.batch_size) if word_lists else [])
        for doc, doc_spans, doc_sentences in zip(docs, spans_of_docs, sentences):
            heads, deps, constituents, has_heads = list(range(len(doc))), ["dep"] * len(doc), [], False
            for indices in doc_sentences:
                if not indices:
                    continue
                parse = next(parses)
                has_heads = "heads" in parse
                for index, head, label in zip(
                    indices, parse.get("heads", ()), parse.get("deprels") or [None] * len(indices)
                ):
                    heads[index] = index if head == 0 else indices[head - 1]
                    deps[index] = "ROOT" if head == 0 else label or "dep"
                constituents += [
                    Span(doc, indices[start], indices[end - 1] + 1, label="X")
                    for start, end in parse.get("spans", ())
                    if end - start > 1
                ]
            for token in doc:  # whitespace: on the word before it (or after it, at the start of the doc)
                if token.is_space:
                    words = [t.i for t in doc if not t.is_space]
                    heads[token.i] = max((i for i in words if i < token.i), default=min(words, default=token.i))
            if has_heads:
                _set_heads(doc, heads, deps)
            elif not doc.has_annotation("SENT_START"):
                for token in doc:
                    token.is_sent_start = token.i == 0
                for sentence in doc_spans:
                    if len(sentence):
                        doc[sentence.start].is_sent_start = True
            if constituents or "spans" in self.parser.model.parse_outputs:
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
    doc.from_array([HEAD, DEP], array)
