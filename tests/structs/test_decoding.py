"""The decoders of `hf_structure.structs.decoding` against brute-force enumeration on short sentences.

The references here are written independently of the code under test: trees are checked by reachability from ROOT,
projectivity by "every word under an arc descends from the arc's head", and binary trees are enumerated outright.
"""

import functools
import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_structure.structs import decoding
from hf_structure.structs.decoding import _chu_liu_edmonds_per_sentence, chu_liu_edmonds, cky, eisner
from hf_structure.structs.trees import heads_are_tree
from hf_structure.structs.trees import is_projective as heads_are_projective
from tests.helpers.binary_trees import binary_trees

PROPERTY = settings(max_examples=100, deadline=None, derandomize=True, database=None)
INF = float("inf")
GARBAGE = 1e3  # written wherever a decoder must not look (self-loops, ROOT's head, padding, single-word spans)


pytestmark = pytest.mark.usefixtures("one_thread")


# ---- references ------------------------------------------------------------------------------------------------


def reference_is_tree(heads, single_root=True):
    """Every word reachable from ROOT (so no cycle) following the arcs; with `single_root`, one arc from ROOT."""
    n = len(heads)
    if any(not 0 <= head <= n for head in heads) or (single_root and list(heads).count(0) != 1):
        return False
    reached, frontier = {0}, [0]
    while frontier:
        node = frontier.pop()
        children = [word for word, head in enumerate(heads, 1) if head == node and word not in reached]
        reached.update(children)
        frontier += children
    return len(reached) == n + 1


def reference_is_projective(heads):
    """For a tree: every word strictly between a head and its dependent descends from that head."""

    def descends(word, ancestor):
        while word != 0 and word != ancestor:
            word = heads[word - 1]
        return word == ancestor

    return all(
        descends(between, head)
        for word, head in enumerate(heads, 1)
        for between in range(min(head, word) + 1, max(head, word))
    )


@functools.cache
def all_head_sequences(n):
    """(T, n) every tree over n words (several root children allowed), its single-root and projective flags."""
    trees = [heads for heads in itertools.product(range(n + 1), repeat=n) if reference_is_tree(heads, False)]
    single = torch.tensor([heads.count(0) == 1 for heads in trees])
    projective = torch.tensor([reference_is_projective(heads) for heads in trees])
    return torch.tensor(trees), single, projective


def tree_scores(arcs, trees):
    """Scores of the head sequences `trees` (T, n) under `arcs` (n + 1, n + 1), arcs[dependent, head]."""
    n = trees.shape[1]
    return arcs[torch.arange(1, n + 1), trees].sum(-1)


@functools.cache
def all_binary_trees(start, end):
    """Every binary tree over words [start, end) as its spans of two or more words in pre-order."""
    if end - start < 2:
        return [[]]
    return [
        [(start, end)] + left + right
        for mid in range(start + 1, end)
        for left in all_binary_trees(start, mid)
        for right in all_binary_trees(mid, end)
    ]


# ---- inputs ------------------------------------------------------------------------------------------------------

finite_score = st.floats(-10, 10, allow_nan=False)
# few distinct values, so ties are common, and forbidden arcs
coarse_score = st.sampled_from([-INF, -1.0, 0.0, 0.0, 1.0, 2.0])


@st.composite
def arc_batches(draw, values=finite_score, max_words=5):
    """(scores, mask, lengths): a batch of 1-3 sentences of mixed lengths with garbage wherever nothing may look."""
    lengths = draw(st.lists(st.integers(1, max_words), min_size=1, max_size=3))
    size = max(lengths) + 1
    scores = torch.full((len(lengths), size, size), GARBAGE, dtype=torch.float64)
    mask = torch.zeros(len(lengths), size, dtype=torch.bool)
    for b, n in enumerate(lengths):
        values_b = draw(st.lists(values, min_size=n * (n + 1), max_size=n * (n + 1)))
        scores[b, 1 : n + 1, : n + 1] = torch.tensor(values_b, dtype=torch.float64).view(n, n + 1)
        mask[b, 1 : n + 1] = True
    scores.diagonal(dim1=1, dim2=2).fill_(GARBAGE)
    return scores, mask, lengths


