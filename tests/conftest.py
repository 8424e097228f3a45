"""Shared test fixtures: where the read-only evaluation data lives, and skipping cleanly when it does not.

The data folder is `../shared/data` from the project root (see its README); set `HF_STRUCTURE_DATA` to point
elsewhere. Tests that need it skip with a reason naming the missing path, so the suite passes on a fresh machine.
"""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

SRC_DIR = Path(__file__).parents[1] / "src"
if importlib.util.find_spec("hf_structure") is None:  # not installed: test the source tree (src layout)
    sys.path.insert(0, str(SRC_DIR))

DATA_DIR = Path(os.environ.get("HF_STRUCTURE_DATA") or Path(__file__).parents[1].parent / "shared" / "data")


def require_data(*parts: str) -> Path:
    """`DATA_DIR / parts`, or skip the calling test with a reason naming the missing path."""
    path = DATA_DIR.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"evaluation data not found at {path} (set HF_STRUCTURE_DATA to the shared data folder)")
    return path


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shared data folder (skips the test when absent)."""
    return require_data()


@pytest.fixture(scope="session")
def ptb_dev() -> Path:
    """The gold PTB sample (`mrg/` + `dp/`, 1,921 sentences); skips the test when absent."""
    path = require_data("ptb-sample", "dev")
    if not (path / "mrg").is_dir():
        pytest.skip(f"{path} has no mrg/ folder")
    return path


@pytest.fixture(scope="module")
def one_thread():
    """Thousands of tiny tensor ops: intra-op threads only add overhead, and stall badly on a busy machine."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def bert_folder(tmp_path_factory):
    """A tiny random BERT checkpoint with a WordPiece tokenizer (`tiny_treebank.write_tiny_bert`): the supervised
    parsers' stand-in for MiniLM."""
    from tiny_treebank import write_tiny_bert

    return write_tiny_bert(tmp_path_factory.mktemp("bert"))
