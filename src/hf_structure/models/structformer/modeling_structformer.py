"""StructFormer: joint unsupervised induction of dependency and constituency structure from masked language
modelling (Shen, Tay, Zheng, Bahri, Metzler, Courville; ACL 2021).

A parser network reads the word embeddings and predicts a syntactic distance for every split between adjacent
words and a syntactic height for every word. Together they give a differentiable dependency distribution
p_D(j|i) ("j is the parent of i"), which gates every self-attention head. Constituency trees are read off the
distances (Algorithm 1), dependency heads off p_D (Eq. 18).

This file is self-contained (it imports only torch and transformers) so that a saved model folder loads with
`trust_remote_code=True` where `hf_structure` is not installed. Functions marked `# Copied from` are generated from
`hf_structure.structs` by `scripts/fix_copies.py`; a test fails when they differ.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from .configuration_structformer import HEAD_DECODINGS, StructFormerConfig

try:  # UDPipe's compiled Chu-Liu/Edmonds where installed (hf_structure depends on it); the torch code below otherwise
    from ufal.chu_liu_edmonds import chu_liu_edmonds as compiled_chu_liu_edmonds
except ImportError:
    compiled_chu_liu_edmonds = None


# The widest spread of head logits within a sentence that p_D computes in float32 (exp(60) ~ 1e26 < 3e38).
FLOAT32_LOGIT_RANGE = 60.0


def split_mask_from(mask: torch.Tensor) -> torch.Tensor:
    """`(B, L)` bool: True at position k when k and k+1 are both real words (k is a split point)."""
    return F.pad(mask[:, 1:], (0, 1), value=False) & mask


def calibrate_distances(
    distances: torch.Tensor, heights: torch.Tensor, mask: torch.Tensor, per_batch: bool = False
) -> torch.Tensor:
    """Lower all distances of a sentence so that no constituent is cut off from its context (App. A.2, Eqs. 19-21).

    For every span [l, r] other than the whole sentence, the margin is by how much both boundary distances exceed
    the largest height inside the span; the largest margin of the sentence is subtracted from its distances
    (as the paper writes it), or with `per_batch` the largest margin of the whole batch (as the authors' code
    does).
    """
    length = distances.size(1)
    index = torch.arange(length, device=distances.device)
    upper = index[:, None] <= index[None, :]  # [l, r]: l <= r
    neg = torch.finfo(heights.dtype).min
    # Largest height in [l, r], as a running maximum over r of the heights from l on.
    span_heights = heights[:, None, :].masked_fill(~upper, neg).cummax(dim=-1).values
    split_mask = split_mask_from(mask)
    big = torch.finfo(distances.dtype).max / 4
    boundary = distances.masked_fill(~split_mask, big)  # the sentence ends act as infinitely high splits
    left_boundary = F.pad(boundary[:, :-1], (1, 0), value=big)  # distance of split l-1
    margin = torch.minimum(
        torch.relu(left_boundary[:, :, None] - span_heights), torch.relu(boundary[:, None, :] - span_heights)
    )
    whole_sentence = (index[:, None] == 0) & ~split_mask[:, None, :]  # [0, r] with r the last word (or a pad)
    valid = upper & mask[:, None, :] & ~whole_sentence
    margin = margin.masked_fill(~valid, 0.0).flatten(1).amax(dim=-1)
    if per_batch:
        margin = margin.amax().expand_as(margin)
    return distances - margin[:, None]


def dependency_distribution(
    distances: torch.Tensor,
    heights: torch.Tensor,
    mask: torch.Tensor,
    split_scale: torch.Tensor,
    head_scale: torch.Tensor,
    precision: str = "auto",
) -> torch.Tensor:
    """The parent distribution p_D(j|i) of Eqs. 6-12, exactly, in O(B L^2) memory.

    Word i's constituent is [l, r] with probability pL(l|i) pR(r|i) (Eqs. 7-10); its parent is then j in [l, r]
    with probability softmax_j(h_j * head_scale) over the span (Eq. 11). The authors build the B x L x L x L
    span tensors. Here the sum over spans is reorganised: with w_j = exp(a_j) and Z[l, r] = sum_{k in [l, r]} w_k,

        p_D(j|i) = w_j sum_{l <= min(i,j)} sum_{r >= max(i,j)} pL(l|i) pR(r|i) / Z[l, r],

    and because pL(l|i) = 0 for l > i and pR(r|i) = 0 for r < i, the inner sums are two (B, L, L) matrix products
    followed by a prefix sum over l (for j <= i) or a suffix sum over r (for j >= i).

    Args:
        distances: `(B, L)`, distance of the split between words k and k+1 at position k (entries that are not
            splits are ignored).
        heights: `(B, L)` syntactic heights.
        mask: `(B, L)` bool, True at real words.
        split_scale, head_scale: positive scalars, 1/mu_1 and 1/mu_2.
        precision: `"auto"` computes in float32 when every sentence's head logits (h_j * head_scale) span at most
            `FLOAT32_LOGIT_RANGE`, so that no w_j or 1/Z can underflow or overflow, and in float64 otherwise;
            `"float64"` always computes in float64.

    Returns:
        `(B, L, L)` with p_D(j|i) at [b, i, j]; zero on the diagonal and at pads. Rows need not sum to one.
    """
    if precision not in ("auto", "float64"):
        raise ValueError(f"precision must be 'auto' or 'float64', got {precision!r}")
    dtype = distances.dtype
    # With logits centred on the sentence's largest, w_j >= exp(-spread) and 1/Z <= exp(spread): float32 holds both
    # while the spread is small (trained models stay within a few units); float64 holds them up to about 700.
    logits = (heights * head_scale).detach()
    spread = logits.masked_fill(~mask, float("-inf")).amax(-1) - logits.masked_fill(~mask, float("inf")).amin(-1)
    narrow = bool((spread <= FLOAT32_LOGIT_RANGE).all())
    compute = torch.float32 if precision == "auto" and dtype != torch.float64 and narrow else torch.float64
    distances, heights = distances.to(compute), heights.to(compute)
    length = distances.size(1)
    index = torch.arange(length, device=distances.device)
    split_mask = split_mask_from(mask)

    # gamma[b, i, k] = p(word i's constituent extends across split k), Eq. 6; nothing crosses a sentence end.
    gamma = torch.sigmoid((heights[:, :, None] - distances[:, None, :]) * split_scale)
    gamma = gamma.masked_fill(~split_mask[:, None, :], 0.0)
    left_of_i = index[None, :] < index[:, None]  # [i, k]: k < i
    # p(l in C(i)) for l <= i is the minimum of gamma over splits l..i-1 (Eq. 7); 1 for l >= i.
    inside_left = torch.where(left_of_i, gamma, 1.0).flip(-1).cummin(-1).values.flip(-1)
    p_left = inside_left - F.pad(inside_left[..., :-1], (1, 0), value=0.0)  # Eq. 8
    # p(r in C(i)) for r >= i is the minimum of gamma over splits i..r-1; 1 for r <= i.
    inside_right = torch.where(left_of_i, 1.0, gamma).cummin(-1).values
    inside_right = F.pad(inside_right[..., :-1], (1, 0), value=1.0)
    p_right = inside_right - F.pad(inside_right[..., 1:], (0, 1), value=0.0)  # Eq. 9

    # Span normalisers in the log domain, centred per sentence so that w_j <= 1.
    logits = (heights * head_scale).masked_fill(~mask, -1e4)
    centre = logits.amax(dim=-1, keepdim=True).detach()
    logits = logits - centre
    upper = index[:, None] <= index[None, :]  # [l, r]: l <= r
    log_z = torch.logcumsumexp(logits[:, None, :].masked_fill(~upper, -1e4), dim=-1)
    span_ok = upper & mask[:, :, None] & mask[:, None, :]
    # exp(-log Z) only where the span is real: elsewhere the exponent is masked before exp so no inf appears.
    inv_z = torch.exp(-log_z.masked_fill(~span_ok, 0.0)).masked_fill(~span_ok, 0.0)
    weights = torch.exp(logits).masked_fill(~mask, 0.0)

    with torch.autocast(distances.device.type, enabled=False):  # autocast would run these in bfloat16
        right_sums = torch.bmm(p_right, inv_z.transpose(1, 2))  # [i, l] = sum_r pR(r|i) / Z[l, r]
        left_sums = torch.bmm(p_left, inv_z)  # [i, r] = sum_l pL(l|i) / Z[l, r]
    parent_before = torch.cumsum(p_left * right_sums, dim=-1)  # j <= i: sum over l <= j
    parent_after = torch.flip(torch.cumsum(torch.flip(p_right * left_sums, [-1]), dim=-1), [-1])  # j >= i
    p_parent = weights[:, None, :] * torch.where(left_of_i, parent_before, parent_after)
    keep = mask[:, :, None] & mask[:, None, :] & ~torch.eye(length, dtype=torch.bool, device=mask.device)
    return p_parent.masked_fill(~keep, 0.0).to(dtype)


# Copied from hf_structure.data.tokenization.encode_words
def encode_words(sentences, tokenizer, max_words: int):
    """Tokenise pre-split sentences for a word-level model (one token per word): a padded `BatchEncoding` of
    `input_ids` and `attention_mask` tensors. Raises ValueError naming the first sentence that is empty, longer than
    `max_words`, or not one token per word. Self-contained: copied into word-level models' Hub code."""
    for index, words in enumerate(sentences):
        if not words:
            raise ValueError(f"sentence {index}: no word")
        if len(words) > max_words:
            raise ValueError(f"sentence {index}: {len(words)} words; this model accepts at most {max_words}")
    encoded = tokenizer(
        [list(words) for words in sentences],
        is_split_into_words=True,
        padding=True,
        return_tensors="pt",
        return_token_type_ids=False,
    )
    for index, (words, length) in enumerate(zip(sentences, encoded["attention_mask"].sum(dim=-1).tolist())):
        if length != len(words):
            raise ValueError(
                f"sentence {index}: the tokenizer made {length} tokens of {len(words)} words; this model needs "
                "one token per word"
            )
    return encoded


