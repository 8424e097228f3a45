"""How many CPU threads a parse uses.

torch splits each operation among its intra-op threads (OpenMP), which wait for one another at its end. A thread
that shares its core with another busy process gets only part of that core, and the whole team waits for it: on a
2-core machine with one other busy process, g2gtr-ewt parsed 5x slower at torch's default (one thread per core) than
with one thread (`benchmarks/shared_machine.py`). So by default a parse uses one thread per core that other processes
leave free, measured when parsing starts (and again at most once a minute), and never more than the caller's
`torch.get_num_threads()`. An explicit count (`num_threads=`, `--threads`) is used as given.

The pipeline file that travels with a saved model inlines these definitions (scripts/modular_converter.py), so this
module imports only the standard library and torch, and holds no state: the last measurement lives in a
`LoadMeasurement` that whoever parses keeps (each pipeline its own, hf_structure's evaluation `SHARED_LOAD`).
"""

import contextlib
import math
import os
import time

import torch

# A core counts as taken when other processes use more than this share of it: a thread too many costs far more (5-10x
# on a 2-core machine) than a thread too few (at most 2x there).
TAKEN_CORE_SHARE = 0.25
# How long a measurement of the other processes' load is reused before it is taken again.
LOAD_MEASUREMENT_SECONDS = 60.0


def check_num_threads(num_threads) -> int:
    """`num_threads` when it is a whole number of at least 1, else a ValueError saying what it got."""
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"num_threads must be a whole number of at least 1, got {num_threads!r}")
    return num_threads


def default_num_threads(usable_cores: int, busy_cores: float, current_threads: int) -> int:
    """The threads a parse uses when none are asked for: one per usable core that other processes leave free
    (`busy_cores` of them are busy; a part of a core over TAKEN_CORE_SHARE counts as a whole one), at least 1, at
    most `current_threads` (the caller's `torch.get_num_threads()`: torch's default unless the caller or
    OMP_NUM_THREADS changed it)."""
    free_cores = math.floor(usable_cores - busy_cores + TAKEN_CORE_SHARE)
    return max(1, min(current_threads, free_cores))


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _cpu_ticks() -> tuple[int, int]:
    """All CPUs' (total, idle) time since boot from Linux's /proc/stat, in clock ticks."""
    with open("/proc/stat") as stat:
        # user nice system idle iowait irq softirq steal (guest time is already counted in user and nice)
        values = [int(value) for value in stat.readline().split()[1:9]]
    return sum(values), values[3] + values[4]


def busy_cores_of_others(interval: float = 0.1) -> float:
    """How many cores other processes kept busy over the next `interval` seconds, while this one waits: the busy
    share of /proc/stat's CPU time, times the CPU count, less this process's own CPU time (its threads may still be
    finishing their last task). Where /proc/stat cannot be read (not Linux), the one-minute load average, or 0."""
    try:
        total_before, idle_before = _cpu_ticks()
        own_before, start = time.process_time(), time.monotonic()
        time.sleep(interval)
        total_after, idle_after = _cpu_ticks()
        own_seconds, seconds = time.process_time() - own_before, time.monotonic() - start
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    ticks = total_after - total_before
    if ticks <= 0:
        return 0.0
    busy_share = (ticks - (idle_after - idle_before)) / ticks
    return max(0.0, busy_share * (os.cpu_count() or 1) - own_seconds / seconds)


class LoadMeasurement:
    """The other processes' load on this machine, measured (0.1 s) the first time a thread count is asked for and
    again when the last measurement is older than LOAD_MEASUREMENT_SECONDS."""

    def __init__(self) -> None:
        self.measured_at: float | None = None
        self.cores, self.busy_cores = 1, 0.0

    def num_threads(self) -> int:
        """`default_num_threads` for this machine now."""
        now = time.monotonic()
        if self.measured_at is None or now - self.measured_at > LOAD_MEASUREMENT_SECONDS:
            self.measured_at, self.cores, self.busy_cores = now, usable_cores(), busy_cores_of_others()
        return default_num_threads(self.cores, self.busy_cores, torch.get_num_threads())


# hf_structure's own parsing outside the pipeline (evaluation, training callbacks).
SHARED_LOAD = LoadMeasurement()


@contextlib.contextmanager
def parsing_threads(num_threads: int | None, load: LoadMeasurement):
    """torch's intra-op thread count inside the block: `num_threads`, or `load.num_threads()` when None; the
    caller's count is restored after, so a global setting is never changed behind the caller's back. Yields the
    count used."""
    threads = load.num_threads() if num_threads is None else check_num_threads(num_threads)
    previous = torch.get_num_threads()
    if threads != previous:
        torch.set_num_threads(threads)
    try:
        yield threads
    finally:
        if torch.get_num_threads() != previous:
            torch.set_num_threads(previous)
