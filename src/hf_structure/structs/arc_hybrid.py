"""Exact dynamic programming over arc-hybrid derivations (Kuhlmann, Gómez-Rodríguez & Satta 2011; Shi, Huang & Lee
2017; Le Roux, Rozenknop & Lacroix 2019), batched over sentences.

Positions: 0 is ROOT, 1..n the words, n + 1 the empty buffer. The arc-hybrid system starts from stack [0] and
buffer 1..n and ends with stack [0] and an empty buffer, through n SHIFTs (move the buffer front b0 onto the stack)
and n reductions of the stack top s0: LEFT attaches s0 to b0 (b0 must be a word), RIGHT attaches s0 to the word
below it, s1 (ROOT included).

`minimal_feature_dp` is the O(n^3) algorithm of Shi et al.: every transition is scored from (s0, b0) only. Its item
T[i, j] stands for the subderivations that start with i on top of the stack and j at the front of the buffer and end
in the same state, every word between i and j attached:

    T[i, i + 1] = 0
    T[i, j] = max over i < k < j of  T[i, k] + shift(i, k) + T[k, j]
                                     + max(left(k, j) + arc(j -> k),  right(k, j) + arc(i -> k))

`stack_size_dp` is the O(n^4) algorithm of Le Roux et al.: transitions are scored from the buffer front and the
stack size, `transition_scores[b0, q, action]`, and each reduction adds a matching score `matching_scores[k, q, j]`
(word k, shifted onto a stack of q elements, reduced with j at the buffer front) and the new arc's score. Its items
carry the stack size q (with i on top):

    T[q, i, i + 1] = 0
    T[q, i, j] = max over i < k < j of  T[q, i, k] + shift(k, q) + T[q + 1, k, j] + matching(k, q, j)
                                        + max(left(j, q + 1) + arc(j -> k),  right(j, q + 1) + arc(i -> k))

Stack sizes at or above the scores' last bucket share it (the paper buckets 1-9 and >= 10), and so do their items:
with Q buckets the DP runs in O(Q n^3).

Self-contained (torch only); a model's generated Hub code carries the functions it uses
(`scripts/modular_converter.py`).
"""

import torch

SHIFT, LEFT, RIGHT = 0, 1, 2


def minimal_feature_dp(
    transition_scores: torch.Tensor, arc_scores: torch.Tensor, lengths: torch.Tensor, single_root: bool = False
) -> tuple[torch.Tensor, torch.Tensor, list[list[int]]]:
    """The best arc-hybrid derivation of each sentence under minimal-feature scores, exactly.

    Args:
        transition_scores: `(B, P, P, 3)`, `[b, s0, b0, action]` the score of SHIFT / LEFT / RIGHT taken with stack top
            s0 and buffer front b0 (positions as in the module docstring; P >= n + 2).
        arc_scores: `(B, P, P)`, `[b, h, d]` the score of the arc h -> d.
        lengths: `(B,)` words per sentence.
        single_root: only derivations that attach one word to ROOT (RIGHT onto ROOT only once the buffer is empty).

    Returns:
        the best derivation's score `(B,)`; heads `(B, P)` (`heads[b, d]` for the words d = 1..n, 0 elsewhere); and
        each sentence's transitions (SHIFT / LEFT / RIGHT ids, 2n of them).

    Uses `_by_start`, `_by_end`, `_backtrack_all` (the chart is kept by (start, width) and by (end, width), so that
    every lookup of a width's items is a slice, see `stack_size_dp`).
    """
    batch_size, size = arc_scores.shape[:2]
    device = arc_scores.device
    scores = transition_scores.detach().float()
    arcs = arc_scores.detach().float()
    end = lengths.to(device) + 1
    # LEFT needs a word at the buffer front.
    beyond = torch.arange(size, device=device)[None, :] >= end[:, None]
    left_scores = scores[..., LEFT].masked_fill(beyond[:, None, :], float("-inf")) + arcs.transpose(1, 2)
    left_by_end = _by_end(left_scores)  # [b, j, w]: LEFT of k = j - w with j at the front, and the arc j -> k
    right_by_end = _by_end(scores[..., RIGHT])  # [b, j, w]: RIGHT of k = j - w with j at the front
    right_arcs = _by_start(arcs)  # [b, i, w]: the arc i -> i + w
    shift_by_start = _by_start(scores[..., SHIFT])  # [b, i, w]: SHIFT of i + w with i on top
    # T[i, i + w] + shift(i, i + w), by start; T[j - w, j] by end.
    chart_and_shift = torch.full((batch_size, size, size), float("-inf"), device=device)
    chart_by_end = torch.full((batch_size, size, size), float("-inf"), device=device)
    chart_and_shift[:, : size - 1, 1] = shift_by_start[:, : size - 1, 1]
    chart_by_end[:, 1:, 1] = 0.0
    best_split = torch.zeros(batch_size, 1, size, size, dtype=torch.long, device=device)
    best_action = torch.zeros_like(best_split)
    for width in range(2, size):
        count = size - width  # items (i, i + width), i < count; their splits k = i + 1 .. i + width - 1
        left = left_by_end[:, width:, 1:width].flip(-1)
        right = right_by_end[:, width:, 1:width].flip(-1) + right_arcs[:, :count, 1:width]
        if single_root:  # i = 0: RIGHT attaches k to ROOT, only with the empty buffer
            right[:, 0].masked_fill_((end != width)[:, None], float("-inf"))
        total = (
            chart_and_shift[:, :count, 1:width] + chart_by_end[:, width:, 1:width].flip(-1) + torch.maximum(left, right)
        )
        value, arg = total.max(-1)
        chart_and_shift[:, :count, width] = value + shift_by_start[:, :count, width]
        chart_by_end[:, width:, width] = value
        best_split[:, 0, :count, width] = torch.arange(count, device=device) + 1 + arg
        is_right = right.gather(-1, arg[..., None]) > left.gather(-1, arg[..., None])
        best_action[:, 0, :count, width] = LEFT + is_right.squeeze(-1).long()
    best = chart_by_end[torch.arange(batch_size, device=device), end, end]
    heads, derivations = _backtrack_all(best_split, best_action, end, deepen=0)
    return best, heads.to(device), derivations


