#!/usr/bin/env python
"""Speed of StructFormer training (the implementation before issue #20 against today's) and of its dependency
distribution p_D (ours, O(B L^2) memory, against the plain B x L x L x L version).

Part 1 (training): words/s of `StructFormerForMaskedLM` training steps (forward, backward, fused AdamW step) on real
PTB train batches made the way `run_mlm.py` makes them (word tokenizer, length-grouped batches,
`ReproducibleMaskingCollator(tokenizer, 0.3, seed=0)`), along the paths of `training_paths` (`before`: float32,
torch's dropout, p_D in float64; `now`: what `run_mlm.py` does on this machine), all from the same initial weights on
the same batches, the paths taking their steps in turn (so that a slow spell of a shared host costs each alike);
with --loss-steps, their loss curves. Words are real words (pads excluded); warm-up steps are not
timed. The L^3 p_D implementations (--naive) run as more rows of the `before` path.

Part 2 (p_D alone): forward + backward time and peak memory of p_D at several sentence lengths, each
(implementation, length) in a fresh subprocess under an address-space limit, so that an implementation that runs
out of memory (or time) is reported as such and the benchmark goes on.

p_D implementations:
  ours        `modeling_structformer.dependency_distribution`: exact, O(B L^2) memory (float32 when the head
              logits allow, float64 otherwise).
  reference   `naive_dependency_distribution` of tests/helpers/reference_structformer.py: B x L x L x L span and head
              tensors, and an O(L^2) Python loop for the span-boundary probabilities.
  vectorized  the same B x L x L x L computation with that loop replaced by cumulative minima, as the authors'
              code computes the span boundaries; it isolates the cost of the L^3 tensors from the loop's.
All three compute the same p_D; the script checks this on a small batch before timing.

Every number comes from this one run and every ratio is computed from numbers of this run. Nothing is asserted
about speed. Run with --help for the sizes; --quick is a smoke run at tiny sizes.
"""

import argparse
import functools
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import weakref
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if importlib.util.find_spec("hf_structure") is None:  # not installed: use the source tree (src layout)
    sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))  # tests.helpers.reference_structformer

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils._pytree import tree_leaves  # noqa: E402

from hf_structure.models.structformer import modeling_structformer  # noqa: E402
from tests.helpers.reference_structformer import cubic_parent_distribution, naive_dependency_distribution  # noqa: E402

OURS = modeling_structformer.dependency_distribution


def vectorized_cubic_dependency_distribution(distances, heights, mask, split_scale, head_scale):
    """p_D with B x L x L x L span and head tensors (as the authors' code), span boundaries by cumulative minima.

    Same result as `naive_dependency_distribution`; the only difference is that the probabilities that word i's
    constituent starts at l / ends at r come from two cumulative minima instead of a Python loop.
    """
    length = heights.shape[1]
    index = torch.arange(length, device=heights.device)
    split_mask = F.pad(mask[:, 1:], (0, 1), value=False) & mask
    gamma = torch.sigmoid((heights[:, :, None] - distances[:, None, :]) * split_scale)
    gamma = gamma.masked_fill(~split_mask[:, None, :], 0.0)
    left_of_i = index[None, :] < index[:, None]  # [i, k]: k < i
    inside_left = torch.where(left_of_i, gamma, 1.0).flip(-1).cummin(-1).values.flip(-1)
    p_left = inside_left - F.pad(inside_left[..., :-1], (1, 0), value=0.0)  # [b, i, l], zero for l > i
    inside_right = torch.where(left_of_i, 1.0, gamma).cummin(-1).values
    inside_right = F.pad(inside_right[..., :-1], (1, 0), value=1.0)
    p_right = inside_right - F.pad(inside_right[..., 1:], (0, 1), value=0.0)  # [b, i, r], zero for r < i
    return cubic_parent_distribution(p_left, p_right, heights, mask, head_scale)


# p_D's implementations (distances, heights, mask, split_scale, head_scale) -> parent distribution; ours takes a
# `precision` too.
IMPLEMENTATIONS: dict[str, Callable[..., torch.Tensor]] = {
    "ours": OURS,
    "reference": naive_dependency_distribution,
    "vectorized": vectorized_cubic_dependency_distribution,
}


