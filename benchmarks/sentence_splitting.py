#!/usr/bin/env python
"""Sentence splitting on UD English-EWT: our rule-based splitter against well-known ones, in the same run.

Each document of the treebank (`# newdoc id`) becomes one paragraph: its sentences' `# text` lines joined with single
spaces. Every splitter splits each paragraph; a boundary is the character offset where a sentence ends (trailing
whitespace stripped), the paragraph's own end not counted. Printed for each splitter: boundary precision, recall and
F1 against the gold sentences' ends, the share of gold sentences found exactly (both ends), and gold sentences per
second (best of `--repeats` passes over all paragraphs; one process, one thread).

Splitters: `ours` (`hf_structure.pipelines.word_tokenization.sentence_offsets`, loaded from its file: it needs only
the standard library), spaCy's rule-based `sentencizer` (`spacy.blank("en")`, which also tokenises) and pySBD
(`pysbd.Segmenter(language="en", clean=False, char_span=True)`), each where importable. They are not dependencies of
the package: install them apart, e.g.

    python -m venv /tmp/splitters && /tmp/splitters/bin/pip install spacy pysbd conllu
    /tmp/splitters/bin/python benchmarks/sentence_splitting.py           # EWT dev, all splitters found
    /tmp/splitters/bin/python benchmarks/sentence_splitting.py --quick   # smoke run: 20 documents, one pass

Our splitter's rules come from general knowledge of English text, not from this data (never tune them on dev/test).
"""

import argparse
import importlib.util
import platform
import time
from pathlib import Path

from shared_data import DATA_DIR  # benchmarks/shared_data.py: the script's folder is on sys.path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TREEBANK = DATA_DIR / "ud-english-ewt" / "en_ewt-ud-dev.conllu"
SPLITTER_MODULE = ROOT / "src" / "hf_structure" / "pipelines" / "word_tokenization.py"


def read_documents(path: Path) -> list[list[str]]:
    """The `# text` of each sentence, grouped by document (`# newdoc id`), in file order."""
    import conllu

    documents: list[list[str]] = []
    with path.open(encoding="utf-8") as lines:
        for sentence in conllu.parse_incr(lines):
            if "newdoc id" in sentence.metadata or not documents:
                documents.append([])
            if "text" not in sentence.metadata:
                raise SystemExit(f"{path}: sentence {sentence.metadata.get('sent_id', '?')} has no '# text' line")
            documents[-1].append(sentence.metadata["text"].strip())
    return documents


def gold_spans(texts: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """The paragraph (texts joined with single spaces) and each text's [start, end) in it."""
    spans, start = [], 0
    for text in texts:
        spans.append((start, start + len(text)))
        start += len(text) + 1
    return " ".join(texts), spans


def load_ours():
    spec = importlib.util.spec_from_file_location("word_tokenization", SPLITTER_MODULE)
    assert spec is not None and spec.loader is not None  # a .py file gets the source file loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.sentence_offsets


def load_spacy():
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return lambda text: [(sentence.start_char, sentence.end_char) for sentence in nlp(text).sents], spacy.__version__


def load_pysbd():
    import pysbd

    segmenter = pysbd.Segmenter(language="en", clean=False, char_span=True)
    return lambda text: [(span.start, span.end) for span in segmenter.segment(text)], pysbd.__version__


def stripped(text: str, spans) -> list[tuple[int, int]]:
    """Spans without surrounding whitespace, empty ones dropped."""
    result = []
    for start, end in spans:
        piece = text[start:end]
        start, end = start + len(piece) - len(piece.lstrip()), start + len(piece.rstrip())
        if start < end:
            result.append((start, end))
    return result


def score(split, paragraphs, repeats: int) -> dict:
    """Boundary counts over all paragraphs, exact sentences found, and the best time of `repeats` passes."""
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        predicted = [split(text) for text, _ in paragraphs]
        seconds.append(time.perf_counter() - start)
    found = guessed = true = exact = 0
    for (text, gold), spans in zip(paragraphs, predicted):
        spans = stripped(text, spans)
        gold_ends = {end for _, end in gold[:-1]}
        ends = {end for _, end in spans if end < len(text.rstrip())}
        found += len(ends & gold_ends)
        guessed += len(ends)
        true += len(gold_ends)
        exact += len(set(spans) & set(gold))
    precision = found / guessed if guessed else 0.0
    recall = found / true if true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    sentences = sum(len(gold) for _, gold in paragraphs)
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "exact": exact / sentences,
        "per_second": sentences / min(seconds),
        "boundaries": (found, guessed, true),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--treebank", type=Path, default=DEFAULT_TREEBANK, help="a UD CoNLL-U file with '# text'")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per splitter (the best is shown)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 20 documents, one pass")
    args = parser.parse_args()
    if not args.treebank.is_file():
        raise SystemExit(f"treebank not found: {args.treebank} (give --treebank)")
    documents = read_documents(args.treebank)
    if args.quick:
        documents, args.repeats = documents[:20], 1
    paragraphs = [gold_spans(texts) for texts in documents]

    splitters = {"ours (rule-based, standard library)": (load_ours(), "")}
    for name, load in (("spaCy sentencizer", load_spacy), ("pySBD", load_pysbd)):
        try:
            split, version = load()
        except ImportError as error:
            print(f"{name}: not importable here ({error}); skipped")
            continue
        splitters[f"{name} {version}"] = (split, version)

    sentences = sum(len(gold) for _, gold in paragraphs)
    smoke = " (--quick: a smoke run, not a measurement)" if args.quick else ""
    print(
        f"sentence splitting{smoke}: {args.treebank.name}, {len(paragraphs)} documents joined into paragraphs, "
        f"{sentences} gold sentences, {sentences - len(paragraphs)} boundaries"
    )
    print(
        f"python {platform.python_version()}, {platform.processor() or platform.machine()}; best of "
        f"{args.repeats} pass(es)"
    )
    print(f"{'splitter':<40} {'precision':>9} {'recall':>7} {'F1':>6} {'exact':>6} {'sent/s':>9}")
    for name, (split, _) in splitters.items():
        result = score(split, paragraphs, args.repeats)
        print(
            f"{name:<40} {result['precision']:9.2%} {result['recall']:7.2%} {result['f1']:6.2%} "
            f"{result['exact']:6.2%} {result['per_second']:9.0f}"
        )


if __name__ == "__main__":
    main()