# Copied from hf_structure.structs.trees.distances_to_spans
def distances_to_spans(distances: Sequence[float]) -> list[tuple[int, int]]:
    """Algorithm 1: split top-down at the largest distance. Returns the binary tree's constituents as 0-based
    `(start, end)` spans, end exclusive, root first (then each left subtree before its right), words (length-1 spans)
    included. Ties go to the leftmost split, as `argmax` does.

    The tree is the splits' Cartesian tree, built left to right with a stack in O(n) (searching each span for its
    largest split is O(n^2) on skewed trees): a split's left child is the last split it pops, and it becomes the
    right child of the split left on the stack; a split pops only strictly smaller ones, so of equal splits the
    leftmost ends on top."""
    left, right = [-1] * len(distances), [-1] * len(distances)
    stack: list[int] = []
    for split, distance in enumerate(distances):
        while stack and distances[stack[-1]] < distance:
            left[split] = stack.pop()
        if stack:
            right[stack[-1]] = split
        stack.append(split)
    spans = []
    pending = [(stack[0] if stack else -1, 0, len(distances) + 1)]  # (split at the top of the span or -1, span)
    while pending:
        split, start, end = pending.pop()
        spans.append((start, end))
        if split >= 0:
            pending.append((right[split], split + 1, end))
            pending.append((left[split], start, split + 1))
    return spans


# Copied from hf_structure.structs.decoding.eisner
def eisner(scores: torch.Tensor, mask: torch.Tensor, single_root: bool = True) -> torch.Tensor:
    """Best projective dependency tree of each sentence (Eisner's algorithm), batched; see the module conventions.

    With `single_root`, exactly one word attaches to ROOT: ROOT may only close a span at the last word, so its only
    arc is the one that spans the whole sentence. Uses `_eisner_backtrack`.
    """
    scores = scores.detach()
    batch_size, seq_len, _ = scores.shape
    lengths = mask.sum(-1)
    arcs = scores.transpose(1, 2)  # arcs[b, h, d]: score of the arc h -> d
    # Charts over pairs (h, e) of a head h and the far end e of its span, e on either side of h:
    # complete[b, h, e]: h and its dependents between h and e (those have all their own dependents);
    # incomplete[b, h, e]: the same with the arc h -> e, whose own dependents on the far side are still missing.
    complete = scores.new_full(scores.shape, float("-inf"))
    complete.diagonal(dim1=1, dim2=2).fill_(0)
    incomplete = torch.full_like(complete, float("-inf"))
    complete_split = torch.zeros(scores.shape, dtype=torch.long, device=scores.device)
    incomplete_split = torch.zeros_like(complete_split)
    for width in range(1, seq_len):
        starts = torch.arange(seq_len - width, device=scores.device)
        ends = starts + width
        splits = starts[:, None] + torch.arange(width, device=scores.device)  # r in [start, end), one row a span
        # incomplete: complete(start -> r) + complete(end -> r + 1) + the arc between start and end
        best, arg = (complete[:, starts[:, None], splits] + complete[:, ends[:, None], splits + 1]).max(-1)
        incomplete[:, starts, ends] = best + arcs[:, starts, ends]
        incomplete[:, ends, starts] = best + arcs[:, ends, starts]
        incomplete_split[:, starts, ends] = incomplete_split[:, ends, starts] = starts + arg
        # complete to the left: incomplete(end -> r) + complete(r -> start), r in [start, end)
        best, arg = (incomplete[:, ends[:, None], splits] + complete[:, splits, starts[:, None]]).max(-1)
        complete[:, ends, starts] = best
        complete_split[:, ends, starts] = starts + arg
        # complete to the right: incomplete(start -> r) + complete(r -> end), r in (start, end]
        best, arg = (incomplete[:, starts[:, None], splits + 1] + complete[:, splits + 1, ends[:, None]]).max(-1)
        complete[:, starts, ends] = best
        complete_split[:, starts, ends] = starts + 1 + arg
        if single_root:
            complete[:, 0, width].masked_fill_(lengths != width, float("-inf"))
    heads = torch.zeros(batch_size, seq_len, dtype=torch.long)
    for b, (length, complete_b, incomplete_b) in enumerate(
        zip(lengths.tolist(), complete_split.tolist(), incomplete_split.tolist())
    ):
        heads[b, : length + 1] = torch.tensor(_eisner_backtrack(complete_b, incomplete_b, length))
    return heads.to(scores.device)


