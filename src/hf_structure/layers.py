"""Layers and functions that several models share, written once and imported by their modular sources
(`models/<name>/modular_<name>.py`); `scripts/modular_converter.py` inlines them into the generated Hub code.

- `masked_lm_cross_entropy` / `BlockwiseCrossEntropy`: the language-model loss of StructFormer and R2D2, which never
  builds a float32 copy of bf16 logits.
- `random_keep_mask`: fast, reproducible dropout masks on CPU.

Encoding words for a model (word-level or as word pieces) is in `data/tokenization.py`.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F


def masked_lm_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of `logits` `(N, V)` against `labels` `(N,)` over the rows whose label is not -100,
    computed in float32 or wider.

    On the CPU the labelled rows are picked out first, and low-precision logits (under bf16 autocast) go through
    `BlockwiseCrossEntropy`, which never builds the float32 copy of the whole `(N, V)` tensor nor its gradient:
    those copies and passes cost about a tenth of a bf16 training step there. Elsewhere it is one `F.cross_entropy`
    over every row: picking rows would make the host wait for the device to count them, and the blockwise loop
    dispatches some twenty operations per 64 rows, which a GPU waits on."""
    if logits.device.type != "cpu":
        return F.cross_entropy(logits.float(), labels, ignore_index=-100)
    labelled = labels.ne(-100)
    logits, labels = logits[labelled], labels[labelled]
    if logits.dtype in (torch.float16, torch.bfloat16):
        return BlockwiseCrossEntropy.apply(logits, labels, torch.is_grad_enabled() and logits.requires_grad)
    return F.cross_entropy(logits, labels)


class BlockwiseCrossEntropy(torch.autograd.Function):
    """`F.cross_entropy(logits.float(), labels)` (the mean), a block of rows at a time: a block's float32 values exist
    only while it is processed. With `with_grad` the forward pass also writes the gradient (softmax minus one-hot,
    over N, cast to the logits' dtype) from the same exponentials, so that the backward pass computes none; it
    scales that gradient by the loss's own gradient where that is not 1 (a loss divided for gradient accumulation:
    one more rounding). The same values as the whole-tensor computation, up to float32 rounding."""

    block_rows = 64  # a block of a 10k-word vocabulary in float32 (2.5 MB) stays in cache

    @staticmethod
    def forward(ctx, logits: torch.Tensor, labels: torch.Tensor, with_grad: bool = True) -> torch.Tensor:
        compute = torch.promote_types(logits.dtype, torch.float32)
        log_normalizers = torch.empty(len(logits), dtype=compute, device=logits.device)
        grad = torch.empty_like(logits) if with_grad else None
        for start in range(0, len(logits), BlockwiseCrossEntropy.block_rows):
            block = slice(start, start + BlockwiseCrossEntropy.block_rows)
            # copy=True: with wide logits `.to` would return the input itself, which must stay intact.
            exponentials = logits[block].to(compute, copy=True)
            maxima = exponentials.amax(dim=-1, keepdim=True)
            sums = exponentials.sub_(maxima).exp_().sum(dim=-1, keepdim=True)
            log_normalizers[block] = (maxima + sums.log()).squeeze(1)
            if grad is not None:
                probabilities = exponentials.div_(sums)
                probabilities[torch.arange(len(probabilities), device=logits.device), labels[block]] -= 1
                grad[block] = probabilities.div_(len(logits))
        if grad is not None:
            ctx.save_for_backward(grad)
        return (log_normalizers - logits.gather(1, labels[:, None]).squeeze(1).to(compute)).mean()

    @staticmethod
    def backward(ctx, grad_loss: torch.Tensor):
        (grad,) = ctx.saved_tensors
        # Checked on CPU only, where reading the value costs nothing; elsewhere always scaled.
        if grad_loss.device.type != "cpu" or grad_loss.item() != 1:
            grad = (grad.to(grad_loss.dtype) * grad_loss).to(grad.dtype)
        return grad, None, None


def random_keep_mask(shape: tuple[int, ...], p: float, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """`shape` of 0.0 (dropped, independently with probability p) and 1.0 (kept), in `dtype`.

    Two entries share one 64-bit number of an SFC64 stream (numpy's fastest generator, which passes the standard
    statistical test batteries), seeded by one draw of torch's generator, so that `torch.manual_seed` and a
    checkpoint's saved RNG state reproduce the masks. The number splits into two 32-bit integers uniform over all
    2^32 values; an entry drops when it falls among the lowest round(p 2^32). The drop probability is p to within
    2^-33, finer than torch's own dropout, which compares float32 uniforms with p. On CPU torch draws its random
    numbers on one thread: its per-element Bernoulli draws took a quarter of a two-thread bf16 step, and even its
    64-bit `random_` is three times slower than numpy's generators (SFC64 is 25% faster than PCG64; drawing on a
    second thread gained nothing, as torch's own threads hold both cores). The mask is returned as numbers rather
    than booleans because on CPU `x * keep` is about six times faster than `x.masked_fill(drop, 0)` and than
    bool-to-float casts (both take a slow mixed-dtype path), while uint8-to-float is fast.
    """
    count = math.prod(shape)
    seed = int(torch.randint(0, 2**63 - 1, (), dtype=torch.int64))
    numbers = torch.from_numpy(np.random.SFC64(seed).random_raw((count + 1) // 2).view(np.int32))
    keep = numbers[:count].view(shape) >= round(p * 2**32) - 2**31
    return keep.view(torch.uint8).to(device=device, dtype=dtype)
