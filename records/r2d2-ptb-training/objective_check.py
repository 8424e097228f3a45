#!/usr/bin/env python
"""Diagnostic: does R2D2's bidirectional LM objective itself prefer the toy grammar's trees?

Trains a small R2D2 on the toy grammar (`toy_grammar.py`, same settings) for `--steps`, then measures its language-
model loss on held-out sentences with the chart merging (a) by the model's own rule, (b) along the grammar's trees,
(c) right-branching, (d) left-branching: the same weights, only the merges differ (`encode_pruned_chart`'s
`merge_order`). If (b) is not the lowest, the objective does not reward the grammar's trees at this scale; if it is,
training falls into a worse optimum. Also prints the held-out sentence-F1 of the model's own trees.

    python records/r2d2-ptb-training/objective_check.py --seed 1 --steps 400
"""

import argparse
import random

import torch

import toy_grammar
from hf_structure.data.tokenization import build_word_tokenizer
from hf_structure.evaluation.metrics import scored_spans, unlabelled_f1
from hf_structure.models.r2d2 import R2D2Config, R2D2ForLanguageModeling
from hf_structure.structs.merge_orders import merge_order_from_split_scores
from hf_structure.structs.pruned_chart import encode_pruned_chart


def split_scores_of(spans: set, length: int) -> list[float]:
    """Split scores whose top-down tree is `spans`: each split scores the length of the node it splits."""
    scores = [0.0] * (length - 1)
    for start, end in spans:
        inner = [e for s, e in spans if s == start and e < end]
        left_end = max(inner, default=start + 1)
        scores[left_end - 1] = float(end - start)
    return scores


@torch.no_grad()
def lm_loss(model, encoded, labels, merge_order=None) -> float:
    r2d2 = model.r2d2
    lengths = encoded["attention_mask"].sum(-1)
    chart = encode_pruned_chart(r2d2.embed_tokens(encoded["input_ids"]), lengths, r2d2.compose, r2d2.choose_split,
                                model.config.window_size, merge_order=merge_order)
    left, right = r2d2.context_states(chart, lengths)
    predicted = labels.ne(-100)
    logits = model.predict_words(left[predicted], right[predicted])
    return torch.nn.functional.cross_entropy(logits, labels[predicted]).item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    train = [toy_grammar.sentence(rng) for _ in range(5000)]
    test = [toy_grammar.sentence(rng) for _ in range(300)]
    tokenizer = build_word_tokenizer(" ".join(words) for words, _ in train)
    torch.manual_seed(args.seed)
    config = R2D2Config(vocab_size=len(tokenizer), hidden_size=64, num_attention_heads=4, intermediate_size=256,
                        num_composition_layers=2, window_size=4, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    model = R2D2ForLanguageModeling(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
    for _ in range(args.steps):
        toy_grammar.training_step(model, tokenizer, optimizer, rng.sample(train, 32))
    model.eval()
    parses = model.parse([words for words, _ in test], tokenizer)
    gold = [scored_spans(spans, len(w)) for w, spans in test]
    predicted = [scored_spans(map(tuple, p["spans"]), len(w)) for p, (w, _) in zip(parses, test)]
    print(f"after {args.steps} steps (seed {args.seed}): held-out sentence-F1 of its own trees "
          f"{100 * unlabelled_f1(predicted, gold)['sentence_f1']:.2f}")

    encoded = tokenizer([" ".join(words) for words, _ in test], padding=True, return_tensors="pt")
    labels = encoded["input_ids"].masked_fill(encoded["attention_mask"].eq(0), -100)
    lengths = encoded["attention_mask"].sum(-1)
    n = encoded["input_ids"].size(1)

    def order_of(trees):
        scores = torch.zeros(len(test), max(n - 1, 1))
        for b, (spans, (words, _)) in enumerate(zip(trees, test)):
            scores[b, : len(words) - 1] = torch.tensor(split_scores_of(spans, len(words)))
        return merge_order_from_split_scores(scores[:, : n - 1], lengths)

    trees = {
        "its own merge rule": None,
        "the grammar's trees": order_of([set(spans) for _, spans in test]),
        "right-branching": order_of([toy_grammar.branching(len(w), True) | {(0, len(w))} for w, _ in test]),
        "left-branching": order_of([toy_grammar.branching(len(w), False) for w, _ in test]),
    }
    for name, order in trees.items():
        print(f"LM loss on 300 held-out sentences, merging by {name}: {lm_loss(model, encoded, labels, order):.4f}")


if __name__ == "__main__":
    main()
