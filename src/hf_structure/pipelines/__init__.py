"""Registers the `unsupervised-parsing` task with transformers' pipeline registry, and lets `transformers.pipeline`
and the Auto classes' `from_pretrained` take the bundled short names (`pipeline("unsupervised-parsing",
model="structformer-ptb")`, `AutoModel.from_pretrained("g2gtr-ewt")`) without a Hub lookup."""

import functools
import json
import os

import transformers
from transformers import AutoModel
from transformers.models.auto.auto_factory import _BaseAutoModelClass
from transformers.pipelines import PIPELINE_REGISTRY

from ..bundled import (
    DEFAULT_MODEL,
    bundled_checkpoints,
    bundled_folder,
    check_model_folder,
    quiet_weight_files,
    resolve_model_path,
)
from .unsupervised_parsing import UnsupervisedParsingPipeline

TASK = "unsupervised-parsing"
# Marks a function wrapped here, so that a second import of this module (a reload) does not wrap it again.
_WRAPPED_MARKER = "resolves_hf_structure_names"

PIPELINE_REGISTRY.register_pipeline(
    TASK,
    pipeline_class=UnsupervisedParsingPipeline,
    pt_model=AutoModel,
    # The default model ships inside the package: nothing is downloaded.
    default={"model": (resolve_model_path(DEFAULT_MODEL), None)},
    type="text",
)


def _resolving_short_names(pipeline_factory):
    """`transformers.pipeline` with bundled short names given as `model`, `config` or `tokenizer` replaced by their
    folders, and for this package's task an unknown bare model name refused (`resolve_model_path`) and a model folder
    checked (`check_model_folder`) and loaded without transformers' per-tensor bars (`quiet_weight_files`). Without
    a task, a folder whose config.json announces this package's task (`custom_pipelines`) gets it, as transformers
    infers it where hf_structure is not imported; everything else passes through unchanged."""
    if getattr(pipeline_factory, _WRAPPED_MARKER, False):
        return pipeline_factory

    @functools.wraps(pipeline_factory)
    def pipeline(*args, **kwargs):
        if not args and kwargs.get("task") is None and _announces_the_task(kwargs.get("model")):
            # The registered config classes drop `custom_pipelines` once this module is imported (the registered
            # pipeline serves the task), which leaves transformers nothing to infer it from but a Hub lookup.
            kwargs["task"] = TASK
        names = bundled_checkpoints()
        # Only for this task is a bare name one of this package's short names; other tasks keep the Hub's bare ids
        # (`bert-base-uncased`).
        checks_model_names = (args[0] if args else kwargs.get("task")) == TASK

        def resolved(value, key: str):
            if isinstance(value, str) and (value in names or (checks_model_names and key == "model")):
                return resolve_model_path(value)
            return value

        for key in ("model", "config", "tokenizer"):
            if key in kwargs:
                kwargs[key] = resolved(kwargs[key], key)
        if len(args) > 1:  # pipeline(task, model, ...)
            args = (args[0], resolved(args[1], "model"), *args[2:])
        model = args[1] if len(args) > 1 else kwargs.get("model")
        if not checks_model_names:
            return pipeline_factory(*args, **kwargs)
        if isinstance(model, str):  # a broken folder: one clear error before loading
            check_model_folder(model, kwargs.get("trust_remote_code", False), tokenizer="tokenizer" not in kwargs)
        with quiet_weight_files():
            return pipeline_factory(*args, **kwargs)

    setattr(pipeline, _WRAPPED_MARKER, True)
    return pipeline


def _announces_the_task(model) -> bool:
    """`model` is a local folder whose config.json names this package's task in `custom_pipelines`."""
    if not isinstance(model, str) or not os.path.isdir(model):
        return False
    try:
        with open(os.path.join(model, "config.json"), encoding="utf-8") as config_file:
            config = json.load(config_file)
    except (OSError, ValueError):
        return False  # the folder check names what is wrong once the task is given
    custom_pipelines = config.get("custom_pipelines") if isinstance(config, dict) else None
    return isinstance(custom_pipelines, dict) and TASK in custom_pipelines


# `from transformers import pipeline` made after `import hf_structure` gets the resolving version too.
transformers.pipelines.pipeline = _resolving_short_names(transformers.pipelines.pipeline)
transformers.pipeline = transformers.pipelines.pipeline


def _resolving_bundled_names(owner: type) -> None:
    """`owner.from_pretrained` (a classmethod) with a bundled short name that is no local path replaced by its
    folder, so that `AutoModel.from_pretrained("structformer-ptb")` loads the bundled model without a Hub lookup
    (which, offline, retries for half a minute and fails); every other name passes through unchanged."""
    if "from_pretrained" not in vars(owner):  # inherited: the class that defines it is wrapped
        return
    from_pretrained = vars(owner)["from_pretrained"].__func__
    if getattr(from_pretrained, _WRAPPED_MARKER, False):
        return

    @functools.wraps(from_pretrained)
    def resolving(cls, pretrained_model_name_or_path, *args, **kwargs):
        folder = (
            bundled_folder(pretrained_model_name_or_path) if isinstance(pretrained_model_name_or_path, str) else None
        )
        if folder is None:
            return from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs)
        with quiet_weight_files():  # as the pipeline loads them
            return from_pretrained(cls, str(folder), *args, **kwargs)

    setattr(resolving, _WRAPPED_MARKER, True)
    setattr(owner, "from_pretrained", classmethod(resolving))  # noqa: B010  (`type` declares no from_pretrained)


def _auto_model_classes(base: type[_BaseAutoModelClass] = _BaseAutoModelClass) -> list[type[_BaseAutoModelClass]]:
    """`base` and every Auto class made from it (transformers gives each its own copy of `from_pretrained`)."""
    return [base, *(cls for subclass in base.__subclasses__() for cls in _auto_model_classes(subclass))]


# The Auto model classes (AutoModel, AutoModelForMaskedLM ...), AutoConfig and AutoTokenizer take the bundled short
# names too.
for _owner in (*_auto_model_classes(), transformers.AutoConfig, transformers.AutoTokenizer):
    _resolving_bundled_names(_owner)


def load_parser(model: str = DEFAULT_MODEL, **kwargs) -> UnsupervisedParsingPipeline:
    """The pipeline over a bundled model name, a folder or a Hub id."""
    # transformers' overloads of `pipeline` name only its own tasks, not one registered in its PIPELINE_REGISTRY.
    return transformers.pipelines.pipeline(TASK, model=resolve_model_path(model), **kwargs)  # type: ignore[call-overload]


__all__ = ["TASK", "UnsupervisedParsingPipeline", "load_parser"]
