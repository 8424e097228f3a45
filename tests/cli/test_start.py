"""The `hf-structure` command starts as its entry point (`hf_structure_command`) runs it: `--version` and `--help`
answer without importing torch or transformers (seconds of a start), and a command that runs has the models
registered (the bundled names resolve, the pipeline task exists)."""

import json
import os
import subprocess
import sys

import pytest

from tests.helpers.paths import ROOT

# The installed script's code (`[project.scripts]`), then the heavy modules the process imported, on stderr's last line.
CHILD = """
import json, sys
sys.argv = ["hf-structure", *sys.argv[1:]]
from hf_structure_command import main
try:
    main()
except SystemExit as end:
    status = end.code
else:
    status = 0
heavy = sorted(name for name in sys.modules if name.split(".")[0] in ("torch", "transformers"))
print(json.dumps({"status": status, "heavy": heavy}), file=sys.stderr)
"""


def run_command(*arguments: str) -> tuple[str, dict]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), HF_HUB_OFFLINE="1")
    child = subprocess.run(
        [sys.executable, "-c", CHILD, *arguments], capture_output=True, text=True, env=env, timeout=300
    )
    return child.stdout, json.loads(child.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("arguments", [["--version"], ["--help"], ["package-spacy", "--help"]])
def test_version_and_help_import_neither_torch_nor_transformers(arguments):
    stdout, ended = run_command(*arguments)
    assert ended == {"status": 0, "heavy": []}
    assert "hf-structure" in stdout


def test_a_command_that_runs_has_the_models_registered(model):
    stdout, ended = run_command("parse", "a dog ran", "--model", model)
    assert ended["status"] == 0, stdout
    assert json.loads(stdout.splitlines()[0])["words"] == ["a", "dog", "ran"]
