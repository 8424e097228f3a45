#!/usr/bin/env python
"""Diagnostic: can our R2D2 learn the trees of a small grammar whose trees are known?

Sentences come from a toy grammar (binary trees; subjects with adjectives and prepositional phrases, so that neither
right- nor left-branching is right); a small R2D2 is trained on them with the bidirectional LM objective (the
model's own loss, AdamW, bf16 off) and its trees are scored with the package's sentence-F1 against the grammar's
trees, beside the right- and left-branching baselines. Experiment script of the training record (README beside it).

    python records/r2d2-ptb-training/toy_grammar.py --steps 600 --threads 1
    python records/r2d2-ptb-training/toy_grammar.py --pruning parser --seconds 300   # Fast-R2D2, 5 minutes

With `--pruning parser` both trees are scored: the parser's (`parser`) and the chart's (`chart`). `--seconds` stops
at a wall-clock budget instead of a step count, to compare variants at equal time.
"""

import argparse
import json
import random
import time

import torch

from hf_structure.data.tokenization import build_word_tokenizer
from hf_structure.evaluation.metrics import scored_spans, unlabelled_f1
from hf_structure.models.r2d2 import R2D2Config, R2D2ForLanguageModeling

WORDS = {
    "Det": ["the", "a", "every", "this"],
    "Adj": ["big", "old", "red", "small", "new"],
    "N": ["dog", "cat", "man", "house", "car", "report", "company", "bank"],
    "V": ["saw", "liked", "bought", "sold", "found"],
    "P": ["with", "on", "near", "in"],
}


def noun_phrase(rng, depth=0):
    """(words, spans relative to 0) of a binary NP: Det (Adj* N), optionally followed by a PP."""
    det, noun = rng.choice(WORDS["Det"]), rng.choice(WORDS["N"])
    adjectives = [rng.choice(WORDS["Adj"]) for _ in range(rng.choice([0, 0, 1, 2]))]
    nominal, spans = [noun], []
    for adjective in reversed(adjectives):  # (big (old dog))
        nominal = [adjective, *nominal]
        spans.append((0, len(nominal)))
    spans = [(s + 1, e + 1) for s, e in spans]
    words = [det, *nominal]
    spans.append((0, len(words)))
    if depth == 0 and rng.random() < 0.35:
        pp_words, pp_spans = prepositional_phrase(rng, depth + 1)
        spans += [(s + len(words), e + len(words)) for s, e in pp_spans]
        words = words + pp_words
        spans.append((0, len(words)))
    return words, spans


def prepositional_phrase(rng, depth):
    object_words, object_spans = noun_phrase(rng, depth)
    words = [rng.choice(WORDS["P"]), *object_words]
    return words, [(s + 1, e + 1) for s, e in object_spans] + [(0, len(words))]


def sentence(rng):
    subject, subject_spans = noun_phrase(rng)
    obj, object_spans = noun_phrase(rng)
    verb_phrase = [rng.choice(WORDS["V"]), *obj]
    vp_spans = [(s + 1, e + 1) for s, e in object_spans] + [(0, len(verb_phrase))]
    words = subject + verb_phrase
    spans = subject_spans + [(s + len(subject), e + len(subject)) for s, e in vp_spans] + [(0, len(words))]
    return words, set(spans)


def branching(length, right):
    if right:
        return {(s, length) for s in range(length - 1)}
    return {(0, e) for e in range(2, length + 1)}


def config_overrides(text: str) -> dict:
    """`key=value,...` -> keyword arguments; values read as JSON (numbers, true / false), else as strings."""
    overrides = {}
    for pair in filter(None, text.split(",")):
        key, value = pair.split("=", 1)
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key] = value
    return overrides


