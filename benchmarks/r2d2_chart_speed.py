#!/usr/bin/env python
"""R2D2's pruned chart and composition Transformer before issue 28 and now, in one run, on the same sentences and
weights.

    python benchmarks/r2d2_chart_speed.py                    # CPU, one thread: batches of 32 and 128, dropout 0.1
    python benchmarks/r2d2_chart_speed.py --dropout 0        # the same without dropout (and a gradient comparison)
    python benchmarks/r2d2_chart_speed.py --device cuda      # GPU: batches of 32 and 256
    python benchmarks/r2d2_chart_speed.py --quick            # a smoke run

A fresh R2D2 (hidden 16, 4 heads, feed-forward 64, 3 composition layers, window 4 by default) with the PTB training
vocabulary, on PTB LM valid sentences of 18-22 words. `before` is the chart as of 314b94e
(`tests/helpers/reference_r2d2.encode_pruned_chart_by_word_spans`) with the composition Transformer as a standard layer
(`tests/helpers/reference_r2d2.reference_composition_transformer`: scaled-dot-product attention under a mask, torch's
dropout); `now` is the package's: `hf_structure.structs.pruned_chart`'s chart and `R2D2CompositionLayer`'s
written-out attention with its numpy-drawn dropout masks. The model runs either in place of its own. For every
batch size it prints the cost of a training step (forward + backward of the bidirectional LM: ms per sentence, and
sentences/s on a GPU), the same for the chart alone (the composition Transformer replaced by one linear layer, so
that what remains is the chart's bookkeeping), and the tensor operations of one training step (all that reach the
dispatcher, and those that are not views). Then whether both give the same trees and composition counts (evaluation
mode) and how close the training losses and gradients are (same seed, so the same Gumbel noise; with dropout the
two draw different masks, so compare them with `--dropout 0`). Steps of the two alternate, and each figure is the
median of `--steps` steps: on a shared machine compare the ratios of one run, not figures across runs.
"""

import argparse
import collections
import contextlib
import statistics
import sys
import time
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.helpers: the chart before issue 28, kept as the tests' reference

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from hf_structure.data.text import ptb_lm_lines  # noqa: E402
from hf_structure.data.tokenization import build_word_tokenizer  # noqa: E402
from hf_structure.models.r2d2 import R2D2Config, R2D2ForLanguageModeling, R2D2Model, modeling_r2d2  # noqa: E402
from hf_structure.structs.pruned_chart import encode_pruned_chart  # noqa: E402
from tests.helpers.reference_r2d2 import (  # noqa: E402
    chart_tree_spans,
    encode_pruned_chart_by_word_spans,
    reference_composition_transformer,
)


def chart_before(
    leaves, lengths, compose, choose_split, window, merge_order=None, merge_rule="2021", merge_noise=False
):
    """The chart as of 314b94e, called as the model calls its chart (heuristic pruning by the 2021 rule: no merge
    order, no noise)."""
    assert merge_order is None, "the chart as of 314b94e has no merge order (pruning='heuristic' only)"
    assert merge_rule == "2021" and not merge_noise, "the chart as of 314b94e merges by the 2021 rule, without noise"
    return encode_pruned_chart_by_word_spans(leaves, lengths, compose, choose_split, window)


# (chart, composition Transformer) of each path
CHARTS = {
    "before": (chart_before, reference_composition_transformer),
    "now": (encode_pruned_chart, R2D2Model.composition_transformer),
}
VIEW_OPS = {
    "view",
    "_unsafe_view",
    "unsqueeze",
    "squeeze",
    "slice",
    "select",
    "expand",
    "t",
    "transpose",
    "permute",
    "as_strided",
    "alias",
    "detach",
    "lift_fresh",
    "unbind",
    "split",
    "split_with_sizes",
}


