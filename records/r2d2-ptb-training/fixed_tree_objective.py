#!/usr/bin/env python
"""Issue #37, experiments A and D: does the bidirectional LM objective reward syntactic trees on PTB? An R2D2 LM is
trained with its merges fixed along one kind of tree per sentence (gold / right / left / random), on 1,400 sentences
of the gold-annotated sample (text and merge orders only), and its LM loss is measured on 400 of the rest every 100
steps. `--forced` composes along the tree only (Fast-R2D2's forced encoding: n - 1 nodes); otherwise the pruned
chart merges along the tree at `--window`. The project's version of ../shared/r2d2-diagnosis/ptb_fixed_trees.py
(same data, split and trees), with the width, dropout and a decoder of its own as options (experiment D).

    python records/r2d2-ptb-training/fixed_tree_objective.py --tree gold --forced --hidden-size 192
"""

import argparse
import random
import time

import torch
import torch.nn.functional as F

from hf_structure.data.text import ptb_lm_lines
from hf_structure.data.tokenization import build_word_tokenizer
from hf_structure.data.treebanks import read_treebank
from hf_structure.models.r2d2 import R2D2Config, R2D2ForLanguageModeling
from hf_structure.structs.merge_orders import encode_along_merges, merge_order_from_split_scores
from hf_structure.structs.pruned_chart import encode_pruned_chart

from tree_sensitivity import binary_gold, split_scores  # noqa: E402  (this folder)

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--tree", choices=["gold", "right", "left", "random"], required=True)
parser.add_argument("--forced", action="store_true")
parser.add_argument("--window", type=int, default=4)
parser.add_argument("--steps", type=int, default=300)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--hidden-size", type=int, default=64)
parser.add_argument("--dropout", type=float, default=0.0)
parser.add_argument("--separate-decoder", action="store_true")
parser.add_argument("--treebank", default="../shared/data/ptb-sample/dev")
args = parser.parse_args()
torch.set_num_threads(1)
rng = random.Random(args.seed)
gold = [g for g in read_treebank(args.treebank) if 3 <= len(g.words) <= 40]
random.Random(7).shuffle(gold)
tree_rng = random.Random(123)


def random_tree(n: int) -> set:
    spans = set()

    def split(start, end):
        if end - start >= 2:
            spans.add((start, end))
            k = tree_rng.randint(start + 1, end - 1)
            split(start, k)
            split(k, end)

    split(0, n)
    return spans


def tree_of(g) -> set:
    n = len(g.words)
    if args.tree == "gold":
        return binary_gold(g.spans, n)
    if args.tree == "right":
        return {(s, n) for s in range(n - 1)}
    if args.tree == "left":
        return {(0, e) for e in range(2, n + 1)}
    return random_tree(n)


data = [(g.words, tree_of(g)) for g in gold]
train, test = data[:1400], data[1400:]
tokenizer = build_word_tokenizer(ptb_lm_lines("train"))
torch.manual_seed(args.seed)
config = R2D2Config(vocab_size=len(tokenizer), hidden_size=args.hidden_size, num_attention_heads=4,
                    intermediate_size=4 * args.hidden_size, num_composition_layers=2, window_size=args.window,
                    hidden_dropout_prob=args.dropout, attention_probs_dropout_prob=args.dropout,
                    tie_decoder=not args.separate_decoder)
model = R2D2ForLanguageModeling(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)


def lm_loss(batch) -> torch.Tensor:
    encoded = tokenizer([list(words) for words, _ in batch], is_split_into_words=True, padding=True,
                        return_tensors="pt", return_token_type_ids=False)
    ids, mask = encoded["input_ids"], encoded["attention_mask"]
    lengths, n = mask.sum(-1), ids.size(1)
    scores = torch.zeros(len(batch), max(n - 1, 1))
    for b, (words, spans) in enumerate(batch):
        scores[b, : len(words) - 1] = torch.tensor(split_scores(spans, len(words)))
    order = merge_order_from_split_scores(scores[:, : n - 1], lengths)
    r2d2 = model.r2d2
    leaves = r2d2.embed_tokens(ids)
    if args.forced:
        chart = encode_along_merges(leaves, lengths, order, r2d2.compose)
    else:
        chart = encode_pruned_chart(leaves, lengths, r2d2.compose, r2d2.choose_split, args.window, merge_order=order)
    left, right = r2d2.context_states(chart, lengths)
    labels = ids.masked_fill(mask.eq(0) | ids.eq(tokenizer.unk_token_id), -100)
    predicted = labels.ne(-100)
    return F.cross_entropy(model.predict_words(left[predicted], right[predicted]).float(), labels[predicted])


began = time.time()
setting = "forced" if args.forced else f"window {args.window}"
for step in range(1, args.steps + 1):
    model.train()
    loss = lm_loss(rng.sample(train, 32))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    if step % 100 == 0:
        model.eval()
        with torch.no_grad():
            held_out = sum(lm_loss(test[i : i + 100]).item() for i in range(0, 400, 100)) / 4
        print(f"{setting} width {args.hidden_size} dropout {args.dropout} separate decoder {args.separate_decoder} "
              f"tree {args.tree} seed {args.seed} step {step}: train {loss.item():.3f} held-out {held_out:.4f} "
              f"({time.time() - began:.0f} s)", flush=True)
