"""Parsing algorithms that several models share, as small tested functions (batched torch where it matters).

- `trees`: conversions between syntactic distances, spans, heads, bracketed strings, nltk trees and CoNLL-U, and
  the check that heads form a tree.
- `decoding`: maximum spanning trees over arc scores (projective: Eisner; non-projective: Chu-Liu/Edmonds), the
  best binary tree over span scores (CKY), and tree averaging over several teachers' trees (CKY over span votes).
- `transitions`: arc-standard + SWAP and its static oracle.
- `pruned_chart`: R2D2's pruned CKY chart over a learned composition function.
- `merge_orders`: Fast-R2D2's trees as merge orders (from a top-down parser's split scores), encoding along one tree,
  and the parser's training targets: trees drawn from a chart, or a given tree's.
- `arc_hybrid`: exact DP over arc-hybrid derivations (minimal features, O(n^3); stack sizes, O(n^4)) and
  cost-augmented arc scores.

Models import them like normal Python; the Hub code generated from a model (`scripts/modular_converter.py`) carries
each definition it uses, marked `# Copied from`.
"""

from .arc_hybrid import hamming_augmented_arcs, minimal_feature_dp, stack_size_dp
from .decoding import TIE_BREAKS, average_trees, chu_liu_edmonds, cky, eisner
from .merge_orders import encode_along_merges, merge_order_from_split_scores
from .pruned_chart import ChartEncoding, encode_pruned_chart
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
    spans_to_distances,
    tree_to_heads,
)

__all__ = [
    "TIE_BREAKS",
    "ChartEncoding",
    "Span",
    "average_trees",
    "bracketed_to_spans",
    "check_heads",
    "chu_liu_edmonds",
    "cky",
    "distances_heights_to_tree",
    "distances_to_spans",
    "eisner",
    "encode_along_merges",
    "encode_pruned_chart",
    "hamming_augmented_arcs",
    "heads_are_tree",
    "heads_to_spans",
    "is_projective",
    "merge_order_from_split_scores",
    "minimal_feature_dp",
    "spans_to_bracketed",
    "spans_to_distances",
    "stack_size_dp",
    "tree_to_heads",
]