class CountOps(TorchDispatchMode):
    """Counts the aten operations that reach the dispatcher (forward and backward)."""

    def __init__(self):
        super().__init__()
        self.counts: collections.Counter[str] = collections.Counter()  # operation -> calls

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))

    def totals(self) -> tuple[int, int]:
        """(all operations, those that are not views)."""
        return sum(self.counts.values()), sum(c for name, c in self.counts.items() if name not in VIEW_OPS)


@contextlib.contextmanager
def model_path(path):
    """Run R2D2 through `path`'s chart and composition Transformer instead of its own (a `CHARTS` value)."""
    chart, transformer = path
    with (
        mock.patch.object(modeling_r2d2, "encode_pruned_chart", chart),
        mock.patch.object(R2D2Model, "composition_transformer", transformer),
    ):
        yield


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--batch-sizes", type=int, nargs="+", help="default: 32 128 on CPU, 32 256 on a GPU")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per chart and batch size")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (torch.set_num_threads)")
    parser.add_argument("--hidden-size", type=int, default=16)
    parser.add_argument("--num-attention-heads", type=int, default=4)
    parser.add_argument("--intermediate-size", type=int, default=64)
    parser.add_argument("--num-composition-layers", type=int, default=3)
    parser.add_argument("--window", type=int, default=4)
    parser.add_argument("--dropout", type=float, default=0.1, help="hidden and attention dropout (default 0.1)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: batches of 4 and 8, one timed step")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda: CUDA is not available here")
    device = torch.device(args.device)
    batch_sizes = args.batch_sizes or ([4, 8] if args.quick else [32, 256] if device.type == "cuda" else [32, 128])
    steps = 1 if args.quick else args.steps
    torch.set_num_threads(args.threads)

    lines = [line for line in ptb_lm_lines("valid") if 18 <= len(line.split()) <= 22][: max(batch_sizes)]
    if len(lines) < max(batch_sizes):
        parser.error(f"only {len(lines)} PTB valid sentences have 18-22 words")
    tokenizer = build_word_tokenizer(ptb_lm_lines("train", exclude_wsj_00_01=False))
    torch.manual_seed(0)
    config = R2D2Config(
        vocab_size=len(tokenizer),
        hidden_size=args.hidden_size,
        num_attention_heads=args.num_attention_heads,
        intermediate_size=args.intermediate_size,
        num_composition_layers=args.num_composition_layers,
        window_size=args.window,
        hidden_dropout_prob=args.dropout,
        attention_probs_dropout_prob=args.dropout,
    )
    # transformers wraps PreTrainedModel.to with functools.wraps, which mypy does not bind as a method.
    model = R2D2ForLanguageModeling(config).to(device).train()  # type: ignore[arg-type]
    model.sparse_prediction = True  # as training sets it (`training.trainer.SparsePrediction`)
    stand_in = torch.nn.Linear(2 * args.hidden_size, args.hidden_size + 1).to(device)

    def stand_in_compose(left, right):
        out = stand_in(torch.cat([left, right], -1))
        return torch.tanh(out[:, :-1]), torch.nn.functional.logsigmoid(out[:, -1])

    def batch_of(size):
        encoded = tokenizer(lines[:size], padding=True, return_tensors="pt", return_token_type_ids=False)
        encoded = {key: value.to(device) for key, value in encoded.items()}
        labels = encoded["input_ids"].masked_fill(encoded["attention_mask"] == 0, -100)
        return encoded, labels

    def training_step(path, encoded, labels):
        with model_path(path):
            loss = model(**encoded, labels=labels).loss
            loss.backward()
        return loss

    def chart_step(path, encoded, labels):
        chart = path[0]
        leaves = model.r2d2.embed_tokens(encoded["input_ids"])
        encoding = chart(
            leaves, encoded["attention_mask"].sum(-1), stand_in_compose, model.r2d2.choose_split, args.window
        )
        (encoding.node_states[encoding.roots].sum() + encoding.node_log_p.sum()).backward()

    def seconds(step, path, encoded, labels):
        torch.manual_seed(0)
        synchronize(device)
        start = time.perf_counter()
        step(path, encoded, labels)
        synchronize(device)
        model.zero_grad(set_to_none=True)
        stand_in.zero_grad(set_to_none=True)
        return time.perf_counter() - start

    threads = f", {torch.get_num_threads()} thread(s)" if device.type == "cpu" else ""
    print(
        f"device: {torch.cuda.get_device_name(device) if device.type == 'cuda' else 'CPU'}{threads}; torch "
        f"{torch.__version__}"
    )
    print(
        f"model: hidden {args.hidden_size}, {args.num_attention_heads} heads, feed-forward "
        f"{args.intermediate_size}, {args.num_composition_layers} composition layers, window {args.window}, "
        f"dropout {args.dropout}, vocabulary {len(tokenizer)}; PTB valid sentences of 18-22 words; median of "
        f"{steps} step(s)"
    )
    print()
    print(
        "| batch | path | training step, ms/sentence | sentences/s | chart alone, ms/sentence "
        "| operations per training step (not views) |"
    )
    print("|---|---|---|---|---|---|")
    for size in batch_sizes:
        encoded, labels = batch_of(size)
        for path in CHARTS.values():  # warm-up
            seconds(training_step, path, encoded, labels)
            seconds(chart_step, path, encoded, labels)
        times: dict[tuple[str, str], list[float]] = {
            (name, kind): [] for name in CHARTS for kind in ("training", "chart")
        }
        for _ in range(steps):
            for name, path in CHARTS.items():
                times[name, "training"].append(seconds(training_step, path, encoded, labels))
                times[name, "chart"].append(seconds(chart_step, path, encoded, labels))
        for name, path in CHARTS.items():
            with CountOps() as counter:
                seconds(training_step, path, encoded, labels)
            operations, kernels = counter.totals()
            step_time = statistics.median(times[name, "training"])
            chart_time = statistics.median(times[name, "chart"])
            print(
                f"| {size} | {name} | {1000 * step_time / size:.2f} | {size / step_time:,.1f} "
                f"| {1000 * chart_time / size:.3f} | {operations:,} ({kernels:,}) |"
            )

    print()
    encoded, labels = batch_of(max(batch_sizes))
    model.eval()
    trees, compositions = {}, {}
    with torch.no_grad():
        for name, path in CHARTS.items():
            with model_path(path):
                encoding = model.r2d2(**encoded).chart
            trees[name] = [chart_tree_spans(encoding, b) for b in range(len(encoding.roots))]
            compositions[name] = encoding.compositions.tolist()
    model.train()
    same_trees = sum(a == b for a, b in zip(trees["before"], trees["now"]))
    same_counts = sum(a == b for a, b in zip(compositions["before"], compositions["now"]))
    print(
        f"evaluation, {len(lines)} sentences: same trees {same_trees}/{len(lines)}, same composition counts "
        f"{same_counts}/{len(lines)} ({sum(compositions['now']) / len(lines):.1f} compositions a sentence)"
    )
    losses, gradients = {}, {}
    for name, path in CHARTS.items():
        torch.manual_seed(0)
        losses[name] = training_step(path, encoded, labels).item()
        gradients[name] = [p.grad.clone() for p in model.parameters() if p.grad is not None]
        model.zero_grad(set_to_none=True)
    # Against the largest gradient of all: some gradients are 0 up to rounding (the keys' biases).
    difference = max(float((a - b).abs().max()) for a, b in zip(gradients["before"], gradients["now"]))
    largest = max(float(a.abs().max()) for a in gradients["before"])
    noise = "the two draw different dropout masks" if args.dropout > 0 else "no dropout"
    print(
        f"training step, same seed ({noise}): loss {losses['before']:.6f} before, {losses['now']:.6f} now "
        f"(relative difference {abs(losses['now'] - losses['before']) / abs(losses['before']):.1e}); largest "
        f"gradient difference {difference:.1e}, largest gradient {largest:.1e}"
    )


if __name__ == "__main__":
    main()