# Copied from hf_structure.structs.decoding._eisner_backtrack
def _eisner_backtrack(complete_split: list, incomplete_split: list, length: int) -> list[int]:
    """Heads (ROOT's 0 first) of the tree that `eisner`'s split charts of one sentence store."""
    heads = [0] * (length + 1)
    stack = [(0, length, True)]  # (head, far end, complete?) of the spans still to read
    while stack:
        head, end, is_complete = stack.pop()
        if head == end:
            continue
        if is_complete:
            split = complete_split[head][end]
            stack += [(head, split, False), (split, end, True)]
        else:
            heads[end] = head
            split = incomplete_split[head][end]
            left, right = min(head, end), max(head, end)
            stack += [(left, split, True), (right, split + 1, True)]
    return heads


# Copied from hf_structure.structs.decoding.chu_liu_edmonds
def chu_liu_edmonds(scores: torch.Tensor, mask: torch.Tensor, single_root: bool = True) -> torch.Tensor:
    """Best (non-projective) dependency tree of each sentence, by Chu-Liu/Edmonds; see the module conventions.

    With `single_root`, every finite arc to ROOT is lowered by more than any two trees' scores can differ, so a tree
    with one root arc beats every tree with more (the reweighting of Stanojević & Cohen 2021): the best tree found is
    the best single-root tree whenever one exists. Computed in float64. Decodes with the compiled decoder where
    `ufal.chu_liu_edmonds` is installed (on the PTB dev sample's p_D scores, 0.12 s against 0.87 s for the batched
    torch code, with the same heads); otherwise batches of one or two sentences one sentence at a time and larger
    batches with the batched torch code. Uses `_chu_liu_edmonds_compiled`, `_chu_liu_edmonds_per_sentence`,
    `_sentence_arcs`, `_max_arborescence`, `_find_cycle`, `_chu_liu_edmonds_batched`, `_contract_cycles`,
    `_first_true` and `_expand_cycles`.
    """
    if compiled_chu_liu_edmonds is not None:
        return _chu_liu_edmonds_compiled(scores, mask, single_root)
    if len(scores) < 3:  # a batched level costs about as much as one sentence's whole recursion
        return _chu_liu_edmonds_per_sentence(scores, mask, single_root)
    return _chu_liu_edmonds_batched(scores, mask, single_root)


# Copied from hf_structure.structs.decoding._chu_liu_edmonds_compiled
def _chu_liu_edmonds_compiled(scores: torch.Tensor, mask: torch.Tensor, single_root: bool) -> torch.Tensor:
    """`chu_liu_edmonds` one sentence at a time by `ufal.chu_liu_edmonds` (which reads NaN as a missing arc); a
    sentence without any tree goes to `_chu_liu_edmonds_per_sentence`. Uses `_sentence_arcs` and
    `_chu_liu_edmonds_per_sentence`."""
    heads = torch.zeros(scores.shape[:2], dtype=torch.long)
    for b, length in enumerate(mask.sum(-1).tolist()):
        arcs = _sentence_arcs(scores, b, length, single_root)
        sentence_heads, score = compiled_chu_liu_edmonds(arcs.masked_fill_(~torch.isfinite(arcs), float("nan")).numpy())
        if score == float("-inf"):  # no tree: the torch decoder's in-range answer
            heads[b] = _chu_liu_edmonds_per_sentence(scores[b : b + 1], mask[b : b + 1], single_root)[0].cpu()
        else:
            heads[b, 1 : length + 1] = torch.tensor(sentence_heads[1:])
    return heads.to(scores.device)


# Copied from hf_structure.structs.decoding._chu_liu_edmonds_batched
def _chu_liu_edmonds_batched(scores: torch.Tensor, mask: torch.Tensor, single_root: bool) -> torch.Tensor:
    """`chu_liu_edmonds` for a whole batch at once in torch.

    Every node takes its best head; all cycles of all sentences are then contracted at once, in place (a cycle
    becomes its smallest node; an arc entering it at v scores the arc minus v's arc on the cycle), until no cycle
    remains; unwinding the levels breaks each cycle where its chosen entering arc points. Each level is a few tensor
    operations over the whole batch and keeps only the rows of its cycles' nodes for the unwinding, so memory stays
    O(B L^2) however deep the cycles nest (arc scores from p_D nest about one level per word). Uses
    `_contract_cycles`, `_first_true` and `_expand_cycles`.
    """
    batch_size, size, _ = scores.shape
    # One extra node (index `size`, never alive) absorbs the writes of padded entries of the per-level tables.
    nodes = torch.arange(size + 1, device=scores.device)
    alive = torch.nn.functional.pad(mask, (0, 1), value=False)
    alive[:, 0] = True  # ROOT is a node of every sentence's graph
    arcs = torch.nn.functional.pad(scores.detach().to(torch.float64), (0, 1, 0, 1), value=float("-inf"))
    arcs.masked_fill_(~(alive[:, :, None] & alive[:, None, :]), float("-inf"))
    arcs[:, nodes, nodes] = float("-inf")
    arcs[:, 0] = float("-inf")  # ROOT takes no head
    if single_root:
        finite = torch.isfinite(arcs)
        highest = arcs.masked_fill(~finite, float("-inf")).amax((1, 2))
        lowest = arcs.masked_fill(~finite, float("inf")).amin((1, 2))
        spread = torch.where(finite.flatten(1).any(-1), highest - lowest, 0.0)
        arcs[:, 1:, 0] -= (mask.sum(-1) * spread + 1)[:, None]
    levels = []
    while True:
        best_scores, best_heads = arcs.max(-1)
        best_heads = best_heads.masked_fill(~alive, 0)
        level = _contract_cycles(arcs, alive, best_scores, best_heads)
        if level is None:
            break
        levels.append(level)
        alive = level["alive"]
    heads = best_heads
    for level in reversed(levels):
        heads = _expand_cycles(level, heads)
    return heads[:, :size].masked_fill(~mask, 0)


