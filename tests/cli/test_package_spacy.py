"""`hf-structure package-spacy`: the package it builds, installed into a fresh virtualenv (its wheel, hf_structure's
and their requirements, nothing of this environment's site-packages), loads there by name with `spacy.load` and
parses as the component does here."""

import json
import os
import subprocess
import sys
from importlib.metadata import version

import pytest

spacy = pytest.importorskip("spacy", reason="a spaCy package needs the spacy extra")

from hf_structure import cli  # noqa: E402
from hf_structure.cli.package_spacy import package_name  # noqa: E402
from tests.helpers.paths import ROOT  # noqa: E402
from tests.helpers.tiny_models import save_declared_tiny_model  # noqa: E402

TEXT = "The old man sat on the bench. A dog ran."
CHILD = """
import json, sys
import hf_structure, spacy
nlp = spacy.load(sys.argv[1])
doc = nlp(sys.argv[2])
print(json.dumps({"module": hf_structure.__file__, "heads": [t.head.i for t in doc], "deps": [t.dep_ for t in doc],
                  "tags": [(t.pos_, t.tag_) for t in doc], "sents": [s.text for s in doc.sents]}))
"""


def run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(command)}: {done.stderr[-3000:]}"


def parsed_here(folder) -> dict:
    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": str(folder)})
    doc = nlp(TEXT)
    return {
        "heads": [t.head.i for t in doc],
        "deps": [t.dep_ for t in doc],
        "tags": [[t.pos_, t.tag_] for t in doc],  # as JSON gives them back
        "sents": [s.text for s in doc.sents],
    }


def test_the_package_name_is_the_models_as_an_identifier():
    assert package_name("arc-hybrid-ewt") == "hf_structure_arc_hybrid_ewt"
    assert package_name("/models/My.Parser/") == "hf_structure_my_parser"
    assert package_name("org/g2gtr-ewt") == "hf_structure_g2gtr_ewt"


@pytest.mark.slow
def test_the_package_installs_in_a_fresh_virtualenv_and_loads_by_name(tmp_path):
    folder = save_declared_tiny_model("arc_hybrid", tmp_path / "tiny-arc-hybrid")
    cli.main(["package-spacy", str(folder), str(tmp_path / "packages"), "--name", "hf_structure_tiny"])
    (package,) = (tmp_path / "packages").glob("en_hf_structure_tiny-*/dist/en_hf_structure_tiny-*.whl")
    pip = [sys.executable, "-m", "pip"]
    run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(ROOT)])
    (ours,) = tmp_path.glob("hf_structure-*.whl")
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = str(venv / "bin" / "python")
    torch = f"torch=={version('torch').split('+')[0]}"  # this environment's torch, without its local build tag
    run([*pip, "--python", python, "install", "--quiet", torch, str(ours), str(package)])

    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    child = subprocess.run(
        [python, "-c", CHILD, "en_hf_structure_tiny", TEXT],
        capture_output=True,
        text=True,
        env={**env, "HF_HUB_OFFLINE": "1"},
        cwd=tmp_path,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr[-3000:]
    loaded = json.loads(child.stdout.strip().splitlines()[-1])
    assert loaded.pop("module").startswith(str(venv))  # the installed hf_structure, not this checkout
    assert loaded == parsed_here(folder)
