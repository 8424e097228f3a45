#!/usr/bin/env python
"""Issue #37, experiment D's measure: how much a trained R2D2's language-model loss depends on the tree. Same
weights, evaluation mode, gold-sample sentences (3-40 scored words); only the merges change: the model's own chart
(window = its training window), the chart with its merges taken from gold / right-branching / left-branching /
random trees, and forced encoding (the tree's n - 1 nodes only) along the parser's own tree (parser pruning), gold,
right, left and random trees. Gold trees made binary right-branching inside flat nodes. A measurement, never a
choice: prints one JSON line of LM losses (nats a word; `<unk>` not predicted).

    python records/r2d2-ptb-training/tree_sensitivity.py --model runs/x --treebank ../shared/data/ptb-sample/dev
"""

import argparse
import json
import random

import torch
import torch.nn.functional as F

import hf_structure  # noqa: F401  (registers the models)
from hf_structure.bundled import load_model_and_tokenizer
from hf_structure.data.tokenization import encode_words
from hf_structure.data.treebanks import read_treebank
from hf_structure.structs.merge_orders import encode_along_merges, merge_order_from_split_scores
from hf_structure.structs.pruned_chart import encode_pruned_chart


def binary_gold(spans: set, n: int) -> set:
    """Gold spans made binary: inside a flat node, its children right-branching."""
    spans = set(spans) | {(0, n)}
    out = set(spans)
    for start, end in spans:
        inside = [s for s in spans if s != (start, end) and start <= s[0] and s[1] <= end]
        children = sorted(s for s in inside if not any(o != s and o[0] <= s[0] and s[1] <= o[1] for o in inside))
        cover, i = [], start
        for child in children:
            cover += [(j, j + 1) for j in range(i, child[0])] + [child]
            i = child[1]
        cover += [(j, j + 1) for j in range(i, end)]
        out |= {(cover[t][0], end) for t in range(1, len(cover) - 1)}
    return out


def random_tree(n: int, rng: random.Random) -> set:
    spans, stack = set(), [(0, n)]
    while stack:
        start, end = stack.pop()
        if end - start >= 2:
            spans.add((start, end))
            k = rng.randint(start + 1, end - 1)
            stack += [(start, k), (k, end)]
    return spans


def split_scores(spans: set, n: int) -> list[float]:
    """Split scores whose top-down tree is `spans`: a span's split scores its length."""
    scores = [0.0] * max(n - 1, 0)
    for start, end in spans:
        left_end = max((e for s, e in spans if s == start and e < end), default=start + 1)
        scores[left_end - 1] = float(end - start)
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--treebank", required=True)
    parser.add_argument("--sentences", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    model, tokenizer = load_model_and_tokenizer(args.model)
    model.to(args.device).eval()
    r2d2, window = model.r2d2, model.config.window_size
    gold = [g for g in read_treebank(args.treebank) if 3 <= len(g.words) <= 40][: args.sentences]
    rng = random.Random(0)
    trees = [{"gold": binary_gold(g.spans, len(g.words)), "right": {(s, len(g.words)) for s in range(len(g.words) - 1)},
              "left": {(0, e) for e in range(2, len(g.words) + 1)}, "random": random_tree(len(g.words), rng)}
             for g in gold]
    totals: dict[str, list[float]] = {}
    for first in range(0, len(gold), args.batch_size):
        batch = gold[first : first + args.batch_size]
        encoded = encode_words([g.words for g in batch], tokenizer, 500)
        ids, mask = encoded["input_ids"].to(args.device), encoded["attention_mask"].to(args.device)
        lengths, n = mask.sum(-1), ids.size(1)
        labels = ids.masked_fill(mask.eq(0) | ids.eq(tokenizer.unk_token_id), -100)
        predicted = labels.ne(-100)

        def loss_of(chart):
            left, right = r2d2.context_states(chart, lengths)
            logits = model.predict_words(left[predicted], right[predicted]).float()
            return F.cross_entropy(logits, labels[predicted], reduction="sum").item()

        def order_of(name):
            scores = torch.zeros(len(batch), max(n - 1, 1), device=args.device)
            for b, g in enumerate(batch):
                scores[b, : len(g.words) - 1] = torch.tensor(split_scores(trees[first + b][name], len(g.words)))
            return merge_order_from_split_scores(scores[:, : n - 1], lengths)

        results = {}
        with torch.no_grad():
            leaves = r2d2.embed_tokens(ids)
            results["own chart"] = loss_of(r2d2(ids, mask).chart)
            for name in ("gold", "right", "left", "random"):
                results[f"chart merging along {name}"] = loss_of(
                    encode_pruned_chart(leaves, lengths, r2d2.compose, r2d2.choose_split, window,
                                        merge_order=order_of(name)))
            if r2d2.split_parser is not None:
                results["forced along the parser's tree"] = loss_of(r2d2.encode_tree(ids, mask).chart)
            for name in ("gold", "right", "left", "random"):
                results[f"forced along {name}"] = loss_of(
                    encode_along_merges(leaves, lengths, order_of(name), r2d2.compose))
        words = int(predicted.sum())
        for key, value in results.items():
            totals.setdefault(key, [0.0, 0])
            totals[key][0] += value
            totals[key][1] += words
    print(json.dumps({"model": args.model, "sentences": len(gold),
                      **{key: round(total / count, 4) for key, (total, count) in totals.items()}}), flush=True)


if __name__ == "__main__":
    main()
