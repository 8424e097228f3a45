"""hf_structure: syntactic-structure models as first-class citizens of the Hugging Face ecosystem.

Importing the package registers every model it finds (`registry.discover_models`: each folder of
`hf_structure/models/`, then the `hf_structure.models` entry points of other installed packages) with the Auto
classes, and the `unsupervised-parsing` pipeline task, and lets `transformers.pipeline` and the Auto classes'
`from_pretrained` accept the bundled short names. The package's own models' classes are importable from here
(`from hf_structure import StructFormerConfig`) and from their folders (`hf_structure.models.structformer`).
"""

from .data.gold import TreebankFormatError
from .registry import CardMetric, ModelSpec, discover_models, model_spec, register_model
from .version import __version__

_MODEL_CLASSES = {
    model_class.__name__: model_class
    for spec in discover_models()
    if spec.config_class.__module__.startswith(f"{__name__}.models.")
    for model_class in (spec.config_class, *spec.auto_classes.values())
}
globals().update(_MODEL_CLASSES)

from . import pipelines  # noqa: E402,F401  (registers the task; needs the models registered above)
from .bundled import ModelFolderError  # noqa: E402
from .extras import MissingExtraError  # noqa: E402
from .pipelines.batched_parsing import SentenceError  # noqa: E402
from .pipelines.ensemble import EnsembleParser  # noqa: E402
from .pipelines.parser import Parser, ParseResult, ParsingModel, UnsupportedOptionError  # noqa: E402

__all__ = [
    "CardMetric",
    "EnsembleParser",
    "MissingExtraError",
    "ModelFolderError",
    "ModelSpec",
    "ParseResult",
    "Parser",
    "ParsingModel",
    "SentenceError",
    "TreebankFormatError",
    "UnsupportedOptionError",
    "__version__",
    "discover_models",
    "model_spec",
    "register_model",
    *sorted(_MODEL_CLASSES),
]
