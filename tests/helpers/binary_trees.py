"""Every binary tree over a span of words, for tests that must hold for all trees up to a length."""


def binary_trees(start: int, end: int):
    """Every binary tree over words start .. end - 1: (spans of two or more words, splits in top-down pre-order;
    split k lies between words k and k + 1)."""
    if end - start == 1:
        yield [], []
        return
    for split in range(start + 1, end):
        for left_spans, left_splits in binary_trees(start, split):
            for right_spans, right_splits in binary_trees(split, end):
                yield [(start, end), *left_spans, *right_spans], [split - 1, *left_splits, *right_splits]
