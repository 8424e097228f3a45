"""The arc-hybrid dynamic programs of `hf_structure.structs.arc_hybrid` against brute-force enumeration of every
derivation on short sentences."""

import pytest
import torch

from hf_structure.structs.arc_hybrid import LEFT, SHIFT, derivation_score, minimal_feature_dp
from tests.helpers.arc_hybrid_derivations import all_derivations, stack_size_score


@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("length", [1, 2, 3, 4, 5, 6, 7])
def test_minimal_feature_dp_finds_the_best_derivation(length, single_root):
    generator = torch.Generator().manual_seed(length)
    batch, size = 3, length + 3  # one position of padding beyond the buffer end
    transition_scores = torch.randn(batch, size, size, 3, generator=generator)
    arc_scores = torch.randn(batch, size, size, generator=generator)
    best, heads, derivations = minimal_feature_dp(
        transition_scores, arc_scores, torch.full((batch,), length), single_root=single_root
    )
    candidates = all_derivations(length, single_root)
    for b in range(batch):
        scored = [derivation_score(t, transition_scores[b], arc_scores[b], length)[0] for t in candidates]
        assert float(best[b]) == pytest.approx(max(scored), abs=1e-4)
        replayed, replayed_heads = derivation_score(derivations[b], transition_scores[b], arc_scores[b], length)
        assert replayed == pytest.approx(float(best[b]), abs=1e-4)
        assert replayed_heads[1:] == heads[b, 1 : length + 1].tolist()
        if single_root:
            assert replayed_heads[1:].count(0) == 1


def test_sentences_of_different_lengths_in_one_batch_decode_as_alone():
    generator = torch.Generator().manual_seed(0)
    size = 9
    transition_scores = torch.randn(3, size, size, 3, generator=generator)
    arc_scores = torch.randn(3, size, size, generator=generator)
    lengths = torch.tensor([7, 2, 5])
    best, heads, derivations = minimal_feature_dp(transition_scores, arc_scores, lengths)
    for b, n in enumerate(lengths.tolist()):
        window = (slice(b, b + 1), slice(None, n + 2), slice(None, n + 2))
        alone = minimal_feature_dp(transition_scores[window], arc_scores[window], torch.tensor([n]))
        assert float(alone[0][0]) == pytest.approx(float(best[b]))
        assert alone[2][0] == derivations[b] and len(derivations[b]) == 2 * n


def test_derivation_score_rejects_illegal_sequences():
    scores, arcs = torch.zeros(4, 4, 3), torch.zeros(4, 4)
    with pytest.raises(ValueError, match="illegal"):
        derivation_score([LEFT], scores, arcs, 2)
    with pytest.raises(ValueError, match="ends with"):
        derivation_score([SHIFT], scores, arcs, 2)


@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("length", [1, 2, 3, 4, 5, 6, 7])
@pytest.mark.parametrize("buckets", [3, 10])
def test_stack_size_dp_finds_the_best_derivation(length, buckets, single_root):
    """With 3 buckets, stacks deeper than 2 share the last bucket and its chart row: still exact."""
    from hf_structure.structs.arc_hybrid import stack_size_dp

    generator = torch.Generator().manual_seed(10 * length + buckets)
    batch, size = 2, length + 3
    transition_scores = torch.randn(batch, size, buckets, 3, generator=generator)
    matching_scores = torch.randn(batch, size, buckets, size, generator=generator)
    arc_scores = torch.randn(batch, size, size, generator=generator)
    best, heads, derivations = stack_size_dp(
        transition_scores, matching_scores, arc_scores, torch.full((batch,), length), single_root=single_root
    )
    candidates = all_derivations(length, single_root)
    for b in range(batch):
        scored = [
            stack_size_score(t, transition_scores[b], matching_scores[b], arc_scores[b], length) for t in candidates
        ]
        assert float(best[b]) == pytest.approx(max(scored), abs=1e-4)
        replayed = stack_size_score(derivations[b], transition_scores[b], matching_scores[b], arc_scores[b], length)
        assert replayed == pytest.approx(float(best[b]), abs=1e-4)
        _, replayed_heads = derivation_score(
            derivations[b], torch.zeros(size, size, 3), torch.zeros(size, size), length
        )
        assert replayed_heads[1:] == heads[b, 1 : length + 1].tolist()
        if single_root:
            assert replayed_heads[1:].count(0) == 1


