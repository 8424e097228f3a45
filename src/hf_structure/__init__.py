"""hf_structure: syntactic-structure models as first-class citizens of the Hugging Face ecosystem.

Importing the package registers every model it finds (`registry.discover_models`: each folder of
`hf_structure/models/`, then the `hf_structure.models` entry points of other installed packages) with the Auto
classes, and the `unsupervised-parsing` pipeline task, and lets `transformers.pipeline` and the Auto classes'
`from_pretrained` accept the bundled short names. The package's own models' classes are importable from here
(`from hf_structure import StructFormerConfig`) and from their folders (`hf_structure.models.structformer`).

The names exported here are imported when first asked for (module `__getattr__`). The `hf-structure` command
(`hf_structure_command`, its entry point) registers only once it knows the command, so that `hf-structure --version`
and `--help` answer without importing torch and transformers' model code; every command that loads a model
registers first (`register`).
"""

import functools
import importlib
import sys
from typing import TYPE_CHECKING

from .version import __version__ as __version__

if TYPE_CHECKING:  # the names of `_EXPORTS`, for type checkers and the API docs, which read them statically
    from .bundled import ModelFolderError as ModelFolderError
    from .data.gold import TreebankFormatError as TreebankFormatError
    from .extras import MissingExtraError as MissingExtraError
    from .pipelines.batched_parsing import SentenceError as SentenceError
    from .pipelines.ensemble import EnsembleParser as EnsembleParser
    from .pipelines.parser import Parser as Parser
    from .pipelines.parser import ParseResult as ParseResult
    from .pipelines.parser import ParsingModel as ParsingModel
    from .pipelines.parser import UnsupportedOptionError as UnsupportedOptionError
    from .registry import CardMetric as CardMetric
    from .registry import ModelSpec as ModelSpec
    from .registry import discover_models as discover_models
    from .registry import model_spec as model_spec
    from .registry import register_model as register_model

# Exported name -> the module (relative to the package) it is imported from when first asked for.
_EXPORTS = {
    "CardMetric": ".registry",
    "ModelSpec": ".registry",
    "discover_models": ".registry",
    "model_spec": ".registry",
    "register_model": ".registry",
    "TreebankFormatError": ".data.gold",
    "ModelFolderError": ".bundled",
    "MissingExtraError": ".extras",
    "SentenceError": ".pipelines.batched_parsing",
    "EnsembleParser": ".pipelines.ensemble",
    "Parser": ".pipelines.parser",
    "ParseResult": ".pipelines.parser",
    "ParsingModel": ".pipelines.parser",
    "UnsupportedOptionError": ".pipelines.parser",
}


@functools.cache
def package_model_classes() -> dict[str, type]:
    """Register every model (`registry.discover_models`), once per process; the classes of the package's own
    models (their configs and Auto classes) by name."""
    from .registry import discover_models

    return {
        model_class.__name__: model_class
        for spec in discover_models()
        if spec.config_class.__module__.startswith(f"{__name__}.models.")
        for model_class in (spec.config_class, *spec.auto_classes.values())
    }


def register() -> None:
    """Register the models with the Auto classes and the `unsupervised-parsing` task with transformers' pipelines,
    and seed the Hub cache with the bundled checkpoints (`hf_structure.pipelines` does the last two, once the models
    are registered). What importing the package does; the `hf-structure` command calls it once it knows the command."""
    from . import pipelines  # noqa: F401


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    if name == "__all__":
        return ["__version__", "register", *sorted(_EXPORTS), *sorted(package_model_classes())]
    if not name.startswith("__") and name in package_model_classes():
        return package_model_classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if "hf_structure_command" not in sys.modules:  # the command registers once it knows the command
    register()
