"""The arc-hybrid dynamic programs of `hf_structure.structs.arc_hybrid` against brute-force enumeration of every
derivation on short sentences."""

import pytest
import torch

from hf_structure.structs.arc_hybrid import LEFT, RIGHT, SHIFT, derivation_score, minimal_feature_dp


def all_derivations(length):
    """Every legal arc-hybrid transition sequence of a sentence of `length` words (stack [0], buffer 1..n)."""
    found = []

    def extend(stack, front, transitions):
        if stack == [0] and front == length + 1:
            found.append(list(transitions))
            return
        if front <= length:
            extend(stack + [front], front + 1, transitions + [SHIFT])
        if len(stack) > 1:
            if front <= length:
                extend(stack[:-1], front, transitions + [LEFT])
            extend(stack[:-1], front, transitions + [RIGHT])

    extend([0], 1, [])
    return found


@pytest.mark.parametrize("length", [1, 2, 3, 4, 5, 6])
def test_minimal_feature_dp_finds_the_best_derivation(length):
    generator = torch.Generator().manual_seed(length)
    batch, size = 3, length + 3  # one position of padding beyond the buffer end
    transition_scores = torch.randn(batch, size, size, 3, generator=generator)
    arc_scores = torch.randn(batch, size, size, generator=generator)
    best, heads, derivations = minimal_feature_dp(transition_scores, arc_scores, torch.full((batch,), length))
    candidates = all_derivations(length)
    for b in range(batch):
        scored = [derivation_score(t, transition_scores[b], arc_scores[b], length)[0] for t in candidates]
        assert float(best[b]) == pytest.approx(max(scored), abs=1e-4)
        replayed, replayed_heads = derivation_score(derivations[b], transition_scores[b], arc_scores[b], length)
        assert replayed == pytest.approx(float(best[b]), abs=1e-4)
        assert replayed_heads[1:] == heads[b, 1 : length + 1].tolist()


def test_sentences_of_different_lengths_in_one_batch_decode_as_alone():
    generator = torch.Generator().manual_seed(0)
    size = 9
    transition_scores = torch.randn(3, size, size, 3, generator=generator)
    arc_scores = torch.randn(3, size, size, generator=generator)
    lengths = torch.tensor([7, 2, 5])
    best, heads, derivations = minimal_feature_dp(transition_scores, arc_scores, lengths)
    for b, n in enumerate(lengths.tolist()):
        alone = minimal_feature_dp(transition_scores[b : b + 1, : n + 2, : n + 2], arc_scores[b : b + 1, : n + 2, : n + 2],
                                   torch.tensor([n]))
        assert float(alone[0][0]) == pytest.approx(float(best[b]))
        assert alone[2][0] == derivations[b] and len(derivations[b]) == 2 * n


def test_derivation_score_rejects_illegal_sequences():
    scores, arcs = torch.zeros(4, 4, 3), torch.zeros(4, 4)
    with pytest.raises(ValueError, match="illegal"):
        derivation_score([LEFT], scores, arcs, 2)
    with pytest.raises(ValueError, match="ends with"):
        derivation_score([SHIFT], scores, arcs, 2)