def check_decoder(decode, scores, mask, lengths, single_root, projective):
    """`decode`'s heads: zero at ROOT and padding, and per sentence a best tree of the asked kind when one exists."""
    original = scores.clone()
    heads = decode(scores, mask, single_root=single_root)
    assert torch.equal(scores, original)  # the input is left as it was
    assert heads.dtype == torch.long and heads.shape == mask.shape
    assert not heads[~mask].any()
    for b, n in enumerate(lengths):
        trees, single, is_projective = all_head_sequences(n)
        allowed = (single | (not single_root)) & (is_projective | (not projective))
        best = tree_scores(scores[b, : n + 1, : n + 1], trees[allowed]).max().item()
        if best == -INF:
            continue  # no tree avoids the forbidden arcs: any output will do
        predicted = heads[b, 1 : n + 1].tolist()
        assert reference_is_tree(predicted, single_root)
        assert not projective or reference_is_projective(predicted)
        assert math.isclose(tree_scores(scores[b], heads[b, 1 : n + 1][None]).item(), best, abs_tol=1e-9)


# ---- eisner and chu_liu_edmonds ----------------------------------------------------------------------------------


def batched_chu_liu_edmonds(scores, mask, single_root=True):
    """The batched torch implementation, whatever `chu_liu_edmonds` would choose."""
    return decoding._chu_liu_edmonds_batched(scores, mask, single_root)


def per_sentence_chu_liu_edmonds(scores, mask, single_root=True):
    """The one-cycle-per-call torch recursion, whatever `chu_liu_edmonds` would choose."""
    return _chu_liu_edmonds_per_sentence(scores, mask, single_root)


def compiled_chu_liu_edmonds(scores, mask, single_root=True):
    """`ufal.chu_liu_edmonds` through our conventions (skipped where it is not installed)."""
    if decoding.compiled_chu_liu_edmonds is None:
        pytest.skip("ufal.chu_liu_edmonds is not installed")
    return decoding._chu_liu_edmonds_compiled(scores, mask, single_root)


CHU_LIU_EDMONDS = [chu_liu_edmonds, batched_chu_liu_edmonds, per_sentence_chu_liu_edmonds, compiled_chu_liu_edmonds]
DECODERS = [pytest.param(eisner, True, id="eisner")] + [
    pytest.param(decode, False, id=decode.__name__) for decode in CHU_LIU_EDMONDS
]


@pytest.mark.parametrize("decode, projective", DECODERS)
@pytest.mark.parametrize("single_root", [True, False])
@PROPERTY
@given(batch=arc_batches())
def test_best_tree_random_scores(decode, projective, single_root, batch):
    scores, mask, lengths = batch
    check_decoder(decode, scores, mask, lengths, single_root=single_root, projective=projective)


@pytest.mark.parametrize("decode, projective", DECODERS)
@pytest.mark.parametrize("single_root", [True, False])
@PROPERTY
@given(batch=arc_batches(values=coarse_score))
def test_best_tree_ties_and_forbidden_arcs(decode, projective, single_root, batch):
    scores, mask, lengths = batch
    check_decoder(decode, scores, mask, lengths, single_root=single_root, projective=projective)


def sentence(arcs):
    """A batch of one sentence from its (n + 1, n + 1) arc scores."""
    mask = torch.ones(1, len(arcs), dtype=torch.bool)
    mask[0, 0] = False
    return torch.tensor(arcs, dtype=torch.float64)[None], mask


