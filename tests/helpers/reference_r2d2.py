"""Plain per-sentence, per-cell references for R2D2's chart, written from the paper (Section 2.2, Algorithms 1-2),
independently of the batched `hf_structure.structs.pruned_chart`.

`plain_cky` fills every cell; `pruned_chart_loop` keeps the current terminals in a Python list and merges as the
paper describes. Both compose one cell at a time (its splits as one small batch) and pick splits by argmax, as at
evaluation. The tests compare the batched chart with them; `benchmarks/r2d2_speed.py` times the loop against it.

`encode_pruned_chart_by_word_spans` is the batched chart as it was before issue 28, kept to check that the rewrite
gives the same charts and to time it against it (`benchmarks/r2d2_chart_speed.py`).

`reference_composition_transformer` is the composition Transformer as it was before its attention was written out
(issue 28): a standard layer (`F.scaled_dot_product_attention` with the visibility as a mask, torch's dropout), run
with an `R2D2Model`'s own parameters, as the reference that the tests and the benchmark compare the model's with.
"""

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from hf_structure.models.r2d2.modeling_r2d2 import ROLE_LEFT, ROLE_RIGHT, ROLE_TASK
from hf_structure.structs.pruned_chart import ChartEncoding


class Node:
    def __init__(self, state, log_p, own_log_p=0.0, split=None, split_scores=None):
        self.state = state
        self.log_p = log_p  # log p~: composition log-probabilities summed over the node's tree
        self.own_log_p = own_log_p
        self.split = split  # last word of the chosen left child
        self.split_scores = split_scores or {}  # split word -> score, over the splits the cell was built with
        self.merged = False


def _build(nodes, compose, span, split_words):
    """Compose the cell `span` over `split_words` (last words of its left children) and store it."""
    start, end = span
    left = torch.stack([nodes[(start, k)].state for k in split_words])
    right = torch.stack([nodes[(k + 1, end)].state for k in split_words])
    states, log_p = compose(left, right)
    scores = [
        float(log_p[index]) + nodes[(start, k)].log_p + nodes[(k + 1, end)].log_p for index, k in enumerate(split_words)
    ]
    best = max(range(len(scores)), key=scores.__getitem__)
    nodes[span] = Node(
        states[best],
        scores[best],
        float(log_p[best]),
        split_words[best],
        dict(zip(split_words, scores)),
    )
    return len(split_words)


def plain_cky(leaves, compose):
    """Every span of the sentence, bottom-up; `leaves` (n, d). Returns (nodes by (start, end), compositions)."""
    n = len(leaves)
    nodes = {(i, i): Node(leaves[i], 0.0) for i in range(n)}
    count = 0
    for width in range(1, n):
        for start in range(n - width):
            count += _build(nodes, compose, (start, start + width), list(range(start, start + width)))
    return nodes, count


def pruned_chart_loop(leaves, compose, window):
    """The pruned chart of one sentence: CKY over the lowest `window` rows of the current terminals, then merge the
    paper's bigram and fill the new top-row cells, until one cell spans the sentence."""
    n = len(leaves)
    nodes = {(i, i): Node(leaves[i], 0.0) for i in range(n)}
    terminals = [(i, i) for i in range(n)]
    count = 0

    def fill(height):
        nonlocal count
        for p in range(len(terminals) - height):
            span = (terminals[p][0], terminals[p + height][1])
            if span not in nodes:
                count += _build(nodes, compose, span, [terminals[p + k][1] for k in range(height)])

    for height in range(1, min(window, n - 1) + 1):
        fill(height)
    while len(terminals) > window + 1:
        at = _merge_position(nodes, terminals, window)
        merged = (terminals[at][0], terminals[at + 1][1])
        nodes[merged].merged = True
        terminals[at : at + 2] = [merged]
        fill(window)
    return nodes, count


def _merge_position(nodes, terminals, window):
    ends = {end: index for index, (_, end) in enumerate(terminals)}
    candidates = set()
    stack = [(p, p + window) for p in range(len(terminals) - window)]  # top-row cells, by terminal index
    while stack:
        first, last = stack.pop()
        if last - first == 1:
            candidates.add(first)
            continue
        node = nodes[(terminals[first][0], terminals[last][1])]
        allowed = {k: s for k, s in node.split_scores.items() if k in ends and ends[k] < last}
        split = max(allowed, key=allowed.__getitem__)
        for child in ((first, ends[split]), (ends[split] + 1, last)):
            if child[1] > child[0]:
                stack.append(child)

    def bigram_p(p):
        if 0 <= p < len(terminals) - 1:
            return math.exp(nodes[(terminals[p][0], terminals[p + 1][1])].own_log_p)
        return 0.0

    def score(p):
        own = nodes[(terminals[p][0], terminals[p + 1][1])].own_log_p
        return own + sum(math.log(max(1 - bigram_p(q), 1e-9)) for q in (p - 1, p + 1))

    return max(sorted(candidates), key=score)


