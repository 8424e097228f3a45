"""StructFormer Algorithms 1-3 and the tree format conversions of `hf_structure.structs.trees`."""

import itertools

import nltk
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_structure.structs.trees import (
    binary_children,
    bracketed_to_spans,
    check_heads,
    distances_heights_to_tree,
    distances_to_spans,
    heads_are_tree,
    heads_to_spans,
    is_projective,
    nltk_tree_to_spans,
    spans_to_bracketed,
    spans_to_distances,
    spans_to_nltk_tree,
    tree_to_heads,
)
from tests.helpers.binary_trees import binary_trees

PROPERTY = settings(derandomize=True, max_examples=200, deadline=None, database=None)

# Distances/heights: arbitrary floats (infinities included, NaN excluded: it has no order), mixed with small
# integers so that ties are frequent.
number = st.one_of(st.floats(allow_nan=False), st.integers(0, 3).map(float))


@st.composite
def distances_and_heights(draw, max_words=16):
    n = draw(st.integers(1, max_words))
    return draw(st.lists(number, min_size=n - 1, max_size=n - 1)), draw(st.lists(number, min_size=n, max_size=n))


@st.composite
def nested_spans(draw, max_words=14):
    """Words and a laminar (nesting, not necessarily binary) set of spans: a random binary tree minus some nodes."""
    n = draw(st.integers(1, max_words))
    tree = distances_to_spans(draw(st.lists(number, min_size=n - 1, max_size=n - 1)))
    keep = draw(st.lists(st.booleans(), min_size=len(tree), max_size=len(tree)))
    words = draw(st.lists(st.text("abcxyz", min_size=1, max_size=4), min_size=n, max_size=n))
    return words, [span for span, kept in zip(tree, keep) if kept]


def multi_word(spans, n):
    """What the bracketed and nltk forms keep: spans of two or more words, the whole sentence included."""
    return sorted({(s, e) for s, e in spans if e - s > 1} | ({(0, n)} if n > 1 else set()), key=lambda s: (s[0], -s[1]))


def crossing(a, b):
    return a[0] < b[0] < a[1] < b[1] or b[0] < a[0] < b[1] < a[1]


# --- Algorithm 1: distances -> binary constituency tree ------------------------------------------------------------


def top_down_spans(distances):
    """Algorithm 1 as the paper states it: search each span for its largest split (leftmost of equals), recurse."""
    spans, pending = [], [(0, len(distances) + 1)]
    while pending:
        start, end = pending.pop()
        spans.append((start, end))
        if end - start > 1:
            window = distances[start : end - 1]
            split = start + window.index(max(window)) + 1
            pending += [(split, end), (start, split)]
    return spans


@PROPERTY
@given(st.lists(st.integers(-3, 3) | number, max_size=40))
def test_algorithm1_stack_construction_equals_top_down_search(distances):
    # Small integers make ties common: the leftmost of equal splits must win, in the same span order.
    assert distances_to_spans(distances) == top_down_spans(distances)


def test_algorithm1_worked_example():
    # 4 words, distances [1, 3, 2]: the largest gap (3) is between words 1 and 2 -> ((w0 w1) (w2 w3)).
    spans = distances_to_spans([1, 3, 2])
    assert spans[0] == (0, 4)  # root first
    assert set(spans) == {(0, 4), (0, 2), (2, 4), (0, 1), (1, 2), (2, 3), (3, 4)}
    assert len(spans) == 7
    assert spans_to_bracketed(["w0", "w1", "w2", "w3"], spans) == "((w0 w1) (w2 w3))"


def test_algorithm1_other_shapes():
    # Increasing distances -> left-branching; decreasing -> right-branching.
    assert {s for s in distances_to_spans([1, 2, 3]) if s[1] - s[0] > 1} == {(0, 4), (0, 3), (0, 2)}
    assert {s for s in distances_to_spans([3, 2, 1]) if s[1] - s[0] > 1} == {(0, 4), (1, 4), (2, 4)}
    # Only the order matters, not the scale or the sign.
    assert set(distances_to_spans([-5.0, 0.25, -1e9])) == set(distances_to_spans([1, 3, 0]))


