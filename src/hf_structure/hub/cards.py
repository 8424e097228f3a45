"""Model cards: rendered from the model type's template with every number read from the checkpoint's records."""

from __future__ import annotations

import os
from pathlib import Path

from ..registry import ModelSpec, model_spec
from .records import load_eval_record, load_training_record, read_json

DEFAULT_DATASET_ID = "ptb-wsj-sample"


def eval_results_list(record: dict, spec: ModelSpec):
    """The `huggingface_hub.EvalResult`s (model-index entries) of an evaluation record; a score the record holds as
    None (not measured) is left out."""
    from huggingface_hub import EvalResult

    entries = []
    for metric in spec.card_metrics:
        if record[metric.key] is None:
            continue
        dataset = metric.dataset or {
            "type": record.get("dataset_id", DEFAULT_DATASET_ID),
            "name": record["dataset"],
            "split": record.get("dataset_split"),
        }
        entries.append(
            EvalResult(
                task_type=metric.task_type,
                task_name=metric.task_name,
                dataset_type=dataset["type"],
                dataset_name=dataset["name"],
                dataset_split=dataset.get("split"),
                metric_type=metric.metric_type or metric.key,
                metric_name=metric.description,
                metric_value=record[metric.key],
            )
        )
    return entries


def _cell(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def results_table(record: dict, spec: ModelSpec) -> str:
    """Markdown table: the model beside the record's baselines, one row per card metric."""
    baselines = list(record.get("baselines", {}))
    header = "| metric | this model | " + " | ".join(baselines) + (" |" if baselines else "")
    rule = "|---|---:|" + "---:|" * len(baselines)
    rows = [
        f"| {metric.label} | **{_cell(record[metric.key])}** |"
        + "".join(f" {_cell(record['baselines'][b].get(metric.key))} |" for b in baselines)
        for metric in spec.card_metrics
    ]
    return "\n".join([header, rule, *rows])


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"


def folder_model_spec(model_dir: str | os.PathLike) -> ModelSpec:
    """The spec of the model type that a checkpoint folder's `config.json` names."""
    config_file = Path(model_dir) / "config.json"
    model_type = read_json(config_file).get("model_type")
    if not isinstance(model_type, str):
        raise ValueError(f"{config_file}: no model_type (is it a model's config?)")
    return model_spec(model_type)


def card_eval_record(model_dir, spec: ModelSpec) -> dict:
    """The evaluation record, holding every score the card of a `spec` model reports (else an error giving the
    command that writes them all)."""
    return load_eval_record(
        model_dir, tuple(metric.key for metric in spec.card_metrics), language_model=spec.perplexity is not None
    )


def render_model_card(
    model_dir: str | os.PathLike,
    repo_id: str | None = None,
    template_path=None,
    space: bool = False,
    space_id: str | None = None,
):
    """The `huggingface_hub.ModelCard` (README.md) of a checkpoint folder. The template is the model type's
    (`ModelSpec.card_template`); the name is the repo id's last part, else the folder's name, and code snippets
    name `repo_id`, else `<org>/<name>` for the user to replace. `space`: the folder is also a Gradio Space (its
    settings in the metadata, a paragraph under the title), and `space_id` the Space it runs as, which the card
    links (it implies `space`)."""
    from huggingface_hub import ModelCard, ModelCardData

    from ..version import __version__
    from .space import space_card_data, space_note

    space = space or space_id is not None

    model_dir = Path(model_dir)
    spec = folder_model_spec(model_dir)
    # The configuration as the model reads it: its class converts a folder of an earlier format (e.g. a supervised
    # parser's encoder settings flat at the top level).
    config = spec.config_class.from_pretrained(model_dir).to_dict()
    template_path = Path(template_path) if template_path else spec.card_template_path
    if not template_path.is_file():
        raise FileNotFoundError(f"model card template {template_path} not found")
    record = card_eval_record(model_dir, spec)
    training = load_training_record(model_dir)
    # Each stage carries its 1-based number, so that a template listing only some stages (those with notes) names
    # them right.
    training["stages"] = [{**stage, "number": number} for number, stage in enumerate(training.get("stages", []), 1)]
    model_name = repo_id.split("/")[-1] if repo_id else model_dir.name
    card_data = ModelCardData(
        model_name=model_name,
        language="en",
        license="apache-2.0",
        library_name="transformers",
        pipeline_tag=spec.pipeline_tag,
        tags=[*spec.card_tags, "custom_code"],
        datasets=list(spec.datasets) or None,
        metrics=list(dict.fromkeys(metric.metric_type or metric.key for metric in spec.card_metrics)),
        eval_results=eval_results_list(record, spec),
        **(space_card_data(model_name, repo_id) if space else {}),
    )
    return ModelCard.from_template(
        card_data,
        template_path=str(template_path),
        model_name=model_name,
        repo_id=repo_id or f"<org>/{model_name}",
        config=config,
        eval=record,
        results_table=results_table(record, spec),
        training=training,
        wall_time=_duration(float(training["wall_time_s"])),
        hf_structure_version=__version__,
        space_note=space_note(space_id) if space else "",
    )
