"""Which floating-point precision training uses on this machine."""

import dataclasses
import logging

import torch
from transformers import TrainingArguments

from ..machine import cpu_flags
from .arguments import EntryArgumentsError

logger = logging.getLogger(__name__)

PRECISIONS = ("auto", "fp32")


def cpu_has_native_bf16(flags: set[str] | None = None) -> bool:
    """Whether the CPU computes bfloat16 products natively (AVX512-BF16 or AMX). Where it does not, bf16 autocast
    is emulated: 11x slower than float32 on such a machine here, so autocast must not be chosen blindly."""
    flags = cpu_flags() if flags is None else flags
    return bool(flags & {"avx512_bf16", "amx_bf16"})


def with_chosen_precision(training_args: TrainingArguments, precision: str) -> TrainingArguments:
    """`training_args`, switched to bf16 autocast when `precision` is `"auto"`, the run trains on the CPU, neither
    bf16 nor fp16 was asked for, and the CPU has native bf16 (1.6-1.8x the words/s of float32 on the 2-core AMD EPYC
    of docs/benchmark-history.md). `"fp32"` leaves the arguments as given."""
    if precision not in PRECISIONS:
        raise EntryArgumentsError(f"--precision must be one of {PRECISIONS}, got {precision!r}")
    on_cpu = training_args.use_cpu or not torch.cuda.is_available()
    if precision == "fp32" or training_args.bf16 or training_args.fp16 or not on_cpu or not cpu_has_native_bf16():
        return training_args
    logger.info(
        "this CPU has native bf16 (avx512_bf16/amx_bf16): training under bf16 autocast (--precision fp32 "
        "to keep float32)"
    )
    # replace() builds the arguments anew, so everything derived from bf16 in __post_init__ follows it; transformers
    # refuses bf16 without a GPU unless use_cpu says the CPU is meant.
    return dataclasses.replace(training_args, bf16=True, use_cpu=True)
