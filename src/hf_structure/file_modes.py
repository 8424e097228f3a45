"""Files this package writes: the mode of weights files, and text written whole or not at all."""

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO


def with_default_mode(folder: str | os.PathLike) -> None:
    """Give the `*.safetensors` files of `folder` the mode a new file gets under the process's umask (0644 under
    0022): safetensors writes them 0600, so another user of a shared model folder could not read the weights beside
    their readable config."""
    mask = os.umask(0)
    os.umask(mask)
    for path in Path(folder).glob("*.safetensors"):
        os.chmod(path, 0o666 & ~mask)


@contextlib.contextmanager
def written_whole(path: str | os.PathLike) -> Iterator[TextIO]:
    """A UTF-8 text stream for `path`: a temporary file beside it, renamed into place when the block ends without an
    error and removed otherwise, so that `path` is never left part-written (a full disk keeps the old file, or
    none)."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with open(partial, "w", encoding="utf-8") as stream:
            yield stream
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
