"""Real file-system failures for tests: a tiny tmpfs that fills up, or one mounted read-only.

Mounting needs root (as CI runs); elsewhere the test is skipped with the reason. Nothing is mocked: the command under
test meets the kernel's own ENOSPC and EROFS.
"""

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_tmpfs(folder: Path, size: str, read_only: bool = False) -> Iterator[Path]:
    """`folder` (created) as a tmpfs of `size` (`mount`'s units: 64k, 1m), read-only if asked; unmounted after.
    Skips the test where it cannot be mounted."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    options = f"size={size}" + (",ro" if read_only else "")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "--lazy", str(folder)], check=True)