def test_algorithm1_ties_split_leftmost():
    # All equal: the leftmost split every time, i.e. right-branching.
    assert {s for s in distances_to_spans([0, 0, 0]) if s[1] - s[0] > 1} == {(0, 4), (1, 4), (2, 4)}
    assert set(distances_to_spans([2, 2])) == {(0, 3), (0, 1), (1, 3), (1, 2), (2, 3)}
    # A tie between non-adjacent maxima: first split after word 0, then (1, 4) splits at its own maximum.
    assert {s for s in distances_to_spans([5, 1, 5]) if s[1] - s[0] > 1} == {(0, 4), (1, 4), (1, 3)}
    assert {s for s in distances_to_spans([1, 5, 5]) if s[1] - s[0] > 1} == {(0, 4), (0, 2), (2, 4)}


def test_algorithm1_short_sentences():
    assert distances_to_spans([]) == [(0, 1)]
    assert distances_to_spans([0.7]) == [(0, 2), (0, 1), (1, 2)]


@PROPERTY
@given(st.integers(1, 20).flatmap(lambda n: st.lists(number, min_size=n - 1, max_size=n - 1)))
def test_algorithm1_gives_a_valid_binary_tree(distances):
    n = len(distances) + 1
    spans = distances_to_spans(distances)
    assert spans[0] == (0, n)
    assert len(spans) == len(set(spans)) == 2 * n - 1
    assert {s for s in spans if s[1] - s[0] == 1} == {(i, i + 1) for i in range(n)}  # every word, once
    internal = [s for s in spans if s[1] - s[0] > 1]
    assert len(internal) == n - 1
    assert all(0 <= s < e <= n for s, e in spans)
    assert not any(crossing(a, b) for a in spans for b in spans)
    children = binary_children(spans)
    assert set(children) == set(internal)
    for (start, end), (left, right) in children.items():
        split = left[1]
        assert left[0] == start and right == (split, end) and left in spans and right in spans
        # The split is at the largest distance of the node, the leftmost one among ties.
        window = distances[start : end - 1]
        assert distances[split - 1] == max(window)
        assert all(d < distances[split - 1] for d in distances[start : split - 1])


# --- Algorithm 2: binary tree + heights -> dependency heads ---------------------------------------------------------


def test_algorithm2_two_words():
    spans = distances_to_spans([0.0])
    assert tree_to_heads(spans, [1.0, 2.0]) == [2, 0]  # the higher word is the parent
    assert tree_to_heads(spans, [2.0, 1.0]) == [0, 1]
    assert tree_to_heads(spans, [1.0, 1.0]) == [2, 0]  # tie: the right child's parent wins


def test_algorithm2_worked_example():
    # ((w0 w1) (w2 w3)) with heights [1, 2, 4, 3]:
    #   (w0 w1): w1 (2) beats w0 (1)        -> w0 <- w1
    #   (w2 w3): w2 (4) beats w3 (3)        -> w3 <- w2
    #   root:    w2 (4) beats w1 (2)        -> w1 <- w2, w2 is the root
    spans = distances_to_spans([1, 3, 2])
    assert tree_to_heads(spans, [1, 2, 4, 3]) == [2, 3, 0, 3]


def test_algorithm2_tie_at_an_inner_node_goes_right():
    # Same tree, heights [1, 2, 2, 1]: at the root the two parents w1 and w2 tie (2 = 2) -> w2 (right) wins.
    # (A `>=` test would instead make w1 the root: [2, 0, 2, 3].)
    spans = distances_to_spans([1, 3, 2])
    assert tree_to_heads(spans, [1, 2, 2, 1]) == [2, 3, 0, 3]


def test_algorithm2_right_branching_tree():
    spans = distances_to_spans([3, 2, 1])  # (w0 (w1 (w2 w3)))
    assert tree_to_heads(spans, [4, 3, 2, 1]) == [0, 1, 2, 3]  # each word under its left neighbour
    assert tree_to_heads(spans, [1, 2, 3, 4]) == [4, 4, 4, 0]  # the last word heads everything


def test_algorithm2_short_sentences():
    assert tree_to_heads([(0, 1)], [0.3]) == [0]
    assert tree_to_heads([], []) == []


def test_binary_children_rejects_a_non_binary_tree():
    with pytest.raises(ValueError, match="exactly two"):
        binary_children([(0, 3), (0, 1), (1, 2), (2, 3)])  # a flat ternary node


# --- Algorithm 3: both at once ---------------------------------------------------------------------------------------


