"""R2D2's pruned CKY chart (Hu et al., ACL 2021, Section 2.2), batched over sentences and cells.

The chart is filled bottom-up as in CKY, but only its lowest `window` rows over the current *terminals*. Once those
rows are full, the chart repeatedly merges two adjacent terminals into one (the bigram cell chosen by the paper's
rule) and fills the cells of the top row that the merge makes reachable, until one cell spans the sentence. Every
merge adds at most `window + 1` cells of `window` splits each, so the number of compositions grows linearly with the
sentence length (full CKY: cubically).

At every step, all cells that can be computed in all sentences of the batch go through `compose` in one call; the
bookkeeping (which cells are missing, which bigram to merge) is tensor indexing over the batch, never a Python loop
over cells or sentences.

Self-contained (torch, dataclasses): `ChartEncoding` and `encode_pruned_chart` are copied into R2D2's Hub code.
"""

from collections.abc import Callable
from dataclasses import dataclass

import torch


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
    """

    node_states: torch.Tensor
    node_log_p: torch.Tensor
    node_span: torch.Tensor
    node_split: torch.Tensor
    node_of_span: torch.Tensor
    roots: torch.Tensor
    compositions: torch.Tensor


def encode_pruned_chart(
    leaves: torch.Tensor,
    lengths: torch.Tensor,
    compose: Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    choose_split: Callable[[torch.Tensor], torch.Tensor],
    window: int,
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

    Cell scores follow the paper: the log p~ of a split is its composition log p plus its children's log p~. A node
    that has been merged into a terminal passes its log p~ on detached, as the authors' code does. The merge rule
    (the paper's Algorithm 2): among the bigram cells of the current terminals used by the best trees (highest
    score over splits that respect the merges so far) of the top-row cells, merge the one maximising
    log p(bigram) + log(1 - p(left neighbour bigram)) + log(1 - p(right neighbour bigram)).
    """
    batch_size, n, dim = leaves.shape
    device = leaves.device
    lengths = lengths.to(device)
    batch = torch.arange(batch_size, device=device)
    positions = torch.arange(n, device=device)
    # Every merge adds at most window + 1 cells; the CKY rows at most n per row.
    capacity = batch_size * n * (2 * window + 2)
    node_span = torch.full((capacity, 2), -1, dtype=torch.long, device=device)
    node_split = torch.full((capacity,), -1, dtype=torch.long, device=device)
    # The splits each cell was built over (the last word of the left child) and their scores, for the merge rule.
    split_words = torch.full((capacity, window), -1, dtype=torch.long, device=device)
    split_scores = torch.full((capacity, window), float("-inf"), device=device)
    own_log_p = torch.zeros(capacity, device=device)  # log p of the node's own (chosen) composition
    merged = torch.zeros(capacity, dtype=torch.bool, device=device)
    node_span[: batch_size * n] = positions.repeat(batch_size)[:, None]
    node_of_span = torch.full((batch_size, n, n), -1, dtype=torch.long, device=device)
    real = positions[None, :] < lengths[:, None]
    node_of_span[:, positions, positions] = torch.where(real, batch[:, None] * n + positions, -1)
    states, log_p = [leaves.reshape(batch_size * n, dim)], [leaves.new_zeros(batch_size * n)]
    next_id = batch_size * n
    compositions = torch.zeros(batch_size, dtype=torch.long, device=device)

    # The current terminals: terminal t of sentence b covers words term_start[b, t] .. term_end[b, t].
    term_start, term_end = positions.repeat(batch_size, 1), positions.repeat(batch_size, 1)
    num_terms = lengths.clone()

    step = 0
    while True:
        height = min(step + 1, window)
        if step >= window:
            active = num_terms > height + 1  # the top row still has two cells or more: merge
            if not active.any():
                break
            merge_at = _choose_merge(
                node_of_span, term_start, term_end, num_terms, height, split_words, split_scores, own_log_p
            )
            rows = batch[active]
            at = merge_at[active]
            merged[node_of_span[rows, term_start[rows, at], term_end[rows, at + 1]]] = True
            # Terminal at+1 joins terminal at; the terminals after it move one to the left.
            source = (positions[None, :] + (positions[None, :] > at[:, None])).clamp(max=n - 1)
            term_start[rows] = term_start[rows].gather(1, source)
            new_end = term_end[rows].gather(1, source)
            new_end[torch.arange(len(rows), device=device), at] = term_end[rows, at + 1]
            term_end[rows] = new_end
            num_terms = num_terms - active.long()

        if height >= n:
            break
        cells = positions[: n - height]
        in_row = cells[None, :] < (num_terms - height)[:, None]
        if step < window and not in_row.any():
            break
        span_end = term_end[:, height:]
        missing = in_row & (node_of_span[batch[:, None], term_start[:, : n - height], span_end] < 0)
        rows, starts = missing.nonzero(as_tuple=True)  # C cells: sentence, first terminal
        step += 1
        if len(rows) == 0:
            continue
        splits = torch.arange(height, device=device)
        first_word = term_start[rows, starts]  # (C,)
        last_word = term_end[rows, starts + height]
        split_word = term_end[rows[:, None], starts[:, None] + splits]  # (C, height): last word of the left child
        right_first = term_start[rows[:, None], starts[:, None] + splits + 1]
        left_ids = node_of_span[rows[:, None], first_word[:, None], split_word]
        right_ids = node_of_span[rows[:, None], right_first, last_word[:, None]]

        all_states, all_log_p = torch.cat(states), torch.cat(log_p)
        child_log_p = torch.where(merged[: len(all_log_p)].clone(), all_log_p.detach(), all_log_p)
        composed, composition_log_p = compose(all_states[left_ids.flatten()], all_states[right_ids.flatten()])
        composed = composed.view(len(rows), height, dim)
        composition_log_p = composition_log_p.view(len(rows), height)
        scores = composition_log_p + child_log_p[left_ids] + child_log_p[right_ids]
        weights = choose_split(scores)

        new_ids = torch.arange(next_id, next_id + len(rows), device=device)
        next_id += len(rows)
        states.append((weights[..., None] * composed).sum(1).to(leaves.dtype))
        log_p.append((weights * scores).sum(1).to(leaves.dtype))
        chosen = weights.detach().argmax(-1, keepdim=True)
        node_span[new_ids, 0], node_span[new_ids, 1] = first_word, last_word
        node_split[new_ids] = split_word.gather(1, chosen).squeeze(1)
        split_words[new_ids, :height] = split_word
        split_scores[new_ids, :height] = scores.detach().float()
        own_log_p[new_ids] = composition_log_p.detach().float().gather(1, chosen).squeeze(1)
        node_of_span[rows, first_word, last_word] = new_ids
        compositions += torch.bincount(rows, minlength=batch_size) * height

    roots = node_of_span[batch, 0, lengths - 1]
    return ChartEncoding(
        node_states=torch.cat(states),
        node_log_p=torch.cat(log_p),
        node_span=node_span[:next_id],
        node_split=node_split[:next_id],
        node_of_span=node_of_span,
        roots=roots,
        compositions=compositions,
    )


