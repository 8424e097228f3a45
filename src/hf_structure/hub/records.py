"""The two records a publishable checkpoint folder holds beside its weights: their keys, and the one place that
reads and writes them and describes the machine a run used.

`hf_structure_eval.json` (written by `scripts/bundle_checkpoint.py` or `hf-structure evaluate --record`): scores
in percent with 2 decimals, perplexities as plain numbers::

    {
      "dataset": "Penn Treebank WSJ (section 00 sample)",  # display name of the gold treebank scored
      "dataset_id": "ptb-wsj-sample", "dataset_split": "...",  # optional model-index fields
      "sentences": 1921,
      "sentence_f1": 51.17, "uas": 39.75, ...,           # every key of the model type's card metrics
      "baselines": {"right-branching": {...}, ...}       # optional: the same scorer's trivial trees
    }

`hf_structure_training.json` (written at the end of training by `scripts/run_mlm.py` and `run_parser.py`, or by
the bundling scripts)::

    {
      "command": "python scripts/run_mlm.py ...",  # the exact command(s)
      "wall_time_s": 7260.5, "machine": "2 CPU threads (AMD EPYC 7B13), no GPU, torch 2.13.0",  # `machine_description`
      "steps": 7000, "epochs": 11.7,
      "wsj_00_01_excluded": true,                 # optional: default = "--include_wsj_00_01" not in command;
                                                  # null: not trained on the PTB text (a file of the user's)
      "train_data": "...", "stages": [...]        # optional
    }

The names are the package's own: `Trainer` writes `eval_results.json`, `train_results.json` and `all_results.json`
into the same output folders.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ..machine import machine_description

EVAL_RECORD = "hf_structure_eval.json"
TRAINING_RECORD = "hf_structure_training.json"
REQUIRED_TRAINING_KEYS = ("command", "wall_time_s", "machine", "steps", "epochs")


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def write_json(path: Path, data: dict, sort_keys: bool = False) -> None:
    Path(path).write_text(json.dumps(data, indent=2, sort_keys=sort_keys, ensure_ascii=False) + "\n", encoding="utf-8")


def read_record(model_dir: str | os.PathLike, name: str) -> dict:
    """The record `name` (`EVAL_RECORD` or `TRAINING_RECORD`) of a folder as it is, or {} where there is none (a
    record being updated); `load_eval_record` / `load_training_record` read one that must be complete."""
    path = Path(model_dir) / name
    return read_json(path) if path.is_file() else {}


def write_eval_record(model_dir: str | os.PathLike, record: dict) -> Path:
    """Write a folder's evaluation record; it must name its `dataset`. Returns the file's path."""
    return _write_record(model_dir, EVAL_RECORD, record, ("dataset",))


def write_training_record(model_dir: str | os.PathLike, record: dict) -> Path:
    """Write a folder's training record, `machine` (default: this machine, `machine_description`) included; the
    other required keys (`command`, `wall_time_s`, `steps`, `epochs`) must be there. Returns the file's path."""
    return _write_record(
        model_dir, TRAINING_RECORD, {"machine": machine_description(), **record}, REQUIRED_TRAINING_KEYS
    )


def staged_training_record(stages: list[dict], **fields) -> dict:
    """The training record of a model trained in stages, each fine-tuning the model the stage before it saved: the
    commands (each under `# stage <k>` when there are several), the summed wall time, steps and epochs, then
    `fields` (e.g. `machine`, `train_data`, `notes`) and the `stages` themselves."""
    commands = [stage["command"] for stage in stages]
    staged = "\n".join(f"# stage {k}\n{command}" for k, command in enumerate(commands, 1))
    return {
        "command": staged if len(stages) > 1 else commands[0],
        "wall_time_s": sum(stage["wall_time_s"] for stage in stages),
        "steps": sum(stage["steps"] for stage in stages),
        "epochs": round(sum(stage["epochs"] for stage in stages), 2),
        **fields,
        "stages": stages,
    }


def _write_record(model_dir, name: str, record: dict, required: tuple[str, ...]) -> Path:
    path = Path(model_dir) / name
    missing = [key for key in required if key not in record]
    if missing:
        raise ValueError(f"{path}: the record lacks the required keys {missing}")
    write_json(path, record)
    return path


def _load_record(model_dir, name: str, required: tuple[str, ...], how_to_write: str) -> dict:
    path = Path(model_dir) / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: a published checkpoint needs {name} ({how_to_write})")
    record = read_json(path)
    missing = [key for key in required if key not in record]
    if missing:
        raise ValueError(f"{path} lacks the required keys {missing} ({how_to_write})")
    return record


def treebank_record_fields(treebank: str | os.PathLike) -> dict:
    """How an evaluation record names the gold treebank at `treebank`: the PTB sample and UD English-EWT files of the
    shared data by their names (with their model-index id and split), anything else by its file or folder name (as
    both), never by a path of this machine."""
    path = Path(treebank)
    if path.name == "dev" and path.parent.name == "ptb-sample":
        return {
            "dataset": "Penn Treebank WSJ (section 00 sample, wsj_0001-wsj_0099)",
            "dataset_id": "ptb-wsj-sample",
            "dataset_split": "wsj_0001-wsj_0099",
        }
    if match := re.fullmatch(r"en_ewt-ud-(train|dev|test)\.conllu", path.name):
        return {
            "dataset": f"UD English-EWT {match[1]}",
            "dataset_id": "universal_dependencies",
            "dataset_split": f"en_ewt {match[1]}",
        }
    name = path.resolve().name
    return {"dataset": name, "dataset_id": name}  # not a Hub dataset: the model-index names it as it is


def load_eval_record(model_dir: str | os.PathLike, metric_keys: tuple[str, ...], language_model: bool = False) -> dict:
    """The evaluation record; it must hold `dataset` and every key in `metric_keys` (the card's metrics). The error
    for a record missing or incomplete gives the one command that writes every key (for a `language_model`, with its
    perplexities on the PTB test text)."""
    lm_text = " --lm-text ptb-test" if language_model else ""
    record = _load_record(
        model_dir,
        EVAL_RECORD,
        ("dataset", *metric_keys),
        f"write it with `hf-structure evaluate --model {model_dir} --treebank GOLD{lm_text} --record`",
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