def _by_start(scores: torch.Tensor) -> torch.Tensor:
    """`y[..., i, w] = scores[..., i, i + w]` (-inf where i + w is beyond the last position)."""
    size = scores.size(-1)
    columns = torch.arange(size, device=scores.device)[:, None] + torch.arange(size, device=scores.device)
    picked = scores.gather(-1, columns.clamp(max=size - 1).expand(*scores.shape[:-2], size, size))
    return picked.masked_fill(columns >= size, float("-inf"))


def _by_end(scores: torch.Tensor) -> torch.Tensor:
    """`y[..., j, w] = scores[..., j - w, j]` (-inf where j - w < 0)."""
    size = scores.size(-1)
    rows = torch.arange(size, device=scores.device)[:, None] - torch.arange(size, device=scores.device)
    picked = scores.transpose(-1, -2).gather(-1, rows.clamp(min=0).expand(*scores.shape[:-2], size, size))
    return picked.masked_fill(rows < 0, float("-inf"))


def _backtrack_all(best_split, best_action, end, deepen) -> tuple[torch.Tensor, list[list[int]]]:
    """Heads `(B, P)` and transitions of every sentence from the back-pointers `[b, level, i, width]` (the split k
    and the reduction of item (i, i + width) at that level). Uses `_backtrack`."""
    heads = torch.zeros(best_split.size(0), best_split.size(-1), dtype=torch.long)
    splits, actions = best_split.cpu().numpy(), best_action.cpu().numpy()
    derivations = []
    for b, last in enumerate(end.tolist()):
        transitions: list[int] = []
        _backtrack(splits[b], actions[b], last, heads[b], transitions, deepen, deepest=splits.shape[1] - 1)
        derivations.append(transitions)
    return heads, derivations


def _backtrack(splits, actions, last, heads, transitions, deepen, deepest):
    """Append the transitions of the goal item (level 1 if `deepen`, else 0; i = 0, j = `last`) and set the heads it
    attaches. `splits[level, i, j - i]` and `actions[level, i, j - i]` are the back-pointers; the right antecedent of
    an item at `level` sits at `min(level + deepen, deepest)` (the stack-size DP's q + 1, its last row standing for
    every deeper stack; the minimal-feature DP has one level). Iterative, as sentences can be long."""
    stack = [("item", deepen, 0, last)]
    while stack:
        kind, value, i, j = stack.pop()
        if kind == "emit":
            transitions.append(value)
            continue
        if j - i < 2:
            continue
        k, action = int(splits[value, i, j - i]), int(actions[value, i, j - i])
        heads[k] = j if action == LEFT else i
        # T[i, k], SHIFT k, T[k, j], reduce k: pushed in reverse
        deeper = min(value + deepen, deepest)
        stack += [("emit", action, 0, 0), ("item", deeper, k, j), ("emit", SHIFT, 0, 0), ("item", value, i, k)]