def test_cost_augmented_decoding_maximises_score_plus_hamming_cost():
    from hf_structure.structs.arc_hybrid import hamming_augmented_arcs

    length, size = 5, 8
    generator = torch.Generator().manual_seed(3)
    transition_scores = torch.randn(1, size, size, 3, generator=generator)
    arc_scores = torch.randn(1, size, size, generator=generator)
    gold = torch.tensor([[0, 2, 0, 2, 5, 3, 0, 0]])  # heads of words 1..5
    augmented = hamming_augmented_arcs(arc_scores, gold, cost=2.0)
    best, heads, _ = minimal_feature_dp(transition_scores, augmented, torch.tensor([length]))
    expected = []
    for transitions in all_derivations(length):
        score, predicted = derivation_score(transitions, transition_scores[0], arc_scores[0], length)
        wrong = sum(p != g for p, g in zip(predicted[1:], gold[0, 1 : length + 1].tolist()))
        expected.append(score + 2.0 * wrong)
    assert float(best[0]) == pytest.approx(max(expected), abs=1e-4)


def random_tree(length, rng):
    """A random dependency tree with one root (`heads` 1-based, 0 = root); usually non-projective."""
    order = list(range(1, length + 1))
    rng.shuffle(order)
    heads = [0] * length
    for index, word in enumerate(order[1:], start=1):
        heads[word - 1] = order[rng.randrange(index)]
    return heads


@pytest.mark.parametrize("seed", range(40))
def test_projectivize_gives_a_projective_tree_and_keeps_projective_ones(seed):
    import random

    from hf_structure.structs.trees import check_heads, is_projective, projectivize

    rng = random.Random(seed)
    heads = random_tree(rng.randint(1, 12), rng)
    lifted = projectivize(heads)
    check_heads(lifted)
    assert is_projective(lifted)
    assert lifted.index(0) == heads.index(0)
    if is_projective(heads):
        assert lifted == heads
    else:  # lifting only moves dependents up to an ancestor of their head
        for old, new in zip(heads, lifted):
            while old != new and old != 0:
                old = heads[old - 1]
            assert old == new


def test_projectivize_lifts_the_crossing_arc_to_the_grandparent():
    from hf_structure.structs.trees import projectivize

    heads = [2, 0, 4, 2, 3]  # word 5 hangs on 3 across 4, which 3 does not dominate
    assert projectivize(heads) == [2, 0, 4, 2, 4]


@pytest.mark.parametrize("seed", range(30))
def test_the_oracle_derivation_is_what_the_stack_size_dp_finds_when_it_scores_best(seed):
    """Scores that reward exactly the oracle's steps, matchings and arcs (as `stack_size_events` names them) make the
    DP return the oracle's heads with every event rewarded: the training targets and the decoder agree on every
    convention. (Stack sizes are not bucketed here, so that no two events of a derivation share a score.)"""
    import random

    from hf_structure.structs.arc_hybrid import stack_size_dp, stack_size_events, static_oracle
    from hf_structure.structs.trees import projectivize

    rng = random.Random(seed)
    length = rng.randint(1, 12)
    buckets = length + 2
    heads = projectivize(random_tree(length, rng))
    transitions = static_oracle(heads)
    _, replayed = derivation_score(
        transitions, torch.zeros(length + 2, length + 2, 3), torch.zeros(length + 2, length + 2), length
    )
    assert replayed[1:] == heads
    steps, matchings = stack_size_events(transitions, length, buckets)
    size = length + 2
    transition_scores = torch.zeros(1, size, buckets, 3)
    matching_scores = torch.zeros(1, size, buckets, size)
    arc_scores = torch.zeros(1, size, size)
    for front, bucket, action in steps:
        transition_scores[0, front, bucket, action] = 1
    for word, bucket, front in matchings:
        matching_scores[0, word, bucket, front] = 1
    for d, h in enumerate(heads, start=1):
        arc_scores[0, h, d] = 1
    best, found, derivations = stack_size_dp(
        transition_scores, matching_scores, arc_scores, torch.tensor([length]), single_root=True
    )
    assert float(best[0]) == pytest.approx(len(steps) + len(matchings) + length)
    assert found[0, 1 : length + 1].tolist() == heads


def test_the_oracle_rejects_non_projective_trees():
    from hf_structure.structs.arc_hybrid import static_oracle

    with pytest.raises(ValueError, match="not projective"):
        static_oracle([2, 0, 4, 2, 3])