# ---------------------------------------------------------------------------------------------- machine, checks


def machine_summary() -> str:
    from hf_structure.machine import cpu_flags, machine_description

    flags = cpu_flags()
    bf16: list[str] = [f for f in ("avx512_bf16", "amx_bf16", "avx512f") if f in flags]
    bf16 = bf16 or ["none of avx512f/avx512_bf16/amx_bf16"]
    return (
        f"{machine_description()}; {os.cpu_count()} logical CPUs; bf16-relevant flags: {', '.join(bf16)}\n"
        f"Python {platform.python_version()}"
    )


def check_implementations(names) -> None:
    """All implementations give the same p_D (and gradients) on a small ragged batch, in float64."""
    generator = torch.Generator().manual_seed(0)
    distances = (torch.randn(3, 9, generator=generator, dtype=torch.float64) * 2).requires_grad_()
    heights = (torch.randn(3, 9, generator=generator, dtype=torch.float64) * 2).requires_grad_()
    mask = torch.arange(9)[None, :] < torch.tensor([9, 6, 2])[:, None]
    scales = torch.tensor(1.3, dtype=torch.float64), torch.tensor(0.7, dtype=torch.float64)
    weights = torch.randn(3, 9, 9, generator=generator, dtype=torch.float64)
    results = {}
    for name in names:
        out = IMPLEMENTATIONS[name](distances, heights, mask, *scales)
        results[name] = (out, *torch.autograd.grad((out * weights).sum(), [distances, heights]))
    for name in names:
        if name != "ours":
            diff = max((a - b).abs().max().item() for a, b in zip(results[name], results["ours"]))
            print(f"check: max |{name} - ours| over p_D and its gradients (float64, B=3, L=9): {diff:.1e}")
            if diff > 1e-6:
                raise SystemExit(f"{name} disagrees with ours ({diff:.1e}): the comparison would be meaningless")


# ---------------------------------------------------------------------------------------- part 1: training


def make_batches(batch_size: int, count: int, max_length: int, seed: int, max_sentences: int | None = None):
    """`count` batches of PTB train sentences as `run_mlm.py` makes them (length-grouped, 30% masked), running into
    further epochs (the sampler reseeded per epoch, as in training) when one epoch holds too few."""
    from hf_structure.data.text import ptb_lm_lines
    from hf_structure.data.tokenization import build_word_tokenizer
    from hf_structure.training.collators import ReproducibleMaskingCollator, tokenize_sentences
    from hf_structure.training.trainer import EpochSeededLengthGroupedSampler

    tokenizer = build_word_tokenizer(ptb_lm_lines("train", exclude_wsj_00_01=False))
    lines = ptb_lm_lines("train")
    dataset = tokenize_sentences(lines[:max_sentences] if max_sentences else lines, tokenizer, max_length)
    sampler = EpochSeededLengthGroupedSampler(batch_size, lengths=dataset["length"], seed=seed)
    if len(dataset) < batch_size:
        raise SystemExit(f"only {len(dataset)} sentences: ask for smaller batches")
    order: list[int] = []  # the examples of each batch, batch after batch
    epoch = 0
    while len(order) < batch_size * count:
        sampler.set_epoch(epoch)
        epoch_order = list(iter(sampler))
        order += epoch_order[: len(epoch_order) // batch_size * batch_size]  # whole batches only
        epoch += 1
    collator = ReproducibleMaskingCollator(tokenizer, 0.3, seed=0)
    ids = dataset["input_ids"]
    batches = [
        collator([{"input_ids": ids[i]} for i in order[k : k + batch_size]])
        for k in range(0, batch_size * count, batch_size)
    ]
    return tokenizer, batches


def training_paths(native_bf16: bool, with_bf16: bool) -> dict[str, dict]:
    """The ways of training that part 1 compares. `before` is the implementation before issue #20 (float32,
    torch's dropout, p_D in float64); each further row adds one change; `now` is what `run_mlm.py` does on this
    machine by default (bf16 autocast only where the CPU has native bf16)."""
    paths = {"before": {"bf16": False, "fast_dropout": False, "pd_precision": "float64"}}
    if with_bf16:
        paths["+bf16"] = {"bf16": True, "fast_dropout": False, "pd_precision": "float64"}
        paths["+bf16 +dropout"] = {"bf16": True, "fast_dropout": True, "pd_precision": "float64"}
    paths["now"] = {"bf16": native_bf16, "fast_dropout": True, "pd_precision": "auto"}
    return paths


def train_steps(path: dict, impl: str, config, batches, lr: float, seed: int, dropout_seed: int | None = None):
    """Train a fresh model (seeded: the same initial weights for every call) along `path` on `batches`; yields
    (seconds, real words, loss) per step. `dropout_seed` reseeds the generator after initialisation (another draw
    of dropout masks from the same weights). The p_D implementation is swapped in for each step only, so that
    several of these generators can take their steps in turn."""
    from hf_structure.models.structformer import StructFormerForMaskedLM

    pd = IMPLEMENTATIONS[impl]
    pd = functools.partial(pd, precision=path["pd_precision"]) if impl == "ours" else pd
    torch.manual_seed(seed)
    model = StructFormerForMaskedLM(config.__class__(**{**config.to_dict(), "fast_dropout": path["fast_dropout"]}))
    model.train()
    model.sparse_prediction = True  # as training sets it (`training.trainer.SparsePrediction`)
    if dropout_seed is not None:
        torch.manual_seed(dropout_seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)  # as Trainer's default optim
    for batch in batches:
        modeling_structformer.dependency_distribution = pd
        try:
            start = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=path["bf16"]):
                loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            elapsed = time.perf_counter() - start
        finally:
            modeling_structformer.dependency_distribution = OURS
        yield elapsed, int(batch["attention_mask"].sum()), loss.item()


