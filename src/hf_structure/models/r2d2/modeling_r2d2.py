"""R2D2: a recursive Transformer based on a differentiable tree (Hu, Mi, Wen, Wang, Su, Zheng, de Melo; ACL 2021).

Every chart cell [i, j] is built from its splits k by one composition function, a small Transformer over
[two task tokens, left child, right child]: one task output weighs left and right into the cell's candidate
representation, the other gives the log-probability of composing them. A split's score adds its children's scores;
a straight-through Gumbel-softmax over the splits (argmax at evaluation) picks the cell's representation and tree.
The chart is pruned (`encode_pruned_chart`) so that the compositions grow linearly with the sentence length. The
training objective is a bidirectional language model: each word is predicted, through the same composition
function, from the chart's longest nodes to its left and to its right.

With `pruning="parser"` the model is Fast-R2D2 (Hu, Mi, Li, de Melo; EMNLP 2022): a top-down parser (a BiLSTM) scores
the sentence's splits, the chart merges in the reverse of its split order instead of by the 2021 rule, and the
parser learns from trees drawn from the chart. It parses on its own, and `encode_tree` composes along its tree
only (n - 1 compositions).

This file is self-contained (torch, transformers and numpy only) so that a saved folder loads with
`trust_remote_code=True` where `hf_structure` is not installed. Blocks marked `# Copied from` are generated from
`hf_structure` by `scripts/fix_copies.py`; a test fails when they differ.
"""

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from .configuration_r2d2 import R2D2Config

# Rows of `R2D2Model.special_embeddings`.
MIX_TASK, SCORE_TASK, MASK, BOS, EOS = range(5)
# Roles of the composition Transformer's inputs (added to queries and keys only, as in the authors' code).
ROLE_TASK, ROLE_LEFT, ROLE_RIGHT = range(3)


