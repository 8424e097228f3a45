"""Decoding algorithms shared by the structure models: best dependency trees and best binary constituency trees.

Self-contained on purpose (torch and the standard library, and one optional compiled decoder): a model's generated
Hub code carries each function it uses, with the helpers that function calls (`scripts/modular_converter.py`).

Dependency conventions: `scores` is a float tensor (B, L, L) in which position 0 is an artificial ROOT and positions
1..n_b are the words of sentence b; `scores[b, i, j]` scores word j as the head of word i (j = 0: i attaches to
ROOT). `mask` is a bool tensor (B, L), True at the words (False at ROOT and at padding). -inf marks a forbidden arc.
Heads come back as a long tensor (B, L): `heads[b, i]` is the head of word i, 0 at ROOT and at padding; where no tree
avoids the forbidden arcs, they are in range but arbitrary.

`chu_liu_edmonds` uses UDPipe's compiled decoder (`ufal.chu_liu_edmonds`, a dependency of the package) where it is
installed; a model's Hub copy also runs without it, on the torch implementations below.
"""

from collections.abc import Sequence

import torch

try:  # imported where installed; the Hub code checker ignores imports inside try
    from ufal.chu_liu_edmonds import chu_liu_edmonds as compiled_chu_liu_edmonds
except ImportError:
    compiled_chu_liu_edmonds = None


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


def _first_true(flags: torch.Tensor, fill: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`(B, K)` the indices where `flags` (B, N) is True, in order, K the most in a row, padded with `fill`; and
    which entries are real."""
    count = flags.sum(1)
    order = torch.sort((~flags).to(torch.uint8), dim=1, stable=True).indices[:, : int(count.max())]
    valid = torch.arange(order.size(1), device=flags.device) < count[:, None]
    return order.masked_fill(~valid, fill), valid


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


def _chu_liu_edmonds_per_sentence(scores: torch.Tensor, mask: torch.Tensor, single_root: bool) -> torch.Tensor:
    """`chu_liu_edmonds` one sentence at a time, contracting one cycle per recursive call: cheaper than the batched
    levels for a batch of one or two sentences. Uses `_sentence_arcs`, `_max_arborescence` and `_find_cycle`."""
    heads = torch.zeros(scores.shape[:2], dtype=torch.long)
    for b, length in enumerate(mask.sum(-1).tolist()):
        heads[b, : length + 1] = _max_arborescence(_sentence_arcs(scores, b, length, single_root))
    return heads.to(scores.device)


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


def _max_arborescence(arcs: torch.Tensor) -> torch.Tensor:
    """Heads of the best spanning arborescence rooted at node 0 (Chu-Liu/Edmonds, one cycle contracted per call).

    `arcs[d, h]` scores h -> d, float64 with -inf for missing arcs, the diagonal and row 0 included. Every node takes
    its best head; if that closes a cycle, the cycle becomes one node of a smaller graph whose best arborescence
    says where the cycle is entered (breaking it there) and which of its nodes head the outside words.
    Uses `_find_cycle` (and itself).
    """
    heads = arcs.argmax(-1)
    cycle_nodes = _find_cycle(heads.tolist())
    if not cycle_nodes:
        return heads
    cycle = torch.tensor(cycle_nodes)
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


TIE_BREAKS = ("right", "left", "random")
"""How `average_trees` chooses among trees of equal votes: the one whose spans start latest (summed over its spans:
the right-branching tree is the only maximum of that sum), the one whose spans end earliest (left-branching), or
by random span scores."""


def tie_break_scores(length: int, tie_break: str, generator: torch.Generator | None = None) -> torch.Tensor:
    """Span scores (L + 1, L + 1) below one vote in any tree's sum, added to the vote counts so that of the trees
    with the most votes the `tie_break` one wins (see `TIE_BREAKS`). A tree has `length` - 1 spans of two or more
    words, each scoring less than 1 / `length` here, so no sum of them reaches a whole vote. `generator` draws the
    random scores."""
    size = length + 1
    starts = torch.arange(size, dtype=torch.float64)[:, None].expand(size, size)
    ends = torch.arange(size, dtype=torch.float64)[None, :].expand(size, size)
    if tie_break == "right":
        scores = starts / size
    elif tie_break == "left":
        scores = (size - 1 - ends) / size
    elif tie_break == "random":
        scores = torch.rand(size, size, generator=generator, dtype=torch.float64)
    else:
        raise ValueError(f"tie_break must be one of {TIE_BREAKS}, got {tie_break!r}")
    return scores / size


def average_trees(
    trees: Sequence[Sequence[Sequence[Sequence[int]]]],
    lengths: Sequence[int],
    tie_break: str = "right",
    seed: int = 0,
    chunk_size: int = 256,
) -> list[list[tuple[int, int]]]:
    """Tree averaging (Shayegh et al., ICLR 2024, "AvgTree"): per sentence, the binary tree holding the most votes
    of several teachers' trees, a vote being one teacher's span; by CKY over the vote counts, batched.

    `trees[t][b]` is teacher t's tree of sentence b as its spans, `(start, end)` pairs as tuples or as the lists a
    parse holds (any that are not of two or more words are ignored, so trees from `parse` and from
    `distances_to_spans` both do); a teacher's tree need not be binary.
    Returns each sentence's tree as `cky` does (spans of two or more words, pre-order). A binary tree is the only
    one holding all its spans, so one binary teacher's tree comes back unchanged.

    With two teachers most spans hold one vote, and many trees tie: `tie_break` (`TIE_BREAKS`) is part of the
    method. `"right"` prefers right-branching among the tied trees, which English rewards; `"random"` (sentence b's
    scores drawn from `seed` + b, so a sentence's tree does not depend on the chunking) shows what the votes alone
    give. `chunk_size`: sentences decoded at once."""
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {TIE_BREAKS}, got {tie_break!r}")
    lengths = [int(length) for length in lengths]
    for t, teacher in enumerate(trees):
        if len(teacher) != len(lengths):
            raise ValueError(f"teacher {t} gives {len(teacher)} trees for {len(lengths)} sentences")
    averaged: list[list[tuple[int, int]]] = [[] for _ in lengths]
    by_length = sorted(range(len(lengths)), key=lengths.__getitem__)
    # Sentences of similar lengths together: CKY's work grows with the batch's longest sentence cubed.
    for first in range(0, len(by_length), chunk_size):
        chunk = by_length[first : first + chunk_size]
        size = lengths[chunk[-1]] + 1
        # float64: the tie-break's scores are fractions of a vote as small as 1 / size^2
        votes = torch.zeros(len(chunk), size, size, dtype=torch.float64)
        for teacher in trees:
            for row, b in enumerate(chunk):
                for start, end in {tuple(span) for span in teacher[b]}:
                    if not 0 <= start < end <= lengths[b]:
                        raise ValueError(f"sentence {b}: span {(start, end)} is outside its {lengths[b]} words")
                    if end - start > 1:
                        votes[row, start, end] += 1
        for row, b in enumerate(chunk):
            n = lengths[b] + 1
            generator = torch.Generator().manual_seed(seed + b) if tie_break == "random" else None
            votes[row, :n, :n] += tie_break_scores(lengths[b], tie_break, generator)
        spans, _ = cky(votes, torch.tensor([lengths[b] for b in chunk], dtype=torch.long))
        for b, tree in zip(chunk, spans):
            averaged[b] = tree
    return averaged


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
