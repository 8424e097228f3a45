"""The one place that says what differs between the package's models.

Pipeline, CLI, evaluation, training callbacks and Hub export never name a model: they look its `model_type` up
here. Adding a model is one folder under `models/` plus one `register_model(ModelSpec(...))` call (see
`hf_structure/__init__.py`).
"""

from __future__ import annotations

import importlib
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
            have `parse`); the pipeline uses `AutoModel`. Every class with `parse` declares beside it the options
            `parse` takes (`parse_options`: name -> the values it takes) and what a parse holds (`parse_outputs`);
            the spec reads them from the parsing class (`parse_options`, `parse_outputs` below).
        card_template: file name of the model card template in `hf_structure/hub/templates/` (or an absolute path).
        card_metrics: the scores the card's table and model-index report, in order.
        card_tags, pipeline_tag, datasets: model-card metadata.
        bundled: short names of checkpoints that ship with the package (folders in `hf_structure/checkpoints/`).
        language_model_perplexity: how `hf-structure evaluate --lm-text` scores the model as a language model:
            `"masked"` (masked-LM perplexity, key `mlm_ppl`), `"pseudo"` (pseudo-perplexity, key `pppl`), or None.
        training: the module (`package.module`) that holds the model's training recipe as `TRAINING` (a
            `hf_structure.training.LanguageModelTraining` or `ParserTraining`); imported only to train or bundle.
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
    training: str | None = None

    @property
    def model_type(self) -> str:
        return self.config_class.model_type

    def training_recipe(self):
        """The model's training recipe, imported from its `training` module."""
        if self.training is None:
            raise ValueError(f"model type {self.model_type!r} has no training recipe (its ModelSpec names no module)")
        return importlib.import_module(self.training).TRAINING

    @property
    def parse_options(self) -> dict[str, tuple]:
        """The keyword options of the parsing class's `parse`, with every value the model type knows (an instance
        may take fewer, by its config)."""
        return self.auto_classes[self.parsing_class].parse_options

    @property
    def parse_outputs(self) -> tuple[str, ...]:
        """The keys a parse holds besides `words` (`spans`, `heads`, `deprels`, `scores`)."""
        return self.auto_classes[self.parsing_class].parse_outputs


PARSE_OUTPUTS = ("spans", "heads", "deprels", "scores")


def _check_parse_contract(model_type: str, model_class: type) -> None:
    """A clear error when a class with `parse` does not declare the parse contract (the pipeline and CLI check calls
    against it)."""
    options, outputs = getattr(model_class, "parse_options", None), getattr(model_class, "parse_outputs", None)
    name = f"{model_type}: {model_class.__name__}"
    if not isinstance(options, dict) or not all(isinstance(v, tuple) and v for v in options.values()):
        raise TypeError(f"{name} has parse but no valid parse_options (a dict: option -> the tuple of values it takes)")
    if not isinstance(outputs, tuple) or not outputs or not set(outputs) <= set(PARSE_OUTPUTS):
        raise TypeError(f"{name} has parse but no valid parse_outputs (a tuple of {', '.join(PARSE_OUTPUTS)})")


MODEL_SPECS: dict[str, ModelSpec] = {}


def register_model(spec: ModelSpec) -> ModelSpec:
    """Record `spec` and register its classes with the Auto classes (and `auto_map`, for remote code)."""
    import transformers

    if spec.parsing_class not in spec.auto_classes:
        raise ValueError(f"{spec.model_type}: parsing_class {spec.parsing_class!r} is not among its auto_classes")
    for model_class in spec.auto_classes.values():
        if hasattr(model_class, "parse"):
            _check_parse_contract(spec.model_type, model_class)
    AutoConfig.register(spec.model_type, spec.config_class, exist_ok=True)
    spec.config_class.register_for_auto_class()
    for auto_name, model_class in spec.auto_classes.items():
        getattr(transformers, auto_name).register(spec.config_class, model_class, exist_ok=True)
        model_class.register_for_auto_class(auto_name)
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