def train_throughput(rows: list[tuple[str, dict, str]], config, batches: list, warmup: int, lr: float, seed: int):
    """Words/s of `train_steps` for each (name, path, impl) of `rows` over all but its first `warmup` steps. The
    rows take their steps in turn (one step of each, then the next of each), so that a slow spell of the machine
    (other virtual machines on the host) costs every row alike instead of the one that happened to run then.
    `batches[k]` are the batches of row k."""
    runs = [train_steps(path, impl, config, steps, lr, seed) for (_, path, impl), steps in zip(rows, batches)]
    seconds, words = [0.0] * len(rows), [0] * len(rows)
    losses: list[list[float]] = [[] for _ in rows]
    for step in range(max(map(len, batches))):
        for k, run in enumerate(runs):
            measured = next(run, None)
            if measured is None:
                continue
            elapsed, step_words, loss = measured
            losses[k].append(loss)
            if step >= warmup:
                seconds[k], words[k] = seconds[k] + elapsed, words[k] + step_words
    results = []
    for k, (name, path, impl) in enumerate(rows):
        timed = len(losses[k]) - warmup
        label = name if impl == "ours" else f"{name}, {impl} L^3 p_D"
        results.append(
            {
                "path": label,
                **path,
                "impl": impl,
                "steps": timed,
                "tokens": words[k],
                "seconds": seconds[k],
                "tokens_per_s": words[k] / seconds[k],
                "s_per_step": seconds[k] / timed,
                "first_loss": losses[k][0],
            }
        )
    return results


