"""Fast-R2D2's merge orders (`structs/merge_orders.py`): trees as merge orders, forced encoding, the parser's
targets drawn from a chart and its loss."""

import math

import pytest
import torch

from hf_structure.structs.merge_orders import (
    encode_along_merges,
    merge_order_from_split_scores,
    sample_chart_trees,
    split_cross_entropy,
    split_entropy,
    split_spans,
)
from hf_structure.structs.pruned_chart import ChartEncoding
from hf_structure.structs.trees import distances_to_spans
from tests.helpers.binary_trees import binary_trees


def sum_compose(left, right):
    """A composition that keeps which words a node covers: states are word indicators, log p their overlap."""
    return left + right, -(left * right).sum(-1)


def indicator_leaves(lengths, n):
    leaves = torch.eye(n).expand(len(lengths), n, n).clone()
    return leaves * (torch.arange(n)[None, :, None] < torch.tensor(lengths)[:, None, None])


@pytest.mark.parametrize("n", range(1, 9))
def test_the_reversed_split_order_of_every_binary_tree_is_a_merge_order_that_builds_it(n):
    trees = list(binary_trees(0, n))
    assert len(trees) == math.comb(2 * (n - 1), n - 1) // n  # the Catalan number: every tree once
    for spans, top_down in trees:
        order = torch.tensor([top_down[::-1]], dtype=torch.long).reshape(1, n - 1)
        # Merging terminals in that order: each merge joins two adjacent terminals into a span of the tree.
        terminals = [(i, i + 1) for i in range(n)]
        for split in order[0].tolist():
            at = next(t for t, (_, end) in enumerate(terminals) if end == split + 1)
            merged = (terminals[at][0], terminals[at + 1][1])
            assert merged in spans
            terminals[at : at + 2] = [merged]
        assert terminals == [(0, n)]
        chart = encode_along_merges(indicator_leaves([n], n), torch.tensor([n]), order, sum_compose)
        built = {(first, last + 1) for first, last in chart.node_span.tolist() if last > first}
        assert built == set(spans)
        assert chart.node_states[chart.roots].tolist() == [[1.0] * n]  # every word once, none twice
        assert chart.node_log_p[chart.roots].item() == 0.0  # no overlapping children anywhere
        assert chart.compositions.tolist() == [n - 1]


def test_split_spans_are_the_nodes_each_split_makes():
    order = torch.tensor([[2, 0, 1, -1], [0, 3, 2, 1]])  # sentence 0 has 4 words, sentence 1 has 5
    first, last = split_spans(order, torch.tensor([4, 5]))
    # Sentence 0: ((w0 w1) (w2 w3)) built as (w2 w3), (w0 w1), then the root at split 1.
    assert first[0, :3].tolist() == [0, 0, 2] and last[0, :3].tolist() == [1, 3, 3]
    # Sentence 1: split 1 merges last, so it is the root; split 2 merges (w2 .. w4) after split 3's (w3 w4).
    assert first[1].tolist() == [0, 0, 2, 3] and last[1].tolist() == [1, 4, 4, 4]


def test_the_merge_order_of_split_scores_builds_their_top_down_tree_ties_included():
    generator = torch.Generator().manual_seed(0)
    lengths = [7, 3, 1, 8, 2]
    n = max(lengths)
    for _ in range(40):
        # Small integers make ties common: the leftmost of equal splits is the higher node, as argmax splits.
        scores = torch.randint(0, 3, (len(lengths), n - 1), generator=generator).float()
        order = merge_order_from_split_scores(scores, torch.tensor(lengths))
        chart = encode_along_merges(indicator_leaves(lengths, n), torch.tensor(lengths), order, sum_compose)
        for b, length in enumerate(lengths):
            expected = {span for span in distances_to_spans(scores[b, : length - 1].tolist()) if span[1] - span[0] > 1}
            nodes = chart.node_span[(chart.node_span[:, 1] > chart.node_span[:, 0])]
            sentence_nodes = [
                (first, last + 1)
                for first, last in nodes.tolist()
                if chart.node_of_span[b, first, last] >= 0
                and bool((chart.node_span[chart.node_of_span[b, first, last]] == torch.tensor([first, last])).all())
            ]
            assert set(sentence_nodes) == expected
            assert order[b, length - 1 :].eq(-1).all()


@pytest.mark.parametrize("order", [[[1, 0, 2], [0, 0, -1]], [[1, 0, 2], [0, 1, 2]], [[1, 0, 2], [0, 2, -1]]])
def test_a_merge_order_that_is_no_permutation_of_the_splits_is_refused_naming_the_sentence(order):
    with pytest.raises(ValueError, match="sentence 1: the merge order .* not a permutation of its 2 splits"):
        encode_along_merges(indicator_leaves([4, 3], 4), torch.tensor([4, 3]), torch.tensor(order), sum_compose)


def three_word_chart():
    """A hand-made chart of one 3-word sentence: leaves 0-2, bigrams 3 = (w0 w1) and 4 = (w1 w2), root 5 with
    candidate splits after w0 (score 0) and after w1 (score log 3): p = 1/4 and 3/4."""
    node_span = torch.tensor([[0, 0], [1, 1], [2, 2], [0, 1], [1, 2], [0, 2]])
    node_of_span = torch.full((1, 3, 3), -1)
    for node, (first, last) in enumerate(node_span.tolist()):
        node_of_span[0, first, last] = node
    chart = ChartEncoding(
        node_states=torch.zeros(6, 1),
        node_log_p=torch.zeros(6),
        node_span=node_span,
        node_split=torch.tensor([-1, -1, -1, 0, 1, 1]),
        node_of_span=node_of_span,
        roots=torch.tensor([5]),
        compositions=torch.tensor([4]),
        node_split_candidates=torch.tensor([[-1, -1]] * 3 + [[0, -1], [1, -1], [0, 1]]),
        node_split_scores=torch.tensor([[0.0, 0.0]] * 5 + [[0.0, math.log(3)]]),
    )
    return chart


