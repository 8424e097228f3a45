#!/usr/bin/env python
"""Where a dependency parser's time goes, and its arithmetic against what this CPU does.

The first --lines sentence texts of UD English-EWT dev are parsed (batch 32, as `speed_against_spacy.py`) by
`arc-hybrid-ewt` and `g2gtr-ewt` (`--models`: any arc-hybrid or G2GTr parser), float32 and int8, after 8 lines
untimed. Wall time is split among the parts each model's parse calls, timed by wrapping them (a part's time excludes
the parts it calls): the pipeline's sentence splitting and word tokenization, word pieces, the encoder, the scorers
or graph layers and classifiers, the decoders, the rest of the model's `parse` (its Python: the transition system
for G2GTr), and the rest of the pipeline's call (batching, results). Then the floating-point operations per sentence
(torch's FlopCounterMode, one float32 pass) and the rate the encoder reaches, against the rate of one large matrix
product on this CPU (float32, and torch's dynamic int8 linear: the same operations counted as float). It asserts
nothing.

    python benchmarks/parsing_profile.py                      # 500 lines, default threads
    python benchmarks/parsing_profile.py --threads 1 --quick  # the smoke run of the benchmark tests
"""

import argparse
import collections
import importlib.util
import sys
import time
from pathlib import Path

from shared_data import DATA_DIR  # benchmarks/shared_data.py: the script's folder is on sys.path
from speed_against_spacy import BATCH_SIZE, WARMUP_LINES, read_texts

ROOT = Path(__file__).resolve().parents[1]
if importlib.util.find_spec("hf_structure") is None:  # not installed: use the source tree (src layout)
    sys.path.insert(0, str(ROOT / "src"))
DEFAULT_INPUT = DATA_DIR / "ud-english-ewt" / "en_ewt-ud-dev.conllu"


class Stopwatch:
    """Seconds per part, each part's time without that of the parts it calls."""

    def __init__(self):
        self.seconds: collections.defaultdict[str, float] = collections.defaultdict(float)
        self.stack: list[list] = []

    def wrap(self, owner, attribute: str, part: str) -> None:
        function = getattr(owner, attribute)

        def timed(*args, **kwargs):
            self.stack.append([part, time.perf_counter(), 0.0])
            try:
                return function(*args, **kwargs)
            finally:
                name, start, inner = self.stack.pop()
                spent = time.perf_counter() - start
                self.seconds[name] += spent - inner
                if self.stack:
                    self.stack[-1][2] += spent

        setattr(owner, attribute, timed)


def parts_of(model_name: str, parser) -> list[tuple[object, str, str]]:
    """(owner, attribute, part) of what to time in this model's parse."""
    model = parser.model
    modeling = sys.modules[type(model).__module__]
    parts = [
        (parser.parser, "sentences", "sentence splitting and words"),
        (model, "parse", "the rest of parse (Python)"),
    ]
    parts.append((modeling, "encode_word_pieces", "word pieces"))
    if model.config.model_type == "arc_hybrid":  # arc-hybrid-ewt and its student, arc-hybrid-ewt-small
        parts.append((model.encoder, "forward", "encoder"))
        for scorer in ("arc_log_probs", "transition_log_probs", "matching_log_probs", "label_logits"):
            parts.append((model, scorer, "scorers"))
        parts += [(modeling, "stack_size_dp", "decoding"), (modeling, "eisner", "decoding")]
    else:
        parts.append((model, "encode_sentences", "encoder (layers below the graph)"))
        cache = modeling.G2GTrDecodingCache
        for method in ("__init__", "encode", "top_states", "add_arcs", "keep"):
            parts.append((cache, method, "graph layers"))
        parts.append((model, "classify_slots", "classifiers"))
    return parts