def stack_size_dp(
    transition_scores: torch.Tensor,
    matching_scores: torch.Tensor,
    arc_scores: torch.Tensor,
    lengths: torch.Tensor,
    single_root: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, list[list[int]]]:
    """The best arc-hybrid derivation of each sentence under stack-size scores, exactly (see the module docstring).

    Args:
        transition_scores: `(B, P, Q, 3)`, `[b, b0, q, action]`: SHIFT / LEFT / RIGHT taken with buffer front b0 and
            q elements on the stack (bucket Q - 1 holds every q >= Q - 1; index 0 is unused).
        matching_scores: `(B, P, Q, P)`, `[b, k, q, j]`: word k was shifted onto q elements and is reduced with j at
            the buffer front.
        arc_scores: `(B, P, P)`, `[b, h, d]` the score of the arc h -> d.
        lengths: `(B,)` words per sentence.
        single_root: as in `minimal_feature_dp`.

    Returns: as `minimal_feature_dp`.

    Items with q >= Q - 1 elements on the stack see the same (last-bucket) scores and the same deeper items, so they
    share one chart row: the DP is exact in O(Q n^3) time rather than O(n^4). The chart is kept twice, by (start,
    width) and by (end, reversed width), and every score is laid out the same way before the loop, so that all
    lookups of a width's items are slices rather than gathers. Uses `_by_start`, `_by_end`, `_backtrack_all`.
    """
    batch_size, size = arc_scores.shape[:2]
    device = arc_scores.device
    deepest = transition_scores.size(2) - 1  # chart rows 1..deepest; row deepest stands for every deeper stack
    deeper = torch.arange(2, deepest + 2, device=device).clamp(max=deepest)  # the row after a SHIFT, for rows 1..
    moves = transition_scores.detach().float().permute(0, 2, 1, 3)  # (B, Q, P, 3) [b, q, b0, action]
    arcs = arc_scores.detach().float()
    end = lengths.to(device) + 1
    beyond = torch.arange(size, device=device)[None, None, :] >= end[:, None, None]
    left_moves = moves[..., LEFT].masked_fill(beyond, float("-inf"))[:, deeper]  # (B, D, P): LEFT needs a word
    right_moves = moves[..., RIGHT][:, deeper]  # row q: the reduction at stack size q + 1
    # By end, widths reversed ([..., j, u] for the split k = j - (P - u)): a width's splits k = i + 1 .. j - 1 are
    # then the ascending slice u = P - width + 1 .. P - 1, as they are by start.
    # [b, q, j, u]: SHIFT of k onto q elements plus its matching with j.
    shift_and_match = _by_end(matching_scores.detach().float().permute(0, 2, 1, 3) + moves[..., SHIFT, None])
    shift_and_match = shift_and_match[:, 1:].flip(-1).roll(1, -1)
    left_arcs = _by_end(arcs.transpose(1, 2)).flip(-1).roll(1, -1)  # [b, j, u]: the arc j -> k
    right_arcs = _by_start(arcs)  # [b, i, w]: the arc i -> i + w
    # Row q - 1 holds stack size q; one more row repeats the last, so that the rows after a SHIFT are a slice.
    chart_by_start = torch.full((batch_size, deepest, size, size), float("-inf"), device=device)
    chart_by_end = torch.full((batch_size, deepest + 1, size, size), float("-inf"), device=device)
    chart_by_start[:, :, : size - 1, 1] = 0.0
    chart_by_end[:, :, 1:, size - 1] = 0.0
    best_split = torch.zeros(batch_size, deepest + 1, size, size, dtype=torch.long, device=device)
    best_action = torch.zeros_like(best_split)
    for width in range(2, size):
        count = size - width  # items (i, i + width), i < count; their splits k = i + 1 .. i + width - 1
        by_end = slice(size - width + 1, size)
        # (B, D, S, K), row q: i on top of q stack elements; k is shifted onto q and reduced at size q + 1.
        left = left_moves[:, :, width:, None] + left_arcs[:, None, width:, by_end]
        right = right_moves[:, :, width:, None] + right_arcs[:, None, :count, 1:width]
        if single_root:  # i = 0: RIGHT attaches k to ROOT, only with the empty buffer
            right[:, :, 0].masked_fill_((end != width)[:, None, None], float("-inf"))
        total = chart_by_start[:, :, :count, 1:width] + chart_by_end[:, 1:, width:, by_end]
        total += shift_and_match[:, :, width:, by_end]
        total += torch.maximum(left, right)
        value, arg = total.max(-1)
        chart_by_start[:, :, :count, width] = value
        chart_by_end[:, :deepest, width:, size - width] = value
        chart_by_end[:, deepest, width:, size - width] = value[:, -1]
        best_split[:, 1:, :count, width] = torch.arange(count, device=device) + 1 + arg
        is_right = right.gather(-1, arg[..., None]) > left.gather(-1, arg[..., None])
        best_action[:, 1:, :count, width] = LEFT + is_right.squeeze(-1).long()
    best = chart_by_end[torch.arange(batch_size, device=device), 0, end, size - end]
    heads, derivations = _backtrack_all(best_split, best_action, end, deepen=1)
    return best, heads.to(device), derivations


