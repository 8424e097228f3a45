#!/usr/bin/env python
"""The arc-hybrid decoders against first-order Eisner, in one run, on random scores; and the whole parser's
sentences/s on EWT test.

    python benchmarks/arc_hybrid_speed.py                           # the decoders, 2,416 sentences
    python benchmarks/arc_hybrid_speed.py --parser arc-hybrid-ewt   # also the parser on EWT test
    python benchmarks/arc_hybrid_speed.py --quick                   # smoke run (numbers are not measurements)

The sentences have WSJ section 23's size and length profile (2,416 sentences, mean 23.5 words, at most 67): their
lengths are drawn once (seed 0) from a gamma distribution with that mean, capped at 67, and printed. Each decoder
gets the same random scores; score generation is not timed. Sentences are decoded in batches of similar length
(sorted), as the parser does. The paper reports 1.13 s for section 23 (its O(n^4) DP only, C++, 2.1 GHz Xeon).
"""

import argparse
import random
import time

import torch
from shared_data import DATA_DIR  # benchmarks/shared_data.py: the script's folder is on sys.path

from hf_structure.machine import cpu_flags, machine_description
from hf_structure.structs.arc_hybrid import minimal_feature_dp, stack_size_dp
from hf_structure.structs.decoding import eisner


def flag_summary() -> str:
    """The vector and bf16 features that decide these timings, as yes/no."""
    flags, wanted = cpu_flags(), ("avx2", "avx512f", "avx512_bf16", "amx_bf16")
    return ", ".join(f"{flag}={'yes' if flag in flags else 'no'}" for flag in wanted)


def wsj23_like_lengths(count: int, mean: float = 23.5, longest: int = 67, seed: int = 0) -> list[int]:
    rng = random.Random(seed)
    return [max(1, min(longest, round(rng.gammavariate(4.0, mean / 4.0)))) for _ in range(count)]


def batches(lengths: list[int], batch_size: int):
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    return [[lengths[i] for i in order[s : s + batch_size]] for s in range(0, len(order), batch_size)]


def random_scores(batch_lengths: list[int], buckets: int, generator: torch.Generator) -> dict:
    size = max(batch_lengths) + 2
    count = len(batch_lengths)
    return {
        "lengths": torch.tensor(batch_lengths),
        "minimal": torch.randn(count, size, size, 3, generator=generator),
        "transitions": torch.randn(count, size, buckets, 3, generator=generator),
        "matching": torch.randn(count, size, buckets, size, generator=generator),
        "arcs": torch.randn(count, size, size, generator=generator),
    }


def time_decoder(name: str, decode, inputs: list[dict]) -> float:
    start = time.perf_counter()
    for scores in inputs:
        decode(scores)
    return time.perf_counter() - start


def parser_speed(name: str, batch_size: int) -> None:
    from hf_structure.bundled import load_model_and_tokenizer
    from hf_structure.data.conllu_format import read_conllu
    from hf_structure.pipelines.parser import Parser

    data = DATA_DIR / "ud-english-ewt" / "en_ewt-ud-test.conllu"
    if not data.is_file():
        print(f"parser: {data} not found, skipped")
        return
    model, tokenizer = load_model_and_tokenizer(name)
    sentences = [s["words"] for s in read_conllu(data)]
    for decoding in ("derivation", "eisner"):
        start = time.perf_counter()
        Parser(model, tokenizer).parse_words(sentences, batch_size=batch_size, head_decoding=decoding)
        seconds = time.perf_counter() - start
        print(
            f"parser {name} ({decoding} decoding): {len(sentences)} EWT test sentences in {seconds:.1f} s, "
            f"{len(sentences) / seconds:.1f} sentences/s (batches of {batch_size}, sorted by length)"
        )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=2416)
    parser.add_argument("--batch-size", type=int, default=32, help="sentences decoded together")
    parser.add_argument("--buckets", type=int, default=11, help="stack-size buckets (the paper: 1-9, >= 10)")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    parser.add_argument("--parser", help="also time this parser (short name or folder) on EWT test")
    parser.add_argument("--quick", action="store_true", help="smoke run at a tiny size")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.quick:
        args.sentences, args.batch_size = 24, 8

    lengths = wsj23_like_lengths(args.sentences)
    print(f"{machine_description()}; {flag_summary()}")
    print(
        f"{len(lengths)} sentences, mean {sum(lengths) / len(lengths):.1f} words, longest {max(lengths)}, "
        f"batches of {args.batch_size} sorted by length, {args.buckets} stack-size buckets"
    )
    generator = torch.Generator().manual_seed(0)
    inputs = [random_scores(b, args.buckets, generator) for b in batches(lengths, args.batch_size)]

    def word_mask(scores):
        positions = torch.arange(scores["arcs"].size(1) - 1)
        return (positions[None] >= 1) & (positions[None] <= scores["lengths"][:, None])

    decoders = {
        "first-order Eisner (structs.decoding.eisner)": lambda s: eisner(
            s["arcs"][:, :-1, :-1].transpose(1, 2), word_mask(s)
        ),
        "O(n^3) minimal-feature DP (Shi et al.)": lambda s: minimal_feature_dp(
            s["minimal"], s["arcs"], s["lengths"], single_root=True
        ),
        "O(n^4) stack-size DP (Le Roux et al.; O(Q n^3) with Q buckets)": lambda s: stack_size_dp(
            s["transitions"], s["matching"], s["arcs"], s["lengths"], single_root=True
        ),
    }
    time_decoder("warm-up", decoders["O(n^3) minimal-feature DP (Shi et al.)"], inputs[:1])
    results = {name: time_decoder(name, decode, inputs) for name, decode in decoders.items()}
    eisner_time = results["first-order Eisner (structs.decoding.eisner)"]
    for name, seconds in results.items():
        print(
            f"{name}: {seconds:.2f} s, {len(lengths) / seconds:.0f} sentences/s, "
            f"{seconds / eisner_time:.2f}x Eisner's time"
        )
    if args.parser:
        parser_speed(args.parser, 64)


if __name__ == "__main__":
    main()
