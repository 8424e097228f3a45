"""Registers the `unsupervised-parsing` task with transformers' pipeline registry."""

from transformers import AutoModel
from transformers.pipelines import PIPELINE_REGISTRY

from ..pretrained import BUNDLED_DIR, DEFAULT_MODEL, resolve_model_path
from .unsupervised_parsing import UnsupervisedParsingPipeline

TASK = "unsupervised-parsing"

PIPELINE_REGISTRY.register_pipeline(
    TASK,
    pipeline_class=UnsupervisedParsingPipeline,
    pt_model=AutoModel,
    # The default model ships inside the package: nothing is downloaded.
    default={"model": (str(BUNDLED_DIR / DEFAULT_MODEL), None)},
    type="text",
)


def load_parser(model: str = DEFAULT_MODEL, **kwargs) -> UnsupervisedParsingPipeline:
    """The pipeline over a bundled model name, a folder or a Hub id."""
    from transformers import pipeline

    return pipeline(TASK, model=resolve_model_path(model), **kwargs)


__all__ = ["TASK", "UnsupervisedParsingPipeline", "load_parser"]
