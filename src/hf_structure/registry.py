"""The one place that says what differs between the package's models.

Pipeline, CLI, evaluation, training callbacks and Hub export never name a model: they look its `model_type` up
here. Adding a model is one folder under `models/` plus one `register_model(ModelSpec(...))` call (see
`hf_structure/__init__.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from transformers import AutoConfig


@dataclass(frozen=True)
class CardMetric:
    """A score that a model card reports, read from the checkpoint's evaluation record under `key`.

    `dataset` None means the record's own gold treebank (`dataset`, `dataset_id`, `dataset_split` keys); otherwise
    a dict with `type`, `name` and `split` of the data the metric is measured on (e.g. the LM text for perplexity).
    `metric_type` is the model-index metric id (default: `key`), e.g. the Hub's `perplexity`.
    """

    key: str
    label: str
    description: str
    task_type: str = "token-classification"  # the nearest Hub task id: every word is assigned a head
    task_name: str = "Syntactic parsing"
    dataset: dict | None = None
    lower_is_better: bool = False
    metric_type: str | None = None


@dataclass(frozen=True)
class ModelSpec:
    """What the shared code needs to know about one model type.

    Args:
        config_class: the model's `PreTrainedConfig` subclass (its `model_type` is the registry key).
        auto_classes: Auto class name -> model class, e.g. `{"AutoModel": XModel, "AutoModelForMaskedLM": XForMLM}`;
            each is registered with transformers and saved in `auto_map` for remote code.
        parsing_class: the Auto class name that CLI, evaluation and export load a checkpoint with (the class must
            have `parse`); the pipeline uses `AutoModel`.
        card_template: file name of the model card template in `hf_structure/hub/templates/` (or an absolute path).
        card_metrics: the scores the card's table and model-index report, in order.
        card_tags, pipeline_tag, datasets: model-card metadata.
        bundled: short names of checkpoints that ship with the package (folders in `hf_structure/checkpoints/`).
        language_model_perplexity: how `hf-structure evaluate --lm-text` scores the model as a language model:
            `"masked"` (masked-LM perplexity, key `mlm_ppl`), `"pseudo"` (pseudo-perplexity, key `pppl`), or None.
    """

    config_class: type
    auto_classes: dict[str, type]
    parsing_class: str
    card_template: str
    card_metrics: tuple[CardMetric, ...]
    card_tags: tuple[str, ...] = ()
    pipeline_tag: str | None = None
    datasets: tuple[str, ...] = ()
    bundled: tuple[str, ...] = field(default_factory=tuple)
    language_model_perplexity: str | None = None

    @property
    def model_type(self) -> str:
        return self.config_class.model_type


MODEL_SPECS: dict[str, ModelSpec] = {}


def register_model(spec: ModelSpec) -> ModelSpec:
    """Record `spec` and register its classes with the Auto classes (and `auto_map`, for remote code)."""
    import transformers

    AutoConfig.register(spec.model_type, spec.config_class, exist_ok=True)
    spec.config_class.register_for_auto_class()
    for auto_name, model_class in spec.auto_classes.items():
        getattr(transformers, auto_name).register(spec.config_class, model_class, exist_ok=True)
        model_class.register_for_auto_class(auto_name)
    if spec.parsing_class not in spec.auto_classes:
        raise ValueError(f"{spec.model_type}: parsing_class {spec.parsing_class!r} is not among its auto_classes")
    MODEL_SPECS[spec.model_type] = spec
    return spec


def model_spec(model_type: str) -> ModelSpec:
    """The spec registered for `model_type`; a clear error naming the known types otherwise."""
    try:
        return MODEL_SPECS[model_type]
    except KeyError:
        raise ValueError(
            f"model type {model_type!r} is not an hf_structure model (known: {', '.join(sorted(MODEL_SPECS))})"
        ) from None
