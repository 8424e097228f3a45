#!/usr/bin/env python
"""Sentences per second of the `unsupervised-parsing` pipeline at batch_size 1 and 32 (or other sizes).

Input: the word lists of the gold PTB sample (`read_treebank`, punctuation and traces removed, as scored), given
pre-tokenized (`is_split_into_words=True`), in file order unless --sort-by-length. Each batch size parses the
same sentences with the same pipeline object after an untimed warm-up; every number and ratio comes from this
one run. The script also reports whether the batched parses equal the unbatched ones (padding must not change a
parse); it asserts nothing.

Model: `structformer-ptb` (the bundled checkpoint, resolved by `hf_structure.bundled.resolve_model_path`) by
default; `--model PATH` for any saved folder; `--random-model` for an untrained model of the paper's size over
the PTB vocabulary (speed does not depend on the weights); `--quick` for a tiny random model on a few sentences
(a smoke run).
"""

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from shared_data import DATA_DIR  # benchmarks/shared_data.py: the script's folder is on sys.path

ROOT = Path(__file__).resolve().parents[1]
if importlib.util.find_spec("hf_structure") is None:  # not installed: use the source tree (src layout)
    sys.path.insert(0, str(ROOT / "src"))
DEFAULT_TREEBANK = DATA_DIR / "ptb-sample" / "dev"

import torch  # noqa: E402

import hf_structure  # noqa: E402,F401  (registers the model classes and the pipeline task)
from hf_structure.bundled import DEFAULT_MODEL, resolve_model_path  # noqa: E402
from hf_structure.machine import machine_description  # noqa: E402


def build_random_model(folder: Path, sentences: list[list[str]], tiny: bool) -> Path:
    """Save an untrained StructFormer and its word tokenizer to `folder`: tiny over the benchmark's own words, or
    of the paper's size (8 layers, d 512, 8 heads, d_ff 2048) over the PTB train vocabulary."""
    from hf_structure.data.tokenization import build_word_tokenizer
    from hf_structure.models.structformer import StructFormerConfig, StructFormerForMaskedLM

    if tiny:
        tokenizer = build_word_tokenizer(" ".join(words) for words in sentences)
        sizes = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
    else:
        from hf_structure.data.text import ptb_lm_lines

        tokenizer = build_word_tokenizer(ptb_lm_lines("train", exclude_wsj_00_01=False))
        sizes = dict(hidden_size=512, num_hidden_layers=8, num_attention_heads=8, intermediate_size=2048)
    config = StructFormerConfig(
        vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, mask_token_id=tokenizer.mask_token_id, **sizes
    )
    torch.manual_seed(0)
    StructFormerForMaskedLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def time_pipeline(parser, sentences, batch_size: int, repeats: int, options: dict):
    """Median seconds over `repeats` timed passes, and the last pass's parses."""
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        outputs = parser(sentences, is_split_into_words=True, batch_size=batch_size, **options)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), seconds, outputs