def loss_curves(paths: dict, config, batches, lr: float, seed: int, window: int) -> dict:
    """Loss per step of `before`, of `before` with other dropout draws (the noise between two runs of the same
    computation), and of `now`, all from the same weights on the same batches; printed as means over windows."""
    runs = {
        "before": (paths["before"], None),
        "before, other dropout draws": (paths["before"], seed + 1),
        "now": (paths["now"], None),
    }
    curves = {}
    for label, (path, dropout_seed) in runs.items():
        steps = list(train_steps(path, "ours", config, batches, lr, seed, dropout_seed))
        curves[label] = [loss for _, _, loss in steps]
        seconds, words = sum(s for s, _, _ in steps[1:]), sum(w for _, w, _ in steps[1:])
        print(f"  {label}: {len(steps)} steps, {words / seconds:.1f} words/s after the first step", flush=True)
    means = {
        label: [statistics.mean(c[k : k + window]) for k in range(0, len(c), window)] for label, c in curves.items()
    }
    print(f"\nmean training loss per {window} steps (same weights, same batches)")
    print(f"{'steps':>11}" + "".join(f"{label:>30}" for label in means) + f"{'|now - before|':>16}{'|noise|':>9}")
    for k, start in enumerate(range(0, len(batches), window)):
        values = [means[label][k] for label in means]
        print(
            f"{start + 1:>5}-{min(start + window, len(batches)):<5}"
            + "".join(f"{v:>30.4f}" for v in values)
            + f"{abs(values[2] - values[0]):>16.4f}{abs(values[1] - values[0]):>9.4f}"
        )
    return {"window": window, "curves": curves}


def training_flops_per_word(config, batch) -> float:
    """Matmul and convolution FLOPs of one training step (forward + backward) on `batch`, per real word, counted
    by `FlopCounterMode` (it counts only those ops: layer norms, dropout, p_D's elementwise work and the optimizer
    come on top; pads cost work too, so a padded batch counts more per real word)."""
    from torch.utils.flop_counter import FlopCounterMode

    from hf_structure.models.structformer import StructFormerForMaskedLM

    torch.manual_seed(0)
    model = StructFormerForMaskedLM(config).train()
    model.sparse_prediction = True  # as training sets it
    with FlopCounterMode(display=False) as counter:
        model(**batch).loss.backward()
    return counter.get_total_flops() / int(batch["attention_mask"].sum())


def matmul_gflops(rows: int, inner: int, cols: int, repeats: int = 30, dtype=torch.float32) -> float:
    """The machine's rate on one (rows x inner) @ (inner x cols) product in `dtype`: the shape of the feed-forward
    layer's first matmul over a whole batch, the largest matmul of a step."""
    a, b = torch.randn(rows, inner, dtype=dtype), torch.randn(inner, cols, dtype=dtype)
    a @ b
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * rows * inner * cols * repeats / (time.perf_counter() - start) / 1e9


