"""What the shared tests need of a package model that its spec does not say, declared by the model's own tests: the
package `tests/models/<name>/` beside the model's folder `src/hf_structure/models/<name>/`."""

import importlib
from types import ModuleType

from hf_structure.registry import MODEL_SPECS

PACKAGE = "hf_structure.models."


def package_model_types() -> list[str]:
    """The model types of the package's own folders (`hf_structure.models.<name>`), in the order they were
    registered: not those of other installed packages, nor those the tests register."""
    return [model_type for model_type, spec in MODEL_SPECS.items() if spec.config_class.__module__.startswith(PACKAGE)]


def own_tests(model_type: str) -> ModuleType:
    """The package of a package model's own tests: `tests.models.<name>` for the folder `hf_structure.models.<name>`."""
    folder = MODEL_SPECS[model_type].config_class.__module__.removeprefix(PACKAGE).split(".")[0]
    return importlib.import_module(f"tests.models.{folder}")
