"""An independent reference for `structs.decoding.chu_liu_edmonds`: the textbook recursion, one cycle contracted per
call, one sentence at a time. Slow, but simple enough to check by reading; the tests compare the batched decoder
with it where brute force cannot reach."""

import torch


def one_cycle_at_a_time_mst(scores: torch.Tensor, mask: torch.Tensor, single_root: bool = True) -> torch.Tensor:
    """Best (non-projective) dependency tree of each sentence, by Chu-Liu/Edmonds contracting one cycle per
    recursive call, one sentence at a time (the package's implementation before it was batched).

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