# Copied from hf_structure.models.structformer.modeling_structformer.masked_lm_cross_entropy
def masked_lm_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of `logits` `(N, V)` against `labels` `(N,)`, computed in float32 or wider.

    Low-precision logits (under bf16 autocast) go through `BlockwiseCrossEntropy`, which never builds the float32
    copy of the whole `(N, V)` tensor nor its gradient: on CPU those copies and passes cost about a tenth of a bf16
    training step. Uses `BlockwiseCrossEntropy`."""
    if logits.dtype in (torch.float16, torch.bfloat16):
        return BlockwiseCrossEntropy.apply(logits, labels, torch.is_grad_enabled() and logits.requires_grad)
    return F.cross_entropy(logits, labels)


# Copied from hf_structure.models.structformer.modeling_structformer.BlockwiseCrossEntropy
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


# Copied from hf_structure.models.structformer.modeling_structformer.random_keep_mask
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


# Copied from hf_structure.structs.pruned_chart.ChartEncoding
@dataclass
class ChartEncoding:
    """The nodes of a batch of pruned charts. Node ids: the leaves first (word i of sentence b is `b * n + i`), then
    the cells in the order they were built.

    Attributes:
        node_states: `(N, d)` each node's representation.
        node_log_p: `(N,)` log p~ of each node: the sum of the composition log-probabilities of its chosen tree.
        node_span: `(N, 2)` first and last word of each node (inclusive).
        node_split: `(N,)` last word of the chosen left child; -1 at leaves.
        node_of_span: `(B, n, n)` node id of words [i, j] (inclusive); -1 where the chart built no such node.
        roots: `(B,)` node id of each sentence's whole-sentence node.
        compositions: `(B,)` calls of the composition function per sentence.
        node_split_candidates: `(N, k)` the last word of the left child of each of the node's candidate splits (k =
            the window); -1 beyond a node's candidates and at leaves.
        node_split_scores: `(N, k)` their scores, log p~ of the split (detached); -inf where there is no candidate.
    """

    node_states: torch.Tensor
    node_log_p: torch.Tensor
    node_span: torch.Tensor
    node_split: torch.Tensor
    node_of_span: torch.Tensor
    roots: torch.Tensor
    compositions: torch.Tensor
    node_split_candidates: torch.Tensor
    node_split_scores: torch.Tensor


# Copied from hf_structure.structs.pruned_chart.encode_pruned_chart
def encode_pruned_chart(
    leaves: torch.Tensor,
    lengths: torch.Tensor,
    compose: Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    choose_split: Callable[[torch.Tensor], torch.Tensor],
    window: int,
    merge_order: torch.Tensor | None = None,
) -> ChartEncoding:
    """Encode sentences bottom-up along the pruned chart.

    Args:
        leaves: `(B, n, d)` word representations (padding after each sentence's `lengths[b]` words).
        lengths: `(B,)` words per sentence, at least 1.
        compose: `(left (C, d), right (C, d)) -> (states (C, d), log_p (C,))`, the composition function with its
            log-probability of composing left and right.
        choose_split: `(C, k)` scores of the k splits of C cells -> `(C, k)` weights of one split per cell (one-hot
            at evaluation; a straight-through Gumbel sample in training). A cell is the weighted sum over its splits.
        window: the number of chart rows filled as in CKY (the paper's m). With `window >= n - 1` nothing is pruned
            and the chart is plain CKY.
        merge_order: `(B, n - 1)` Fast-R2D2's merges: each sentence's split positions (split k lies between words k
            and k + 1), a permutation of its splits padded with -1 (see `merge_orders`). The chart's i-th merge
            joins the terminals on both sides of the sentence's i-th split, instead of the paper's rule; the merges
            a window leaves to the chart's top rows are not taken from it.

    Cell scores follow the paper: the log p~ of a split is its composition log p plus its children's log p~. A node
    that has been merged into a terminal passes its log p~ on detached, as the authors' code does. The merge rule
    (the paper's Algorithm 2): among the bigram cells of the current terminals used by the best trees (highest
    score over splits that respect the merges so far) of the top-row cells, merge the one maximising
    log p(bigram) + log(1 - p(left neighbour bigram)) + log(1 - p(right neighbour bigram)).

    Only the live chart is kept in tables: cell `(t, h)` of sentence b covers its current terminals t .. t + h
    (h <= window), with its node id, state, log p~, own composition log p and the scores of its h splits. A merge
    re-indexes these tables by one gather each and leaves exactly the top-row cells over the merged terminal empty:
    those are the cells to build, so no lookup decides what is missing.
    """
    batch_size, n, dim = leaves.shape
    device = leaves.device
    lengths = lengths.to(device)
    top = min(window, n - 1)  # the highest row of the live chart
    heights = top + 1
    batch = torch.arange(batch_size, device=device)
    positions = torch.arange(n, device=device)
    rows_of_cells = torch.arange(heights, device=device)
    splits_of_cells = torch.arange(max(top, 1), device=device)
    beyond_height = splits_of_cells >= rows_of_cells[:, None]  # (heights, top): split k of a cell of height h
    # Split k of cell (t, h) has the left child (t, k) and the right child (t + k + 1, h - 1 - k): in a table
    # flattened to positions t * heights + h, `child_offsets[h]` (2, 1, h) is [left children, right ones] - t * heights.
    # The left child of the first split and the right child of the last are terminals: a merged terminal passes its
    # score on detached (a leaf's is 0); `terminal_child[h]` (2, 1, h) marks them.
    child_offsets, terminal_child = [], []
    for h in range(heights):
        k = splits_of_cells[:h]
        child_offsets.append(torch.stack([k, (k + 1) * heights + h - 1 - k])[:, None])
        terminal_child.append(torch.stack([k == 0, k == h - 1])[:, None])
    real = positions[None, :] < lengths[:, None]
    leaf_ids = batch[:, None] * n + positions

    node_of_span = torch.full((batch_size, n, n), -1, dtype=torch.long, device=device)
    node_of_span[:, positions, positions] = torch.where(real, leaf_ids, -1)
    states, log_p = [leaves.reshape(batch_size * n, dim)], [leaves.new_zeros(batch_size * n)]
    spans = [positions.repeat(batch_size)[:, None].expand(-1, 2)]
    splits = [torch.full((batch_size * n,), -1, dtype=torch.long, device=device)]
    candidate_splits = [torch.full((batch_size * n, max(top, 1)), -1, dtype=torch.long, device=device)]
    candidate_scores = [torch.full((batch_size * n, max(top, 1)), float("-inf"), device=device)]
    next_id = batch_size * n
    compositions = torch.zeros(batch_size, dtype=torch.long, device=device)

    # The live chart over the current terminals; terminal t covers words term_first[b, t] .. term_last[b, t].
    width = n  # table positions: at least the most terminals any sentence has
    cell_node = torch.full((batch_size, n, heights), -1, dtype=torch.long, device=device)
    cell_node[:, :, 0] = leaf_ids
    cell_state = F.pad(leaves[:, :, None], (0, 0, 0, top))
    cell_log_p = leaves.new_zeros(batch_size, n, heights)
    cell_own_log_p = torch.zeros(batch_size, n, heights, device=device)
    cell_split_scores = torch.full((batch_size, n, heights, max(top, 1)), float("-inf"), device=device)
    term_first, term_last = positions.repeat(batch_size, 1), positions.repeat(batch_size, 1)

    def build(rows: torch.Tensor, starts: torch.Tensor, height: int) -> None:
        """Compose cells (starts[c], height) of sentences rows[c] over their splits and store them."""
        nonlocal next_id, compositions
        count = len(rows)
        first_position = starts * heights
        children = first_position[:, None] + child_offsets[height]  # (2, C, height)
        sentence = rows[:, None]
        children_states = cell_state.view(batch_size, -1, dim)[sentence, children]
        children_log_p = cell_log_p.view(batch_size, -1)[sentence, children]
        children_log_p = torch.where(terminal_child[height], children_log_p.detach(), children_log_p)
        composed, composition_log_p = compose(children_states[0].flatten(0, 1), children_states[1].flatten(0, 1))
        composition_log_p = composition_log_p.view(count, height)
        scores = composition_log_p + children_log_p[0] + children_log_p[1]
        weights = choose_split(scores)
        new_states = (weights[..., None] * composed.view(count, height, dim)).sum(1).to(leaves.dtype)
        new_log_p = (weights * scores).sum(1).to(leaves.dtype)
        chosen = weights.detach().argmax(-1, keepdim=True)

        new_ids = torch.arange(next_id, next_id + count, device=device)
        next_id += count
        position = first_position + height
        cell_node.view(batch_size, -1)[rows, position] = new_ids
        cell_state.view(batch_size, -1, dim)[rows, position] = new_states
        cell_log_p.view(batch_size, -1)[rows, position] = new_log_p
        own_log_p = composition_log_p.detach().float().gather(1, chosen).squeeze(1)
        cell_own_log_p.view(batch_size, -1)[rows, position] = own_log_p
        cell_split_scores.view(batch_size, -1, len(splits_of_cells))[rows, position, :height] = scores.detach().float()
        first_word, last_word = term_first[rows, starts], term_last[rows, starts + height]
        node_of_span[rows, first_word, last_word] = new_ids
        states.append(new_states)
        log_p.append(new_log_p)
        spans.append(torch.stack([first_word, last_word], 1))
        splits.append(term_last[rows, starts + chosen.squeeze(1)])  # the last word of the chosen left child
        padding = (0, len(splits_of_cells) - height)
        candidate_splits.append(F.pad(term_last[rows[:, None], starts[:, None] + splits_of_cells[:height]], padding,
                                      value=-1))
        candidate_scores.append(F.pad(scores.detach().float(), padding, value=float("-inf")))
        compositions += torch.bincount(rows, minlength=batch_size) * height

    # The lowest rows, as in CKY.
    for height in range(1, top + 1):
        rows, starts = (positions[None, : n - height] < (lengths - height)[:, None]).nonzero(as_tuple=True)
        if len(rows) == 0:
            break
        build(rows, starts, height)

    # Merges: every sentence with more than top + 1 terminals merges two of them, then builds the new top-row cells.
    terminals = lengths.clone()
    for _ in range(int(lengths.max()) - top - 1):
        merging = terminals > top + 1
        if merge_order is None:
            at = _choose_merge(cell_split_scores, cell_own_log_p, terminals, top)
        else:  # the terminal that ends at the sentence's next split
            split = merge_order[batch, (lengths - terminals).clamp(max=merge_order.size(1) - 1)]
            at = (term_last[:, :width] == split[:, None]).long().argmax(-1)
        at = torch.where(merging, at, n + top)  # beyond every cell: the tables stay as they are
        terminals = terminals - merging.long()
        width -= 1  # the longest sentences merge at every step
        start = positions[:width, None]
        merged = at[:, None, None]
        # Cell (t, h) over the new terminals was cell (t, h + 1) if it covers the merged terminal (with one split
        # less: the one between the two merged terminals), cell (t + 1, h) if it starts after it, else cell (t, h).
        # Cells of the top row over the merged terminal had no old cell: they are built below.
        covers_merge = (start <= merged) & (merged <= start + rows_of_cells)  # (B, width, heights)
        source = (start + (start > merged)) * heights + (rows_of_cells + covers_merge).clamp(max=top)
        num_splits = len(splits_of_cells)
        removed_or_after = covers_merge[..., None] & (splits_of_cells >= (merged - start)[..., None])
        split_source = source[..., None] * num_splits + (splits_of_cells + removed_or_after).clamp(max=num_splits - 1)
        source = source.flatten(1)
        cell_node = cell_node.flatten(1).gather(1, source).view(batch_size, width, heights)
        state_source = source[..., None].expand(-1, -1, dim)
        cell_state = cell_state.flatten(1, 2).gather(1, state_source).view(batch_size, width, heights, dim)
        cell_log_p = cell_log_p.flatten(1).gather(1, source).view(batch_size, width, heights)
        cell_own_log_p = cell_own_log_p.flatten(1).gather(1, source).view(batch_size, width, heights)
        cell_split_scores = cell_split_scores.flatten(1).gather(1, split_source.flatten(1)).view(split_source.shape)
        cell_split_scores = cell_split_scores.masked_fill(beyond_height, float("-inf"))
        term_first = term_first.gather(1, positions[:width] + (positions[:width] > at[:, None]))
        term_last = term_last.gather(1, positions[:width] + (positions[:width] >= at[:, None]))

        starts = at[:, None] - top + rows_of_cells  # the top-row cells over the merged terminal
        rows, slot = ((starts >= 0) & (starts + top < terminals[:, None])).nonzero(as_tuple=True)
        build(rows, starts[rows, slot], top)

    return ChartEncoding(
        node_states=torch.cat(states),
        node_log_p=torch.cat(log_p),
        node_span=torch.cat(spans),
        node_split=torch.cat(splits),
        node_of_span=node_of_span,
        roots=node_of_span[batch, 0, lengths - 1],
        compositions=compositions,
        node_split_candidates=torch.cat(candidate_splits),
        node_split_scores=torch.cat(candidate_scores),
    )


# Copied from hf_structure.structs.pruned_chart._choose_merge
def _choose_merge(
    split_scores: torch.Tensor, own_log_p: torch.Tensor, terminals: torch.Tensor, top: int
) -> torch.Tensor:
    """`(B,)` index of the terminal to merge with its right neighbour (see `encode_pruned_chart`), from the live
    chart's `(B, width, top + 1, top)` split scores and `(B, width, top + 1)` own composition log p."""
    batch_size, width, heights, _ = split_scores.shape
    device = split_scores.device
    batch = torch.arange(batch_size, device=device)[:, None]
    positions = torch.arange(width, device=device)
    best_split = split_scores.argmax(-1)  # (B, width, heights): over the splits that respect the merges so far
    # Walk the best trees of the top-row cells down to the bigram row; position `width` takes the cells not walked.
    used = torch.zeros(batch_size, width + 1, heights, dtype=torch.bool, device=device)
    used[:, :width, top] = positions < (terminals - top)[:, None]
    for height in range(top, 1, -1):
        walked = used[:, :width, height]
        k = best_split[:, :, height]
        used[batch, torch.where(walked, positions, width), k] = True
        used[batch, torch.where(walked, positions + k + 1, width), height - 1 - k] = True
    in_row = positions[: width - 1] < (terminals - 1)[:, None]
    bigram_log_p = torch.where(in_row, own_log_p[:, : width - 1, 1], float("-inf"))
    # log(1 - p) of the neighbouring bigrams; a missing neighbour has p = 0.
    not_neighbour = torch.log((1 - bigram_log_p.exp()).clamp(min=1e-9))
    score = (
        bigram_log_p
        + F.pad(not_neighbour[:, :-1], (1, 0))
        + F.pad(not_neighbour[:, 1:], (0, 1))
    )
    score = score.masked_fill(~(in_row & used[:, : width - 1, 1]), float("-inf"))
    return score.argmax(-1)


@dataclass
class R2D2ModelOutput(ModelOutput):
    """
    Args:
        root_states: `(B, d)` representation of each sentence's whole-sentence node.
        chart: every node of the batch's charts (`ChartEncoding`), or of their trees after `encode_tree`.
        split_scores: `(B, n - 1)` the top-down parser's split scores (parser pruning only).
    """

    root_states: torch.Tensor | None = None
    chart: ChartEncoding | None = None
    split_scores: torch.Tensor | None = None


@dataclass
class R2D2LanguageModelingOutput(ModelOutput):
    """
    Args:
        loss: mean cross-entropy of the predicted words (those with a label other than -100), plus in training with
            parser pruning the parser's loss.
        logits: `(P, vocab)` for the P predicted words when labels are given, else `(B, n, vocab)` for every word.
        root_states: `(B, d)` as in `R2D2ModelOutput`.
        lm_loss: the language-model part of `loss`.
        parser_loss: the top-down parser's cross-entropy against trees drawn from the chart (training with parser
            pruning).
    """

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    root_states: torch.Tensor | None = None
    lm_loss: torch.Tensor | None = None
    parser_loss: torch.Tensor | None = None


# Copied from hf_structure.structs.merge_orders.merge_order_from_split_scores
def merge_order_from_split_scores(split_scores: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """`(B, n - 1)` split scores (anything past a sentence's last split is ignored) -> the merge order of their
    tree: the splits by ascending score. Of equal scores the leftmost is the higher node (as `argmax` splits
    top-down), so it merges last."""
    batch_size, num_splits = split_scores.shape
    positions = torch.arange(num_splits, device=split_scores.device)
    real = positions[None, :] < (lengths[:, None] - 1)
    keys = split_scores.detach().float().masked_fill(~real, float("inf"))
    # A stable sort of the splits taken right to left puts the rightmost of equal scores first.
    order = num_splits - 1 - torch.sort(keys.flip(-1), dim=-1, stable=True).indices
    return order.masked_fill(~real, -1)


# Copied from hf_structure.structs.merge_orders.check_merge_order
def check_merge_order(merge_order: torch.Tensor, lengths: torch.Tensor) -> None:
    """Raise ValueError naming the first sentence whose merge order does not hold each of its splits exactly once
    (then -1 padding)."""
    num_splits = merge_order.size(1)
    positions = torch.arange(num_splits, device=merge_order.device)
    real = positions[None, :] < (lengths[:, None] - 1)
    ascending = torch.where(real, merge_order, num_splits).sort(dim=-1).values
    wrong = ~torch.where(real, ascending == positions, merge_order == -1).all(-1)
    if wrong.any():
        b = int(wrong.nonzero()[0])
        raise ValueError(f"sentence {b}: the merge order {merge_order[b].tolist()} is not a permutation of its "
                         f"{int(lengths[b]) - 1} splits followed by -1")


# Copied from hf_structure.structs.merge_orders.split_spans
def split_spans(merge_order: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`(first, last)`, each `(B, n - 1)` and indexed by split position: the first and last word of the node each
    split makes. The node of split k reaches left up to the nearest split merged after k, and right likewise."""
    batch_size, num_splits = merge_order.shape
    device = merge_order.device
    positions = torch.arange(num_splits, device=device)
    real = positions[None, :] < (lengths[:, None] - 1)
    if num_splits == 0:
        return merge_order.clone(), merge_order.clone()
    # rank[b, k]: when split k merges; padding entries go to a spare last column, and padding splits merge last.
    rank = torch.full((batch_size, num_splits + 1), num_splits, dtype=torch.long, device=device)
    rank.scatter_(1, torch.where(real, merge_order, num_splits), positions.expand(batch_size, -1).clone())
    rank = rank[:, :num_splits].masked_fill(~real, num_splits)
    later = rank[:, None, :] > rank[:, :, None]  # [b, k, j]: split j merges after split k
    before = positions[None, :] < positions[:, None]  # [k, j]: j < k
    left_bound = torch.where(later & before, positions, -1).amax(-1)  # the nearest later split on the left
    right_bound = torch.where(later & ~before & (positions[None, :] != positions[:, None]), positions, num_splits)
    right_bound = right_bound.amin(-1).minimum(lengths[:, None] - 1)
    return left_bound + 1, right_bound


# Copied from hf_structure.structs.merge_orders.encode_along_merges
def encode_along_merges(
    leaves: torch.Tensor,
    lengths: torch.Tensor,
    merge_order: torch.Tensor,
    compose: Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
) -> ChartEncoding:
    """Fast-R2D2's forced encoding: compose only along the tree of `merge_order`, n - 1 compositions a sentence,
    every node whose children are ready (one level of the tree, over the whole batch) in one `compose` call.

    Args:
        leaves: `(B, n, d)` word representations.
        lengths: `(B,)` words per sentence, at least 1.
        merge_order: `(B, n - 1)` split positions, each after every split inside its node (see the module).
        compose: as in `encode_pruned_chart`.

    Returns the nodes as a `ChartEncoding` with one split per node (its only candidate, scored by its log p~):
    `node_log_p` sums the composition log-probabilities of the node's subtree, and `node_of_span` holds the tree's
    spans only.
    """
    batch_size, n, dim = leaves.shape
    device = leaves.device
    batch = torch.arange(batch_size, device=device)
    positions = torch.arange(n, device=device)
    lengths = lengths.to(device)
    node_of_span = torch.full((batch_size, n, n), -1, dtype=torch.long, device=device)
    real_word = positions[None, :] < lengths[:, None]
    node_of_span[:, positions, positions] = torch.where(real_word, batch[:, None] * n + positions, -1)
    node_span = [positions.repeat(batch_size)[:, None].expand(-1, 2)]
    node_split = [torch.full((batch_size * n,), -1, dtype=torch.long, device=device)]
    states, log_p = [leaves.reshape(batch_size * n, dim)], [leaves.new_zeros(batch_size * n)]
    next_id = batch_size * n

    check_merge_order(merge_order, lengths)
    first, last = split_spans(merge_order, lengths)
    splits = positions[: n - 1]
    pending = splits[None, :] < (lengths[:, None] - 1)
    while pending.any():
        left_ids = node_of_span[batch[:, None], first, splits[None, :]]
        right_ids = node_of_span[batch[:, None], (splits + 1)[None, :], last]
        ready = pending & (left_ids >= 0) & (right_ids >= 0)
        rows, at = ready.nonzero(as_tuple=True)
        all_states, all_log_p = torch.cat(states), torch.cat(log_p)
        left, right = left_ids[rows, at], right_ids[rows, at]
        composed, composition_log_p = compose(all_states[left], all_states[right])
        new_ids = torch.arange(next_id, next_id + len(rows), device=device)
        next_id += len(rows)
        states.append(composed.to(leaves.dtype))
        log_p.append((composition_log_p + all_log_p[left] + all_log_p[right]).to(leaves.dtype))
        node_span.append(torch.stack([first[rows, at], last[rows, at]], dim=-1))
        node_split.append(at)
        node_of_span[rows, first[rows, at], last[rows, at]] = new_ids
        pending = pending & ~ready

    node_split, node_log_p = torch.cat(node_split), torch.cat(log_p)
    return ChartEncoding(
        node_states=torch.cat(states),
        node_log_p=node_log_p,
        node_span=torch.cat(node_span),
        node_split=node_split,
        node_of_span=node_of_span,
        roots=node_of_span[batch, 0, lengths - 1],
        compositions=(lengths - 1).clamp(min=0),
        node_split_candidates=node_split[:, None],
        node_split_scores=node_log_p.detach().float().masked_fill(node_split < 0, float("-inf"))[:, None],
    )


# Copied from hf_structure.structs.merge_orders.sample_chart_trees
def sample_chart_trees(
    chart: ChartEncoding, num_samples: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Draw `num_samples` trees per sentence from a chart's tree distribution, top-down: at each node, a split among
    the cell's candidates with probability softmax(candidate scores), then the two children, as Fast-R2D2 draws
    the parser's training targets.

    Args:
        chart: the chart (its node spans, split candidates and their scores, `node_of_span`, `roots`).
        num_samples: trees per sentence.

    Returns `(sentence, first, last, split)`, four `(T,)` tensors: every internal node of every drawn tree, with the
    word it splits after.
    """
    batch_size = chart.roots.size(0)
    device = chart.roots.device
    sentence = torch.arange(batch_size, device=device).repeat_interleave(num_samples)
    frontier = chart.roots.repeat_interleave(num_samples)
    found = []
    while True:
        first, last = chart.node_span[frontier].unbind(-1)
        internal = last > first
        sentence, frontier, first, last = sentence[internal], frontier[internal], first[internal], last[internal]
        if len(frontier) == 0:
            break
        scores = chart.node_split_scores[frontier].masked_fill(chart.node_split_candidates[frontier] < 0, float("-inf"))
        choice = torch.multinomial(torch.softmax(scores, dim=-1), 1).squeeze(1)
        split = chart.node_split_candidates[frontier, choice]
        found.append((sentence, first, last, split))
        left = chart.node_of_span[sentence, first, split]
        right = chart.node_of_span[sentence, split + 1, last]
        sentence = torch.cat([sentence, sentence])
        frontier = torch.cat([left, right])
    return tuple(torch.cat(column) for column in zip(*found)) if found else (torch.empty(0, dtype=torch.long),) * 4


# Copied from hf_structure.structs.merge_orders.split_cross_entropy
def split_cross_entropy(
    split_scores: torch.Tensor,
    sentence: torch.Tensor,
    first: torch.Tensor,
    last: torch.Tensor,
    split: torch.Tensor,
    lengths: torch.Tensor,
    num_samples: int,
) -> torch.Tensor:
    """The top-down parser's loss against trees drawn from the chart (`sample_chart_trees`): at every drawn node,
    -log softmax over the span's splits (first .. last - 1) of the drawn split's score; summed over a tree, divided by
    the sentence's length (as the authors' code), averaged over sentences and samples. A Monte-Carlo estimate of the
    cross-entropy from the chart's tree distribution to the parser's (KL up to the chart's entropy)."""
    num_splits = split_scores.size(1)
    positions = torch.arange(num_splits, device=split_scores.device)
    in_span = (positions[None, :] >= first[:, None]) & (positions[None, :] < last[:, None])
    node_scores = split_scores[sentence].float().masked_fill(~in_span, float("-inf"))
    log_p = node_scores.gather(1, split[:, None]).squeeze(1) - torch.logsumexp(node_scores, dim=-1)
    per_node = -log_p / lengths[sentence].float()
    return per_node.sum() / (lengths.size(0) * num_samples)


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


class R2D2CompositionLayer(nn.Module):
    """One post-LayerNorm Transformer layer over the composition's inputs [tasks..., left, right], role embeddings
    added to queries and keys (as the authors' code). Each task input attends to itself, left and right; left and
    right attend to each other only."""

    def __init__(self, config: R2D2Config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.role_embeddings = nn.Embedding(3, config.hidden_size)
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.output = nn.Linear(config.hidden_size, config.hidden_size)
        self.attention_dropout = config.attention_probs_dropout_prob
        self.attention_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        # Index 2 holds the inner dropout's p: `forward` runs the parts itself and draws that mask with its others.
        self.feed_forward = nn.Sequential(
            nn.Linear(config.hidden_size, config.intermediate_size),
            nn.GELU(),
            nn.Dropout(config.hidden_dropout_prob),
            nn.Linear(config.intermediate_size, config.hidden_size),
        )
        self.feed_forward_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def fused_qkv(self, num_tasks: int) -> tuple[torch.Tensor, torch.Tensor]:
        """`(3d, d)` weight and `(T, 3d)` per-input bias of queries, keys and values in one projection, T = num_tasks
        + 2: a role embedding r enters queries and keys only, and `W (h + r) + b = W h + (W r + b)`. The attention
        scale 1 / sqrt(head size) is folded into the queries."""
        scale = 1.0 / math.sqrt(self.query.out_features // self.num_heads)
        roles = self.role_embeddings.weight[[ROLE_TASK] * num_tasks + [ROLE_LEFT, ROLE_RIGHT]]
        weight = torch.cat([self.query.weight * scale, self.key.weight, self.value.weight])
        bias = torch.cat(
            [
                F.linear(roles, self.query.weight, self.query.bias) * scale,
                F.linear(roles, self.key.weight, self.key.bias),
                self.value.bias.expand(len(roles), -1),
            ],
            dim=-1,
        )
        return weight, bias

    def dropout_multipliers(
        self, count: int, length: int, dtype: torch.dtype, device: torch.device
    ) -> list[torch.Tensor | None]:
        """Dropout masks of `forward`'s four sites, as multipliers 0.0 (dropped) or 1 / (1 - p), None where p is 0:
        the attention probabilities `(C, T, 3, H)` (keys: itself, left, right), the attention output `(C, T, d)`,
        the feed-forward's inner activations `(C, T, f)` and its output `(C, T, d)`. On CPU the sites of one
        probability come from one `random_keep_mask` draw (seeded from torch's generator, so that `torch.manual_seed`
        and a checkpoint's RNG state reproduce them): torch's per-element Bernoulli draws took a quarter of a CPU
        training step of the composition Transformer. Elsewhere they are torch's own draws on the device."""
        dim = self.query.in_features
        sites = [
            ((count, length, 3, self.num_heads), self.attention_dropout),
            ((count, length, dim), self.dropout.p),
            ((count, length, self.feed_forward[0].out_features), self.feed_forward[2].p),
            ((count, length, dim), self.dropout.p),
        ]
        multipliers = [None] * len(sites)
        for p in sorted({p for _, p in sites if p > 0}):
            indices = [index for index, (_, site_p) in enumerate(sites) if site_p == p]
            sizes = [math.prod(sites[index][0]) for index in indices]
            if device.type == "cpu":
                keep = random_keep_mask((sum(sizes),), p, dtype, device)
            else:
                keep = torch.empty(sum(sizes), dtype=dtype, device=device).bernoulli_(1 - p)
            if p < 1:
                keep.mul_(1 / (1 - p))
            for index, part in zip(indices, keep.split(sizes)):
                multipliers[index] = part.view(sites[index][0])
        return multipliers

    def forward(self, hidden: torch.Tensor, num_tasks: int) -> torch.Tensor:
        """`hidden` (C, T, d): num_tasks task inputs, then left and right -> (C, T, d).

        The attention is written out for this visibility: an input's keys are at most [itself, left, right] (left
        and right: [left, right]), so its scores are elementwise products summed per head, with no T x T batched
        matmuls and no mask; queries, keys and values come from one projection (`fused_qkv`). The same function as
        a standard layer with that attention mask, up to float32 rounding (`tests/reference_r2d2.py` keeps one)."""
        count, length, dim = hidden.shape
        heads = self.num_heads
        head_dim = dim // heads
        if self.training:
            keep = self.dropout_multipliers(count, length, hidden.dtype, hidden.device)
        else:
            keep = [None] * 4
        weight, bias = self.fused_qkv(num_tasks)
        query, key, value = F.linear(hidden, weight).add_(bias).split(dim, dim=-1)
        # (C, T, 3, H): the scores of [itself, left, right]; left and right see themselves among [left, right] only.
        self_scores = (query * key).view(count, length, heads, head_dim).sum(-1)
        self_scores[:, num_tasks:] = float("-inf")
        pair_scores = (query[:, :, None] * key[:, None, num_tasks:]).view(count, length, 2, heads, head_dim).sum(-1)
        probs = torch.softmax(torch.cat([self_scores[:, :, None], pair_scores], dim=2), dim=2)
        if keep[0] is not None:
            probs = probs * keep[0]
        values = value.view(count, length, heads, head_dim)
        pair_values = value[:, num_tasks:].reshape(count, 1, 2, heads, head_dim)
        attended = probs[:, :, 0, :, None] * values + (probs[:, :, 1:, :, None] * pair_values).sum(2)
        out = self.output(attended.view(count, length, dim))
        hidden = self.attention_norm(hidden + (out if keep[1] is None else out * keep[1]))
        inner = self.feed_forward[1](self.feed_forward[0](hidden))
        if keep[2] is not None:
            inner = inner * keep[2]
        out = self.feed_forward[3](inner)
        return self.feed_forward_norm(hidden + (out if keep[3] is None else out * keep[3]))


class R2D2SplitParser(nn.Module):
    """Fast-R2D2's top-down parser: a BiLSTM over its own word embeddings; the score of split k (between words k and
    k + 1) is an MLP of the forward state of word k and the backward state of word k + 1, each layer-normalised (as
    the authors' released code)."""

    def __init__(self, config: R2D2Config):
        super().__init__()
        hidden = config.parser_hidden_size
        self.embed_tokens = nn.Embedding(
            config.vocab_size, config.parser_embedding_size, padding_idx=config.pad_token_id
        )
        self.lstm = nn.LSTM(
            config.parser_embedding_size,
            hidden,
            num_layers=config.parser_num_layers,
            batch_first=True,
            bidirectional=True,
            dropout=config.hidden_dropout_prob if config.parser_num_layers > 1 else 0.0,
        )
        self.norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps)
        self.score = nn.Sequential(
            nn.Linear(2 * hidden, hidden), nn.GELU(), nn.Dropout(config.hidden_dropout_prob), nn.Linear(hidden, 1)
        )

    def forward(self, input_ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """`(B, n)` word ids and `(B,)` lengths -> `(B, n - 1)` split scores (meaningless past a sentence's end)."""
        packed = nn.utils.rnn.pack_padded_sequence(
            self.embed_tokens(input_ids), lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        states, _ = self.lstm(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=input_ids.size(1))
        forward_states, backward_states = self.norm(states.unflatten(-1, (2, -1))).unbind(-2)
        pairs = torch.cat([forward_states[:, :-1], backward_states[:, 1:]], dim=-1)
        return self.score(pairs).squeeze(-1)


class R2D2PreTrainedModel(PreTrainedModel):
    config_class = R2D2Config
    config: R2D2Config
    base_model_prefix = "r2d2"
    main_input_name = "input_ids"
    _no_split_modules = ["R2D2CompositionLayer"]

    @torch.no_grad()
    def _init_weights(self, module):
        std = self.config.initializer_range
        if isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=std)
        elif isinstance(module, nn.Linear):
            init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.LayerNorm) and module.weight is not None:
            init.ones_(module.weight)
            init.zeros_(module.bias)
        elif isinstance(module, R2D2ForLanguageModeling):
            init.zeros_(module.output_bias)


class R2D2Model(R2D2PreTrainedModel):
    """Word embeddings, the composition function and the pruned chart over them."""

    def __init__(self, config: R2D2Config):
        super().__init__(config)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        # The two task tokens of a composition, the masked word of the LM objective, and the sentence edges.
        self.special_embeddings = nn.Embedding(5, config.hidden_size)
        self.composition_layers = nn.ModuleList(
            R2D2CompositionLayer(config) for _ in range(config.num_composition_layers)
        )
        self.mix_weights = nn.Linear(config.hidden_size, 2)
        self.composition_score = nn.Linear(config.hidden_size, 1)
        self.node_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, elementwise_affine=False)
        self.split_parser = R2D2SplitParser(config) if config.pruning == "parser" else None
        self.parse_options = {"tree_decoding": config.reported_tree_decodings}
        self.post_init()

    def get_input_embeddings(self):
        return self.embed_tokens

    def set_input_embeddings(self, value):
        self.embed_tokens = value

    def composition_transformer(self, tasks: torch.Tensor, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        """Run [tasks..., left, right] through the composition layers: each task input sees itself, left and
        right; left and right see only each other. `tasks` (C, k, d), `left` and `right` (C, d) -> (C, k + 2, d)."""
        hidden = torch.cat([tasks, left[:, None], right[:, None]], dim=1)
        for layer in self.composition_layers:
            hidden = layer(hidden, tasks.size(1))
        return hidden

    def compose(self, left: torch.Tensor, right: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The composition function: `(C, d)` children -> `(C, d)` candidate states and `(C,)` log p(compose)."""
        tasks = self.special_embeddings.weight[[MIX_TASK, SCORE_TASK]].expand(left.size(0), -1, -1)
        hidden = self.composition_transformer(tasks, left, right)
        weights = torch.softmax(self.mix_weights(hidden[:, MIX_TASK]), dim=-1)
        states = self.node_norm(weights[:, :1] * hidden[:, -2] + weights[:, 1:] * hidden[:, -1])
        log_p = F.logsigmoid(self.composition_score(hidden[:, SCORE_TASK])).squeeze(-1)
        return states, log_p

    def choose_split(self, scores: torch.Tensor) -> torch.Tensor:
        """One split per cell: a straight-through Gumbel-softmax sample in training, the argmax otherwise."""
        if self.training:
            return F.gumbel_softmax(scores.float(), tau=self.config.gumbel_temperature, hard=True)
        return F.one_hot(scores.argmax(-1), scores.size(-1)).to(scores.dtype)

    def split_scores(self, input_ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """`(B, n - 1)` the top-down parser's split scores (parser pruning only)."""
        if self.split_parser is None:
            raise ValueError("this R2D2 has no top-down parser (pruning='heuristic'); pruning='parser' has one")
        return self.split_parser(input_ids, lengths)

    def parser_merge_order(self, split_scores: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The merge order of the parser's tree; in training, of a tree drawn from the parser (Gumbel noise on the
        scores, as the authors' code)."""
        if self.training:
            split_scores = split_scores - torch.empty_like(split_scores).exponential_().log()
        return merge_order_from_split_scores(split_scores, lengths)

    def _lengths(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be (batch, length), got shape {tuple(input_ids.shape)}")
        if attention_mask is None:
            attention_mask = input_ids.ne(self.config.pad_token_id)
        lengths = attention_mask.sum(-1)
        if bool((lengths == 0).any()):
            raise ValueError("every sentence needs at least one token")
        return lengths

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        window_size: int | None = None,
        **kwargs,
    ) -> R2D2ModelOutput:
        """The pruned chart over the batch; with parser pruning, merging along the parser's tree."""
        lengths = self._lengths(input_ids, attention_mask)
        split_scores = merge_order = None
        if self.split_parser is not None:
            split_scores = self.split_scores(input_ids, lengths)
            merge_order = self.parser_merge_order(split_scores.detach(), lengths)
        chart = encode_pruned_chart(
            self.embed_tokens(input_ids),
            lengths,
            self.compose,
            self.choose_split,
            window_size or self.config.window_size,
            merge_order=merge_order,
        )
        return R2D2ModelOutput(root_states=chart.node_states[chart.roots], chart=chart, split_scores=split_scores)

    def encode_tree(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        merge_order: torch.Tensor | None = None,
    ) -> R2D2ModelOutput:
        """Fast-R2D2's forced encoding: compose along one tree only (n - 1 compositions a sentence), the tree of
        `merge_order` (`(B, n - 1)`, see `merge_order_from_split_scores`) or else the parser's."""
        lengths = self._lengths(input_ids, attention_mask)
        split_scores = None
        if merge_order is None:
            split_scores = self.split_scores(input_ids, lengths)
            merge_order = merge_order_from_split_scores(split_scores, lengths)
        chart = encode_along_merges(self.embed_tokens(input_ids), lengths, merge_order.to(input_ids.device),
                                    self.compose)
        return R2D2ModelOutput(root_states=chart.node_states[chart.roots], chart=chart, split_scores=split_scores)

    def context_states(self, chart: ChartEncoding, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`(B, n, d)` left and right context of every word: the longest node the chart built that ends just before
        the word (that starts just after it), BOS (EOS) at the sentence's edges, as in the paper."""
        built = chart.node_of_span >= 0  # (B, start, end)
        batch_size, n, _ = built.shape
        device = built.device
        batch = torch.arange(batch_size, device=device)[:, None]
        positions = torch.arange(n, device=device)
        longest_start = built.long().argmax(dim=1)  # [b, end]: the first start with a node ending at `end`
        longest_end = (built.long() * (positions + 1)).argmax(dim=2)  # [b, start]: the last end from `start`
        left_end = (positions - 1).clamp(min=0).expand(batch_size, -1)
        right_start = (positions + 1).clamp(max=n - 1).expand(batch_size, -1)
        left_nodes = chart.node_of_span[batch, longest_start.gather(1, left_end), left_end]
        right_nodes = chart.node_of_span[batch, right_start, longest_end.gather(1, right_start)]
        edges = self.special_embeddings.weight
        left = torch.where(
            (positions == 0)[None, :, None], edges[BOS], chart.node_states[left_nodes.clamp(min=0)]
        )
        at_end = (positions[None, :] >= lengths[:, None] - 1)[..., None]
        right = torch.where(at_end, edges[EOS], chart.node_states[right_nodes.clamp(min=0)])
        return left, right

    @property
    def max_parse_words(self) -> int:
        return self.config.max_parse_words

    # The parse contract (the pipeline and CLI check every call against it before parsing): the keyword options of
    # `parse` with the values each takes (an instance lists those of its config's pruning), and what a parse holds
    # besides `words`.
    parse_options = {"tree_decoding": R2D2Config.tree_decodings}
    parse_outputs = ("spans",)

    @torch.no_grad()
    def parse(self, sentences: list[list[str]], tokenizer, tree_decoding: str | None = None) -> list[dict]:
        """Parse a batch of sentences given as words (one token per word, as in the training text).

        Returns one dict per sentence: `words` and `spans`, the binary tree's constituents of two or more words
        (0-based `[start, end)`, top-down). `tree_decoding` (default `config.tree_decoding`): `"chart"` reads the
        tree from the whole-sentence node along the chosen splits, with the chart pruned at
        `config.parse_window_size`; `"parser"` (parser pruning only) is the top-down parser's tree, split at the
        highest score, with no composition at all. Raises ValueError naming the sentence when one cannot be parsed.
        """
        method = tree_decoding or self.config.tree_decoding
        if method not in self.config.reported_tree_decodings:
            raise ValueError(
                f"tree_decoding must be one of {self.config.reported_tree_decodings} for this model "
                f"(pruning={self.config.pruning!r}), got {method!r}"
            )
        encoded = encode_words(sentences, tokenizer, self.config.max_parse_words)
        input_ids, attention_mask = encoded["input_ids"].to(self.device), encoded["attention_mask"].to(self.device)
        was_training = self.training
        self.eval()
        try:
            if method == "parser":
                lengths = attention_mask.sum(-1)
                scores = self.split_scores(input_ids, lengths).float().tolist()
                return [
                    {"words": list(words), "spans": [span for span in distances_to_spans(row[: len(words) - 1])
                                                     if span[1] - span[0] > 1]}
                    for words, row in zip(sentences, scores)
                ]
            chart = self(input_ids, attention_mask, window_size=self.config.parse_window_size).chart
        finally:
            self.train(was_training)
        splits = chart.node_split.tolist()
        spans_of_node = chart.node_span.tolist()
        node_of_span = chart.node_of_span
        results = []
        for b, (words, root) in enumerate(zip(sentences, chart.roots.tolist())):
            spans, stack = [], [root]
            while stack:  # the root's tree, top-down: a node's children are the spans on both sides of its split
                node = stack.pop()
                start, end = spans_of_node[node]
                if start == end:
                    continue
                spans.append((start, end + 1))
                split = splits[node]
                stack += [int(node_of_span[b, split + 1, end]), int(node_of_span[b, start, split])]
            results.append({"words": list(words), "spans": spans})
        return results


class R2D2ForLanguageModeling(R2D2PreTrainedModel):
    """R2D2 with its bidirectional language-model head: every word is predicted from [MASK, left context, right
    context] through the composition Transformer, a dense layer and the output embedding (tied to the input)."""

    _tied_weights_keys = {"lm_head.weight": "r2d2.embed_tokens.weight"}
    accepts_loss_kwargs = False

    def __init__(self, config: R2D2Config):
        super().__init__(config)
        self.r2d2 = R2D2Model(config)
        self.parse_options = self.r2d2.parse_options
        self.prediction_head = nn.Sequential(
            nn.Linear(config.hidden_size, config.hidden_size),
            nn.GELU(),
            nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, elementwise_affine=False),
        )
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.output_bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.post_init()

    def get_output_embeddings(self):
        return self.lm_head

    def set_output_embeddings(self, new_embeddings):
        self.lm_head = new_embeddings

    def predict_words(self, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        """`(P, vocab)` logits of the word between contexts `left` and `right` (each `(P, d)`)."""
        mask = self.r2d2.special_embeddings.weight[[MASK]].expand(left.size(0), -1, -1)
        hidden = self.r2d2.composition_transformer(mask, left, right)[:, 0]
        return self.lm_head(self.prediction_head(self.r2d2.node_norm(hidden))) + self.output_bias

    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        **kwargs,
    ) -> R2D2LanguageModelingOutput:
        if attention_mask is None:
            attention_mask = input_ids.ne(self.config.pad_token_id)
        outputs = self.r2d2(input_ids, attention_mask)
        lengths = attention_mask.sum(-1)
        left, right = self.r2d2.context_states(outputs.chart, lengths)
        if labels is None:
            logits = self.predict_words(left.flatten(0, 1), right.flatten(0, 1)).view(*input_ids.shape, -1)
            return R2D2LanguageModelingOutput(logits=logits, root_states=outputs.root_states)
        predicted = labels.ne(-100)
        logits = self.predict_words(left[predicted], right[predicted])
        loss = lm_loss = masked_lm_cross_entropy(logits, labels[predicted])
        parser_loss = None
        if outputs.split_scores is not None and self.training:
            # The parser learns from the chart alone (the drawn trees are discrete), the chart nothing from the
            # parser's loss: the sum trains each part by its own loss, as the authors' two optimisers do. Evaluation
            # leaves it out, so that the eval loss stays the language model's (its exp the perplexity).
            samples = self.config.parser_tree_samples
            targets = sample_chart_trees(outputs.chart, samples)
            parser_loss = split_cross_entropy(outputs.split_scores, *targets, lengths, samples)
            loss = loss + parser_loss
        return R2D2LanguageModelingOutput(
            loss=loss, logits=logits, root_states=outputs.root_states, lm_loss=lm_loss, parser_loss=parser_loss
        )

    @torch.no_grad()
    def pseudo_log_likelihood(self, input_ids: torch.LongTensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """`(B, n)` log p of every word given its left and right contexts encoded as separate sentences (so that
        the word itself cannot reach its context's tree, as the paper defines pseudo-perplexity); 0 at padding."""
        mask = attention_mask.bool()
        lengths = mask.sum(-1).tolist()
        n = input_ids.size(1)
        pieces, owners = [], []  # every non-empty prefix and suffix, and which (sentence, word, side) it serves
        for b, length in enumerate(lengths):
            ids = input_ids[b, :length]
            for i in range(length):
                if i > 0:
                    pieces.append(ids[:i])
                    owners.append((b, i, 0))
                if i < length - 1:
                    pieces.append(ids[i + 1 :])
                    owners.append((b, i, 1))
        edges = self.r2d2.special_embeddings.weight
        contexts = torch.stack([edges[BOS], edges[EOS]])[None, None].repeat(len(lengths), n, 1, 1)
        if pieces:
            padded = nn.utils.rnn.pad_sequence(pieces, batch_first=True, padding_value=self.config.pad_token_id)
            piece_mask = nn.utils.rnn.pad_sequence([torch.ones_like(p, dtype=torch.bool) for p in pieces], True)
            roots = self.r2d2(padded, piece_mask).root_states
            b, i, side = (torch.tensor(column, device=roots.device) for column in zip(*owners))
            contexts[b, i, side] = roots.to(contexts.dtype)
        logits = self.predict_words(contexts[mask][:, 0], contexts[mask][:, 1])
        scores = torch.zeros(input_ids.shape, dtype=torch.float, device=input_ids.device)
        scores[mask] = torch.log_softmax(logits.float(), -1).gather(1, input_ids[mask][:, None]).squeeze(1)
        return scores

    @property
    def max_parse_words(self) -> int:
        return self.r2d2.max_parse_words

    parse_options = R2D2Model.parse_options
    parse_outputs = R2D2Model.parse_outputs

    def parse(self, sentences: list[list[str]], tokenizer, tree_decoding: str | None = None) -> list[dict]:
        """See `R2D2Model.parse`."""
        return self.r2d2.parse(sentences, tokenizer, tree_decoding)


__all__ = ["R2D2ForLanguageModeling", "R2D2Model", "R2D2PreTrainedModel", "encode_pruned_chart"]