def _choose_merge(
    node_of_span: torch.Tensor,
    term_start: torch.Tensor,
    term_end: torch.Tensor,
    num_terms: torch.Tensor,
    height: int,
    split_words: torch.Tensor,
    split_scores: torch.Tensor,
    own_log_p: torch.Tensor,
) -> torch.Tensor:
    """`(B,)` index of the terminal to merge with its right neighbour (see `encode_pruned_chart`)."""
    batch_size, n = term_start.shape
    device = term_start.device
    batch = torch.arange(batch_size, device=device)
    positions = torch.arange(n, device=device)
    is_term = positions[None, :] < num_terms[:, None]
    # Which words end a current terminal, and which terminal that is.
    ends_terminal = torch.zeros(batch_size, n, dtype=torch.bool, device=device)
    ends_terminal[batch[:, None].expand(-1, n)[is_term], term_end[is_term]] = True
    terminal_of_end = torch.zeros(batch_size, n, dtype=torch.long, device=device)
    terminal_of_end[batch[:, None].expand(-1, n)[is_term], term_end[is_term]] = positions.expand(batch_size, -1)[
        is_term
    ]
    # Walk the best trees of the top-row cells down to the bigram row, one row at a time.
    used = torch.zeros(batch_size, height + 1, n, dtype=torch.bool, device=device)
    used[:, height, : n - height] = positions[None, : n - height] < (num_terms - height)[:, None]
    for h in range(height, 1, -1):
        rows, starts = used[:, h, : n - h].nonzero(as_tuple=True)
        if len(rows) == 0:
            continue
        node = node_of_span[rows, term_start[rows, starts], term_end[rows, starts + h]]
        candidates = split_words[node]  # (C, window)
        allowed = (candidates >= 0) & ends_terminal[rows[:, None], candidates.clamp(min=0)]
        best = split_scores[node].masked_fill(~allowed, float("-inf")).argmax(-1, keepdim=True)
        left_last = terminal_of_end[rows, candidates.gather(1, best).squeeze(1)]
        left_height = left_last - starts
        used[rows, left_height, starts] = True
        used[rows, h - 1 - left_height, left_last + 1] = True
    bigrams = positions[: n - 1]
    in_row = bigrams[None, :] < (num_terms - 1)[:, None]
    bigram_nodes = node_of_span[batch[:, None], term_start[:, : n - 1], term_end[:, 1:]]
    bigram_log_p = torch.where(in_row, own_log_p[bigram_nodes.clamp(min=0)], float("-inf"))
    # log(1 - p) of the neighbouring bigrams; a missing neighbour has p = 0.
    not_neighbour = torch.log((1 - bigram_log_p.exp()).clamp(min=1e-9))
    score = (
        bigram_log_p
        + torch.nn.functional.pad(not_neighbour[:, :-1], (1, 0))
        + torch.nn.functional.pad(not_neighbour[:, 1:], (0, 1))
    )
    score = score.masked_fill(~(in_row & used[:, 1, : n - 1]), float("-inf"))
    return score.argmax(-1)
