"""Handing freed memory back to the system during a long parse.

PyTorch's CPU tensors come from the C library's `malloc`. glibc keeps the blocks a batch freed for later requests,
and batches of other lengths fit them badly, so over thousands of sentences the resident memory of a parse climbs
although the live tensors do not: `hf-structure parse` with arc-hybrid-ewt went from 636 to 1,122 MiB over 20,000
EWT lines (`benchmarks/parse_memory.py`). `malloc_trim` returns the free pages; asked after each batch it costs
a few milliseconds, where making every large block a fresh mapping (`M_MMAP_THRESHOLD`) cost a third of the parsing
speed.
"""

import ctypes
import ctypes.util
import functools
import sys


@functools.cache
def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim  # glibc only: musl and others have no such function
    except (OSError, AttributeError):
        return None


def release_freed_memory() -> bool:
    """Return the C heap's free pages to the system (glibc `malloc_trim(0)`); False where that is not available."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
