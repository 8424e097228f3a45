"""A StructFormer training step, counted and timed: the operations it dispatches (on a GPU each is a kernel launch
or more, and a paper-size step there waits on their dispatch, not on arithmetic), those that make the host wait for
the device (a value read: `_local_scalar_dense`; a shape that depends on values: `nonzero` and the boolean indexing
built on it), and the CPU's steps per second.

    python benchmarks/structformer_training_step.py [--hidden_size 512 --num_hidden_layers 8] [--steps 5] [--bf16]
        [--device cpu|meta]

One batch of about 4,096 tokens (PTB training sentences of similar length, as the authors' batches are), 30% of its
words masked, the authors' model settings, AdamW as the Trainer makes it (fused where torch has it). `--device
meta` runs forward and backward where no value can be read (the meta device holds shapes alone): it succeeds only if
the step never waits on the host, and counts the operations of the path taken off the CPU. Compare runs of one
machine: `PYTHONPATH=<another checkout>/src` measures another version of the code with the same script.
"""

import argparse
import collections
import contextlib
import json
import random
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from hf_structure.data.text import ptb_lm_lines
from hf_structure.data.tokenization import build_word_tokenizer
from hf_structure.models.structformer import StructFormerConfig, StructFormerForMaskedLM
from hf_structure.training.arguments import apply_config_overrides

AUTHORS = "calibration_scope=batch,embedding_dropout_prob=0.0,output_dropout_prob=0.1,attention_initialization=xavier"
HOST_WAITS = ("aten._local_scalar_dense", "aten.nonzero", "aten.masked_select", "aten.is_nonzero", "aten.item")


class OperationCount(TorchDispatchMode):
    """Counts the operations that reach a device's kernels (after autograd, autocast and decompositions)."""

    def __init__(self):
        super().__init__()
        self.counts: collections.Counter[str] = collections.Counter()
        self.waits: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func.overloadpacket)
        self.counts[name] += 1
        if name in HOST_WAITS:
            self.waits[f"{name} on {args[0].device.type}"] += 1
        return func(*args, **(kwargs or {}))

    def summary(self) -> dict:
        """The operations, and the host's waits by operation and device (one on the CPU costs nothing)."""
        return {"operations": sum(self.counts.values()), "value_reads": dict(self.waits)}


def token_budget_batch(lines: list[str], tokens: int, seed: int) -> list[str]:
    """Sentences of similar length from a random place in the length-sorted corpus, until `tokens` are reached."""
    by_length = sorted(lines, key=lambda line: len(line.split()))
    position = random.Random(seed).randrange(len(by_length) // 4, 3 * len(by_length) // 4)
    batch: list[str] = []
    while sum(len(line.split()) for line in batch) < tokens:
        batch.append(by_length[position])
        position += 1
    return batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden_size", type=int, default=512)
    parser.add_argument("--num_hidden_layers", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=5, help="timed steps, after 2 untimed ones (CPU only)")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast, as the device run trains")
    parser.add_argument("--device", default="cpu", choices=["cpu", "meta"])
    parser.add_argument(
        "--dense_prediction", action="store_true", help="on the CPU, the path taken elsewhere: logits at every word"
    )
    args = parser.parse_args()

    torch.manual_seed(0)
    tokenizer = build_word_tokenizer(ptb_lm_lines("train", exclude_wsj_00_01=False))
    config = StructFormerConfig(
        vocab_size=len(tokenizer),
        hidden_size=args.hidden_size,
        num_hidden_layers=args.num_hidden_layers,
        intermediate_size=4 * args.hidden_size,
        pad_token_id=tokenizer.pad_token_id,
        mask_token_id=tokenizer.mask_token_id,
    )
    apply_config_overrides(config, AUTHORS)
    model = StructFormerForMaskedLM(config).train()
    # What the training recipe's SparsePrediction callback does: predicting the masked words alone saves arithmetic
    # on the CPU; elsewhere it would wait on the host to count them.
    model.sparse_prediction = args.device == "cpu" and not args.dense_prediction
    encoded = tokenizer(
        token_budget_batch(ptb_lm_lines("train"), args.tokens, seed=0), padding=True, return_tensors="pt"
    )
    ids, attention = encoded["input_ids"], encoded["attention_mask"]
    masked = (torch.rand(ids.shape, generator=torch.Generator().manual_seed(0)) < 0.3) & attention.bool()
    inputs = {
        "input_ids": ids.masked_fill(masked, tokenizer.mask_token_id),
        "attention_mask": attention,
        "labels": ids.masked_fill(~masked, -100),
    }
    model.to(args.device)
    inputs = {name: tensor.to(args.device) for name, tensor in inputs.items()}
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16 and args.device == "cpu")
    optimizer = None
    if args.device == "cpu":
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, eps=1e-9, weight_decay=1.2e-6, fused=True)

    def step(count: dict | None = None) -> float:
        modes = {part: OperationCount() for part in ("forward", "backward", "optimizer")} if count is not None else {}
        with modes.get("forward", contextlib.nullcontext()), autocast:
            loss = model(**inputs).loss
        with modes.get("backward", contextlib.nullcontext()):
            loss.backward()
        if optimizer is not None:
            with modes.get("optimizer", contextlib.nullcontext()):
                torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
        if count is not None:
            count.update({part: mode.summary() for part, mode in modes.items() if mode.counts})
        return float(loss.detach()) if args.device == "cpu" else float("nan")

    counts: dict = {}
    loss = step(counts)
    result = {
        "device": args.device,
        "bf16": args.bf16,
        "sparse_prediction": model.sparse_prediction,
        "size": f"d{args.hidden_size} x{args.num_hidden_layers}",
        "batch": f"{ids.size(0)} sentences, {int(attention.sum())} tokens, {int(masked.sum())} masked",
        **counts,
        "first_loss": round(loss, 5),
    }
    if args.device == "cpu":
        step()
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        result["steps_per_s"] = round(args.steps / (time.perf_counter() - start), 3)
        result["torch_threads"] = torch.get_num_threads()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