def main(argv=None):
    parser_args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser_args.add_argument("--model", default=DEFAULT_MODEL, help=f"model name or folder (default {DEFAULT_MODEL})")
    parser_args.add_argument(
        "--random-model", action="store_true", help="an untrained model of the paper's size instead of --model"
    )
    parser_args.add_argument(
        "--treebank",
        type=Path,
        default=DEFAULT_TREEBANK,
        help="gold treebank folder with mrg/ (default ../shared/data/ptb-sample/dev)",
    )
    parser_args.add_argument("--limit", type=int, default=None, help="use only the first N sentences")
    parser_args.add_argument("--batch-sizes", default="1,32", help="comma list; the first is the baseline (1,32)")
    parser_args.add_argument("--warmup", type=int, default=32, help="sentences parsed untimed first, per batch size")
    parser_args.add_argument("--repeats", type=int, default=1, help="timed passes per batch size (median reported)")
    parser_args.add_argument(
        "--sort-by-length",
        action="store_true",
        help="feed sentences shortest first (less padding per batch) instead of file order",
    )
    parser_args.add_argument(
        "--structures",
        default=None,
        help="comma list passed as the pipeline's structures= (default: all the model gives)",
    )
    parser_args.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser_args.add_argument(
        "--quick", action="store_true", help="smoke run: tiny random model, 40 sentences (or --limit)"
    )
    args = parser_args.parse_args(argv)
    if args.quick:
        args.limit, args.warmup = args.limit or 40, 4
    batch_sizes = [int(x) for x in args.batch_sizes.split(",")]
    options = {"structures": args.structures.split(",")} if args.structures else {}
    if args.threads:
        torch.set_num_threads(args.threads)

    from transformers import pipeline
    from transformers.utils import logging as hf_logging

    from hf_structure.data.treebanks import read_treebank

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    sentences = [sentence.words for sentence in read_treebank(args.treebank)]
    sentences = sentences[: args.limit] if args.limit else sentences
    if args.sort_by_length:
        sentences = sorted(sentences, key=len)
    lengths = [len(words) for words in sentences]

    with tempfile.TemporaryDirectory() as scratch:
        if args.quick or args.random_model:
            model_path: Path | str = build_random_model(Path(scratch) / "model", sentences, tiny=args.quick)
            model_label = "tiny random model (--quick)" if args.quick else "untrained model of the paper's size"
        else:
            model_path = resolve_model_path(args.model)
            if not (Path(model_path) / "config.json").is_file():
                raise SystemExit(
                    f"model {args.model!r} is not a saved model folder (resolved to {model_path}); the bundled "
                    f"{DEFAULT_MODEL} may not exist yet. Pass --model PATH, --random-model or --quick."
                )
            model_label = str(model_path)
        parser = pipeline("unsupervised-parsing", model=str(model_path))  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
        config = parser.model.config
        smoke = " (--quick: a smoke run, not a measurement)" if args.quick else ""
        print("unsupervised-parsing pipeline throughput" + smoke)
        print(f"{machine_description()}; {os.cpu_count()} logical CPUs")
        print(
            f"model: {model_label} (hidden {config.hidden_size}, {config.num_hidden_layers} layers, "
            f"{config.num_attention_heads} heads)\n"
            f"data: {len(sentences)} sentences of {args.treebank} ({sum(lengths)} words, {min(lengths)}-{max(lengths)} "
            f"per sentence, mean {statistics.mean(lengths):.1f}), "
            f"{'sorted by length' if args.sort_by_length else 'file order'}, "
            f"pre-tokenized\n"
            f"timing: {args.repeats} timed pass(es) per batch size after a warm-up on {args.warmup} sentences"
            + (f"; structures={options['structures']}" if options else "")
        )

        results = {}
        for batch_size in batch_sizes:
            parser(sentences[: args.warmup], is_split_into_words=True, batch_size=batch_size, **options)
            seconds, passes, outputs = time_pipeline(parser, sentences, batch_size, args.repeats, options)
            results[batch_size] = (seconds, outputs)
            print(
                f"  batch_size {batch_size:>3}: {len(sentences) / seconds:8.1f} sentences/s, "
                f"{sum(lengths) / seconds:9.1f} words/s ({seconds:.2f} s; passes: "
                + ", ".join(f"{s:.2f}" for s in passes)
                + " s)",
                flush=True,
            )

    base_size = batch_sizes[0]
    base_seconds, base_outputs = results[base_size]
    print(f"\n{'batch_size':>10}{'sentences/s':>13}{'words/s':>11}  ratio to batch_size {base_size}")
    for batch_size, (seconds, outputs) in results.items():
        same = sum(
            a.get("heads") == b.get("heads") and a.get("spans") == b.get("spans") for a, b in zip(outputs, base_outputs)
        )
        print(
            f"{batch_size:>10}{len(sentences) / seconds:>13.1f}{sum(lengths) / seconds:>11.1f}  "
            f"{base_seconds / seconds:.2f}x   (parses equal to batch_size {base_size}: {same}/{len(sentences)})"
        )


if __name__ == "__main__":
    main()