def tree_spans(nodes, n):
    """The constituents (start, end exclusive) of two or more words of the whole-sentence node's tree."""
    spans, stack = [], [(0, n - 1)]
    while stack:
        start, end = stack.pop()
        if start == end:
            continue
        spans.append((start, end + 1))
        split = nodes[(start, end)].split
        stack += [(split + 1, end), (start, split)]
    return spans


def chart_tree_spans(chart, b):
    """The same constituents read from the batched chart's node tables (`ChartEncoding`), for sentence b."""
    spans, stack = [], [int(chart.roots[b])]
    while stack:
        node = stack.pop()
        start, end = chart.node_span[node].tolist()
        if start == end:
            continue
        spans.append((start, end + 1))
        split = int(chart.node_split[node])
        stack += [int(chart.node_of_span[b, split + 1, end]), int(chart.node_of_span[b, start, split])]
    return spans


def encode_pruned_chart_by_word_spans(
    leaves: torch.Tensor,
    lengths: torch.Tensor,
    compose: Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    choose_split: Callable[[torch.Tensor], torch.Tensor],
    window: int,
) -> ChartEncoding:
    """The batched chart before issue 28 (commit 314b94e), kept unchanged as the reference that the tests and
    `benchmarks/r2d2_chart_speed.py` compare `encode_pruned_chart` with: same arguments and `ChartEncoding`. It finds
    the cells to build by looking every top-row cell up in a `(B, n, n)` table of word spans and gathers children
    from all nodes built so far, concatenated again at every step."""
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
            merge_at = _choose_merge_by_word_spans(
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
        node_split_candidates=split_words[:next_id, : max(min(window, n - 1), 1)],
        node_split_scores=split_scores[:next_id, : max(min(window, n - 1), 1)],
    )


def _choose_merge_by_word_spans(
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


def reference_composition_layer(
    layer, hidden: torch.Tensor, roles: torch.Tensor, visible: torch.Tensor
) -> torch.Tensor:
    """`R2D2CompositionLayer.forward` before the written-out attention (commit 2b9277f), with `layer`'s parameters:
    `hidden` (C, T, d); `roles` (T,); `visible` (T, T) bool, True where input t may attend to input u."""
    count, length, dim = hidden.shape
    with_roles = hidden + layer.role_embeddings(roles)

    def heads(projection, x):
        return projection(x).view(count, length, layer.num_heads, dim // layer.num_heads).transpose(1, 2)

    attended = F.scaled_dot_product_attention(
        heads(layer.query, with_roles),
        heads(layer.key, with_roles),
        heads(layer.value, hidden),
        attn_mask=visible,
        dropout_p=layer.attention_dropout if layer.training else 0.0,
    )
    attended = attended.transpose(1, 2).reshape(count, length, dim)
    hidden = layer.attention_norm(hidden + layer.dropout(layer.output(attended)))
    return layer.feed_forward_norm(hidden + layer.dropout(layer.feed_forward(hidden)))


def reference_composition_transformer(
    model, tasks: torch.Tensor, left: torch.Tensor, right: torch.Tensor, layers=None
) -> torch.Tensor:
    """`R2D2Model.composition_transformer` before the written-out attention (commit 2b9277f), with `model`'s
    parameters: `tasks` (C, k, d), `left` and `right` (C, d) -> (C, k + 2, d). Each task input sees itself, left and
    right; left and right see only each other. `layers`: a decoder's layers instead of the composition's."""
    num_tasks = tasks.size(1)
    length = num_tasks + 2
    device = tasks.device
    roles = torch.tensor([ROLE_TASK] * num_tasks + [ROLE_LEFT, ROLE_RIGHT], device=device)
    visible = torch.eye(length, dtype=torch.bool, device=device)
    visible[:, -2:] = True
    hidden = torch.cat([tasks, left[:, None], right[:, None]], dim=1)
    for layer in model.composition_layers if layers is None else layers:
        hidden = reference_composition_layer(layer, hidden, roles, visible)
    return hidden
