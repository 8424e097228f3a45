"""The one place that says what differs between the package's models.

Pipeline, CLI, evaluation, training callbacks and Hub export never name a model: they look its `model_type` up
here. A model declares itself in its own folder: `models/<name>/__init__.py` holds its `MODEL_SPEC` (a
`ModelSpec`) and its card template sits beside it. `discover_models` finds every such folder, and the specs that
other installed packages declare in the `hf_structure.models` entry-point group (`<name> = "<module>:<attribute
holding its ModelSpec>"`), so adding a model touches no shared file.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from transformers import AutoConfig, PreTrainedConfig, PreTrainedModel

ENTRY_POINT_GROUP = "hf_structure.models"


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


TINY_TOKENIZERS = ("words", "word_pieces")
# A tiny BERT encoder that reads the tests' `"word_pieces"` vocabulary: the `encoder_config` of a tiny parser on a
# pretrained encoder (`TinyModel.config`).
TINY_BERT_ENCODER: dict[str, int] = dict(
    vocab_size=64,
    hidden_size=16,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=32,
    max_position_embeddings=64,
)


@dataclass(frozen=True)
class TinyModel:
    """A tiny random model of a type, which the shared tests build from its spec and run through the parse contract,
    the pipeline's and the command line's options, and the Hub export (`tests/helpers/tiny_models.py` builds it).
    Nothing outside the tests reads it.

    Args:
        name: the model's name in test ids: the model type for its first tiny model, another name for a variant
            (e.g. `fast_r2d2`, R2D2 with Fast-R2D2's pruning, which takes other tree decodings).
        config: the config class's settings of a model a few units wide and one or two layers deep, its vocabulary
            at least as large as the tests' tokenizer (a few dozen tokens; the embedding may have spare rows).
        accepted_options: every option a call may give it, with the values each takes, as the pipeline's
            `accepted_options` reports them (its own `structures`, `return_scores` and `keep_punctuation`, then the
            model's `parse_options`).
        refused_options: option -> a value the tests give it to be refused, where another than the tests' own
            choice is worth testing (a misspelt value, one no model takes). For every option some registered tiny
            model takes, the tests choose a value this one refuses, if there is one: the first such value another
            model takes.
        tokenizer: what the model reads: `"words"`, a word vocabulary (`data.tokenization.build_word_tokenizer`), or
            `"word_pieces"`, a WordPiece vocabulary, as a pretrained BERT encoder's.
    """

    name: str
    config: dict[str, Any]
    accepted_options: dict[str, tuple]
    refused_options: dict[str, Any] = field(default_factory=dict)
    tokenizer: str = "words"

    def __post_init__(self):
        if self.tokenizer not in TINY_TOKENIZERS:
            raise ValueError(
                f"tiny model {self.name!r}: tokenizer must be one of {TINY_TOKENIZERS}, got {self.tokenizer!r}"
            )


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
        card_template: the model card template: a path relative to the folder of the module that defines
            `config_class` (by default `model_card.md` beside it), or an absolute path.
        card_metrics: the scores the card's table and model-index report, in order.
        card_tags, pipeline_tag, datasets: model-card metadata. `pipeline_tag` is a transformers task whose pipeline
            loads one of `auto_classes` (e.g. `fill-mask` for a masked LM), or None where none does: no transformers
            pipeline parses, so a parser's card names none rather than one that fails to load it.
        bundled: short names of checkpoints that ship with the package (folders in `hf_structure/checkpoints/`).
        perplexity: how `hf-structure evaluate --lm-text` scores the model as a language model, or None for a model
            that is not one: a function `(model, tokenizer, source, seed, paper_seeds) -> {key: value}` of the
            model, its tokenizer, the text (`lm_text_lines`), the masking seed and the number of mask seeds of a
            paper's protocol where that differs from this project's (e.g. `evaluation.perplexity.
            masked_lm_perplexities`, keys `mlm_ppl`, `mlm_ppl_paper`, ...).
        training: the module (`package.module`) that holds the model's training recipe as `TRAINING` (a
            `hf_structure.training.LanguageModelTraining` or `ParserTraining`); imported only to train or bundle.
        tiny_models: the tiny random models of the type that the shared tests build (`TinyModel`); every model of
            the package declares at least one.
    """

    config_class: type[PreTrainedConfig]
    auto_classes: dict[str, type[PreTrainedModel]]
    parsing_class: str
    card_metrics: tuple[CardMetric, ...]
    card_template: str | Path = "model_card.md"
    card_tags: tuple[str, ...] = ()
    pipeline_tag: str | None = None
    datasets: tuple[str, ...] = ()
    bundled: tuple[str, ...] = field(default_factory=tuple)
    perplexity: Callable[..., dict[str, float]] | None = None
    training: str | None = None
    tiny_models: tuple[TinyModel, ...] = ()

    @property
    def model_type(self) -> str:
        return self.config_class.model_type

    @property
    def card_template_path(self) -> Path:
        """The card template's file: `card_template`, relative to the folder of `config_class`'s module."""
        return Path(inspect.getfile(self.config_class)).parent / self.card_template

    def training_recipe(self):
        """The model's training recipe, imported from its `training` module."""
        if self.training is None:
            raise ValueError(f"model type {self.model_type!r} has no training recipe (its ModelSpec names no module)")
        return importlib.import_module(self.training).TRAINING

    @property
    def parse_options(self) -> dict[str, tuple]:
        """The keyword options of the parsing class's `parse`, with every value the model type knows (an instance
        may take fewer, by its config)."""
        # getattr: PreTrainedModel does not declare the contract; register_model checked that the class does.
        options: dict[str, tuple] = getattr(self.auto_classes[self.parsing_class], "parse_options")  # noqa: B009
        return options

    @property
    def parse_outputs(self) -> tuple[str, ...]:
        """The keys a parse holds besides `words` (`spans`, `heads`, `deprels`, `scores`)."""
        outputs: tuple[str, ...] = getattr(self.auto_classes[self.parsing_class], "parse_outputs")  # noqa: B009
        return outputs  # (as parse_options)


PARSE_OUTPUTS = ("spans", "heads", "deprels", "upos", "xpos", "feats", "scores")


def _check_parse_contract(model_type: str, model_class: type) -> None:
    """A clear error when a class with `parse` does not declare the parse contract (the pipeline and CLI check calls
    against it)."""
    options, outputs = getattr(model_class, "parse_options", None), getattr(model_class, "parse_outputs", None)
    name = f"{model_type}: {model_class.__name__}"
    if not isinstance(options, dict) or not all(isinstance(v, tuple) and v for v in options.values()):
        raise TypeError(f"{name} has parse but no valid parse_options (a dict: option -> the tuple of values it takes)")
    if not isinstance(outputs, tuple) or not outputs or not set(outputs) <= set(PARSE_OUTPUTS):
        raise TypeError(f"{name} has parse but no valid parse_outputs (a tuple of {', '.join(PARSE_OUTPUTS)})")


def _check_auto_map(spec: ModelSpec) -> None:
    """A clear error when the config class's `default_auto_map` (what every saved folder's `auto_map` names, so that
    it loads as remote code) is not the spec's Auto classes and the config class itself, each as `module.Class` of
    its generated file: a folder saved from it would load other classes where hf_structure is not installed. A
    config class without `default_auto_map` (not a `StructureConfig`) leaves `auto_map` to transformers'
    `register_for_auto_class`."""
    declared = getattr(spec.config_class, "default_auto_map", None)
    if declared is None:
        return
    expected = {
        auto_name: f"{model_class.__module__.rsplit('.', 1)[-1]}.{model_class.__name__}"
        for auto_name, model_class in {"AutoConfig": spec.config_class, **spec.auto_classes}.items()
    }
    mismatches = [
        f"{auto_name} is {declared[auto_name]!r}, not {name!r}"
        if auto_name in declared
        else f"{auto_name} ({name!r}) is missing"
        for auto_name, name in expected.items()
        if declared.get(auto_name) != name
    ]
    mismatches += [f"{auto_name} is not among them" for auto_name in declared if auto_name not in expected]
    if mismatches:
        raise ValueError(
            f"{spec.model_type}: {spec.config_class.__name__}.default_auto_map does not name the spec's auto_classes "
            f"and the config class: {'; '.join(mismatches)}"
        )


MODEL_SPECS: dict[str, ModelSpec] = {}


def register_model(spec: ModelSpec) -> ModelSpec:
    """Record `spec` and register its classes with the Auto classes (and `auto_map`, for remote code), after
    checking that its parsing classes declare the parse contract and its config's `default_auto_map` names them."""
    import transformers

    if spec.parsing_class not in spec.auto_classes:
        raise ValueError(f"{spec.model_type}: parsing_class {spec.parsing_class!r} is not among its auto_classes")
    for model_class in spec.auto_classes.values():
        if hasattr(model_class, "parse"):
            _check_parse_contract(spec.model_type, model_class)
    _check_auto_map(spec)
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


def discover_models(package: str = "hf_structure.models") -> list[ModelSpec]:
    """Register the `MODEL_SPEC` of every subpackage of `package`, then every spec of the `hf_structure.models`
    entry-point group; the specs found, in that order. A subpackage without `MODEL_SPEC` is a programming error
    (raised); an installed package whose spec cannot be loaded is left out with a warning naming it, so that the
    other models keep working."""
    specs = []
    for module_info in pkgutil.iter_modules(importlib.import_module(package).__path__, f"{package}."):
        module = importlib.import_module(module_info.name)
        if not isinstance(getattr(module, "MODEL_SPEC", None), ModelSpec):
            raise TypeError(f"{module_info.name} declares no MODEL_SPEC (a hf_structure.registry.ModelSpec)")
        specs.append(register_model(module.MODEL_SPEC))
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            spec = entry.load()
            if not isinstance(spec, ModelSpec):
                raise TypeError(f"it is a {type(spec).__name__}, not a hf_structure.registry.ModelSpec")
            specs.append(register_model(spec))
        except Exception as error:  # whatever a third-party package raises, the package's own models still load
            warnings.warn(f"model {entry.name!r} ({entry.value}) is not available: {error}", stacklevel=2)
    return specs
