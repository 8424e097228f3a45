"""An R2D2 folder as language-model training saves it (`R2D2ForLanguageModeling`) loads into the bare `R2D2Model`,
which parsing uses, without transformers' load report: the LM head's weights are left out on purpose (issue #47).
A weight that is really missing or unknown is still reported."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from hf_structure.models.r2d2 import R2D2Model
from tests.helpers.paths import ROOT
from tests.helpers.tiny_models import save_tiny_r2d2


@pytest.fixture(scope="module")
def lm_folder(tmp_path_factory):
    return save_tiny_r2d2(tmp_path_factory.mktemp("r2d2-lm") / "model")


def test_parsing_a_language_model_folder_prints_no_load_report(lm_folder):
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env.update(PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    command = [sys.executable, "-m", "hf_structure.cli", "parse", "--model", str(lm_folder), "The cat sat."]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert '"tree"' in result.stdout
    assert "UNEXPECTED" not in result.stderr and "LOAD REPORT" not in result.stderr, result.stderr


def loading_info(folder: Path) -> dict[str, list[str]]:
    """The missing and unexpected weights that loading `folder` into `R2D2Model` reports."""
    # transformers types from_pretrained's result as the model alone; with output_loading_info it is (model, info).
    return R2D2Model.from_pretrained(folder, output_loading_info=True)[1]  # type: ignore[index]


@pytest.mark.parametrize("tie_decoder", [True, False])
def test_the_language_model_head_is_no_unexpected_weight(tmp_path, tie_decoder):
    folder = save_tiny_r2d2(tmp_path, tie_decoder=tie_decoder)
    info = loading_info(folder)
    assert not info["unexpected_keys"] and not info["missing_keys"]


def test_a_missing_or_unknown_weight_is_still_reported(lm_folder, tmp_path):
    weights = load_file(lm_folder / "model.safetensors")
    del weights["r2d2.mix_weights.weight"]
    weights["r2d2.stray.weight"] = torch.zeros(2)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_bytes((lm_folder / "config.json").read_bytes())
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    info = loading_info(folder)
    assert set(info["missing_keys"]) == {"mix_weights.weight"}
    assert set(info["unexpected_keys"]) == {"r2d2.stray.weight"}
