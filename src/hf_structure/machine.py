"""This machine as records and precision choices describe it: the CPU (from Linux's `/proc/cpuinfo`), its feature
flags, and the threads, GPU and torch version a run used."""

from __future__ import annotations

import os
import platform
from pathlib import Path

CPUINFO = "/proc/cpuinfo"


def cpu_info(cpuinfo: str | os.PathLike = CPUINFO) -> dict[str, str]:
    """The first processor's fields as Linux's `/proc/cpuinfo` lists them (`model name`, `flags` ...); empty where
    it cannot be read (other systems)."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.strip().split("\n\n")[0].splitlines():
        key, colon, value = line.partition(":")
        if colon:
            fields.setdefault(key.strip(), value.strip())
    return fields


def cpu_flags(cpuinfo: str | os.PathLike = CPUINFO) -> set[str]:
    """The CPU's feature flags (`avx512_bf16`, `amx_bf16` ...); empty where they cannot be read."""
    return set(cpu_info(cpuinfo).get("flags", "").split())


def cpu_model(cpuinfo: str | os.PathLike = CPUINFO) -> str:
    """The CPU's model name, e.g. `AMD EPYC 7B13` (elsewhere than Linux, what `platform` knows)."""
    return cpu_info(cpuinfo).get("model name") or platform.processor() or platform.machine() or "unknown CPU"


def machine_description() -> str:
    """How the records (and the benchmarks) name the machine: the CPU threads torch uses and the CPU's model, the
    GPU torch sees, and torch's version, e.g. `2 CPU threads (AMD EPYC 7B13), no GPU, torch 2.13.0`."""
    import torch

    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    return f"{torch.get_num_threads()} CPU threads ({cpu_model()}), {gpu}, torch {torch.__version__}"
