"""Registers the `unsupervised-parsing` task with transformers' pipeline registry, and lets `transformers.pipeline`
take the bundled short names (`pipeline("unsupervised-parsing", model="structformer-ptb")`) without a Hub lookup."""

import functools

import transformers
from transformers import AutoModel
from transformers.pipelines import PIPELINE_REGISTRY

from ..bundled import DEFAULT_MODEL, bundled_checkpoints, resolve_model_path
from .unsupervised_parsing import UnsupervisedParsingPipeline

TASK = "unsupervised-parsing"

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
    folders; everything else passes through unchanged."""
    if getattr(pipeline_factory, "resolves_hf_structure_names", False):
        return pipeline_factory

    @functools.wraps(pipeline_factory)
    def pipeline(*args, **kwargs):
        names = bundled_checkpoints()
        for key in ("model", "config", "tokenizer"):
            if isinstance(kwargs.get(key), str) and kwargs[key] in names:
                kwargs[key] = resolve_model_path(kwargs[key])
        if len(args) > 1 and isinstance(args[1], str) and args[1] in names:  # pipeline(task, model, ...)
            args = (args[0], resolve_model_path(args[1]), *args[2:])
        return pipeline_factory(*args, **kwargs)

    pipeline.resolves_hf_structure_names = True
    return pipeline


# `from transformers import pipeline` made after `import hf_structure` gets the resolving version too.
transformers.pipelines.pipeline = _resolving_short_names(transformers.pipelines.pipeline)
transformers.pipeline = transformers.pipelines.pipeline


def load_parser(model: str = DEFAULT_MODEL, **kwargs) -> UnsupervisedParsingPipeline:
    """The pipeline over a bundled model name, a folder or a Hub id."""
    return transformers.pipelines.pipeline(TASK, model=resolve_model_path(model), **kwargs)


__all__ = ["TASK", "UnsupervisedParsingPipeline", "load_parser"]