@pytest.mark.parametrize("decode", [eisner, *CHU_LIU_EDMONDS])
def test_several_root_children_only_without_single_root(decode):
    scores, mask = sentence([[0, 0, 0], [5, 0, 1], [5, 1, 0]])  # both words prefer ROOT by far
    assert decode(scores, mask, single_root=False).tolist() == [[0, 0, 0]]
    assert decode(scores, mask).tolist() in ([[0, 0, 1]], [[0, 2, 0]])


@pytest.mark.parametrize("decode", [eisner, *CHU_LIU_EDMONDS])
def test_forbidden_arcs_force_the_only_tree(decode):
    # only ROOT -> 3 -> 1 -> 2 is allowed (a projective tree)
    scores = torch.full((1, 4, 4), -INF)
    scores[0, 3, 0], scores[0, 1, 3], scores[0, 2, 1] = -5.0, -5.0, -5.0
    mask = torch.tensor([[False, True, True, True]])
    for single_root in (True, False):
        assert decode(scores, mask, single_root=single_root).tolist() == [[0, 3, 1, 0]]
    assert scores.isinf().sum() == 16 - 3  # the input is left as it was


@pytest.mark.parametrize("decode, projective", DECODERS)
def test_one_word_and_all_ties(decode, projective):
    scores, mask = sentence([[0, 0], [-3, 0]])
    assert decode(scores, mask).tolist() == [[0, 0]]
    heads = decode(torch.zeros(1, 6, 6), torch.tensor([[False] + [True] * 5]))[0, 1:].tolist()
    assert reference_is_tree(heads) and (not projective or reference_is_projective(heads))


@pytest.mark.parametrize("decode", [eisner, *CHU_LIU_EDMONDS])
def test_float32_and_gradients_are_accepted(decode):
    scores = torch.randn(2, 7, 7, generator=torch.Generator().manual_seed(0), requires_grad=True)
    mask = torch.tensor([[False] + [True] * 6, [False] * 1 + [True] * 3 + [False] * 3])
    heads = decode(scores, mask)
    assert heads_are_tree(heads[0, 1:].tolist()) and heads_are_tree(heads[1, 1:4].tolist())


def test_chu_liu_edmonds_single_root_matches_trying_each_root_child():
    """Longer sentences than brute force reaches: the reweighting equals forcing each root child in turn."""
    generator = torch.Generator().manual_seed(1)
    for n in range(6, 13):
        scores = torch.randn(1, n + 1, n + 1, generator=generator, dtype=torch.float64)
        scores[0, 1:, 0] += 2  # make several root children attractive
        mask = torch.tensor([[False] + [True] * n])
        heads = chu_liu_edmonds(scores, mask)
        assert reference_is_tree(heads[0, 1:].tolist())
        best = -INF
        for root_child in range(1, n + 1):
            forced = scores.clone()
            forced[0, 1:, 0] = -INF
            forced[0, root_child, 0] = scores[0, root_child, 0]
            forced_heads = chu_liu_edmonds(forced, mask, single_root=False)
            best = max(best, tree_scores(scores[0], forced_heads[0, 1:][None]).item())
        assert math.isclose(tree_scores(scores[0], heads[0, 1:][None]).item(), best, abs_tol=1e-9)


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("decode", [chu_liu_edmonds, batched_chu_liu_edmonds, compiled_chu_liu_edmonds])
def test_chu_liu_edmonds_with_deeply_nested_cycles_matches_the_one_cycle_recursion(decode, single_root):
    """Scores like StructFormer's log p_D: neighbours prefer each other both ways, so each contraction closes a new
    2-cycle and the cycles nest about one level per word; ragged batch, lengths up to 60."""
    generator = torch.Generator().manual_seed(3)
    lengths = [60, 41, 17, 2, 1]
    size = max(lengths) + 1
    positions = torch.arange(size, dtype=torch.float64)
    distance = (positions[:, None] - positions[None, :]).abs()
    scores = -distance + 0.3 * torch.randn(len(lengths), size, size, generator=generator, dtype=torch.float64)
    mask = (torch.arange(size)[None, :] >= 1) & (torch.arange(size)[None, :] <= torch.tensor(lengths)[:, None])
    batched = decode(scores, mask, single_root=single_root)
    reference = _chu_liu_edmonds_per_sentence(scores, mask, single_root=single_root)
    for b, n in enumerate(lengths):
        assert reference_is_tree(batched[b, 1 : n + 1].tolist())
        assert not single_root or batched[b, 1 : n + 1].tolist().count(0) == 1
        mine = tree_scores(scores[b], batched[b, 1 : n + 1][None]).item()
        theirs = tree_scores(scores[b], reference[b, 1 : n + 1][None]).item()
        assert math.isclose(mine, theirs, abs_tol=1e-9)
    assert torch.equal(batched[mask == 0], torch.zeros_like(batched[mask == 0]))


