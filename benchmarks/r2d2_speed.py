#!/usr/bin/env python
"""R2D2's batched pruned chart against a plain per-sentence, per-cell loop, in one run, same weights.

    python benchmarks/r2d2_speed.py                     # a fresh model of the default training size
    python benchmarks/r2d2_speed.py --model r2d2-ptb    # a trained checkpoint

Prints the CPU flags that matter, then for the same sentences (PTB LM valid text): compositions/s of the batched
chart and of the per-cell loop (`tests/helpers/reference_r2d2.pruned_chart_loop`, the paper's algorithm with one Python
step per cell, as the authors' code runs it), whether both give the same trees, and training words/s (forward +
backward of the bidirectional LM) in float32 and under bf16 autocast.
"""

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.helpers: the per-cell reference the tests check the chart against

import torch  # noqa: E402

import hf_structure  # noqa: E402,F401
from hf_structure.data.text import ptb_lm_lines  # noqa: E402
from hf_structure.data.tokenization import build_word_tokenizer  # noqa: E402
from hf_structure.machine import cpu_flags, machine_description  # noqa: E402
from hf_structure.models.r2d2 import R2D2Config, R2D2ForLanguageModeling  # noqa: E402
from tests.helpers.reference_r2d2 import chart_tree_spans, pruned_chart_loop, tree_spans  # noqa: E402


def flag_summary() -> str:
    """The vector and bf16 features that decide these timings, as yes/no."""
    flags, wanted = cpu_flags(), ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")
    return ", ".join(f"{flag}={'yes' if flag in flags else 'no'}" for flag in wanted)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a saved R2D2 folder or short name (default: a fresh model)")
    parser.add_argument("--sentences", type=int, default=64, help="PTB valid sentences to encode")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--train-steps", type=int, default=4, help="timed training steps per precision")
    args = parser.parse_args(argv)

    if args.model:
        from hf_structure.bundled import load_model_and_tokenizer

        model, tokenizer = load_model_and_tokenizer(args.model)
    else:
        torch.manual_seed(0)
        tokenizer = build_word_tokenizer(ptb_lm_lines("train", exclude_wsj_00_01=False))
        config = R2D2Config(
            vocab_size=len(tokenizer), hidden_size=128, num_attention_heads=4, intermediate_size=512, window_size=4
        )
        model = R2D2ForLanguageModeling(config)
    r2d2 = model.r2d2.eval()
    lines = [line for line in ptb_lm_lines("valid") if line.split()][: args.sentences]
    print(f"{machine_description()}; {flag_summary()}")
    print(
        f"model: hidden {r2d2.config.hidden_size}, {r2d2.config.num_composition_layers} composition layers, "
        f"window {r2d2.config.window_size}; {len(lines)} sentences, {sum(len(x.split()) for x in lines)} words"
    )

    with torch.no_grad():
        start = time.perf_counter()
        batched, compositions = [], 0
        for first in range(0, len(lines), args.batch_size):
            encoded = tokenizer(
                lines[first : first + args.batch_size], padding=True, return_tensors="pt", return_token_type_ids=False
            )
            chart = r2d2(**encoded).chart
            batched += [chart_tree_spans(chart, b) for b in range(len(chart.roots))]
            compositions += int(chart.compositions.sum())
        batched_time = time.perf_counter() - start

        start = time.perf_counter()
        looped, loop_compositions = [], 0
        for line in lines:
            ids = tokenizer(line, return_tensors="pt", return_token_type_ids=False)["input_ids"][0]
            nodes, count = pruned_chart_loop(r2d2.embed_tokens(ids), r2d2.compose, r2d2.config.window_size)
            looped.append(tree_spans(nodes, len(ids)))
            loop_compositions += count
        loop_time = time.perf_counter() - start

    same = sum(a == b for a, b in zip(batched, looped))
    print(f"batched chart: {compositions / batched_time:,.0f} compositions/s ({batched_time:.2f} s)")
    print(f"per-cell loop: {loop_compositions / loop_time:,.0f} compositions/s ({loop_time:.2f} s)")
    print(
        f"speed-up {loop_time / batched_time:.1f}x; same compositions: {compositions == loop_compositions}; "
        f"same trees: {same}/{len(lines)}"
    )

    model.train()
    model.sparse_prediction = True  # as training sets it (`training.trainer.SparsePrediction`)
    encoded = tokenizer(lines[: args.batch_size], padding=True, return_tensors="pt", return_token_type_ids=False)
    labels = encoded["input_ids"].masked_fill(encoded["attention_mask"] == 0, -100)
    words = int(encoded["attention_mask"].sum())
    for name, bf16 in (("float32", False), ("bf16 autocast", True)):
        times = []
        for step in range(args.train_steps + 1):
            start = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = model(**encoded, labels=labels).loss
            loss.backward()
            model.zero_grad()
            if step:  # the first step warms up
                times.append(time.perf_counter() - start)
        print(f"training ({name}): {words * len(times) / sum(times):,.0f} words/s")


if __name__ == "__main__":
    main()
