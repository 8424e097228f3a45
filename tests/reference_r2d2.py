"""Plain per-sentence, per-cell references for R2D2's chart, written from the paper (Section 2.2, Algorithms 1-2),
independently of the batched `hf_structure.structs.pruned_chart`.

`plain_cky` fills every cell; `pruned_chart_loop` keeps the current terminals in a Python list and merges as the
paper describes. Both compose one cell at a time (its splits as one small batch) and pick splits by argmax, as at
evaluation. The tests compare the batched chart with them; `benchmarks/r2d2_speed.py` times the loop against it.
"""

import math

import torch


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
        float(log_p[index]) + nodes[(start, k)].log_p + nodes[(k + 1, end)].log_p
        for index, k in enumerate(split_words)
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
        split = max(allowed, key=allowed.get)
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
