#!/usr/bin/env python
"""Word tokenization on UD English-EWT: the pipeline's words against the gold words, per word convention, in one run.

Each sentence's raw text (its `# text` line) is split by `tokenize_with_offsets(text, convention)` for each of
`WORD_CONVENTIONS`: "ptb" (the shared Penn-Treebank-style split, what every model read before the conventions) and
"ud" (re-cut as EWT writes words). The gold words are the sentence's syntactic words, each placed in the text: a
multiword token such as "don't" gives "do" and "n't" at the offsets its words spell it (a token whose words do not
spell it counts as one word). Printed per convention: the share of sentences whose words are all right, and token
precision, recall and F1, a word counting as right when its start and end offsets both are; with `--show N`, the N
most frequent differences (what the split gave -> what EWT writes).

The "ud" rules were chosen on EWT train (`--treebank .../en_ewt-ud-train.conllu`): score dev (the default) to report,
never choose rules on it or on test.

    .venv/bin/python benchmarks/word_tokenization.py             # EWT dev
    .venv/bin/python benchmarks/word_tokenization.py --quick     # smoke run: the first 200 sentences
"""

import argparse
import importlib.util
from collections import Counter
from pathlib import Path
from typing import Any

from shared_data import DATA_DIR  # benchmarks/shared_data.py: the script's folder is on sys.path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TREEBANK = DATA_DIR / "ud-english-ewt" / "en_ewt-ud-dev.conllu"
TOKENIZER_MODULE = ROOT / "src" / "hf_structure" / "pipelines" / "word_tokenization.py"


def load_tokenizer():
    """The pipeline's word_tokenization module, loaded from its file (it needs only the standard library)."""
    spec = importlib.util.spec_from_file_location("word_tokenization", TOKENIZER_MODULE)
    assert spec is not None and spec.loader is not None  # a .py file gets the source file loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_gold(path: Path) -> list[tuple[str, list[tuple[int, int]]]]:
    """Each sentence's `# text` and the `[start, end)` offsets of its gold words in it."""
    import conllu

    sentences = []
    with path.open(encoding="utf-8") as lines:
        for sentence in conllu.parse_incr(lines):
            if "text" not in sentence.metadata:
                raise SystemExit(f"{path}: sentence {sentence.metadata.get('sent_id', '?')} has no '# text' line")
            text = sentence.metadata["text"]
            words = {token["id"]: token["form"] for token in sentence if isinstance(token["id"], int)}
            offsets: list[tuple[int, int]] = []
            position = 0
            inside: set[int] = set()  # the words of the multiword tokens read so far
            for token in sentence:
                identifier = token["id"]
                if isinstance(identifier, tuple) and identifier[1] != "-":  # an empty node: no text
                    continue
                if isinstance(identifier, int) and identifier in inside:  # a word of the multiword token before
                    continue
                while text[position].isspace():
                    position += 1
                form = token["form"]
                if not text.startswith(form, position):
                    raise SystemExit(f"{path}: {form!r} is not at character {position} of {text!r}")
                parts = [form]
                if isinstance(identifier, tuple):
                    inside.update(range(identifier[0], identifier[2] + 1))
                    spelled = [words[i] for i in range(identifier[0], identifier[2] + 1)]
                    parts = spelled if "".join(spelled) == form else [form]
                for part in parts:
                    offsets.append((position, position + len(part)))
                    position += len(part)
            sentences.append((text, offsets))
    return sentences


def score(tokenize, sentences) -> dict:
    """Exact sentences, token precision / recall / F1 by offsets, and the differences (split -> gold) counted."""
    exact = right = guessed = true = 0
    differences: Counter[tuple[str, str]] = Counter()
    for text, gold in sentences:
        _, offsets = tokenize(text)
        offsets = [tuple(span) for span in offsets]
        exact += offsets == gold
        right += len(set(offsets) & set(gold))
        guessed += len(offsets)
        true += len(gold)
        wrong = sorted(
            [(start, end, 0) for start, end in set(offsets) - set(gold)]
            + [(start, end, 1) for start, end in set(gold) - set(offsets)]
        )
        regions: list[list[Any]] = []  # overlapping wrong words, each region one difference: [start, end, spans]
        for start, end, side in wrong:
            if regions and start < regions[-1][1]:
                regions[-1][1] = max(regions[-1][1], end)
                regions[-1][2].append((start, end, side))
            else:
                regions.append([start, end, [(start, end, side)]])
        for _, _, spans in regions:
            ours = " ".join(text[start:end] for start, end, side in spans if side == 0)
            theirs = " ".join(text[start:end] for start, end, side in spans if side == 1)
            differences[(ours, theirs)] += 1
    precision, recall = right / guessed, right / true
    return {
        "exact": exact / len(sentences),
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall),
        "differences": differences,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--treebank", type=Path, default=DEFAULT_TREEBANK, help="a UD CoNLL-U file with '# text'")
    parser.add_argument("--show", type=int, default=0, metavar="N", help="print the N most frequent differences")
    parser.add_argument("--quick", action="store_true", help="smoke run: the first 200 sentences")
    args = parser.parse_args()
    if not args.treebank.is_file():
        raise SystemExit(f"treebank not found: {args.treebank} (give --treebank)")
    sentences = read_gold(args.treebank)
    if args.quick:
        sentences = sentences[:200]
    module = load_tokenizer()
    smoke = " (--quick: a smoke run, not a measurement)" if args.quick else ""
    words = sum(len(gold) for _, gold in sentences)
    print(f"word tokenization{smoke}: {args.treebank.name}, {len(sentences)} sentences, {words} gold words")
    print(f"{'convention':<12} {'exact':>7} {'precision':>9} {'recall':>7} {'F1':>6}")
    results = {}
    for convention in module.WORD_CONVENTIONS:
        result = results[convention] = score(
            lambda text, convention=convention: module.tokenize_with_offsets(text, convention), sentences
        )
        print(
            f"{convention:<12} {result['exact']:7.2%} {result['precision']:9.2%} {result['recall']:7.2%} "
            f"{result['f1'] * 100:6.2f}"
        )
    for convention, result in results.items() if args.show else ():
        print(f"\n{convention}: the {args.show} most frequent differences (split -> gold)")
        for (ours, theirs), count in result["differences"].most_common(args.show):
            print(f"{count:5d}  {ours!r} -> {theirs!r}")


if __name__ == "__main__":
    main()