# Copied from hf_structure.structs.decoding._chu_liu_edmonds_per_sentence
def _chu_liu_edmonds_per_sentence(scores: torch.Tensor, mask: torch.Tensor, single_root: bool) -> torch.Tensor:
    """`chu_liu_edmonds` one sentence at a time, contracting one cycle per recursive call: cheaper than the batched
    levels for a batch of one or two sentences. Uses `_sentence_arcs`, `_max_arborescence` and `_find_cycle`."""
    heads = torch.zeros(scores.shape[:2], dtype=torch.long)
    for b, length in enumerate(mask.sum(-1).tolist()):
        heads[b, : length + 1] = _max_arborescence(_sentence_arcs(scores, b, length, single_root))
    return heads.to(scores.device)


# Copied from hf_structure.structs.decoding._sentence_arcs
def _sentence_arcs(scores: torch.Tensor, b: int, length: int, single_root: bool) -> torch.Tensor:
    """Sentence b's arcs (ROOT and its `length` words) as a new float64 CPU tensor, no self-loops, no head for ROOT;
    with `single_root`, root arcs lowered as `chu_liu_edmonds` says."""
    arcs = scores[b, : length + 1, : length + 1].detach().to("cpu", torch.float64, copy=True)  # edited below
    arcs.fill_diagonal_(float("-inf"))
    arcs[0] = float("-inf")  # ROOT takes no head
    finite = arcs[torch.isfinite(arcs)]
    if single_root and len(finite):
        arcs[1:, 0] -= length * (finite.max() - finite.min()) + 1
    return arcs


# Copied from hf_structure.structs.decoding._max_arborescence
def _max_arborescence(arcs: torch.Tensor) -> torch.Tensor:
    """Heads of the best spanning arborescence rooted at node 0 (Chu-Liu/Edmonds, one cycle contracted per call).

    `arcs[d, h]` scores h -> d, float64 with -inf for missing arcs, the diagonal and row 0 included. Every node takes
    its best head; if that closes a cycle, the cycle becomes one node of a smaller graph whose best arborescence
    says where the cycle is entered (breaking it there) and which of its nodes head the outside words.
    Uses `_find_cycle` (and itself).
    """
    heads = arcs.argmax(-1)
    cycle = _find_cycle(heads.tolist())
    if not cycle:
        return heads
    cycle = torch.tensor(cycle)
    on_cycle = torch.zeros(len(heads), dtype=torch.bool)
    on_cycle[cycle] = True
    rest = (~on_cycle).nonzero().squeeze(1)  # the other nodes, ROOT first (it is never on a cycle)
    size = len(rest)  # the contracted cycle is node `size` of the smaller graph
    contracted = arcs.new_full((size + 1, size + 1), float("-inf"))
    contracted[:size, :size] = arcs[rest[:, None], rest]
    exit_scores, exit_heads = arcs[rest[:, None], cycle].max(-1)  # best head on the cycle of each other node
    contracted[:size, size] = exit_scores
    # entering the cycle at v replaces v's cycle arc: gain = arc into v - v's arc on the cycle
    entry_scores, entries = (arcs[cycle[:, None], rest] - arcs[cycle, heads[cycle]][:, None]).max(0)
    contracted[size, :size] = entry_scores
    sub_heads = _max_arborescence(contracted)
    # clamp: the head index of nodes headed by the cycle is replaced by `where`, but must be a valid index first
    heads[rest] = torch.where(sub_heads[:size] == size, cycle[exit_heads], rest[sub_heads[:size].clamp(max=size - 1)])
    entry_head = sub_heads[size]
    heads[cycle[entries[entry_head]]] = rest[entry_head]
    return heads


# Copied from hf_structure.structs.decoding._find_cycle
def _find_cycle(heads: list[int]) -> list[int]:
    """The nodes of one cycle of the graph node -> heads[node] (node 0, ROOT, is never on one), or [] if none."""
    state = [0] * len(heads)  # 0: not seen, 1: on the path being walked, 2: leads to ROOT or a known cycle-free node
    state[0] = 2
    for start in range(1, len(heads)):
        path, node = [], start
        while state[node] == 0:
            state[node] = 1
            path.append(node)
            node = heads[node]
        if state[node] == 1:  # the walk came back onto itself
            return path[path.index(node) :]
        for node in path:
            state[node] = 2
    return []


