"""Scores of predicted trees against gold trees (`hf_structure.evaluation.metrics`) on hand-computed cases."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_structure.evaluation.metrics import (
    attachment_scores,
    compound_pcfg_gold,
    dependency_compatibility,
    gold_subtree_spans,
    label_recall,
    left_head_share,
    scored_spans,
    sentence_f1,
    unlabelled_f1,
)


def onlstm_f1(model_out: set, std_out: set) -> float:
    """The per-sentence F1 of the ON-LSTM / StructFormer evaluation script (`test_phrase_grammar.py`), verbatim. The
    compound-PCFG script that the R2D2 papers score with (`compare_tree.py`) has the very same lines: in both, a
    sentence without gold spans scores 0 unless nothing is predicted either, so one sentence-F1 serves both."""
    overlap = model_out.intersection(std_out)
    prec = float(len(overlap)) / (len(model_out) + 1e-8)
    reca = float(len(overlap)) / (len(std_out) + 1e-8)
    if len(std_out) == 0:
        reca = 1.0
        if len(model_out) == 0:
            prec = 1.0
    return 2 * prec * reca / (prec + reca + 1e-8)


def test_scored_spans():
    spans = [(0, 5), (0, 1), (1, 5), (1, 3), (3, 4), (1, 3)]
    assert scored_spans(spans, 5) == {(1, 5), (1, 3)}  # no single words, no whole sentence, no duplicates
    assert scored_spans([(0, 2)], 2) == set()
    assert scored_spans([(0, 2)], 3) == {(0, 2)}


def test_sentence_f1_conventions():
    assert sentence_f1(set(), set()) == 1.0  # nothing to find, nothing predicted
    assert sentence_f1({(0, 2)}, set()) == 0.0  # recall counts as 1, precision 0
    assert sentence_f1(set(), {(0, 2)}) == 0.0
    assert sentence_f1({(0, 2)}, {(0, 2)}) == 1.0
    assert sentence_f1({(0, 2), (2, 4)}, {(1, 3)}) == 0.0
    # P = 1/2, R = 1/3 -> F1 = 2 * (1/6) / (5/6) = 0.4
    assert sentence_f1({(0, 2), (2, 4)}, {(0, 2), (0, 3), (1, 3)}) == pytest.approx(0.4)
    # P = 1, R = 1/2 -> 2/3
    assert sentence_f1({(0, 2)}, {(0, 2), (2, 4)}) == pytest.approx(2 / 3)


span = st.tuples(st.integers(0, 5), st.integers(0, 5)).map(lambda t: (min(t), max(t) + 1))


@settings(derandomize=True, max_examples=200, deadline=None, database=None)
@given(st.sets(span, max_size=6), st.sets(span, max_size=6))
def test_sentence_f1_matches_the_onlstm_script(predicted, gold):
    assert sentence_f1(predicted, gold) == pytest.approx(onlstm_f1(predicted, gold), abs=1e-6)


def test_compound_pcfg_gold_keeps_a_repeated_whole_sentence_span():
    # (S (VP go home)) with the subject trace removed: compare_tree.py drops one of its two whole-sentence spans
    gold = compound_pcfg_gold(set(), 2, repeated_whole_span=True)
    assert gold == {(0, 2)}
    assert sentence_f1(set(), gold) == 0.0 and sentence_f1(set(), set()) == 1.0
    assert compound_pcfg_gold({(1, 3)}, 3, repeated_whole_span=False) == {(1, 3)}
    assert compound_pcfg_gold(set(), 1, repeated_whole_span=True) == set()


def test_unlabelled_f1_sentence_and_corpus_averages_differ():
    predicted = [{(0, 2)}, {(1, 3)}, set()]
    gold = [{(0, 2)}, {(0, 2), (2, 4), (4, 6), (0, 4)}, set()]
    scores = unlabelled_f1(predicted, gold)
    # Sentence level: F1 = 1, 0 and 1 (an empty sentence counts as perfect) -> 2/3.
    assert scores["sentence_f1"] == pytest.approx(2 / 3)
    # Corpus level: 1 of 2 predicted spans correct, 1 of 5 gold found -> P 1/2, R 1/5, F1 = 0.2 / 0.7.
    assert scores["corpus_f1"] == pytest.approx(2 / 7)
    assert set(scores) == {"sentence_f1", "corpus_f1"}


def test_unlabelled_f1_edge_cases():
    assert unlabelled_f1([set()], [set()]) == {"sentence_f1": 1.0, "corpus_f1": 0.0}
    assert unlabelled_f1([{(0, 2)}], [{(0, 2)}]) == {"sentence_f1": 1.0, "corpus_f1": 1.0}
    with pytest.raises(ValueError, match="2 predicted trees for 1 gold trees"):
        unlabelled_f1([set(), set()], [set()])
    with pytest.raises(ValueError, match="no sentence"):
        unlabelled_f1([], [])


def test_label_recall():
    gold = [
        {(0, 2): {"NP"}, (2, 5): {"VP"}, (3, 5): {"NP", "ADJP"}},
        {(0, 3): {"NP"}, (1, 3): {"PP"}, (4, 6): {"S"}},
    ]
    predicted = [{(0, 2), (3, 5), (1, 4)}, {(1, 3), (2, 6)}]
    recall = label_recall(predicted, gold, ["NP", "VP", "PP", "ADJP", "SBAR"])
    # NP: (0,2) yes, (3,5) yes, (0,3) no -> 2/3; VP 0/1; PP 1/1; ADJP 1/1 (shares its span with an NP);
    # SBAR never occurs in the gold -> left out; S is not asked for -> left out.
    assert recall == pytest.approx({"NP": 2 / 3, "VP": 0.0, "PP": 1.0, "ADJP": 1.0})
    assert set(recall) == {"NP", "VP", "PP", "ADJP"}


def test_attachment_scores_hand_cases():
    gold = [[2, 0, 2]]  # w1 <- w2 -> w3, w2 the root
    assert attachment_scores(gold, gold) == {"uas": 1.0, "uuas": 1.0}
    # w1 made the root (wrong both ways); w2 under w1 (reversed arc: right undirected); w3 right.
    assert attachment_scores([[0, 1, 2]], gold) == pytest.approx({"uas": 1 / 3, "uuas": 2 / 3})
    # gold w1 <- w2 -> w3 -> w4; predicted w1 <- w3 <- w4 <- w2: only the root directed, plus w3-w4 undirected.
    assert attachment_scores([[3, 0, 4, 2]], [[2, 0, 2, 3]]) == pytest.approx({"uas": 1 / 4, "uuas": 2 / 4})


def test_attachment_scores_root_counts_once():
    # Two words, the arc reversed: the arc itself is right undirected, but the predicted root is not the gold root,
    # and the root attachment is scored like any other word.
    assert attachment_scores([[0, 1]], [[2, 0]]) == {"uas": 0.0, "uuas": 0.5}
    assert attachment_scores([[0]], [[0]]) == {"uas": 1.0, "uuas": 1.0}
    # Gold chain w1 -> w2 -> w3 (w1 the root); predicted w2 the root over w1 and w3: both arcs right undirected,
    # the predicted root (w2, whose gold head is w1) wrong, whatever word 0 would be.
    assert attachment_scores([[2, 0, 2]], [[0, 1, 2]]) == pytest.approx({"uas": 1 / 3, "uuas": 2 / 3})


def test_attachment_scores_pool_words_not_sentences():
    # 1 of 4 words right overall (not the mean of 1/1 and 0/3).
    scores = attachment_scores([[0], [0, 1, 2]], [[0], [3, 3, 0]])
    assert scores["uas"] == pytest.approx(1 / 4)
    # Undirected: w1 (root) right; sentence 2: w1 root vs gold 3 -> no; w2 under w1 -> no (gold 3); w3 under w2 ->
    # gold w2 is under w3 -> yes.
    assert scores["uuas"] == pytest.approx(2 / 4)


def test_attachment_scores_labelled():
    gold, gold_labels = [[2, 0, 2]], [["nsubj", "root", "obj"]]
    predicted = [[2, 0, 1]]
    scores = attachment_scores(predicted, gold, [["nsubj", "root", "obj"]], gold_labels)
    assert scores == pytest.approx({"uas": 2 / 3, "uuas": 2 / 3, "las": 2 / 3})
    scores = attachment_scores(predicted, gold, [["det", "root", "obj"]], gold_labels)
    assert scores["las"] == pytest.approx(1 / 3)  # right head, wrong label -> not counted
    assert "las" not in attachment_scores(predicted, gold)


def test_attachment_scores_errors():
    with pytest.raises(ValueError, match="1 predicted trees for 2 gold trees"):
        attachment_scores([[0]], [[0], [0]])
    with pytest.raises(ValueError, match="sentence 0: 2 predicted heads for 1 words"):
        attachment_scores([[2, 0]], [[0]])
    with pytest.raises(ValueError, match="no word"):
        attachment_scores([[]], [[]])


def test_left_head_share():
    # Left-neighbour chain: every attached word looks left. Right-neighbour chain: none does. Roots are not counted.
    assert left_head_share([[0, 1, 2, 3]]) == 1.0
    assert left_head_share([[2, 3, 4, 0]]) == 0.0
    # w1 <- w2 (root) -> w4 -> w3, and w1 <- w2 (root): of the 4 attached words only w4 looks left.
    assert left_head_share([[2, 0, 4, 2], [2, 0]]) == pytest.approx(1 / 4)
    with pytest.raises(ValueError, match="no attached word"):
        left_head_share([[0]])


def test_gold_subtree_spans_projective():
    # w1 <- w2 (root) -> w4 -> w3: subtrees {1,2,3,4} and {3,4}; single words are not spans.
    assert gold_subtree_spans([2, 0, 4, 2]) == {(0, 4), (2, 4)}
    assert gold_subtree_spans([0]) == set()
    assert gold_subtree_spans([0, 1, 2]) == {(0, 3), (1, 3)}  # a chain: every suffix


def test_gold_subtree_spans_non_projective():
    # w3 is the root over w1 and w4; w2 hangs from w4: the subtree of w4 is {2, 4}, with a gap -> no span.
    assert gold_subtree_spans([3, 4, 0, 3]) == {(0, 4)}


def test_dependency_compatibility():
    predicted = [
        {(2, 4), (0, 2), (1, 2)},  # (2,4) is a subtree, (0,2) is not, (1,2) is one word (ignored)
        {(1, 4)},  # words 2-4 of the non-projective tree: not a subtree
    ]
    heads = [[2, 0, 4, 2], [3, 4, 0, 3]]
    assert dependency_compatibility(predicted, heads) == pytest.approx(1 / 3)
    assert dependency_compatibility([{(0, 4), (2, 4)}], [[2, 0, 4, 2]]) == 1.0
    with pytest.raises(ValueError, match="no predicted span"):
        dependency_compatibility([{(0, 1)}], [[0]])
