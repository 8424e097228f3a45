"""The repository's scripts (scripts/ is no package), imported from their files."""

import importlib.util
import sys
from types import ModuleType

from tests.helpers.paths import ROOT


def load_script(name: str) -> ModuleType:
    """scripts/<name>.py, imported as module `name` and kept in `sys.modules` as an import keeps a module (the
    dataclasses a script defines look their module up there)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None  # a .py file gets the source file loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
