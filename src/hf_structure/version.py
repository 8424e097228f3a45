"""The package's one version: pyproject.toml reads it (`[tool.setuptools.dynamic]`, statically), `hf_structure`
exports it and `hf-structure --version` prints it. A module of its own, so that code needing it (the model cards)
imports nothing else of the package."""

__version__ = "0.2.0"