def run_training(args) -> dict:
    from hf_structure.models.structformer import StructFormerConfig
    from hf_structure.training.precision import cpu_has_native_bf16

    native_bf16 = cpu_has_native_bf16()
    paths = training_paths(native_bf16, with_bf16=not args.no_intermediate)
    count = args.warmup_steps + args.steps
    print(f"\n== Part 1: training throughput ==\nmaking {count} batches of {args.batch_size} PTB train sentences ...")
    tokenizer, batches = make_batches(
        args.batch_size, max(count, args.loss_steps), args.max_length, args.seed, args.max_sentences
    )
    config = StructFormerConfig(
        vocab_size=len(tokenizer),
        hidden_size=args.hidden_size,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        intermediate_size=args.d_ff,
        pad_token_id=tokenizer.pad_token_id,
        mask_token_id=tokenizer.mask_token_id,
    )
    timed = batches[args.warmup_steps : count]
    words = sum(int(b["attention_mask"].sum()) for b in timed)
    lengths = [b["input_ids"].shape[1] for b in timed]
    print(
        f"model: hidden {args.hidden_size}, {args.layers} layers, {args.heads} heads, d_ff {args.d_ff}, "
        f"vocab {len(tokenizer)}; AdamW lr {args.lr}; dropout {config.hidden_dropout_prob}\n"
        f"timed: {args.steps} steps after {args.warmup_steps} warm-up steps; {words} real words "
        f"(padded lengths {min(lengths)}-{max(lengths)}, mean {statistics.mean(lengths):.1f}); "
        f"same batches and initial weights for every row\n"
        f"native bf16: {'yes' if native_bf16 else 'no'}, so `now` trains "
        + ("under bf16 autocast" if native_bf16 else "in float32")
    )
    for name, path in paths.items():
        print(
            f"  {name:<15} bf16 autocast {str(path['bf16']):<5}  fast dropout {str(path['fast_dropout']):<5}  "
            f"p_D precision {path['pd_precision']}"
        )
    rows = [(name, path, "ours") for name, path in paths.items()]
    rows += [("before", paths["before"], impl) for impl in args.impls if impl != "ours"]
    row_batches = [
        batches[: args.warmup_steps + args.bf16_steps]
        if path["bf16"] and not native_bf16 and args.bf16_steps is not None
        else batches[:count]
        for _, path, _ in rows
    ]
    results = train_throughput(rows, config, row_batches, args.warmup_steps, args.lr, args.seed)
    for result in results:
        print(
            f"  {result['path']:<32} {result['tokens_per_s']:9.1f} words/s  ({result['s_per_step']:.3f} s/step over "
            f"{result['steps']} steps; first-step loss {result['first_loss']:.6f})",
            flush=True,
        )
    before = results[0]
    print(f"\n{'path':<33}{'words/s':>10}{'s/step':>9}  words/s / before")
    for r in results:
        print(
            f"{r['path']:<33}{r['tokens_per_s']:>10.1f}{r['s_per_step']:>9.3f}  "
            f"{r['tokens_per_s'] / before['tokens_per_s']:.2f}"
        )
    print("(the first-step losses differ only by bf16 rounding and dropout draws: same weights and batches)")
    # How close to the machine's limit: words/s cannot exceed (matmul rate) / (matmul FLOPs per word).
    flops_per_word = training_flops_per_word(config, timed[0])
    padded_tokens = round(statistics.mean(b["input_ids"].numel() for b in timed))  # per batch
    now = next(r for r in results if r["path"] == "now")
    for dtype in (torch.float32, torch.bfloat16) if native_bf16 else (torch.float32,):
        peak = matmul_gflops(padded_tokens, args.hidden_size, args.d_ff, dtype=dtype)
        reference = before if dtype == torch.float32 else now
        achieved = reference["tokens_per_s"] * flops_per_word / 1e9
        print(
            f"{str(dtype).removeprefix('torch.')} matmul on this machine ({padded_tokens} x {args.hidden_size} @ "
            f"{args.hidden_size} x {args.d_ff}, same threads): {peak:.1f} GFLOP/s; `{reference['path']}` does "
            f"{achieved:.1f} GFLOP/s of matmul work ({achieved / peak:.2f} of it; ceiling "
            f"{peak * 1e9 / flops_per_word:.0f} words/s)"
        )
    print(f"(matmul + convolution work per real word, forward + backward, counted: {flops_per_word / 1e6:.1f} MFLOP)")
    report = {"rows": results, "flops_per_word": flops_per_word}
    if args.loss_steps:
        print(f"\n== Loss curves: {args.loss_steps} steps ==")
        report["loss_curves"] = loss_curves(
            paths, config, batches[: args.loss_steps], args.lr, args.seed, args.loss_window
        )
    return report


# -------------------------------------------------------------------------------------- part 2: p_D alone


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _reset_peak_rss() -> bool:
    """Reset this process's peak-RSS mark (VmHWM; Linux >= 4.0). False where not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def _malloc_trim() -> None:
    """Give free heap memory back to the system (glibc), so that the RSS baseline holds no reusable free memory."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


class LiveTensorBytes(TorchDispatchMode):
    """Peak bytes of tensor storages created by the ops run under this mode (backward ops included) that are alive
    at the same time. Storages are counted once however many views they have, and released when freed."""

    def __init__(self):
        super().__init__()
        self.live = 0
        self.peak = 0
        self._sizes = {}

    def _release(self, key):
        self.live -= self._sizes.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in tree_leaves(out):
            if isinstance(tensor, torch.Tensor) and tensor.device.type == "cpu":
                storage = tensor.untyped_storage()
                key, size = id(storage), storage.nbytes()
                if key not in self._sizes:
                    self._sizes[key] = 0
                    weakref.finalize(storage, self._release, key)
                self.live += size - self._sizes[key]  # also catches a storage resized by an out= op
                self._sizes[key] = size
                self.peak = max(self.peak, self.live)
        return out