def test_trees_drawn_from_a_chart_follow_its_split_distribution_and_are_whole_trees():
    chart = three_word_chart()
    torch.manual_seed(0)
    sentence, first, last, split = sample_chart_trees(chart, num_samples=4000)
    assert sentence.eq(0).all()
    roots = (first == 0) & (last == 2)
    assert roots.sum() == 4000  # one root per tree
    share_after_w1 = split[roots].eq(1).float().mean().item()
    assert abs(share_after_w1 - 0.75) < 0.03
    # Each tree has exactly one more node below its root: (w0 w1) under a split after w1, (w1 w2) otherwise.
    below = ~roots
    assert below.sum() == 4000
    assert sorted(set(zip(first[below].tolist(), last[below].tolist()))) == [(0, 1), (1, 2)]
    assert split[below & (first == 0)].eq(0).all() and split[below & (first == 1)].eq(1).all()


def test_the_split_cross_entropy_is_the_mean_per_tree_negative_log_likelihood_over_the_sentence_length():
    scores = torch.tensor([[0.5, -1.0, 2.0]], requires_grad=True)  # a 4-word sentence
    # Two drawn trees: root split 1 with children (w0 w1) split 0, (w2 w3) split 2; and root split 2, (w0..w2) split
    # 0, (w1 w2) split 1.
    sentence = torch.zeros(6, dtype=torch.long)
    first = torch.tensor([0, 0, 2, 0, 0, 1])
    last = torch.tensor([3, 1, 3, 3, 2, 2])
    split = torch.tensor([1, 0, 2, 2, 0, 1])
    loss = split_cross_entropy(scores, sentence, first, last, split, torch.tensor([4]), num_samples=2)
    s = scores.detach()
    tree_a = -(s[0, 1] - torch.logsumexp(s[0], 0))  # the one-split spans contribute log 1 = 0
    tree_b = -(s[0, 2] - torch.logsumexp(s[0], 0)) - (s[0, 0] - torch.logsumexp(s[0, :2], 0))
    assert torch.isclose(loss, (tree_a + tree_b) / 4 / 2)
    loss.backward()
    assert scores.grad is not None and torch.isfinite(scores.grad).all()


def test_at_temperature_zero_the_target_is_the_charts_best_tree_once_and_a_temperature_flattens_the_draws():
    chart = three_word_chart()  # the root prefers the split after w1, 3 : 1
    sentence, first, last, split = sample_chart_trees(chart, num_samples=50, temperature=0.0)
    assert list(zip(first.tolist(), last.tolist(), split.tolist())) == [(0, 2, 1), (0, 1, 0)]
    torch.manual_seed(0)
    sentence, first, last, split = sample_chart_trees(chart, num_samples=4000, temperature=2.0)
    roots = (first == 0) & (last == 2)
    expected = 3**0.5 / (1 + 3**0.5)  # softmax(log 3 / 2, 0)
    assert abs(split[roots].eq(1).float().mean().item() - expected) < 0.03
    with pytest.raises(ValueError, match="temperature"):
        sample_chart_trees(chart, 1, temperature=-1.0)


def test_the_split_entropy_is_a_fraction_of_the_uniform_distributions():
    chart = three_word_chart()
    p = torch.tensor([0.25, 0.75])
    assert torch.isclose(split_entropy(chart), -(p * p.log()).sum() / math.log(2))  # the only cell with 2 splits
    chart.node_split_scores = torch.tensor([[0.0, 0.0]] * 6)
    assert torch.isclose(split_entropy(chart), torch.tensor(1.0))
    chart.node_split_scores = torch.tensor([[0.0, 0.0]] * 5 + [[0.0, -1e4]])
    assert split_entropy(chart) < 1e-3


def test_a_merge_orders_targets_are_its_trees_nodes_and_their_splits_in_the_form_of_drawn_trees():
    from hf_structure.structs.merge_orders import merge_order_targets

    trees = [list(binary_trees(0, n)) for n in (5, 3, 1)]
    picked = [trees[0][7], trees[1][1], trees[2][0]]
    lengths = torch.tensor([5, 3, 1])
    order = torch.full((3, 4), -1, dtype=torch.long)
    for b, (_, top_down) in enumerate(picked):
        order[b, : len(top_down)] = torch.tensor(top_down[::-1], dtype=torch.long)
    sentence, first, last, split = merge_order_targets(order, lengths)
    found = {(int(b), int(f), int(la) + 1, int(k)) for b, f, la, k in zip(sentence, first, last, split)}
    expected = set()
    for b, (spans, _) in enumerate(picked):
        for start, end in spans:  # the split of a node is where its two children meet
            mid = next(m for m in range(start + 1, end) if {(start, m), (m, end)} <= {*spans, *SINGLE_WORDS})
            expected.add((b, start, end, mid - 1))
    assert found == expected
    # the loss against them is the parser's loss against that tree drawn from a chart
    scores = torch.randn(3, 4)
    assert torch.allclose(
        split_cross_entropy(scores, sentence, first, last, split, lengths, 1),
        torch.stack(
            [
                -torch.log_softmax(scores[b, f:la], -1)[k - f] / lengths[b]  # splits f .. la - 1 of words f .. la
                for b, f, la, k in zip(sentence, first, last, split)
            ]
        ).sum()
        / 3,
    )


SINGLE_WORDS = {(i, i + 1) for i in range(8)}
