"""Trivial trees that every unsupervised parser must beat, scored with the same scorer."""

import random

from ..structs.trees import Span

BASELINES = ("right-branching", "left-branching", "random")


def right_branching(n: int) -> tuple[list[Span], list[int]]:
    """(w1 (w2 (w3 ...))); each word headed by its left neighbour, the first word the root."""
    return [(k, n) for k in range(n - 1)], [k for k in range(n)]


def left_branching(n: int) -> tuple[list[Span], list[int]]:
    """(((... w1) w2) w3); each word headed by its right neighbour, the last word the root."""
    return [(0, k) for k in range(2, n + 1)], [k + 2 for k in range(n - 1)] + [0] if n else []


def random_tree(n: int, rng: random.Random) -> tuple[list[Span], list[int]]:
    """A binary tree from random distances (Algorithm 1) and heads from random heights (Algorithm 2)."""
    from ..structs.trees import distances_heights_to_tree

    spans, heads = distances_heights_to_tree([rng.random() for _ in range(n - 1)], [rng.random() for _ in range(n)])
    return [s for s in spans if s[1] - s[0] > 1], heads


def baseline_parses(name: str, lengths: list[int], seed: int = 0) -> list[tuple[list[Span], list[int]]]:
    if name == "right-branching":
        return [right_branching(n) for n in lengths]
    if name == "left-branching":
        return [left_branching(n) for n in lengths]
    if name == "random":
        rng = random.Random(seed)
        return [random_tree(n, rng) for n in lengths]
    raise ValueError(f"unknown baseline {name!r}; expected one of {BASELINES}")