# Copied from hf_structure.structs.decoding._contract_cycles
def _contract_cycles(arcs: torch.Tensor, alive: torch.Tensor, best_scores: torch.Tensor, best_heads: torch.Tensor):
    """One level of `chu_liu_edmonds`: contract, in `arcs`, every cycle of the graphs node -> best_heads[node] into
    its smallest node. Returns what unwinding the level needs (a dict), or None when no sentence has a cycle."""
    batch_size, size = best_heads.shape  # size counts the extra node
    nodes = torch.arange(size, device=arcs.device)
    # A walk of `size` steps from any node ends on a cycle (or at ROOT, which points to itself): the nodes reached
    # that way are exactly the cycles' nodes. Repeated squaring of the head map makes the walk log2(size) gathers.
    walk = best_heads  # after k squarings: the node 2^k steps on from each node
    smallest = nodes.expand(batch_size, size)  # the smallest node among the first 2^k steps from each node
    for _ in range((size - 1).bit_length()):
        smallest = torch.minimum(smallest, smallest.gather(1, walk))
        walk = walk.gather(1, walk)
    on_cycle = torch.zeros_like(alive).scatter_(1, walk, True) & alive
    on_cycle[:, 0] = False
    if not on_cycle.any():
        return None
    representative = torch.where(on_cycle, smallest, nodes)
    cycle_nodes, valid = _first_true(on_cycle, fill=size - 1)  # (B, K)
    cycle_reps, _ = _first_true(on_cycle & (representative == nodes), fill=size - 1)  # (B, C)
    num_cycles = cycle_reps.size(1)
    rank = (on_cycle & (representative == nodes)).long().cumsum(1) - 1  # a cycle's index among its sentence's
    cycle_of = torch.where(valid, rank.gather(1, representative.gather(1, cycle_nodes)), num_cycles)  # (B, K)
    # Entering a cycle at v replaces v's arc on the cycle: the gain is the arc minus that arc.
    cycle_arc = torch.where(valid, best_scores.gather(1, cycle_nodes), 0.0)
    cycle_arc = torch.where(torch.isfinite(cycle_arc), cycle_arc, 0.0)
    rows = arcs.gather(1, cycle_nodes[:, :, None].expand(-1, -1, size)) - cycle_arc[:, :, None]  # (B, K, size)
    # Columns: an arc into a cycle from u is u's best arc into any of its nodes (that node is remembered).
    into = arcs.gather(2, cycle_nodes[:, None, :].expand(-1, size, -1))  # (B, size, K)
    slot = cycle_of[:, None, :].expand(-1, size, -1)
    best_into = into.new_full((batch_size, size, num_cycles + 1), float("-inf")).scatter_reduce(2, slot, into, "amax")
    is_best = into == best_into.gather(2, slot)
    exit_nodes = torch.full_like(best_into, size, dtype=torch.long).scatter_reduce(
        2, slot, torch.where(is_best, cycle_nodes[:, None, :], size), "amin"
    )
    arcs.scatter_(2, cycle_reps[:, None, :].expand(-1, size, -1), best_into[..., :num_cycles])
    # Rows: the cycle's arcs out are its nodes' adjusted arcs, columns merged as above.
    merged_rows = arcs.gather(1, cycle_nodes[:, :, None].expand(-1, -1, size)) - cycle_arc[:, :, None]
    out_of = merged_rows.new_full((batch_size, num_cycles + 1, size), float("-inf")).scatter_reduce(
        1, cycle_of[:, :, None].expand(-1, -1, size), merged_rows, "amax"
    )
    arcs.scatter_(1, cycle_reps[:, :, None].expand(-1, -1, size), out_of[:, :num_cycles])
    gone = on_cycle & (representative != nodes)
    gone[:, -1] = True
    arcs.masked_fill_(gone[:, :, None] | gone[:, None, :], float("-inf"))
    arcs[:, nodes, nodes] = float("-inf")
    return {
        "representative": representative,
        "on_cycle": on_cycle,
        "cycle_heads": best_heads,
        "cycle_nodes": cycle_nodes,
        "cycle_of": cycle_of,
        "rows": rows,
        "rank": rank,
        "exit_nodes": exit_nodes,
        "alive": alive & ~gone,
    }