def test_algorithm3_worked_example():
    spans, heads = distances_heights_to_tree([1, 3, 2], [1, 2, 4, 3])
    assert set(spans) == {(0, 4), (0, 2), (2, 4), (0, 1), (1, 2), (2, 3), (3, 4)}
    assert heads == [2, 3, 0, 3]


def test_algorithm3_short_sentences_and_errors():
    assert distances_heights_to_tree([], []) == ([], [])
    assert distances_heights_to_tree([], [0.5]) == ([(0, 1)], [0])
    spans, heads = distances_heights_to_tree([0.1], [0.2, 0.1])
    assert set(spans) == {(0, 2), (0, 1), (1, 2)} and heads == [0, 1]
    with pytest.raises(ValueError, match="3 heights need 2 distances, got 1"):
        distances_heights_to_tree([0.1], [1, 2, 3])
    with pytest.raises(ValueError):
        distances_heights_to_tree([0.1, 0.2], [1, 2])


@PROPERTY
@given(distances_and_heights())
def test_algorithm3_gives_a_projective_tree_consistent_with_the_constituents(case):
    distances, heights = case
    n = len(heights)
    spans, heads = distances_heights_to_tree(distances, heights)
    assert set(spans) == set(distances_to_spans(distances))
    assert len(heads) == n
    check_heads(heads)  # one root, heads in range, no cycle
    assert is_projective(heads)
    # Algorithm 2's defining property: inside every constituent exactly one word (its lexical parent) is attached
    # outside it, and that word is the highest of the constituent (ties -> the rightmost such parent).
    for start, end in spans:
        outside = [i for i in range(start, end) if not start < heads[i] <= end]
        assert len(outside) == 1
        assert heights[outside[0]] == max(heights[start:end])
    # The root is the highest word of the sentence.
    assert heights[heads.index(0)] == max(heights)


# --- Dependency-tree checks ------------------------------------------------------------------------------------------


def test_check_heads_accepts_trees():
    for heads in ([0], [2, 0], [0, 1, 2], [2, 3, 0, 3], [3, 4, 0, 3]):
        check_heads(heads)  # raises on anything but a tree


@pytest.mark.parametrize(
    ("heads", "message"),
    [
        ([0, 0], "exactly one root, found 2"),
        ([2, 1], "exactly one root, found 0"),
        ([2, 3, 2, 0], "cycle"),
        ([0, 5], "invalid head 5"),
        ([0, -1], "invalid head -1"),
        ([0, 2], "word 2 has an invalid head 2"),  # attached to itself
    ],
)
def test_check_heads_errors(heads, message):
    with pytest.raises(ValueError, match=message):
        check_heads(heads)


@pytest.mark.parametrize(
    ("heads", "projective"),
    [
        ([], True),
        ([0], True),
        ([2, 0, 2], True),
        ([0, 1, 1], True),
        ([2, 3, 0, 3], True),
        ([3, 4, 0, 3], False),  # arcs 1-3 and 2-4 cross
        ([3, 0, 2], False),  # arc 1-3 passes over the root word 2 (crosses the root arc 0-2)
        ([0, 4, 1, 1], False),  # arcs 1-3 and 2-4 cross
    ],
)
def test_is_projective(heads, projective):
    assert is_projective(heads) is projective


# --- Conversions -----------------------------------------------------------------------------------------------------

WORDS = ["the", "old", "man", "sat"]


def test_spans_to_bracketed_hand_example():
    # Length-1 spans, the whole sentence and duplicates are implied/ignored; order does not matter.
    spans = [(1, 3), (0, 3), (0, 4), (0, 1), (1, 3)]
    assert spans_to_bracketed(WORDS, spans) == "((the (old man)) sat)"
    assert spans_to_bracketed(WORDS, []) == "(the old man sat)"
    assert spans_to_bracketed(["a"], [(0, 1)]) == "(a)"
    # A non-binary node.
    assert spans_to_bracketed(["a", "b", "c", "d"], [(0, 3)]) == "((a b c) d)"


def test_bracketed_to_spans_hand_example():
    assert bracketed_to_spans("((the (old man)) sat)") == (WORDS, [(0, 4), (0, 3), (1, 3)])
    assert bracketed_to_spans("( (a b c) d )") == (["a", "b", "c", "d"], [(0, 4), (0, 3)])
    assert bracketed_to_spans("(a)") == (["a"], [])
    assert bracketed_to_spans("((a) b)") == (["a", "b"], [(0, 2)])  # length-1 brackets are not spans