def pd_worker(spec: dict) -> None:
    """One (implementation, length) measurement in this fresh process; prints JSON lines, the last one final."""
    torch.set_num_threads(spec["threads"])
    fn = IMPLEMENTATIONS[spec["impl"]]
    batch, length = spec["batch"], spec["length"]
    generator = torch.Generator().manual_seed(0)
    distances = torch.randn(batch, length, generator=generator).requires_grad_()
    heights = torch.randn(batch, length, generator=generator).requires_grad_()
    scales = torch.zeros(2, requires_grad=True)
    mask = torch.ones(batch, length, dtype=torch.bool)
    weights = torch.randn(batch, length, length, generator=generator)
    torch.ones(64, 64) @ torch.ones(64, 64)  # start the intra-op threads before the baseline
    result = {"impl": spec["impl"], "length": length, "batch": batch}

    def step():
        split_scale, head_scale = scales.exp().unbind()
        out = fn(distances, heights, mask, split_scale, head_scale)
        (out * weights).sum().backward()
        distances.grad = heights.grad = scales.grad = None

    # Allow this much more address space than the process holds now; a bigger allocation fails with an error.
    limit = _status_kb("VmSize") * 1024 + int(spec["max_memory_gb"] * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    try:
        for _ in range(spec["warmup"]):
            step()
        # Baseline after the warm-up (code pages of the kernels now resident), with free heap memory given back.
        _malloc_trim()
        baseline_kb = _status_kb("VmRSS")
        exact_reset = _reset_peak_rss()
        times = []
        for _ in range(spec["repeats"]):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        peak_kb = _status_kb("VmHWM") if exact_reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result.update(
            status="ok",
            ms=1000 * statistics.median(times),
            ms_min=1000 * min(times),
            rss_mb=max(peak_kb - baseline_kb, 0) / 1024,
            rss_exact=exact_reset,
        )
        print(json.dumps(result), flush=True)
        if spec["tensor_memory"]:
            tracker = LiveTensorBytes()
            with tracker:
                step()
            result["tensor_mb"] = tracker.peak / 2**20
            print(json.dumps(result), flush=True)
    except (RuntimeError, MemoryError) as error:
        message = str(error).strip().splitlines()[0][:160] if str(error).strip() else type(error).__name__
        result["status"] = f"failed: {message}"
        print(json.dumps(result), flush=True)


def run_pd_case(spec: dict, max_seconds: float) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--_pd-worker", json.dumps(spec)]
    env = dict(os.environ, OMP_NUM_THREADS=str(spec["threads"]))
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=max_seconds, env=env)
        stdout, returncode = done.stdout, done.returncode
    except subprocess.TimeoutExpired as error:
        stdout = error.stdout.decode() if isinstance(error.stdout, bytes) else (error.stdout or "")
        lines = [line for line in stdout.splitlines() if line.startswith("{")]
        partial = json.loads(lines[-1]) if lines else {}
        if partial.get("status") == "ok":  # timed, but the tensor-memory pass did not finish in time
            return {**partial, "tensor_mb": None, "note": f"tensor-memory pass exceeded --max-seconds {max_seconds:g}"}
        return {**spec, "status": f"stopped: exceeded --max-seconds {max_seconds:g}"}
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if lines:
        return json.loads(lines[-1])
    if returncode < 0:
        oom = " (probably the kernel's out-of-memory killer)" if returncode == -9 else ""
        why = f"killed by signal {-returncode}" + oom
    else:
        tail = done.stderr.strip().splitlines()[-1:] or [""]
        why = f"exit code {returncode}: {tail[0][:160]}"
    return {**spec, "status": f"failed: {why}"}


def _fmt(value, digits=1):
    return "-" if value is None else f"{value:.{digits}f}"


def _ratio(numerator, denominator) -> str:
    return "-" if numerator is None or not denominator else f"{numerator / denominator:.1f}"


