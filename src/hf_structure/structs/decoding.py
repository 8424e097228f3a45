"""Decoding algorithms shared by the structure models: best dependency trees and best binary constituency trees.

Self-contained on purpose (torch and the standard library only): each public function, together with the helpers
its docstring names ("uses `_helper`"), is copied verbatim into a model's Hub code.

Dependency conventions: `scores` is a float tensor (B, L, L) in which position 0 is an artificial ROOT and positions
1..n_b are the words of sentence b; `scores[b, i, j]` scores word j as the head of word i (j = 0: i attaches to
ROOT). `mask` is a bool tensor (B, L), True at the words (False at ROOT and at padding). -inf marks a forbidden arc.
Heads come back as a long tensor (B, L): `heads[b, i]` is the head of word i, 0 at ROOT and at padding; where no tree
avoids the forbidden arcs, they are in range but arbitrary.
"""

import torch


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


def chu_liu_edmonds(scores: torch.Tensor, mask: torch.Tensor, single_root: bool = True) -> torch.Tensor:
    """Best (non-projective) dependency tree of each sentence, by Chu-Liu/Edmonds; see the module conventions.

    With `single_root`, every finite arc to ROOT is lowered by more than any two trees' scores can differ, so a tree
    with one root arc beats every tree with more (the reweighting of Stanojević & Cohen 2021): the best tree found is
    the best single-root tree whenever one exists. Computed in float64 on the CPU, one sentence at a time.
    Uses `_max_arborescence` and `_find_cycle`.
    """
    heads = torch.zeros(scores.shape[:2], dtype=torch.long)
    for b, length in enumerate(mask.sum(-1).tolist()):
        arcs = scores[b, : length + 1, : length + 1].detach().to("cpu", torch.float64, copy=True)  # edited below
        arcs.fill_diagonal_(float("-inf"))
        arcs[0] = float("-inf")  # ROOT takes no head
        finite = arcs[torch.isfinite(arcs)]
        if single_root and len(finite):
            arcs[1:, 0] -= length * (finite.max() - finite.min()) + 1
        heads[b, : length + 1] = _max_arborescence(arcs)
    return heads.to(scores.device)


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


def cky(span_scores: torch.Tensor, lengths: torch.Tensor) -> tuple[list[list[tuple[int, int]]], torch.Tensor]:
    """Best binary tree of each sentence from span scores (CKY), batched.

    `span_scores[b, i, j]` (B, L + 1, L + 1) scores the span of words [i, j) (0-based fenceposts); `lengths` (B,)
    gives the sentence lengths. A tree scores the sum of its spans of two or more words, the whole sentence included.
    Returns, per sentence, those spans in pre-order (root, left subtree, right subtree), and the (B,) best scores.
    Uses `_cky_backtrack`.
    """
    span_scores = span_scores.detach()
    batch_size, size, _ = span_scores.shape
    lengths = torch.as_tensor(lengths, device=span_scores.device)
    best = torch.zeros_like(span_scores)  # single words (and empty spans) score nothing
    splits = torch.zeros(span_scores.shape, dtype=torch.long, device=span_scores.device)
    for width in range(2, size):
        starts = torch.arange(size - width, device=span_scores.device)
        ends = starts + width
        mids = starts[:, None] + torch.arange(1, width, device=span_scores.device)  # one row a span
        top, arg = (best[:, starts[:, None], mids] + best[:, mids, ends[:, None]]).max(-1)
        best[:, starts, ends] = top + span_scores[:, starts, ends]
        splits[:, starts, ends] = starts + 1 + arg
    best_scores = best[torch.arange(batch_size, device=best.device), 0, lengths]
    spans = [_cky_backtrack(split, length) for split, length in zip(splits.tolist(), lengths.tolist())]
    return spans, best_scores


def _cky_backtrack(splits: list, length: int) -> list[tuple[int, int]]:
    """The spans of two or more words, in pre-order, of the tree that `cky`'s split chart of one sentence stores."""
    spans = []
    stack = [(0, length)] if length > 1 else []
    while stack:
        start, end = stack.pop()
        spans.append((start, end))
        mid = splits[start][end]
        # pushed right first so that the left subtree comes out first
        stack += [span for span in ((mid, end), (start, mid)) if span[1] - span[0] > 1]
    return spans
