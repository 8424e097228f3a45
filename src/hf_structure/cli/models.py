"""`hf-structure models`: the bundled models, their sizes, headline scores and folders."""

from __future__ import annotations

import json


def add_command(commands) -> None:
    models = commands.add_parser(
        "models",
        help="list the bundled models: name, model type, size, headline scores "
        "(from each folder's hf_structure_eval.json) and folder",
    )
    models.add_argument("--json", action="store_true", help="one JSON list, for programs")
    models.set_defaults(run=run)


def _bundled_models() -> list[dict]:
    """Each bundled model (`bundled_checkpoints`): name, folder, size on disk, model type (its config.json) and the
    headline scores of its evaluation record (the model card's metrics, on the record's `dataset`). Nothing is
    loaded but these two small files."""
    from ..bundled import bundled_checkpoints
    from ..hub.records import EVAL_RECORD, read_json, read_record
    from ..registry import MODEL_SPECS

    models = []
    for name, folder in sorted(bundled_checkpoints().items()):
        config_file = folder / "config.json"
        model_type = read_json(config_file).get("model_type") if config_file.is_file() else None
        record = read_record(folder, EVAL_RECORD)
        spec = MODEL_SPECS.get(model_type) if model_type else None
        # A score the record holds as null (not measured, e.g. r2d2-ptb's perplexity) is not listed.
        measured = [metric for metric in (spec.card_metrics if spec else ()) if record.get(metric.key) is not None]
        models.append(
            {
                "name": name,
                "folder": str(folder),
                "size_bytes": sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()),
                "model_type": model_type,
                "dataset": record.get("dataset"),
                "scores": {metric.key: record[metric.key] for metric in measured},
                "score_labels": {metric.key: metric.label for metric in measured},
            }
        )
    return models


def run(args) -> None:
    models = _bundled_models()
    if args.json:
        print(
            json.dumps(
                [{key: value for key, value in model.items() if key != "score_labels"} for model in models],
                ensure_ascii=False,
                indent=2,
            )
        )
        return
    for model in models:
        scores = ", ".join(f"{model['score_labels'][key]} {value}" for key, value in model["scores"].items())
        print(f"{model['name']}  ({model['model_type'] or 'no config.json'}, {model['size_bytes'] / 1e6:.1f} MB)")
        print(f"    {model['dataset']}: {scores}" if scores else "    no evaluation record")
        print(f"    {model['folder']}")