def run_pd(args) -> list[dict]:
    threads = torch.get_num_threads()
    print(
        f"\n== Part 2: p_D alone (forward + backward), batch {args.pd_batch}, float32 inputs ==\n"
        f"time: median of {args.pd_repeats} runs after {args.pd_warmup} warm-up run(s), each (impl, L) in a fresh "
        f"subprocess with {threads} thread(s)\n"
        f"memory: (1) peak RSS of that subprocess during the timed runs minus its RSS just before them (after the "
        f"warm-up and malloc_trim; peak = VmHWM reset via /proc/self/clear_refs): what the process really needed, "
        f"allocator slack included; (2) peak bytes of live tensor storages created by p_D's forward and backward ops, "
        f"tracked op by op with a TorchDispatchMode (inputs excluded; one extra run).\n"
        f"limits per (impl, L): {args.max_memory_gb:g} GiB of extra address space (RLIMIT_AS), "
        f"{args.max_seconds:g} s wall time; an impl that fails is not run at longer lengths."
    )
    results: list[dict] = []
    failed: dict[str, int] = {}  # impl -> the length it failed at
    for length in args.lengths:
        for impl in ["ours", *args.impls_pd]:
            spec = dict(
                impl=impl,
                length=length,
                batch=args.pd_batch,
                threads=threads,
                warmup=args.pd_warmup,
                repeats=args.pd_repeats,
                max_memory_gb=args.max_memory_gb,
                tensor_memory=not args.no_tensor_memory,
            )
            if impl in failed:
                result = {**spec, "status": f"not run (failed at L={failed[impl]})"}
            else:
                result = run_pd_case(spec, args.max_seconds)
                if result["status"] != "ok":
                    failed[impl] = length
            results.append(result)
            detail = (
                f"{result['ms']:.1f} ms, RSS +{result['rss_mb']:.1f} MB, tensors {_fmt(result.get('tensor_mb'), 2)} MB"
                if result["status"] == "ok"
                else result["status"]
            )
            print(f"  L={length:<5} {impl:<10} {detail}", flush=True)

    print(f"\n{'':9}{'ours':^26}" + "".join(f"{name:^54}" for name in args.impls_pd))
    header = f"{'L':>5}  {'ms':>8}{'RSS MB':>9}{'tens MB':>9}"
    for _ in args.impls_pd:
        header += f"  {'ms':>8}{'RSS MB':>9}{'tens MB':>9}{'x time':>9}{'x RSS':>8}{'x tens':>8}"
    print(header)
    by_key = {(r["impl"], r["length"]): r for r in results}
    for length in args.lengths:
        ours = by_key[("ours", length)]
        ok = ours["status"] == "ok"
        row = f"{length:>5}  " + (
            f"{ours['ms']:>8.1f}{ours['rss_mb']:>9.1f}{_fmt(ours.get('tensor_mb'), 2):>9}" if ok else f"{'failed':>26}"
        )
        for impl in args.impls_pd:
            other = by_key[(impl, length)]
            if other["status"] != "ok":
                status = other["status"]
                short = "not run" if status.startswith("not run") else "time limit" if "stopped" in status else "failed"
                row += f"  {short:>51}"
                continue
            row += (
                f"  {other['ms']:>8.1f}{other['rss_mb']:>9.1f}{_fmt(other.get('tensor_mb'), 2):>9}"
                f"{_ratio(other['ms'], ours.get('ms')):>9}{_ratio(other['rss_mb'], ours.get('rss_mb')):>8}"
                f"{_ratio(other.get('tensor_mb'), ours.get('tensor_mb')):>8}"
            )
        print(row)
    print("x columns: naive / ours (how many times more time or memory the L^3 version needs).")
    for r in results:
        if r["status"] != "ok" and not r["status"].startswith("not run"):
            print(f"  {r['impl']} at L={r['length']}: {r['status']}")
        if r.get("note"):
            print(f"  {r['impl']} at L={r['length']}: {r['note']}")
    return results