@pytest.mark.parametrize(("text", "message"), [("((a b) c", "1 '\\(' never closed"), ("(a b))", "extra '\\)'")])
def test_bracketed_to_spans_unbalanced(text, message):
    with pytest.raises(ValueError, match=message):
        bracketed_to_spans(text)


@PROPERTY
@given(nested_spans())
def test_bracketed_round_trip(case):
    words, spans = case
    text = spans_to_bracketed(words, spans)
    assert bracketed_to_spans(text) == (words, multi_word(spans, len(words)))
    # And back again: a fixed point.
    assert spans_to_bracketed(*bracketed_to_spans(text)) == text


def test_spans_to_nltk_tree_hand_example():
    tree = spans_to_nltk_tree(WORDS, [(0, 3), (1, 3), (2, 3)])
    assert tree == nltk.Tree.fromstring("(X (X the (X old man)) sat)")
    assert spans_to_nltk_tree(["a", "b", "c"], [], label="S") == nltk.Tree("S", ["a", "b", "c"])
    assert spans_to_nltk_tree(["a"], [(0, 1)]) == nltk.Tree("X", ["a"])


def test_nltk_tree_to_spans_of_a_labelled_tree():
    # Pre-terminals and unary nodes over one word are not spans; labels are ignored.
    tree = nltk.Tree.fromstring("(S (NP (DT the) (JJ old) (NN man)) (VP (VBD sat) (PP (IN on) (NP (NN it)))))")
    words, spans = nltk_tree_to_spans(tree)
    assert words == ["the", "old", "man", "sat", "on", "it"]
    assert spans == [(0, 6), (0, 3), (3, 6), (4, 6)]


@PROPERTY
@given(nested_spans())
def test_nltk_round_trip(case):
    words, spans = case
    tree = spans_to_nltk_tree(words, spans)
    assert tree.leaves() == words
    assert nltk_tree_to_spans(tree) == (words, multi_word(spans, len(words)))


def _all_trees(n):
    for heads in itertools.product(range(n + 1), repeat=n):
        if heads_are_tree(heads):
            yield list(heads)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_heads_to_spans_gives_each_words_yield_exactly_for_projective_trees(n):
    for heads in _all_trees(n):
        descendants = [{word} for word in range(n)]
        for word in range(n):
            node = heads[word]
            while node:
                descendants[node - 1].add(word)
                node = heads[node - 1]
        contiguous = all(max(d) - min(d) + 1 == len(d) for d in descendants)
        assert contiguous == is_projective(heads), heads
        if contiguous:
            assert set(heads_to_spans(heads)) == {(min(d), max(d) + 1) for d in descendants}
        else:
            with pytest.raises(ValueError, match="not projective"):
                heads_to_spans(heads)


def test_words_with_brackets_read_back_from_the_bracketed_string():
    words = ["Great", "service", ":)", "(", "really", ")", "f(x)"]
    spans = [(0, 7), (0, 2), (3, 6)]
    text = spans_to_bracketed(words, spans)
    assert text == "((Great service) :-RRB- (-LRB- really -RRB-) f-LRB-x-RRB-)"
    assert bracketed_to_spans(text) == (words, sorted(spans, key=lambda s: (s[0], -s[1])))


@pytest.mark.parametrize("n", range(1, 8))
def test_spans_to_distances_inverts_distances_to_spans_for_every_binary_tree(n):
    for spans, _ in binary_trees(0, n):
        distances = spans_to_distances(spans, n)
        assert len(distances) == n - 1
        assert {span for span in distances_to_spans(distances) if span[1] - span[0] > 1} == set(spans)
        assert spans_to_distances([span for span in spans if span != (0, n)], n) == distances  # root implied


def test_spans_to_distances_refuses_spans_that_are_not_one_binary_tree():
    with pytest.raises(ValueError, match="not one binary tree over 4 words"):
        spans_to_distances([(0, 4), (0, 2), (1, 3)], 4)  # crossing
    with pytest.raises(ValueError, match="not one binary tree over 4 words"):
        spans_to_distances([(0, 4)], 4)  # flat
    with pytest.raises(ValueError, match=r"span \(2, 6\) is outside a sentence of 4 words"):
        spans_to_distances([(2, 6)], 4)
