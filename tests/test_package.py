"""What the package promises as a package: one version (pyproject reads `hf_structure.version`, the installed
metadata and `hf-structure --version` agree), its error types at the top level, `py.typed` shipped."""

import importlib.metadata
import tomllib

import pytest

import hf_structure
from hf_structure import cli
from tests.helpers.paths import ROOT

PUBLIC_ERRORS = (
    "SentenceError",
    "UnsupportedOptionError",
    "TreebankFormatError",
    "ModelFolderError",
    "MissingExtraError",
)


def test_the_version_has_one_source_that_the_metadata_and_the_command_agree_with(capsys):
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "hf_structure.version.__version__"}
    assert importlib.metadata.version("hf_structure") == hf_structure.__version__
    with pytest.raises(SystemExit) as ended:
        cli.main(["--version"])
    assert ended.value.code == 0 and capsys.readouterr().out == f"hf-structure {hf_structure.__version__}\n"


@pytest.mark.parametrize("name", PUBLIC_ERRORS)
def test_error_types_are_exported_at_the_top_level(name):
    error = getattr(hf_structure, name)
    assert name in hf_structure.__all__ and issubclass(error, Exception) and error.__name__ == name


def test_the_package_ships_py_typed():
    assert (ROOT / "src" / "hf_structure" / "py.typed").is_file()
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["hf_structure"]