def training_step(model, tokenizer, optimizer, batch) -> torch.Tensor:
    """One optimiser step of the bidirectional LM on `batch` (sentences with their trees); returns the loss."""
    encoded = tokenizer([" ".join(words) for words, _ in batch], padding=True, return_tensors="pt")
    labels = encoded["input_ids"].masked_fill(encoded["attention_mask"].eq(0), -100)
    model.train()
    loss = model(**encoded, labels=labels).loss
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--hidden-size", type=int, default=64)
    parser.add_argument("--window", type=int, default=4)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pruning", choices=["heuristic", "parser"], default="heuristic")
    parser.add_argument("--parser-learning-rate", type=float, default=1e-2, help="the authors' 1e-2")
    parser.add_argument("--parser-hidden-size", type=int, default=64)
    parser.add_argument("--parser-layers", type=int, default=2)
    parser.add_argument("--tree-samples", type=int, default=256, help="trees drawn from the chart (the authors' 256)")
    parser.add_argument("--seconds", type=float, help="stop after this much training time instead of --steps")
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--decay", action="store_true",
                        help="50 warm-up steps, then the learning rates fall linearly to 0 at --steps")
    parser.add_argument("--config-overrides", default="",
                        help="further R2D2Config settings, e.g. parser_target=best,merge_noise=false")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    train = [sentence(rng) for _ in range(5000)]
    test = [sentence(rng) for _ in range(300)]
    tokenizer = build_word_tokenizer(" ".join(words) for words, _ in train)
    torch.manual_seed(args.seed)
    config = R2D2Config(vocab_size=len(tokenizer), hidden_size=args.hidden_size, num_attention_heads=4,
                        intermediate_size=4 * args.hidden_size, num_composition_layers=2, window_size=args.window,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, pruning=args.pruning,
                        parser_embedding_size=args.parser_hidden_size, parser_hidden_size=args.parser_hidden_size,
                        parser_num_layers=args.parser_layers, parser_tree_samples=args.tree_samples,
                        **config_overrides(args.config_overrides))
    model = R2D2ForLanguageModeling(config)
    parser_parameters = [p for name, p in model.named_parameters() if ".split_parser." in name]
    other_parameters = [p for name, p in model.named_parameters() if ".split_parser." not in name]
    optimizer = torch.optim.AdamW([{"params": other_parameters},
                                   {"params": parser_parameters, "lr": args.parser_learning_rate}],
                                  lr=args.learning_rate)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / 50, max(0.0, (args.steps - step) / (args.steps - 50)))
    ) if args.decay else None

    def evaluate():
        scores = {}
        for decoding in config.reported_tree_decodings:
            parses = model.parse([words for words, _ in test], tokenizer, tree_decoding=decoding)
            predicted = [scored_spans(map(tuple, p["spans"]), len(w)) for p, (w, _) in zip(parses, test)]
            gold = [scored_spans(spans, len(w)) for w, spans in test]
            scores[decoding] = round(100 * unlabelled_f1(predicted, gold)["sentence_f1"], 2)
        return scores

    gold = [scored_spans(spans, len(w)) for w, spans in test]
    for name, right in (("right-branching", True), ("left-branching", False)):
        baseline = [scored_spans(branching(len(w), right), len(w)) for w, _ in test]
        print(f"{name}: sentence-F1 {100 * unlabelled_f1(baseline, gold)['sentence_f1']:.2f}")
    print(f"step 0: sentence-F1 {evaluate()}", flush=True)
    start = time.time()
    step = 0
    while (time.time() - start < args.seconds) if args.seconds else (step < args.steps):
        step += 1
        loss = training_step(model, tokenizer, optimizer, rng.sample(train, args.batch_size))
        if schedule:
            schedule.step()
        if step % args.eval_every == 0:
            model.eval()
            evaluation_began = time.time()
            print(f"step {step}: loss {loss.item():.3f}, sentence-F1 {evaluate()} ({evaluation_began - start:.0f} s)",
                  flush=True)
            start += time.time() - evaluation_began  # evaluation time does not count against --seconds
    model.eval()
    print(f"final, step {step}: sentence-F1 {evaluate()} ({time.time() - start:.0f} s of training)", flush=True)


if __name__ == "__main__":
    main()
