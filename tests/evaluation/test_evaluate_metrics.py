"""The `evaluate` metric modules load offline from their folders and give the plain functions' scores as
percentages (the CLI's and the cards' unit)."""

import evaluate
import pytest

from hf_structure.evaluation.metrics import EVALUATE_METRICS, attachment_scores, scored_spans, unlabelled_f1

PREDICTED = [[[0, 2], [0, 3], [0, 4]], [[1, 3], [0, 3]]]
GOLD = [[[1, 3], [0, 3], [0, 4]], [[0, 2], [0, 3]]]
LENGTHS = [4, 3]


def test_unlabelled_f1_module_matches_the_function(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    metric = evaluate.load(str(EVALUATE_METRICS / "unlabelled_f1"))
    scores = metric.compute(predictions=PREDICTED, references=GOLD, lengths=LENGTHS)
    sets = lambda rows: [scored_spans({tuple(s) for s in spans}, n) for spans, n in zip(rows, LENGTHS)]  # noqa: E731
    expected = unlabelled_f1(sets(PREDICTED), sets(GOLD))
    assert scores == pytest.approx({key: 100 * value for key, value in expected.items()})
    # sentence 0 keeps [0,2] vs [1,3] (+ [0,3] both): F1 0.5; sentence 1 keeps [1,3] vs [0,2]: F1 0
    assert scores["sentence_f1"] == pytest.approx(25.0)
    assert scores["corpus_f1"] == pytest.approx(100 / 3)


def test_attachment_score_module_matches_the_function(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    metric = evaluate.load(str(EVALUATE_METRICS / "attachment_score"))
    predicted, gold = [[2, 0, 2], [0, 1]], [[2, 0, 1], [2, 0]]
    scores = metric.compute(predictions=predicted, references=gold)
    assert scores == pytest.approx({key: 100 * value for key, value in attachment_scores(predicted, gold).items()})
    assert scores["uas"] == pytest.approx(40.0)