def derivation_score(
    transitions: list[int], transition_scores: torch.Tensor, arc_scores: torch.Tensor, length: int
) -> tuple[float, list[int]]:
    """Replay `transitions` from the initial configuration of a sentence of `length` words, summing the minimal-feature
    scores of `minimal_feature_dp` (one sentence: `(P, P, 3)` and `(P, P)`). Returns the score and the heads
    (index 0 unused). Raises ValueError on an illegal transition or an unfinished derivation."""
    stack, front, heads, total = [0], 1, [0] * (length + 1), 0.0
    for step, action in enumerate(transitions):
        s0 = stack[-1]
        total += float(transition_scores[s0, front, action])
        if action == SHIFT and front <= length:
            stack.append(front)
            front += 1
        elif action == LEFT and len(stack) > 1 and front <= length:
            heads[stack.pop()] = front
            total += float(arc_scores[front, s0])
        elif action == RIGHT and len(stack) > 1:
            stack.pop()
            heads[s0] = stack[-1]
            total += float(arc_scores[stack[-1], s0])
        else:
            raise ValueError(f"transition {step} ({action}) is illegal with stack {stack} and buffer front {front}")
    if stack != [0] or front != length + 1:
        raise ValueError(f"the derivation ends with stack {stack} and buffer front {front}")
    return total, heads


def hamming_augmented_arcs(arc_scores: torch.Tensor, gold_heads: torch.Tensor, cost: float = 1.0) -> torch.Tensor:
    """Arc scores for cost-augmented decoding: `cost` added to every arc h -> d whose h is not d's gold head.

    Every derivation gives each word exactly one head, so either DP over these scores finds the derivation that
    maximises score + cost * (number of wrong heads), the structured hinge loss's most violating derivation.
    `gold_heads`: `(B, P)`, the gold head of each word position (other positions are ignored).
    """
    heads = torch.arange(arc_scores.size(1), device=arc_scores.device)
    wrong = heads[None, :, None] != gold_heads[:, None, :]  # [b, h, d]
    return arc_scores + cost * wrong.to(arc_scores.dtype)


def static_oracle(heads: list[int]) -> list[int]:
    """The arc-hybrid derivation of a projective tree with one root (`heads` 1-based, 0 = ROOT): RIGHT as soon as s0
    has all its dependents and its head is s1 (before a SHIFT, as Le Roux et al.), LEFT when its head is b0, else
    SHIFT. The word attached to ROOT is reduced last, so the derivation is one `single_root` decoding can find.
    Raises ValueError when the tree is not projective or has several roots."""
    length = len(heads)
    missing = [0] * (length + 2)  # dependents not attached yet
    for head in heads:
        missing[head] += 1
    stack, front, transitions = [0], 1, []
    while stack != [0] or front <= length:
        s0 = stack[-1]
        onto_root_too_early = stack[-2:-1] == [0] and front <= length
        if len(stack) > 1 and missing[s0] == 0 and heads[s0 - 1] == stack[-2] and not onto_root_too_early:
            action = RIGHT
        elif len(stack) > 1 and front <= length and heads[s0 - 1] == front:
            action = LEFT
        elif front <= length:
            action = SHIFT
        else:
            raise ValueError(f"no arc-hybrid derivation: the tree {heads} is not projective or has several roots")
        if action == SHIFT:
            stack.append(front)
            front += 1
        else:
            missing[heads[stack.pop() - 1]] -= 1
        transitions.append(action)
    return transitions


def stack_size_events(transitions: list[int], length: int, buckets: int) -> tuple[list[tuple], list[tuple]]:
    """What `stack_size_dp` scores along a derivation: each step as (buffer front, stack-size bucket, action), and
    each word's matching as (word, bucket of the stack it was shifted onto, buffer front at its reduction). Buckets
    as in `stack_size_dp` (`min(q, buckets - 1)`); the empty buffer is position `length + 1`."""
    stack, shifted_onto, front = [0], {}, 1
    steps, matchings = [], []
    for action in transitions:
        steps.append((front, min(len(stack), buckets - 1), action))
        if action == SHIFT:
            shifted_onto[front] = min(len(stack), buckets - 1)
            stack.append(front)
            front += 1
        else:
            word = stack.pop()
            matchings.append((word, shifted_onto[word], front))
    return steps, matchings
