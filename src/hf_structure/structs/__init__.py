"""Parsing algorithms that several models share, as small tested functions (batched torch where it matters).

- `trees`: conversions between syntactic distances, spans, heads, bracketed strings, nltk trees and CoNLL-U, and
  the check that heads form a tree.
- `decoding`: maximum spanning trees over arc scores (projective: Eisner; non-projective: Chu-Liu/Edmonds) and the
  best binary tree over span scores (CKY).

A model's Hub code cannot import these: it carries generated copies (`# Copied from`, `scripts/fix_copies.py`).
"""

from .decoding import chu_liu_edmonds, cky, eisner
from .trees import (
    Span,
    bracketed_to_spans,
    check_heads,
    distances_heights_to_tree,
    distances_to_spans,
    heads_are_tree,
    heads_to_spans,
    is_projective,
    spans_to_bracketed,
    tree_to_heads,
)

__all__ = [
    "Span",
    "bracketed_to_spans",
    "check_heads",
    "chu_liu_edmonds",
    "cky",
    "distances_heights_to_tree",
    "distances_to_spans",
    "eisner",
    "heads_are_tree",
    "heads_to_spans",
    "is_projective",
    "spans_to_bracketed",
    "tree_to_heads",
]