# Copied from hf_structure.structs.decoding._first_true
def _first_true(flags: torch.Tensor, fill: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`(B, K)` the indices where `flags` (B, N) is True, in order, K the most in a row, padded with `fill`; and
    which entries are real."""
    count = flags.sum(1)
    order = torch.sort((~flags).to(torch.uint8), dim=1, stable=True).indices[:, : int(count.max())]
    valid = torch.arange(order.size(1), device=flags.device) < count[:, None]
    return order.masked_fill(~valid, fill), valid


# Copied from hf_structure.structs.decoding._expand_cycles
def _expand_cycles(level: dict, contracted_heads: torch.Tensor) -> torch.Tensor:
    """The heads of a `_contract_cycles` level's graphs from the heads of its contracted graphs: a node outside the
    cycles takes its head, or the remembered node of the cycle its head stands for; a cycle keeps its arcs but the
    one replaced by its best entering arc (the smallest node among equals)."""
    representative, on_cycle, cycle_nodes = level["representative"], level["on_cycle"], level["cycle_nodes"]
    size = representative.size(1)
    nodes = torch.arange(size, device=representative.device)
    cycle_rep = on_cycle & (representative == nodes)
    rank = level["rank"].clamp(min=0)
    into_cycle = cycle_rep.gather(1, contracted_heads)
    outside = torch.where(
        into_cycle,
        level["exit_nodes"].gather(2, rank.gather(1, contracted_heads)[:, :, None]).squeeze(2),
        contracted_heads,
    )
    # A cycle attaches where its representative does: each node's best arc from that group, the best one enters.
    target = contracted_heads.gather(1, representative.gather(1, cycle_nodes))  # (B, K)
    candidates = representative[:, None, :] == target[:, :, None]
    entry_scores, entry_heads = level["rows"].masked_fill(~candidates, float("-inf")).max(-1)
    cycle_of = level["cycle_of"]
    best = entry_scores.new_full((entry_scores.size(0), int(cycle_of.max()) + 1), float("-inf"))
    best = best.scatter_reduce(1, cycle_of, entry_scores, "amax")
    is_best = (entry_scores == best.gather(1, cycle_of)) & (cycle_nodes < size - 1)
    first = torch.full_like(best, size, dtype=torch.long).scatter_reduce(
        1, cycle_of, torch.where(is_best, cycle_nodes, size), "amin"
    )
    enters = first.gather(1, cycle_of) == cycle_nodes
    inside = torch.where(enters, entry_heads, level["cycle_heads"].gather(1, cycle_nodes))
    heads = torch.where(on_cycle, 0, outside).scatter(1, cycle_nodes, inside)
    heads[:, 0] = 0
    heads[:, -1] = 0
    return heads


def decode_heads(parent: torch.Tensor, heights: torch.Tensor, mask: torch.Tensor, method: str) -> torch.Tensor:
    """`(B, L)` 1-based heads (0 = root, 0 at pads) from p_D. The root is the highest word in every method.

    `"argmax"` is Eq. 18, each word's most probable parent, as the paper scores it: per-word decisions that may
    form cycles. `"eisner"` / `"chu-liu-edmonds"` take the projective / non-projective maximum spanning tree over
    log p_D with that root, so the heads always form a tree.
    """
    root = heights.masked_fill(~mask, float("-inf")).argmax(dim=-1)
    if method == "argmax":
        heads = parent.argmax(dim=-1) + 1
        heads[torch.arange(len(root)), root] = 0
        return heads.masked_fill(~mask, 0)
    batch, length = mask.shape
    # Position 0 is the artificial root; scores[b, i, j] is the score of j heading i, both shifted by one.
    scores = torch.full((batch, length + 1, length + 1), float("-inf"), dtype=torch.float64, device=parent.device)
    scores[:, 1:, 1:] = parent.double().clamp_min(1e-30).log()  # every arc stays possible: a tree always exists
    scores[:, 1:, 1:].diagonal(dim1=-2, dim2=-1).fill_(float("-inf"))
    scores[torch.arange(batch), root + 1, 0] = 0.0
    word_mask = F.pad(mask, (1, 0), value=False)
    decode = eisner if method == "eisner" else chu_liu_edmonds
    return decode(scores, word_mask)[:, 1:]


@dataclass
class StructFormerModelOutput(ModelOutput):
    """Outputs of `StructFormerModel`.

    Args:
        last_hidden_state: `(B, L, d)` final-layer states after the final layer norm.
        distances: `(B, L)` calibrated syntactic distances; position k is the split between words k and k+1, and
            positions that are not splits hold +inf.
        heights: `(B, L)` syntactic heights; pads hold -inf.
        parent_distribution: `(B, L, L)` p_D(j|i) at [b, i, j].
        hidden_states: optional tuple of `(B, L, d)`, the embeddings then each block's output.
        attentions: optional tuple of `(B, H, L, L)` dependency-constrained attention weights per block.
    """

    last_hidden_state: torch.FloatTensor | None = None
    distances: torch.FloatTensor | None = None
    heights: torch.FloatTensor | None = None
    parent_distribution: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


@dataclass
class StructFormerMaskedLMOutput(StructFormerModelOutput):
    """Outputs of `StructFormerForMaskedLM`.

    Args:
        loss: masked-LM cross-entropy, averaged over the positions whose label is not -100.
        logits: when `labels` are given, `(N, V)` scores at the N labelled positions only (in row-major order of
            the batch; the model computes nothing else); otherwise `(B, L, V)` scores at every position.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None


def random_keep_mask(shape: torch.Size, p: float, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """`shape` of 0.0 (dropped, independently with probability p) and 1.0 (kept), in `dtype`.

    Two entries share one 64-bit number of an SFC64 stream (numpy's fastest generator, which passes the standard
    statistical test batteries), seeded by one draw of torch's generator, so that `torch.manual_seed` and a
    checkpoint's saved RNG state reproduce the masks. The number splits into two 32-bit integers uniform over all
    2^32 values; an entry drops when it falls among the lowest round(p 2^32). The drop probability is p to within
    2^-33, finer than torch's own dropout, which compares float32 uniforms with p. On CPU torch draws its random
    numbers on one thread: its per-element Bernoulli draws took a quarter of a two-thread bf16 step, and even its
    64-bit `random_` is three times slower than numpy's generators (SFC64 is 25% faster than PCG64; drawing on a
    second thread gained nothing, as torch's own threads hold both cores). The mask is returned as numbers rather
    than booleans because on CPU `x * keep` is about six times faster than `x.masked_fill(drop, 0)` and than
    bool-to-float casts (both take a slow mixed-dtype path), while uint8-to-float is fast.
    """
    count = math.prod(shape)
    seed = int(torch.randint(0, 2**63 - 1, (), dtype=torch.int64))
    numbers = torch.from_numpy(np.random.SFC64(seed).random_raw((count + 1) // 2).view(np.int32))
    keep = numbers[:count].view(shape) >= round(p * 2**32) - 2**31
    return keep.view(torch.uint8).to(device=device, dtype=dtype)


class StructFormerDropout(nn.Module):
    """Dropout; on CPU with `fast` its masks come from `random_keep_mask` (same distribution as torch's)."""

    def __init__(self, p: float, fast: bool):
        super().__init__()
        self.p = p
        self.fast = fast

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return hidden
        if not self.fast or hidden.device.type != "cpu" or self.p >= 1:
            return F.dropout(hidden, self.p, training=True)
        keep = random_keep_mask(hidden.shape, self.p, hidden.dtype, hidden.device)
        # Times 1.0 is exact, so the kept values are those of torch's dropout: hidden / (1 - p), rounded once.
        return (hidden * keep).mul_(1 / (1 - self.p))

    def extra_repr(self) -> str:
        return f"p={self.p}, fast={self.fast}"


def masked_lm_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of `logits` `(N, V)` against `labels` `(N,)`, computed in float32 or wider.

    Low-precision logits (under bf16 autocast) go through `BlockwiseCrossEntropy`, which never builds the float32
    copy of the whole `(N, V)` tensor nor its gradient: on CPU those copies and passes cost about a tenth of a bf16
    training step. Uses `BlockwiseCrossEntropy`."""
    if logits.dtype in (torch.float16, torch.bfloat16):
        return BlockwiseCrossEntropy.apply(logits, labels, torch.is_grad_enabled() and logits.requires_grad)
    return F.cross_entropy(logits, labels)


class BlockwiseCrossEntropy(torch.autograd.Function):
    """`F.cross_entropy(logits.float(), labels)` (the mean), a block of rows at a time: a block's float32 values exist
    only while it is processed. With `with_grad` the forward pass also writes the gradient (softmax minus one-hot,
    over N, cast to the logits' dtype) from the same exponentials, so that the backward pass computes none; it
    scales that gradient by the loss's own gradient where that is not 1 (a loss divided for gradient accumulation:
    one more rounding). The same values as the whole-tensor computation, up to float32 rounding."""

    block_rows = 64  # a block of a 10k-word vocabulary in float32 (2.5 MB) stays in cache

    @staticmethod
    def forward(ctx, logits: torch.Tensor, labels: torch.Tensor, with_grad: bool = True) -> torch.Tensor:
        compute = torch.promote_types(logits.dtype, torch.float32)
        log_normalizers = torch.empty(len(logits), dtype=compute, device=logits.device)
        grad = torch.empty_like(logits) if with_grad else None
        for start in range(0, len(logits), BlockwiseCrossEntropy.block_rows):
            block = slice(start, start + BlockwiseCrossEntropy.block_rows)
            # copy=True: with wide logits `.to` would return the input itself, which must stay intact.
            exponentials = logits[block].to(compute, copy=True)
            maxima = exponentials.amax(dim=-1, keepdim=True)
            sums = exponentials.sub_(maxima).exp_().sum(dim=-1, keepdim=True)
            log_normalizers[block] = (maxima + sums.log()).squeeze(1)
            if with_grad:
                probabilities = exponentials.div_(sums)
                probabilities[torch.arange(len(probabilities), device=logits.device), labels[block]] -= 1
                grad[block] = probabilities.div_(len(logits))
        if with_grad:
            ctx.save_for_backward(grad)
        return (log_normalizers - logits.gather(1, labels[:, None]).squeeze(1).to(compute)).mean()

    @staticmethod
    def backward(ctx, grad_loss: torch.Tensor):
        (grad,) = ctx.saved_tensors
        # Checked on CPU only, where reading the value costs nothing; elsewhere always scaled.
        if grad_loss.device.type != "cpu" or grad_loss.item() != 1:
            grad = (grad.to(grad_loss.dtype) * grad_loss).to(grad.dtype)
        return grad, None, None


class StructFormerParser(nn.Module):
    """The parser network (Eqs. 1-3): convolutions over the word embeddings, then distance and height heads."""

    def __init__(self, config: StructFormerConfig):
        super().__init__()
        d = config.hidden_size
        self.convs = nn.ModuleList(
            nn.Conv1d(d, d, config.parser_conv_size, padding=config.parser_conv_size // 2)
            for _ in range(config.num_parser_layers)
        )
        self.norm = nn.LayerNorm(d, elementwise_affine=False)
        # Width-2 convolution over words (k, k+1), written as a linear map of the pair.
        self.distance_pair = nn.Linear(2 * d, d)
        self.distance_out = nn.Linear(d, 1)
        self.height_hidden = nn.Linear(d, d)
        self.height_out = nn.Linear(d, 1)

    def forward(self, embeddings: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = embeddings
        # Pads must not leak into the convolution. A multiply by 0/1: on CPU masked_fill with a bool mask is slower.
        word_mask = mask[:, :, None].to(embeddings.dtype)
        for conv in self.convs:
            hidden = hidden * word_mask
            hidden = torch.tanh(self.norm(conv(hidden.transpose(1, 2)).transpose(1, 2)))
        next_hidden = F.pad(hidden[:, 1:], (0, 0, 0, 1))
        pair = torch.tanh(self.norm(self.distance_pair(torch.cat([hidden, next_hidden], dim=-1))))
        distances = self.distance_out(pair).squeeze(-1)
        heights = self.height_out(torch.tanh(self.norm(self.height_hidden(hidden)))).squeeze(-1)
        return distances.float(), heights.float()


class StructFormerAttention(nn.Module):
    """Dependency-constrained self-attention (Eqs. 16-17): sigmoid(QK^T / sqrt(d_head)) gated by p_ij, times V."""

    def __init__(self, config: StructFormerConfig):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.out = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = StructFormerDropout(config.attention_probs_dropout_prob, config.fast_dropout)

    def forward(self, hidden: torch.Tensor, relation_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        batch, length, _ = hidden.shape
        query, key, value = (
            self.qkv(hidden).view(batch, length, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        )
        gate = torch.sigmoid(query @ key.transpose(-1, -2) / math.sqrt(self.head_dim))
        weights = self.dropout(gate * relation_mask.to(gate.dtype))
        context = (weights @ value).transpose(1, 2).reshape(batch, length, -1)
        return self.out(context), weights


class StructFormerLayer(nn.Module):
    """Pre-layer-norm block: dependency-constrained attention, then a LeakyReLU feed-forward layer."""

    def __init__(self, config: StructFormerConfig):
        super().__init__()
        self.attention_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.attention = StructFormerAttention(config)
        self.feed_forward_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.feed_forward = nn.Sequential(
            nn.Linear(config.hidden_size, config.intermediate_size),
            nn.LeakyReLU(),
            StructFormerDropout(config.hidden_dropout_prob, config.fast_dropout),
            nn.Linear(config.intermediate_size, config.hidden_size),
        )
        self.dropout = StructFormerDropout(config.hidden_dropout_prob, config.fast_dropout)

    def forward(self, hidden: torch.Tensor, relation_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        attended, weights = self.attention(self.attention_norm(hidden), relation_mask)
        hidden = hidden + self.dropout(attended)
        hidden = hidden + self.dropout(self.feed_forward(self.feed_forward_norm(hidden)))
        return hidden, weights


class StructFormerPreTrainedModel(PreTrainedModel):
    config_class = StructFormerConfig
    config: StructFormerConfig
    base_model_prefix = "structformer"
    main_input_name = "input_ids"
    _no_split_modules = ["StructFormerLayer"]

    @torch.no_grad()
    def _init_weights(self, module):
        if isinstance(module, nn.Embedding):
            init.uniform_(module.weight, -self.config.initializer_range, self.config.initializer_range)
        elif isinstance(module, (nn.Linear, nn.Conv1d)):
            # PyTorch's default fan-in scaling, as in the authors' code.
            fan_in = module.weight[0].numel()
            bound = 1.0 / math.sqrt(fan_in)
            init.uniform_(module.weight, -bound, bound)
            if module.bias is not None:
                init.uniform_(module.bias, -bound, bound)
        elif isinstance(module, nn.LayerNorm) and module.weight is not None:
            init.ones_(module.weight)
            init.zeros_(module.bias)
        elif isinstance(module, StructFormerModel):
            init.normal_(module.relation_logits, mean=0.0, std=0.1)
            init.zeros_(module.log_scales)
        elif isinstance(module, StructFormerForMaskedLM):
            init.zeros_(module.output_bias)


class StructFormerModel(StructFormerPreTrainedModel):
    """The StructFormer encoder: parser network, p_D, and dependency-constrained Transformer blocks."""

    # Loading a masked-LM checkpoint into the encoder alone leaves its output bias unused, as intended.
    _keys_to_ignore_on_load_unexpected = ["output_bias"]

    def __init__(self, config: StructFormerConfig):
        super().__init__(config)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.embed_positions = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.embed_dropout = StructFormerDropout(config.hidden_dropout_prob, config.fast_dropout)
        self.parser = StructFormerParser(config)
        self.layers = nn.ModuleList(StructFormerLayer(config) for _ in range(config.num_hidden_layers))
        self.final_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        # Per layer and head, logits of the weights over the relations (Eqs. 13-14).
        self.relation_logits = nn.Parameter(
            torch.zeros(config.num_hidden_layers, config.num_attention_heads, len(config.relations))
        )
        # log(1/mu_1) for the split test (Eq. 6) and log(1/mu_2) for the head softmax (Eq. 11).
        self.log_scales = nn.Parameter(torch.zeros(2))
        self.post_init()

    def get_input_embeddings(self):
        return self.embed_tokens

    def set_input_embeddings(self, value):
        self.embed_tokens = value

    def relation_weights(self) -> torch.Tensor:
        """`(layers, heads, relations)` mixture weights of the dependency relations."""
        if self.config.relation_weight_activation == "softmax":
            return torch.softmax(self.relation_logits, dim=-1)
        return torch.sigmoid(self.relation_logits)

    def parse_scores(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        embeddings: torch.Tensor | None = None,
        with_parent: bool = True,
    ):
        """Distances, heights (with +inf / -inf where undefined) and p_D (None without `with_parent`) for a batch
        (`embeddings`: the word embeddings of `input_ids` where the caller has them already)."""
        mask = attention_mask.bool()
        if embeddings is None:
            embeddings = self.embed_tokens(input_ids)
        distances, heights = self.parser(embeddings, mask)
        per_batch = self.training and self.config.calibration_scope == "batch"
        distances = calibrate_distances(distances, heights, mask, per_batch=per_batch)
        split_scale, head_scale = self.log_scales.exp().unbind()
        parent = dependency_distribution(distances, heights, mask, split_scale, head_scale) if with_parent else None
        distances = distances.masked_fill(~split_mask_from(mask), float("inf"))
        heights = heights.masked_fill(~mask, float("-inf"))
        return distances, heights, parent

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> StructFormerModelOutput:
        output_attentions = output_attentions if output_attentions is not None else self.config.output_attentions
        output_hidden_states = (
            output_hidden_states if output_hidden_states is not None else self.config.output_hidden_states
        )
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be (batch, length), got shape {tuple(input_ids.shape)}")
        length = input_ids.size(1)
        if length > self.config.max_position_embeddings:
            raise ValueError(
                f"sentence of {length} tokens exceeds max_position_embeddings={self.config.max_position_embeddings}"
            )
        if attention_mask is None:
            attention_mask = input_ids.ne(self.config.pad_token_id)
        mask = attention_mask.bool()

        embeddings = self.embed_tokens(input_ids)
        distances, heights, parent = self.parse_scores(input_ids, mask, embeddings)
        # Each head attends along a mixture of "to my parent" (p_D) and "to my dependent" (p_D^T), Eq. 15.
        relations = torch.stack(
            [parent if name == "parent" else parent.transpose(1, 2) for name in self.config.relations], dim=1
        )
        relation_masks = torch.einsum("lhr,brij->lbhij", self.relation_weights(), relations)

        positions = torch.arange(length, device=input_ids.device)
        hidden = self.embed_dropout(embeddings + self.embed_positions(positions)[None])
        all_hidden = (hidden,) if output_hidden_states else None
        all_attentions = () if output_attentions else None
        for layer, relation_mask in zip(self.layers, relation_masks):
            hidden, weights = layer(hidden, relation_mask)
            if output_hidden_states:
                all_hidden += (hidden,)
            if output_attentions:
                all_attentions += (weights,)
        return StructFormerModelOutput(
            last_hidden_state=self.final_norm(hidden),
            distances=distances,
            heights=heights,
            parent_distribution=parent,
            hidden_states=all_hidden,
            attentions=all_attentions,
        )

    @property
    def max_parse_words(self) -> int:
        """The longest sentence `parse` accepts (one position per word)."""
        return self.config.max_position_embeddings

    # The parse contract (the pipeline and CLI check every call against it before parsing): the keyword options of
    # `parse` with the values each takes, and what a parse holds besides `words`.
    parse_options = {"head_decoding": HEAD_DECODINGS, "structures": ("constituency", "dependency")}
    parse_outputs = ("spans", "heads", "scores")

    @torch.no_grad()
    def parse(
        self,
        sentences: list[list[str]],
        tokenizer,
        head_decoding: str | None = None,
        structures: Sequence[str] = ("constituency", "dependency"),
    ) -> list[dict]:
        """Parse a batch of sentences given as words (the words the model sees: no punctuation).

        Returns one dict per sentence: `words`; with `"constituency"` in `structures`, `spans`, the binary tree's
        constituents of two or more words (0-based `[start, end)`, top-down) by Algorithm 1; with `"dependency"`,
        `heads`, 1-based (0 = root) by `head_decoding` (default `config.head_decoding`, see `decode_heads`); and
        `scores` with the sentence's `distances` (n-1) and `heights` (n). Without `"dependency"`, p_D and the head
        decoding (most of the work after the parser network) are skipped. Raises ValueError naming the sentence
        when one cannot be parsed.
        """
        method = head_decoding or self.config.head_decoding
        if method not in HEAD_DECODINGS:
            raise ValueError(f"head_decoding must be one of {HEAD_DECODINGS}, got {method!r}")
        structures = (structures,) if isinstance(structures, str) else tuple(structures)
        if not structures or not set(structures) <= {"constituency", "dependency"}:
            raise ValueError(f"structures must be one or more of 'constituency', 'dependency', got {structures}")
        encoded = encode_words(sentences, tokenizer, self.config.max_position_embeddings)
        lengths = encoded["attention_mask"].sum(dim=-1).tolist()
        input_ids = encoded["input_ids"].to(self.device)
        mask = encoded["attention_mask"].to(self.device).bool()
        with_heads = "dependency" in structures
        distances, heights, parent = self.parse_scores(input_ids, mask, with_parent=with_heads)
        heads = decode_heads(parent, heights, mask, method).tolist() if with_heads else None
        results = []
        for b, (words, n) in enumerate(zip(sentences, lengths)):
            sentence_distances = distances[b, : n - 1].tolist()
            result = {"words": list(words)}
            if "constituency" in structures:
                result["spans"] = [span for span in distances_to_spans(sentence_distances) if span[1] - span[0] > 1]
            if with_heads:
                result["heads"] = heads[b][:n]
            result["scores"] = {"distances": sentence_distances, "heights": heights[b, :n].tolist()}
            results.append(result)
        return results


class StructFormerForMaskedLM(StructFormerPreTrainedModel):
    """StructFormer with its masked-LM head: final hidden states times the (tied) input embedding, plus a bias."""

    _tied_weights_keys = {"lm_head.weight": "structformer.embed_tokens.weight"}
    accepts_loss_kwargs = False

    def __init__(self, config: StructFormerConfig):
        super().__init__(config)
        self.structformer = StructFormerModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.output_bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.post_init()

    def get_output_embeddings(self):
        return self.lm_head

    def set_output_embeddings(self, new_embeddings):
        self.lm_head = new_embeddings

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> StructFormerMaskedLMOutput:
        outputs = self.structformer(
            input_ids,
            attention_mask=attention_mask,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
        )
        hidden = outputs.last_hidden_state
        loss = None
        if labels is None:
            logits = F.linear(hidden, self.lm_head.weight, self.output_bias)
        else:
            # Score only the positions that are predicted: most of the vocabulary projection is never used.
            predicted = labels.ne(-100)
            logits = F.linear(hidden[predicted], self.lm_head.weight, self.output_bias)
            loss = masked_lm_cross_entropy(logits, labels[predicted])
        return StructFormerMaskedLMOutput(
            loss=loss,
            logits=logits,
            distances=outputs.distances,
            heights=outputs.heights,
            parent_distribution=outputs.parent_distribution,
            hidden_states=outputs.hidden_states,
            attentions=outputs.attentions,
        )

    @property
    def max_parse_words(self) -> int:
        return self.structformer.max_parse_words

    parse_options = StructFormerModel.parse_options
    parse_outputs = StructFormerModel.parse_outputs

    def parse(
        self,
        sentences: list[list[str]],
        tokenizer,
        head_decoding: str | None = None,
        structures: Sequence[str] = ("constituency", "dependency"),
    ) -> list[dict]:
        """See `StructFormerModel.parse`."""
        return self.structformer.parse(sentences, tokenizer, head_decoding, structures)


__all__ = [
    "StructFormerModel",
    "StructFormerForMaskedLM",
    "StructFormerPreTrainedModel",
    "calibrate_distances",
    "decode_heads",
    "dependency_distribution",
]