def test_long_sentences_give_trees_ordered_by_constraint():
    """150 words: valid trees, and best multi-root >= best single-root >= best projective single-root."""
    n = 150
    scores = torch.randn(1, n + 1, n + 1, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    mask = torch.tensor([[False] + [True] * n])
    free, single, projective = (
        chu_liu_edmonds(scores, mask, single_root=False),
        chu_liu_edmonds(scores, mask),
        eisner(scores, mask),
    )
    assert reference_is_tree(single[0, 1:].tolist()) and reference_is_tree(projective[0, 1:].tolist())
    assert reference_is_projective(projective[0, 1:].tolist())
    free_score, single_score, projective_score = (
        tree_scores(scores[0], heads[:, 1:]).item() for heads in (free, single, projective)
    )
    assert free_score >= single_score - 1e-9 and single_score >= projective_score - 1e-9


# ---- cky ---------------------------------------------------------------------------------------------------------


@st.composite
def span_batches(draw, max_words=7):
    lengths = draw(st.lists(st.integers(1, max_words), min_size=1, max_size=3))
    size = max(lengths) + 1
    span_scores = torch.full((len(lengths), size, size), GARBAGE, dtype=torch.float64)
    for b, n in enumerate(lengths):
        for start, end in itertools.combinations(range(n + 1), 2):
            if end - start > 1:
                span_scores[b, start, end] = draw(st.one_of(finite_score, st.sampled_from([0.0, 1.0])))
    return span_scores, lengths


@PROPERTY
@given(batch=span_batches())
def test_cky_best_tree(batch):
    span_scores, lengths = batch
    spans, best_scores = cky(span_scores, torch.tensor(lengths))
    assert best_scores.shape == (len(lengths),)
    for b, n in enumerate(lengths):
        trees = all_binary_trees(0, n)
        assert spans[b] in trees  # a binary tree over the sentence, in pre-order
        chart = span_scores[b].tolist()
        best = max(sum(chart[i][j] for i, j in tree) for tree in trees)
        assert math.isclose(best_scores[b].item(), best, abs_tol=1e-9)
        assert math.isclose(sum(chart[i][j] for i, j in spans[b]), best, abs_tol=1e-9)


def test_cky_small_cases():
    span_scores = torch.zeros(3, 4, 4)
    span_scores[0, 0, 2] = 1.0  # ((w0 w1) w2)
    span_scores[0, 0, 3] = 5.0
    span_scores[1, 0, 2] = 7.0  # length 2: the only tree
    spans, best_scores = cky(span_scores, torch.tensor([3, 2, 1]))
    assert spans == [[(0, 3), (0, 2)], [(0, 2)], []]
    assert best_scores.tolist() == [6.0, 7.0, 0.0]


def test_cky_pre_order():
    span_scores = torch.zeros(1, 7, 7)
    for span in [(0, 6), (0, 3), (1, 3), (3, 6), (3, 5)]:
        span_scores[0, span[0], span[1]] = 1.0
    spans, _ = cky(span_scores, torch.tensor([6]))
    assert spans == [[(0, 6), (0, 3), (1, 3), (3, 6), (3, 5)]]


# ---- heads_are_tree and heads_are_projective ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "heads, tree",
    [
        ([0], True),
        ([2, 0, 2], True),
        ([], False),  # no root
        ([0, 0], False),  # two roots
        ([1], False),  # self-loop
        ([0, 2], False),  # self-loop
        ([2, 1], False),  # cycle, no root
        ([0, 3, 2], False),  # cycle beside the root
        ([0, 3], False),  # head out of range
        ([-1, 0], False),
    ],
)
def test_heads_are_tree_hand_cases(heads, tree):
    assert heads_are_tree(heads) is tree


