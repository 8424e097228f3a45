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

Self-contained (torch only); functions are copied into a model's Hub code by `scripts/fix_copies.py`.
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
    """
    batch_size, size = arc_scores.shape[:2]
    device = arc_scores.device
    scores = transition_scores.detach().float()
    arcs = arc_scores.detach().float()
    # The buffer-end position of each sentence: LEFT needs a word at the buffer front.
    end = lengths.to(device) + 1
    chart = arc_scores.new_full((batch_size, size, size), float("-inf"), dtype=torch.float)
    index = torch.arange(size - 1, device=device)
    chart[:, index, index + 1] = 0.0
    best_split = torch.zeros(batch_size, size, size, dtype=torch.long, device=device)
    best_action = torch.zeros_like(best_split)
    for width in range(2, size):
        starts = torch.arange(size - width, device=device)
        ends = starts + width
        splits = starts[:, None] + torch.arange(1, width, device=device)  # (S, width - 1)
        i, j = starts[:, None].expand_as(splits), ends[:, None].expand_as(splits)
        left = scores[:, splits, j, LEFT] + arcs[:, j, splits]
        left = left.masked_fill(j[None] >= end[:, None, None], float("-inf"))
        right = scores[:, splits, j, RIGHT] + arcs[:, i, splits]
        if single_root:
            right = right.masked_fill(_root_before_the_end(i, j, end), float("-inf"))
        reduce, action = torch.stack([left, right], -1).max(-1)
        total = chart[:, i, splits] + scores[:, i, splits, SHIFT] + chart[:, splits, j] + reduce
        value, arg = total.max(-1)
        chart[:, starts, ends] = value
        best_split[:, starts, ends] = starts + 1 + arg
        best_action[:, starts, ends] = LEFT + action.gather(-1, arg[..., None]).squeeze(-1)
    batch = torch.arange(batch_size, device=device)
    best = chart[batch, 0, end]
    heads = torch.zeros(batch_size, size, dtype=torch.long)
    derivations = []
    splits, actions = best_split.tolist(), best_action.tolist()
    for b, last in enumerate(end.tolist()):
        transitions = []
        _backtrack([splits[b]], [actions[b]], last, heads[b], transitions, deepen=0, deepest=0)
        derivations.append(transitions)
    return best, heads.to(device), derivations


def _root_before_the_end(i: torch.Tensor, j: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
    """`(B, S, K)` True where a RIGHT reduction would attach a word to ROOT (i = 0) before the buffer is empty."""
    return (i == 0)[None] & (j[None] != end[:, None, None])


def _backtrack(splits, actions, last, heads, transitions, deepen, deepest):
    """Append the transitions of the goal item (level 1 if `deepen`, else 0; i = 0, j = `last`) and set the heads it
    attaches. `splits[level][i][j]` and `actions[level][i][j]` are the back-pointers; the right antecedent of an item
    at `level` sits at `min(level + deepen, deepest)` (the stack-size DP's q + 1, its last row standing for every
    deeper stack; the minimal-feature DP has one level). Iterative, as sentences can be long."""
    stack = [("item", deepen, 0, last)]
    while stack:
        kind, value, i, j = stack.pop()
        if kind == "emit":
            transitions.append(value)
            continue
        if j - i < 2:
            continue
        k, action = splits[value][i][j], actions[value][i][j]
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
    share one chart row: the DP is exact in O(Q n^3) time rather than O(n^4).
    """
    batch_size, size = arc_scores.shape[:2]
    device = arc_scores.device
    deepest = transition_scores.size(2) - 1  # chart rows 1..deepest; row deepest stands for every deeper stack
    # Stack size first, so that every lookup below indexes adjacent dimensions (no copy of a whole score tensor).
    moves = transition_scores.detach().float().permute(0, 2, 1, 3)  # (B, Q, P, 3) [b, q, b0, action]
    matching = matching_scores.detach().float().permute(0, 2, 1, 3)  # (B, Q, P, P) [b, q, k, j]
    arcs = arc_scores.detach().float()
    end = lengths.to(device) + 1
    rows = torch.arange(1, deepest + 1, device=device)[:, None, None]
    deeper = (rows + 1).clamp(max=deepest)  # the row of the item after a SHIFT
    chart = arc_scores.new_full((batch_size, deepest + 1, size, size), float("-inf"), dtype=torch.float)
    index = torch.arange(size - 1, device=device)
    chart[:, 1:, index, index + 1] = 0.0
    best_split = torch.zeros(batch_size, deepest + 1, size, size, dtype=torch.long, device=device)
    best_action = torch.zeros_like(best_split)
    for width in range(2, size):
        starts = torch.arange(size - width, device=device)
        ends = starts + width
        splits = starts[:, None] + torch.arange(1, width, device=device)  # (S, width - 1)
        i, j = starts[:, None].expand_as(splits), ends[:, None].expand_as(splits)
        # (B, D, S, K), row q: i on top of q stack elements; k is shifted onto q and reduced at size q + 1.
        shift = moves[:, rows, splits, SHIFT]
        left = moves[:, deeper, j, LEFT] + arcs[:, j, splits][:, None]
        left = left.masked_fill((j[None] >= end[:, None, None])[:, None], float("-inf"))
        right = moves[:, deeper, j, RIGHT] + arcs[:, i, splits][:, None]
        if single_root:
            right = right.masked_fill(_root_before_the_end(i, j, end)[:, None], float("-inf"))
        reduce, action = torch.stack([left, right], -1).max(-1)
        total = chart[:, rows, i, splits] + shift + chart[:, deeper, splits, j] + matching[:, rows, splits, j] + reduce
        value, arg = total.max(-1)
        chart[:, 1:, starts, ends] = value
        best_split[:, 1:, starts, ends] = starts + 1 + arg
        best_action[:, 1:, starts, ends] = LEFT + action.gather(-1, arg[..., None]).squeeze(-1)
    batch = torch.arange(batch_size, device=device)
    best = chart[batch, 1, 0, end]
    heads = torch.zeros(batch_size, size, dtype=torch.long)
    derivations = []
    splits, actions = best_split.tolist(), best_action.tolist()
    for b, last in enumerate(end.tolist()):
        transitions = []
        _backtrack(splits[b], actions[b], last, heads[b], transitions, deepen=1, deepest=deepest)
        derivations.append(transitions)
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
        if len(stack) > 1 and missing[s0] == 0 and heads[s0 - 1] == stack[-2] and (stack[-2] or front > length):
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
