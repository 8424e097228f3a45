"""File modes of the weights this package writes."""

import os
from pathlib import Path


def with_default_mode(folder: str | os.PathLike) -> None:
    """Give the `*.safetensors` files of `folder` the mode a new file gets under the process's umask (0644 under
    0022): safetensors writes them 0600, so another user of a shared model folder could not read the weights beside
    their readable config."""
    mask = os.umask(0)
    os.umask(mask)
    for path in Path(folder).glob("*.safetensors"):
        os.chmod(path, 0o666 & ~mask)
