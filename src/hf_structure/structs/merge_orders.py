"""Binary trees as merge orders, and the top-down parser's training targets, for Fast-R2D2's parser-guided chart
(Hu et al., EMNLP 2022).

A top-down parser scores the n - 1 splits of a sentence (split k lies between words k and k + 1). Its tree splits
every span at its highest-scoring split (`trees.distances_to_spans`), and the reverse of that split order merges the
words bottom-up. Any order in which each split comes after every split inside its span is such a reverse, and the
splits sorted by ascending score are one: the split at the top of a span outscores every split inside it.

Here a merge order is a `(B, n - 1)` tensor of split positions, padded with -1 after a sentence's `length - 1`
splits. Batched torch; no Python loop over sentences or splits.
"""

from collections.abc import Callable

import torch

from .pruned_chart import ChartEncoding


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
        raise ValueError(
            f"sentence {b}: the merge order {merge_order[b].tolist()} is not a permutation of its "
            f"{int(lengths[b]) - 1} splits followed by -1"
        )


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
    node_splits = [torch.full((batch_size * n,), -1, dtype=torch.long, device=device)]
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
        node_splits.append(at)
        node_of_span[rows, first[rows, at], last[rows, at]] = new_ids
        pending = pending & ~ready

    node_split, node_log_p = torch.cat(node_splits), torch.cat(log_p)
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


def sample_chart_trees(
    chart: ChartEncoding, num_samples: int, temperature: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Draw `num_samples` trees per sentence from a chart's tree distribution, top-down: at each node, a split among
    the cell's candidates with probability softmax(candidate scores / temperature), then the two children, as
    Fast-R2D2 draws the parser's training targets. Temperature 0 takes the best candidate at each node: the chart's
    best tree (drawn once: more draws would repeat it).

    Args:
        chart: the chart (its node spans, split candidates and their scores, `node_of_span`, `roots`).
        num_samples: trees per sentence (1 at temperature 0).
        temperature: >= 0; above 1 flattens the chart's split distributions, below 1 sharpens them.

    Returns `(sentence, first, last, split)`, four `(T,)` tensors: every internal node of every drawn tree, with the
    word it splits after.
    """
    if temperature < 0:
        raise ValueError(f"the temperature must be >= 0, got {temperature}")
    num_samples = 1 if temperature == 0 else num_samples
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
        if temperature == 0:
            choice = scores.argmax(-1)
        else:
            choice = torch.multinomial(torch.softmax(scores / temperature, dim=-1), 1).squeeze(1)
        split = chart.node_split_candidates[frontier, choice]
        found.append((sentence, first, last, split))
        left = chart.node_of_span[sentence, first, split]
        right = chart.node_of_span[sentence, split + 1, last]
        sentence = torch.cat([sentence, sentence])
        frontier = torch.cat([left, right])
    if not found:
        return (torch.empty(0, dtype=torch.long),) * 4
    sentence, first, last, split = (torch.cat(column) for column in zip(*found))
    return sentence, first, last, split


def merge_order_targets(
    merge_order: torch.Tensor, lengths: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The tree of a merge order (e.g. a teacher's) as the parser's target, in `sample_chart_trees`' form (one tree a
    sentence): `(sentence, first, last, split)`, four `(T,)` tensors, every internal node with the word it splits
    after."""
    first, last = split_spans(merge_order, lengths)
    real = torch.arange(merge_order.size(1), device=merge_order.device)[None, :] < (lengths[:, None] - 1)
    sentence, split = real.nonzero(as_tuple=True)
    return sentence, first[sentence, split], last[sentence, split], split


def split_entropy(chart: ChartEncoding) -> torch.Tensor:
    """The mean over the chart's cells with two or more candidate splits of the entropy of softmax(split scores),
    as a fraction of the uniform distribution's (1: the chart does not prefer any split; 0: one split only)."""
    is_candidate = chart.node_split_candidates >= 0
    candidates = is_candidate.sum(-1)
    cells = candidates > 1
    if not bool(cells.any()):
        return chart.node_split_scores.new_zeros((), dtype=torch.float)
    scores = chart.node_split_scores[cells].float().masked_fill(~is_candidate[cells], float("-inf"))
    log_p = torch.log_softmax(scores, dim=-1)
    entropy = -(log_p.exp() * log_p.masked_fill(~is_candidate[cells], 0.0)).sum(-1)
    return (entropy / candidates[cells].float().log()).mean()


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
