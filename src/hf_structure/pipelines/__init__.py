"""Registers the `unsupervised-parsing` task with transformers' pipeline registry (its documented extension point),
and lays the bundled checkpoints out in the Hugging Face cache under their short names (`bundled.seed_hub_cache`), so
that transformers resolves `pipeline("unsupervised-parsing", model="structformer-ptb")` and
`AutoModel.from_pretrained("g2gtr-ewt")` itself, offline. Nothing of transformers is replaced or wrapped.

`load_parser` is this package's way to a pipeline: it resolves a short name to its folder directly, refuses an
unknown bare name, checks a model folder before loading it (`check_model_folder`: one clear error for a broken
folder) and loads without transformers' per-file progress bars."""

from transformers import AutoModel
from transformers.pipelines import PIPELINE_REGISTRY, pipeline

from .. import package_model_classes

package_model_classes()  # the models registered first: the task's default model is one of them

from ..bundled import DEFAULT_MODEL, check_model_folder, quiet_weight_files, resolve_model_path, seed_hub_cache  # noqa: E402
from .parser import Parser  # noqa: E402
from .unsupervised_parsing import UnsupervisedParsingPipeline  # noqa: E402

TASK = "unsupervised-parsing"

PIPELINE_REGISTRY.register_pipeline(
    TASK,
    pipeline_class=UnsupervisedParsingPipeline,
    pt_model=AutoModel,
    # The default model ships inside the package: nothing is downloaded.
    default={"model": (resolve_model_path(DEFAULT_MODEL), None)},
    type="text",
)
seed_hub_cache()


def load_parser(model: str = DEFAULT_MODEL, **kwargs) -> UnsupervisedParsingPipeline:
    """The pipeline over a bundled model name, a folder or a Hub id: a short name is its bundled folder, an unknown
    bare name is refused naming the bundled models, and a local folder is checked before it loads."""
    path = resolve_model_path(model)
    check_model_folder(path, kwargs.get("trust_remote_code", False), tokenizer="tokenizer" not in kwargs)
    with quiet_weight_files():
        # transformers' overloads of `pipeline` name only its own tasks, not one registered in its PIPELINE_REGISTRY.
        return pipeline(TASK, model=path, **kwargs)  # type: ignore[call-overload]


__all__ = ["TASK", "Parser", "UnsupervisedParsingPipeline", "load_parser"]
