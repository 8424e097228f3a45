"""Scores of predicted trees against gold trees (percentages are left to the caller).

The same scores are `evaluate` metrics: `evaluate.load(str(EVALUATE_METRICS / "unlabelled_f1"))` and
`evaluate.load(str(EVALUATE_METRICS / "attachment_score"))`, offline; those give percentages, these functions fractions.

Span conventions: spans are 0-based `(start, end)`; callers pass only the spans that are scored (two or more
words, not the whole sentence), which `scored_spans` selects.
"""

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..structs.trees import Span

EVALUATE_METRICS = Path(__file__).parent / "evaluate_metrics"


def scored_spans(spans: Iterable[Span], length: int) -> set[Span]:
    """The spans unlabelled F1 counts: two or more words, not the whole sentence."""
    return {(s, e) for s, e in spans if e - s > 1 and (s, e) != (0, length)}


def sentence_f1(predicted: set[Span], gold: set[Span]) -> float:
    """F1 of one sentence; a sentence without gold spans scores 1 when nothing is predicted either (and its
    recall counts as 1 anyway), as in the ON-LSTM / StructFormer evaluation code."""
    overlap = len(predicted & gold)
    precision = overlap / len(predicted) if predicted else 0.0
    recall = overlap / len(gold) if gold else 1.0
    if not gold and not predicted:
        precision = 1.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def compound_pcfg_gold(gold: set[Span], length: int, repeated_whole_span: bool) -> set[Span]:
    """Gold spans as the compound-PCFG `compare_trees.py` (which the R2D2 papers score with) counts them: it drops
    one whole-sentence span per tree, so a tree whose top is a unary chain keeps the whole sentence as a gold span
    that no binary prediction (its one whole-sentence span dropped too) can match; otherwise as `scored_spans`. Its
    sentence F1 formula is `sentence_f1`'s (a sentence without gold spans scores 1 only if nothing is predicted)."""
    return gold | {(0, length)} if repeated_whole_span and length > 1 else gold


def unlabelled_f1(predicted: Sequence[set[Span]], gold: Sequence[set[Span]]) -> dict[str, float]:
    """Sentence-level mean F1 and corpus-level F1 (pooled counts) over parallel lists of span sets."""
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted trees for {len(gold)} gold trees")
    if not gold:
        raise ValueError("no sentence to score")
    overlap = sum(len(p & g) for p, g in zip(predicted, gold))
    n_predicted = sum(len(p) for p in predicted)
    n_gold = sum(len(g) for g in gold)
    precision = overlap / n_predicted if n_predicted else 0.0
    recall = overlap / n_gold if n_gold else 0.0
    corpus = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "sentence_f1": sum(sentence_f1(p, g) for p, g in zip(predicted, gold)) / len(gold),
        "corpus_f1": corpus,
    }


def label_recall(
    predicted: Sequence[set[Span]], gold_labelled: Sequence[dict[Span, set[str]]], labels: Iterable[str]
) -> dict[str, float]:
    """Share of gold spans carrying each label that the prediction contains (NaN-free: labels never seen are
    left out)."""
    found: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for p, g in zip(predicted, gold_labelled):
        for span, span_labels in g.items():
            for label in span_labels:
                total[label] += 1
                found[label] += span in p
    return {label: found[label] / total[label] for label in labels if total[label]}


def attachment_scores(
    predicted: Sequence[Sequence[int]],
    gold: Sequence[Sequence[int]],
    predicted_labels: Sequence[Sequence[str]] | None = None,
    gold_labels: Sequence[Sequence[str]] | None = None,
) -> dict[str, float]:
    """UAS (directed), UUAS (undirected) and, with labels, LAS, by token position over all words.

    Heads are 1-based with 0 for the root; the root word counts as one attachment (correct in UUAS only when
    it is the gold root too).
    """
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted trees for {len(gold)} gold trees")
    words = directed = undirected = labelled = 0
    for index, (p, g) in enumerate(zip(predicted, gold)):
        if len(p) != len(g):
            raise ValueError(f"sentence {index}: {len(p)} predicted heads for {len(g)} words")
        for i, (ph, gh) in enumerate(zip(p, g)):
            words += 1
            directed += ph == gh
            undirected += ph == gh or (ph != 0 and g[ph - 1] == i + 1)
            if predicted_labels is not None and gold_labels is not None:
                labelled += ph == gh and predicted_labels[index][i] == gold_labels[index][i]
    if not words:
        raise ValueError("no word to score")
    scores = {"uas": directed / words, "uuas": undirected / words}
    if predicted_labels is not None and gold_labels is not None:
        scores["las"] = labelled / words
    return scores


def left_head_share(heads: Sequence[Sequence[int]]) -> float:
    """Share of non-root words whose head is on their left: which way a parser's arcs point, gold-free. Unsupervised
    parsers settle on one convention or the other (determiners heading nouns or nouns heading determiners), and
    this shows which, and when it changes during training."""
    attached = left = 0
    for sentence in heads:
        for position, head in enumerate(sentence, start=1):
            attached += head != 0
            left += 0 < head < position
    if not attached:
        raise ValueError("no attached word to count")
    return left / attached


def gold_subtree_spans(heads: Sequence[int]) -> set[Span]:
    """Spans (two or more words) covered exactly by one word's subtree in a projective tree; a non-projective
    subtree (gaps) covers no span."""
    n = len(heads)
    children: list[list[int]] = [[] for _ in range(n + 1)]
    for i, h in enumerate(heads):
        children[h].append(i + 1)
    spans = set()

    def yield_of(node: int) -> list[int]:
        nodes = [node]
        for child in children[node]:
            nodes.extend(yield_of(child))
        return nodes

    for word in range(1, n + 1):
        covered = yield_of(word)
        low, high = min(covered), max(covered)
        if high - low + 1 == len(covered) and len(covered) > 1:
            spans.add((low - 1, high))
    return spans


def dependency_compatibility(predicted: Sequence[set[Span]], gold_heads: Sequence[Sequence[int]]) -> float:
    """R2D2's compatibility: the share of predicted spans (two or more words) that are exactly one subtree of the
    gold dependency tree."""
    matched = total = 0
    for spans, heads in zip(predicted, gold_heads):
        subtrees = gold_subtree_spans(heads)
        for span in spans:
            if span[1] - span[0] > 1:
                total += 1
                matched += span in subtrees
    if not total:
        raise ValueError("no predicted span of two or more words to score")
    return matched / total