@pytest.mark.parametrize(
    "heads, projective",
    [
        ([2, 0, 2], True),
        ([0, 0], True),  # several root arcs never cross each other
        ([3, 0, 2], False),  # 3 -> 1 crosses ROOT -> 2
        ([0, 4, 1, 1], False),  # 1 -> 3 crosses 4 -> 2
        ([0, 1, 2, 3], True),
    ],
)
def test_heads_are_projective_hand_cases(heads, projective):
    assert heads_are_projective(heads) is projective


@pytest.mark.parametrize("n", range(1, 5))
def test_heads_are_tree_against_reachability(n):
    for heads in itertools.product(range(-1, n + 2), repeat=n):
        assert heads_are_tree(heads) is reference_is_tree(heads), heads


@pytest.mark.parametrize("n", range(1, 6))
def test_heads_are_projective_against_descendants(n):
    trees, _, projective = all_head_sequences(n)
    for heads, expected in zip(trees.tolist(), projective.tolist()):
        assert heads_are_projective(heads) is expected, heads


def test_chu_liu_edmonds_uses_the_compiled_decoder_where_installed(monkeypatch):
    scores = torch.randn(4, 6, 6, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    mask = torch.tensor([[False] + [True] * 5] * 3 + [[False, True, True, False, False, False]])
    used = []

    def compiled(*args):
        used.append(args)
        return "compiled"

    monkeypatch.setattr(decoding, "compiled_chu_liu_edmonds", object())  # as if installed
    monkeypatch.setattr(decoding, "_chu_liu_edmonds_compiled", compiled)
    assert decoding.chu_liu_edmonds(scores, mask) == "compiled" and len(used) == 1
    monkeypatch.setattr(decoding, "compiled_chu_liu_edmonds", None)
    assert torch.equal(decoding.chu_liu_edmonds(scores, mask), batched_chu_liu_edmonds(scores, mask))


def votes_of(tree, teachers):
    """How many of the teachers' spans (of two or more words) `tree` holds, a span counted once per teacher."""
    spans = set(tree)
    return sum(len(spans & {span for span in teacher if span[1] - span[0] > 1}) for teacher in teachers)


@pytest.mark.parametrize("n", range(1, 8))
def test_tree_averaging_finds_a_tree_with_the_most_teacher_votes_of_all_binary_trees(n):
    all_trees = [spans for spans, _ in binary_trees(0, n)]
    generator = torch.Generator().manual_seed(n)
    for _ in range(10):
        teachers = [all_trees[int(torch.randint(len(all_trees), (), generator=generator))] for _ in range(3)]
        [averaged] = decoding.average_trees([[teacher] for teacher in teachers], [n])
        assert sorted(averaged) in [sorted(tree) for tree in all_trees]  # a binary tree over the n words
        assert votes_of(averaged, teachers) == max(votes_of(tree, teachers) for tree in all_trees)


def test_tree_averaging_keeps_one_teachers_binary_tree_and_the_majority_of_three():
    lengths = [5, 2, 1]
    right = [[(0, 5), (1, 5), (2, 5), (3, 5)], [(0, 2)], []]
    left = [[(0, 5), (0, 4), (0, 3), (0, 2)], [(0, 2)], []]
    words = [[(i, i + 1) for i in range(n)] for n in lengths]
    assert decoding.average_trees([right], lengths) == right  # pre-order, as cky gives it
    # words and repeated spans are ignored; two right-branching teachers outvote a left-branching one
    with_words = [spans + extra + spans[:1] for spans, extra in zip(right, words)]
    assert [sorted(t) for t in decoding.average_trees([with_words, left, right], lengths)] == [sorted(t) for t in right]
    # sentences decoded in chunks give what one batch gives
    assert decoding.average_trees([left, right, left], lengths, chunk_size=1) == decoding.average_trees(
        [left, right, left], lengths
    )


def test_tree_averaging_binarises_a_flat_tree_keeping_its_spans():
    [tree] = decoding.average_trees([[[(0, 6), (1, 4)]]], [6])
    assert {(0, 6), (1, 4)} <= set(tree) and len(tree) == 5


def test_tree_averaging_refuses_a_span_outside_the_sentence_and_a_teacher_short_of_trees():
    with pytest.raises(ValueError, match=r"sentence 1: span \(1, 4\) is outside its 3 words"):
        decoding.average_trees([[[(0, 2)], [(1, 4)]]], [2, 3])
    with pytest.raises(ValueError, match="teacher 1 gives 1 trees for 2 sentences"):
        decoding.average_trees([[[], []], [[]]], [1, 1])


def right_branching_order(tree):
    """What `tie_break="right"` maximises among trees of equal votes: the sum of the spans' starts."""
    return sum(start for start, end in tree if end - start > 1)


@pytest.mark.parametrize("tie_break", decoding.TIE_BREAKS)
@pytest.mark.parametrize("n", range(1, 8))
def test_tree_averaging_with_two_teachers_breaks_ties_without_losing_a_vote(n, tie_break):
    all_trees = [spans for spans, _ in binary_trees(0, n)]
    generator = torch.Generator().manual_seed(100 + n)
    for _ in range(10):
        teachers = [all_trees[int(torch.randint(len(all_trees), (), generator=generator))] for _ in range(2)]
        [averaged] = decoding.average_trees([[teacher] for teacher in teachers], [n], tie_break=tie_break)
        most = max(votes_of(tree, teachers) for tree in all_trees)
        assert sorted(averaged) in [sorted(tree) for tree in all_trees]
        assert votes_of(averaged, teachers) == most
        tied = [tree for tree in all_trees if votes_of(tree, teachers) == most]
        if tie_break == "right":
            assert right_branching_order(averaged) == max(map(right_branching_order, tied))
        if tie_break == "left":
            assert sum(end for _, end in averaged) == min(sum(end for _, end in tree) for tree in tied)


def test_tree_averaging_ties_go_where_the_tie_break_says():
    # two teachers that share only the root: right-branching, left-branching and the balanced tree tie (4 votes)
    right = [(0, 4), (1, 4), (2, 4)]
    left = [(0, 4), (0, 3), (0, 2)]
    [[toward_right]] = [decoding.average_trees([[right], [left]], [4], tie_break="right")]
    [[toward_left]] = [decoding.average_trees([[right], [left]], [4], tie_break="left")]
    assert sorted(toward_right) == sorted(right) and sorted(toward_left) == sorted(left)
    # at random: the trees vary with the seed, each as many votes as the most, and a sentence's tree does not
    # depend on the others decoded beside it
    drawn = {tuple(sorted(decoding.average_trees([[right], [left]], [4], "random", seed)[0])) for seed in range(40)}
    assert len(drawn) >= 2 and all(votes_of(tree, [right, left]) == 4 for tree in drawn)
    batch = decoding.average_trees([[left, right], [right, left]], [4, 4], "random", seed=7, chunk_size=1)
    assert batch[1] == decoding.average_trees([[left, left, right], [right, right, left]], [4, 4, 4], "random", 6)[2]
    with pytest.raises(ValueError, match="tie_break must be one of"):
        decoding.average_trees([[right]], [4], tie_break="cky")
