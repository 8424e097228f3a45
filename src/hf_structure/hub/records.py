"""The two records a publishable checkpoint folder holds beside its weights, and their required keys.

`hf_structure_eval.json` (written by `scripts/bundle_checkpoint.py` or `hf-structure evaluate --record`): scores
in percent with 2 decimals, perplexities as plain numbers::

    {
      "dataset": "Penn Treebank WSJ (section 00 sample)",  # display name of the gold treebank scored
      "dataset_id": "ptb-wsj-sample", "dataset_split": "...",  # optional model-index fields
      "sentences": 1921,
      "sentence_f1": 51.17, "uas": 39.75, ...,           # every key of the model type's card metrics
      "baselines": {"right-branching": {...}, ...}       # optional: the same scorer's trivial trees
    }

`hf_structure_training.json` (written by `scripts/run_mlm.py` at the end of training, or by the bundling script)::

    {
      "command": "python scripts/run_mlm.py ...",  # the exact command(s)
      "wall_time_s": 7260.5, "machine": "2 CPU threads (...)", "steps": 7000, "epochs": 11.7,
      "wsj_00_01_excluded": true,                 # optional: default = "--include_wsj_00_01" not in command
      "train_data": "...", "stages": [...]        # optional
    }

The names are the package's own: `Trainer` writes `eval_results.json`, `train_results.json` and `all_results.json`
into the same output folders.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

EVAL_RECORD = "hf_structure_eval.json"
TRAINING_RECORD = "hf_structure_training.json"
REQUIRED_TRAINING_KEYS = ("command", "wall_time_s", "machine", "steps", "epochs")


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def write_json(path: Path, data: dict, sort_keys: bool = False) -> None:
    Path(path).write_text(json.dumps(data, indent=2, sort_keys=sort_keys, ensure_ascii=False) + "\n", encoding="utf-8")


def _load_record(model_dir, name: str, required: tuple[str, ...], how_to_write: str) -> dict:
    path = Path(model_dir) / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: a published checkpoint needs {name} ({how_to_write})")
    record = read_json(path)
    missing = [key for key in required if key not in record]
    if missing:
        raise ValueError(f"{path} lacks the required keys {missing}")
    return record


def load_eval_record(model_dir: str | os.PathLike, metric_keys: tuple[str, ...]) -> dict:
    """The evaluation record; it must hold `dataset` and every key in `metric_keys` (the card's metrics)."""
    record = _load_record(
        model_dir,
        EVAL_RECORD,
        ("dataset", *metric_keys),
        f"write it with `hf-structure evaluate --model {model_dir} --treebank GOLD --record`",
    )
    for name, scores in record.get("baselines", {}).items():
        if not isinstance(scores, dict):
            raise ValueError(f"{Path(model_dir) / EVAL_RECORD}: baseline {name!r} is not a dict of scores")
    return record


def load_training_record(model_dir: str | os.PathLike) -> dict:
    record = _load_record(
        model_dir, TRAINING_RECORD, REQUIRED_TRAINING_KEYS, "scripts/run_mlm.py writes it at the end of training"
    )
    record.setdefault("wsj_00_01_excluded", "--include_wsj_00_01" not in record["command"])
    return record
