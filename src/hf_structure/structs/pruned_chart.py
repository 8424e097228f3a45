"""R2D2's pruned CKY chart (Hu et al., ACL 2021, Section 2.2), batched over sentences and cells.

The chart is filled bottom-up as in CKY, but only its lowest `window` rows over the current *terminals*. Once those
rows are full, the chart repeatedly merges two adjacent terminals into one (the bigram cell chosen by the paper's
rule) and fills the cells of the top row that the merge makes reachable, until one cell spans the sentence. Every
merge adds at most `window + 1` cells of `window` splits each, so the number of compositions grows linearly with the
sentence length (full CKY: cubically).

At every step, all cells that can be computed in all sentences of the batch go through `compose` in one call; the
bookkeeping (which cells are missing, which bigram to merge) is tensor indexing over the batch, never a Python loop
over cells or sentences.

Self-contained (torch, dataclasses): `ChartEncoding`, `encode_pruned_chart` and what it uses are copied into R2D2's Hub
code.
"""

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F


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


def encode_pruned_chart(
    leaves: torch.Tensor,
    lengths: torch.Tensor,
    compose: Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    choose_split: Callable[[torch.Tensor], torch.Tensor],
    window: int,
    merge_order: torch.Tensor | None = None,
    merge_rule: str = "2021",
    merge_noise: bool = False,
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
        merge_rule: without `merge_order`, the rule that picks the next merge: `"2021"` (the paper's, below) or
            `"2022"` (the authors' later code, below).
        merge_noise: with the 2022 rule, add standard Gumbel noise to the bigram scores before the argmax, so that
            the merge is drawn (training, as the authors' code).

    Cell scores follow the paper: the log p~ of a split is its composition log p plus its children's log p~. A node
    that has been merged into a terminal passes its log p~ on detached, as the authors' code does. The merge rule
    (the paper's Algorithm 2): among the bigram cells of the current terminals used by the best trees (highest
    score over splits that respect the merges so far) of the top-row cells, merge the one maximising
    log p(bigram) + log(1 - p(left neighbour bigram)) + log(1 - p(right neighbour bigram)). The 2022 rule (the
    authors' Fast-R2D2 code, `gather_bigram_score`) scores each cell by M, the best score of a top-row cell's
    candidate tree that contains it (a candidate split of a top-row cell, then its children's best splits down);
    it merges the bigram of terminals t, t + 1 maximising M(bigram) + min(log(1 - exp L), log(1 - exp R)), L the
    highest M of a cell ending at t and starting before it, R of one starting at t + 1 and ending after it.

    Only the live chart is kept in tables: cell `(t, h)` of sentence b covers its current terminals t .. t + h
    (h <= window), with its node id, state, log p~, own composition log p and the scores of its h splits. A merge
    re-indexes these tables by one gather each and leaves exactly the top-row cells over the merged terminal empty:
    those are the cells to build, so no lookup decides what is missing.
    """
    if merge_rule not in ("2021", "2022"):
        raise ValueError(f"merge_rule must be '2021' or '2022', got {merge_rule!r}")
    chart = _LiveChart(leaves, lengths.to(leaves.device), window, compose, choose_split)
    top, positions, lengths = chart.top, chart.positions, chart.lengths

    # The lowest rows, as in CKY.
    for height in range(1, top + 1):
        rows, starts = (positions[None, : chart.n - height] < (lengths - height)[:, None]).nonzero(as_tuple=True)
        if len(rows) == 0:
            break
        chart.build(rows, starts, height)

    # Merges: every sentence with more than top + 1 terminals merges two of them, then builds the new top-row cells.
    terminals = lengths.clone()
    for _ in range(int(lengths.max()) - top - 1):
        merging = terminals > top + 1
        if merge_order is None and merge_rule == "2022":
            at = _choose_merge_2022(chart.cell_split_scores, terminals, top, merge_noise)
        elif merge_order is None:
            at = _choose_merge(chart.cell_split_scores, chart.cell_own_log_p, terminals, top)
        else:  # the terminal that ends at the sentence's next split
            split = merge_order[chart.batch, (lengths - terminals).clamp(max=merge_order.size(1) - 1)]
            at = (chart.term_last[:, : chart.width] == split[:, None]).long().argmax(-1)
        at = torch.where(merging, at, chart.n + top)  # beyond every cell: the tables stay as they are
        terminals = terminals - merging.long()
        chart.merge(at)
        starts = at[:, None] - top + chart.rows_of_cells  # the top-row cells over the merged terminal
        rows, slot = ((starts >= 0) & (starts + top < terminals[:, None])).nonzero(as_tuple=True)
        chart.build(rows, starts[rows, slot], top)
    return chart.encoding()


class _LiveChart:
    """The chart while it is built: the nodes so far, and the live cells over the current terminals in tables.

    Cell `(t, h)` of sentence b covers terminals t .. t + h (h <= top) and holds its node id, state, log p~, own
    composition log p and the scores of its h splits; terminal t covers words `term_first[b, t] .. term_last[b, t]`.
    `build` composes cells and appends their nodes; `merge` re-indexes the tables after two terminals merge.
    """

    def __init__(self, leaves: torch.Tensor, lengths: torch.Tensor, window: int, compose, choose_split):
        self.batch_size, self.n, self.dim = leaves.shape
        batch_size, n, device = self.batch_size, self.n, leaves.device
        self.leaves, self.lengths, self.compose, self.choose_split = leaves, lengths, compose, choose_split
        self.top = top = min(window, n - 1)  # the highest row of the live chart
        self.heights = heights = top + 1
        self.batch = torch.arange(batch_size, device=device)
        self.positions = positions = torch.arange(n, device=device)
        self.rows_of_cells = torch.arange(heights, device=device)
        self.splits_of_cells = splits_of_cells = torch.arange(max(top, 1), device=device)
        # (heights, top): split k of a cell of height h
        self.beyond_height = splits_of_cells >= self.rows_of_cells[:, None]
        # Split k of cell (t, h) has the left child (t, k) and the right child (t + k + 1, h - 1 - k): in a table
        # flattened to positions t * heights + h, `child_offsets[h]` (2, 1, h) is [left children, right ones] -
        # t * heights. The left child of the first split and the right child of the last are terminals: a merged
        # terminal passes its score on detached (a leaf's is 0); `terminal_child[h]` (2, 1, h) marks them.
        self.child_offsets, self.terminal_child = [], []
        for h in range(heights):
            k = splits_of_cells[:h]
            self.child_offsets.append(torch.stack([k, (k + 1) * heights + h - 1 - k])[:, None])
            self.terminal_child.append(torch.stack([k == 0, k == h - 1])[:, None])
        real = positions[None, :] < lengths[:, None]
        leaf_ids = self.batch[:, None] * n + positions

        # The nodes, leaves first.
        self.node_of_span = torch.full((batch_size, n, n), -1, dtype=torch.long, device=device)
        self.node_of_span[:, positions, positions] = torch.where(real, leaf_ids, -1)
        self.states, self.log_p = [leaves.reshape(batch_size * n, self.dim)], [leaves.new_zeros(batch_size * n)]
        self.spans = [positions.repeat(batch_size)[:, None].expand(-1, 2)]
        self.splits = [torch.full((batch_size * n,), -1, dtype=torch.long, device=device)]
        no_candidates = (batch_size * n, max(top, 1))
        self.candidate_splits = [torch.full(no_candidates, -1, dtype=torch.long, device=device)]
        self.candidate_scores = [torch.full(no_candidates, float("-inf"), device=device)]
        self.next_id = batch_size * n
        self.compositions = torch.zeros(batch_size, dtype=torch.long, device=device)

        # The live cells.
        self.width = n  # table positions: at least the most terminals any sentence has
        self.cell_node = torch.full((batch_size, n, heights), -1, dtype=torch.long, device=device)
        self.cell_node[:, :, 0] = leaf_ids
        self.cell_state = F.pad(leaves[:, :, None], (0, 0, 0, top))
        self.cell_log_p = leaves.new_zeros(batch_size, n, heights)
        self.cell_own_log_p = torch.zeros(batch_size, n, heights, device=device)
        self.cell_split_scores = torch.full((batch_size, n, heights, max(top, 1)), float("-inf"), device=device)
        self.term_first, self.term_last = positions.repeat(batch_size, 1), positions.repeat(batch_size, 1)

    def build(self, rows: torch.Tensor, starts: torch.Tensor, height: int) -> None:
        """Compose cells (starts[c], height) of sentences rows[c] over their splits and store them."""
        batch_size, dim, heights = self.batch_size, self.dim, self.heights
        count = len(rows)
        first_position = starts * heights
        children = first_position[:, None] + self.child_offsets[height]  # (2, C, height)
        sentence = rows[:, None]
        children_states = self.cell_state.view(batch_size, -1, dim)[sentence, children]
        children_log_p = self.cell_log_p.view(batch_size, -1)[sentence, children]
        children_log_p = torch.where(self.terminal_child[height], children_log_p.detach(), children_log_p)
        composed, composition_log_p = self.compose(children_states[0].flatten(0, 1), children_states[1].flatten(0, 1))
        composition_log_p = composition_log_p.view(count, height)
        scores = composition_log_p + children_log_p[0] + children_log_p[1]
        weights = self.choose_split(scores)
        new_states = (weights[..., None] * composed.view(count, height, dim)).sum(1).to(self.leaves.dtype)
        new_log_p = (weights * scores).sum(1).to(self.leaves.dtype)
        chosen = weights.detach().argmax(-1, keepdim=True)

        new_ids = torch.arange(self.next_id, self.next_id + count, device=rows.device)
        self.next_id += count
        position = first_position + height
        num_splits = len(self.splits_of_cells)
        self.cell_node.view(batch_size, -1)[rows, position] = new_ids
        self.cell_state.view(batch_size, -1, dim)[rows, position] = new_states
        self.cell_log_p.view(batch_size, -1)[rows, position] = new_log_p
        own_log_p = composition_log_p.detach().float().gather(1, chosen).squeeze(1)
        self.cell_own_log_p.view(batch_size, -1)[rows, position] = own_log_p
        self.cell_split_scores.view(batch_size, -1, num_splits)[rows, position, :height] = scores.detach().float()
        first_word, last_word = self.term_first[rows, starts], self.term_last[rows, starts + height]
        self.node_of_span[rows, first_word, last_word] = new_ids
        self.states.append(new_states)
        self.log_p.append(new_log_p)
        self.spans.append(torch.stack([first_word, last_word], 1))
        self.splits.append(self.term_last[rows, starts + chosen.squeeze(1)])  # the last word of the left child
        padding = (0, num_splits - height)
        self.candidate_splits.append(
            F.pad(self.term_last[rows[:, None], starts[:, None] + self.splits_of_cells[:height]], padding, value=-1)
        )
        self.candidate_scores.append(F.pad(scores.detach().float(), padding, value=float("-inf")))
        self.compositions += torch.bincount(rows, minlength=batch_size) * height

    def merge(self, at: torch.Tensor) -> None:
        """Merge terminal `at[b]` of each sentence b with the next one (`at[b]` beyond every cell: no merge),
        re-indexing the tables by one gather each. The top-row cells over the merged terminal are left to build."""
        batch_size, dim, heights, top = self.batch_size, self.dim, self.heights, self.top
        self.width -= 1  # the longest sentences merge at every step
        width, positions, rows_of_cells, splits_of_cells = (
            self.width,
            self.positions,
            self.rows_of_cells,
            self.splits_of_cells,
        )
        start = positions[:width, None]
        merged = at[:, None, None]
        # Cell (t, h) over the new terminals was cell (t, h + 1) if it covers the merged terminal (with one split
        # less: the one between the two merged terminals), cell (t + 1, h) if it starts after it, else cell (t, h).
        # Cells of the top row over the merged terminal had no old cell: `build` makes them.
        covers_merge = (start <= merged) & (merged <= start + rows_of_cells)  # (B, width, heights)
        source = (start + (start > merged)) * heights + (rows_of_cells + covers_merge).clamp(max=top)
        num_splits = len(splits_of_cells)
        removed_or_after = covers_merge[..., None] & (splits_of_cells >= (merged - start)[..., None])
        split_source = source[..., None] * num_splits + (splits_of_cells + removed_or_after).clamp(max=num_splits - 1)
        source = source.flatten(1)
        self.cell_node = self.cell_node.flatten(1).gather(1, source).view(batch_size, width, heights)
        state_source = source[..., None].expand(-1, -1, dim)
        self.cell_state = self.cell_state.flatten(1, 2).gather(1, state_source).view(batch_size, width, heights, dim)
        self.cell_log_p = self.cell_log_p.flatten(1).gather(1, source).view(batch_size, width, heights)
        self.cell_own_log_p = self.cell_own_log_p.flatten(1).gather(1, source).view(batch_size, width, heights)
        split_scores = self.cell_split_scores.flatten(1).gather(1, split_source.flatten(1)).view(split_source.shape)
        self.cell_split_scores = split_scores.masked_fill(self.beyond_height, float("-inf"))
        self.term_first = self.term_first.gather(1, positions[:width] + (positions[:width] > at[:, None]))
        self.term_last = self.term_last.gather(1, positions[:width] + (positions[:width] >= at[:, None]))

    def encoding(self) -> ChartEncoding:
        return ChartEncoding(
            node_states=torch.cat(self.states),
            node_log_p=torch.cat(self.log_p),
            node_span=torch.cat(self.spans),
            node_split=torch.cat(self.splits),
            node_of_span=self.node_of_span,
            roots=self.node_of_span[self.batch, 0, self.lengths - 1],
            compositions=self.compositions,
            node_split_candidates=torch.cat(self.candidate_splits),
            node_split_scores=torch.cat(self.candidate_scores),
        )


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
    score = bigram_log_p + F.pad(not_neighbour[:, :-1], (1, 0)) + F.pad(not_neighbour[:, 1:], (0, 1))
    score = score.masked_fill(~(in_row & used[:, : width - 1, 1]), float("-inf"))
    return score.argmax(-1)


def _choose_merge_2022(split_scores: torch.Tensor, terminals: torch.Tensor, top: int, noise: bool) -> torch.Tensor:
    """`(B,)` index of the terminal to merge with its right neighbour by the 2022 rule (see `encode_pruned_chart`),
    from the live chart's `(B, width, top + 1, top)` split scores."""
    batch_size, width, heights, _ = split_scores.shape
    device = split_scores.device
    positions = torch.arange(width, device=device)
    cell_ends = positions[:, None] + torch.arange(heights, device=device)
    live = cell_ends[None] < terminals[:, None, None]  # (B, width, heights)
    scores = split_scores.masked_fill(~live[..., None], float("-inf"))
    # best[b, t * heights + h] = M of cell (t, h); position width * heights onwards takes the pushes of no cell.
    best = torch.full((batch_size, (width + 1) * heights), float("-inf"), device=device)
    sink = width * heights

    def push(values: torch.Tensor, starts: torch.Tensor, cell_heights: torch.Tensor) -> None:
        index = torch.where(torch.isfinite(values) & (starts < width), starts * heights + cell_heights, sink)
        best.scatter_reduce_(1, index.flatten(1), values.flatten(1), reduce="amax")

    candidates = scores[:, :, top, :top]  # (B, width, top): every candidate of every top-row cell
    best[:, top : width * heights : heights] = candidates.amax(-1)
    k = torch.arange(top, device=device)
    push(candidates, positions[:, None].expand(-1, top).expand(batch_size, -1, -1), k.expand(batch_size, width, -1))
    push(
        candidates, (positions[:, None] + k + 1).expand(batch_size, -1, -1), (top - 1 - k).expand(batch_size, width, -1)
    )
    for height in range(top - 1, 1, -1):  # down the best splits; a bigram's children are terminals
        values = best[:, height : width * heights : heights]
        k = scores[:, :, height, :height].argmax(-1)
        push(values, positions.expand(batch_size, -1), k)
        push(values, positions + k + 1, height - 1 - k)
    best = best[:, : width * heights].view(batch_size, width, heights)
    # L[t]: cells (t - i, i) end at t; R[t]: cells (t, i) start at t; i = 1 .. top.
    left = torch.stack([F.pad(best[:, : width - i, i], (i, 0), value=float("-inf")) for i in range(1, top + 1)])
    right = best[:, :, 1:].amax(-1)
    not_left = torch.log((1 - left.amax(0).exp()).clamp(min=1e-4))
    not_right = torch.log((1 - right.exp()).clamp(min=1e-4))
    score = (best[:, : width - 1, 1] + torch.minimum(not_left[:, : width - 1], not_right[:, 1:])).clamp(min=-9999.0)
    if noise:
        score = score - torch.empty_like(score).exponential_().log()
    in_row = positions[: width - 1] < (terminals - 1)[:, None]
    return score.masked_fill(~in_row, float("-inf")).argmax(-1)