def matmul_rates(threads: int) -> dict[str, float]:
    """GFLOP/s of a (1024 x 384) @ (384 x 1536) product, float32 and torch's dynamic int8 linear."""
    import torch

    from hf_structure.pipelines.quantization import Int8Linear

    torch.set_num_threads(threads)
    inputs, linear = torch.rand(1024, 384), torch.nn.Linear(384, 1536)
    layers = {"float32": linear, "int8": Int8Linear(linear, torch.tensor([], dtype=torch.long))}
    rates = {}
    with torch.inference_mode():
        for name, layer in layers.items():
            layer(inputs)
            start, runs = time.perf_counter(), 20
            for _ in range(runs):
                layer(inputs)
            rates[name] = 2 * 1024 * 384 * 1536 * runs / (time.perf_counter() - start) / 1e9
    return rates


def encoder_flops(parser, texts: list[str]) -> tuple[float, float | None]:
    """Floating-point operations of one float32 pass over `texts`: all of them, and the BERT encoder's where the
    model calls it as a module (arc-hybrid; G2GTr's decoding calls parts of its layers, counted in the total only)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        parser(texts, batch_size=BATCH_SIZE)
    encoder = counter.get_flop_counts().get("BertModel")
    return counter.get_total_flops(), sum(encoder.values()) if encoder else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", type=Path, default=DEFAULT_INPUT)
    parser.add_argument("--lines", type=int, default=500)
    parser.add_argument("--threads", type=int, help="torch's threads (default: the pipeline's choice)")
    parser.add_argument("--models", default="arc-hybrid-ewt,g2gtr-ewt")
    parser.add_argument("--quick", action="store_true", help="smoke run: 8 lines, arc-hybrid-ewt")
    args = parser.parse_args()
    if args.quick:
        args.lines, args.models = 8, "arc-hybrid-ewt"
    if not args.input.exists():
        print(f"skipped: {args.input} is not there (set HF_STRUCTURE_DATA)")
        return
    import torch

    from hf_structure.pipelines import load_parser

    texts = read_texts(args.input, args.lines)
    options = {"num_threads": args.threads} if args.threads else {}
    threads = args.threads or torch.get_num_threads()
    rates = matmul_rates(threads)
    print(
        f"{len(texts)} lines, batch {BATCH_SIZE}; one large matrix product on {threads} thread(s): "
        f"{rates['float32']:.1f} GFLOP/s float32, {rates['int8']:.1f} int8"
    )
    for model_name in args.models.split(","):
        for quantize in (None, "int8"):
            pipeline = load_parser(model_name, quantize=quantize, **options)
            flops = encoder_flops(pipeline, texts) if quantize is None else None
            stopwatch = Stopwatch()
            for owner, attribute, part in parts_of(model_name, pipeline):
                stopwatch.wrap(owner, attribute, part)
            pipeline(texts[:WARMUP_LINES])
            stopwatch.seconds.clear()
            start = time.perf_counter()
            pipeline(texts, batch_size=BATCH_SIZE)
            total = time.perf_counter() - start
            sentences = len(texts)
            print(f"\n{model_name} {quantize or 'float32'}: {len(texts) / total:.1f} lines/s, {total:.2f} s")
            stopwatch.seconds["the rest of the pipeline's call"] = total - sum(stopwatch.seconds.values())
            for part, seconds in sorted(stopwatch.seconds.items(), key=lambda item: item[1], reverse=True):
                print(f"  {part:36} {seconds:7.2f} s {100 * seconds / total:5.1f}%")
            if flops:
                all_flops, encoder = flops
                print(f"  {all_flops / sentences / 1e6:.0f} MFLOP a line")
                if encoder:
                    rate = encoder / stopwatch.seconds["encoder"] / 1e9
                    print(
                        f"  the encoder's {encoder / sentences / 1e6:.0f} MFLOP ({100 * encoder / all_flops:.0f}%) at "
                        f"{rate:.1f} GFLOP/s, {100 * rate / rates['float32']:.0f}% of the product's float32 rate"
                    )


if __name__ == "__main__":
    main()
