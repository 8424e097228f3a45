"""Shared test fixtures: the read-only evaluation data (skipping cleanly when it is absent), one intra-op thread,
a tiny BERT. Where the data lives: `tests.helpers.paths`."""

import os
from pathlib import Path

import pytest

# The suite never reaches the Hub: transformers resolves Hub ids and the short names (seeded into the cache at import)
# from the cache at once instead of waiting out its retries on a machine without a network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from tests.helpers.paths import require_data


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
    """A tiny random BERT checkpoint with a WordPiece tokenizer (`tests.helpers.tiny_treebank.write_tiny_bert`): the
    supervised parsers' stand-in for MiniLM."""
    from tests.helpers.tiny_treebank import write_tiny_bert

    return write_tiny_bert(tmp_path_factory.mktemp("bert"))