# ---------------------------------------------------------------------------------------------------- main


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smoke run at tiny sizes (a few seconds)")
    parser.add_argument("--skip-training", action="store_true", help="skip part 1")
    parser.add_argument("--skip-pd", action="store_true", help="skip part 2")
    parser.add_argument(
        "--naive",
        default="reference,vectorized",
        help="L^3 implementations to compare with ours: reference, vectorized or both (comma list)",
    )
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--json", type=Path, help="also write all results to this JSON file")
    train = parser.add_argument_group("part 1: training throughput")
    train.add_argument("--batch-size", type=int, default=64, help="sentences per batch (default 64)")
    train.add_argument("--hidden-size", type=int, default=256)
    train.add_argument("--layers", type=int, default=4)
    train.add_argument("--heads", type=int, default=8)
    train.add_argument("--d-ff", type=int, default=1024)
    train.add_argument("--steps", type=int, default=20, help="timed steps (default 20)")
    train.add_argument("--warmup-steps", type=int, default=3, help="untimed steps first (default 3)")
    train.add_argument(
        "--bf16-steps",
        type=int,
        default=None,
        help="timed steps for the bf16 row (default: --steps; bf16 may be far slower on CPUs without native bf16)",
    )
    train.add_argument(
        "--no-intermediate",
        action="store_true",
        help="time only `before` and `now`, not the rows that add one change at a time",
    )
    train.add_argument("--max-length", type=int, default=512, help="truncate sentences to this many words")
    train.add_argument(
        "--max-sentences",
        type=int,
        default=None,
        help="draw batches from only the first N PTB train sentences (default: all)",
    )
    train.add_argument("--lr", type=float, default=1e-3)
    train.add_argument(
        "--loss-steps",
        type=int,
        default=0,
        help="also train `before` (twice: other dropout draws) and `now` this many steps on the same "
        "batches and print their loss curves (default 0: skip)",
    )
    train.add_argument("--loss-window", type=int, default=25, help="steps per mean of the loss curves (default 25)")
    train.add_argument("--seed", type=int, default=42, help="weights and batch order (default 42, as the run)")
    pd = parser.add_argument_group("part 2: p_D alone")
    pd.add_argument("--lengths", default="64,128,256,512", help="sentence lengths L (default 64,128,256,512)")
    pd.add_argument("--pd-batch", type=int, default=8, help="sentences per p_D call (default 8)")
    pd.add_argument("--pd-repeats", type=int, default=3, help="timed runs per (impl, L), median reported")
    pd.add_argument("--pd-warmup", type=int, default=1, help="untimed runs per (impl, L) first")
    pd.add_argument(
        "--max-memory-gb",
        type=float,
        default=16.0,
        help="extra address space allowed per (impl, L) subprocess (default 16 GiB)",
    )
    pd.add_argument("--max-seconds", type=float, default=600.0, help="wall time allowed per (impl, L) subprocess")
    pd.add_argument(
        "--no-tensor-memory",
        action="store_true",
        help="skip the op-by-op tensor-memory pass (it slows the Python-loop reference a lot)",
    )
    parser.add_argument("--_pd-worker", dest="pd_worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.batch_size, args.hidden_size, args.layers, args.heads, args.d_ff = 4, 32, 2, 4, 64
        args.steps, args.warmup_steps, args.max_length, args.max_sentences = 2, 1, 16, 2000
        args.lengths, args.pd_batch, args.pd_repeats, args.max_memory_gb, args.max_seconds = "8,32", 2, 2, 2.0, 120
    args.impls = ["ours"] + [name.strip() for name in args.naive.split(",") if name.strip()]
    args.impls_pd = args.impls[1:]
    unknown = set(args.impls) - set(IMPLEMENTATIONS)
    if unknown:
        parser.error(f"unknown --naive implementation(s) {sorted(unknown)}; choose from reference, vectorized")
    args.lengths = [int(x) for x in str(args.lengths).split(",")]
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.pd_worker:
        pd_worker(json.loads(args.pd_worker))
        return
    if args.threads:
        torch.set_num_threads(args.threads)
    smoke = " (--quick: tiny sizes, a smoke run, not a measurement)" if args.quick else ""
    print("StructFormer p_D benchmark" + smoke)
    print(machine_summary())
    check_implementations(args.impls)
    results = {"machine": machine_summary(), "args": {k: v for k, v in vars(args).items() if k != "json"}}
    if not args.skip_training:
        results["training"] = run_training(args)
    if not args.skip_pd:
        results["p_D"] = run_pd(args)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
        print(f"\nresults written to {args.json}")


if __name__ == "__main__":
    main()
