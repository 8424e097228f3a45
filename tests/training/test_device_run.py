"""The device command of issue #59 (`records/structformer-ptb-authors-schedule/device_run.sh`), run here on the CPU
with a tiny model, as a lent GPU machine runs it: from a plain copy of the tree (no .git, no bundled weights),
writing only under $OUT and its work folder."""

import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

from tests.helpers.paths import ROOT, require_data

RECORD = "records/structformer-ptb-authors-schedule"


def plain_copy(destination):
    """What travels to a device machine: the working tree without .git and without the bundled weights."""
    ignored = shutil.ignore_patterns("*.safetensors", "__pycache__", "*.pyc")
    for part in ("src", "scripts", RECORD):
        shutil.copytree(ROOT / part, destination / part, ignore=ignored)
    return destination


def files_under(folder):
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


def test_the_device_command_runs_from_a_plain_copy_and_brings_back_results_and_four_parts(tmp_path):
    treebank = require_data("ptb-sample", "dev")
    tree = plain_copy(tmp_path / "tree")
    before = files_under(tree)
    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir()
    env = dict(
        os.environ,
        OUT=str(out),
        WORK=str(work),
        PYTHON=sys.executable,
        PYTHONPATH=str(tree / "src"),
        PYTHONDONTWRITEBYTECODE="1",
        OMP_NUM_THREADS="1",
        SIZE="--hidden_size 32 --num_hidden_layers 1 --num_attention_heads 2",
        BUDGET_S="6",
        DEVICE_FLAGS="--use_cpu",
        EVAL_DEVICE="cpu",
        EXTRA_FLAGS="--max_train_samples 1000 --max_eval_samples 200",
        PART_SIZE="100K",
        TREEBANK=str(treebank),
    )
    result = subprocess.run(
        ["bash", f"{RECORD}/device_run.sh"], cwd=tree, env=env, capture_output=True, text=True, timeout=600
    )
    log = (out / "train.log").read_text() if (out / "train.log").exists() else ""
    assert result.returncode == 0, result.stderr[-2000:] + log[-3000:]
    assert files_under(tree) == before  # nothing written into the tree

    state = json.loads((out / "trainer_state.json").read_text())
    epoch_losses = [entry["eval_loss"] for entry in state["log_history"] if "eval_loss" in entry]
    assert len(epoch_losses) >= 2 and state["best_metric"] == min(epoch_losses)  # chosen by valid loss alone
    assert not any(key.startswith("eval_sentence_f1") for entry in state["log_history"] for key in entry)

    rule = json.loads((out / "rule.json").read_text())
    assert set(rule) == {"sentence_f1", "mlm_ppl_paper", "uas_argmax", "replace"}
    assert rule["replace"] is False  # a tiny model trained for seconds is far from the paper
    evaluation = json.loads((out / "eval.json").read_text())
    assert rule["mlm_ppl_paper"]["figure"] == evaluation["mlm_ppl_paper"]

    parts = sorted((work / "parts").iterdir())
    assert len(parts) > 4 and all(part.stat().st_size <= 100 * 1024 for part in parts)
    brought = sorted(path.name for path in out.glob("sf.tar.*"))
    assert brought == ["sf.tar.aa", "sf.tar.ab", "sf.tar.ac", "sf.tar.ad"]
    assert all((out / name).read_bytes() == (work / "parts" / name).read_bytes() for name in brought)
    whole = tmp_path / "sf.tar"
    whole.write_bytes(b"".join(part.read_bytes() for part in parts))
    with tarfile.open(whole) as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    parsed = subprocess.run(
        [sys.executable, "-m", "hf_structure.cli", "parse", "--model", str(tmp_path / "unpacked" / "sf-half"), "a b c"],
        env=dict(env, PYTHONDONTWRITEBYTECODE="1"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert parsed.returncode == 0, parsed.stderr[-2000:]
    assert "done" in log.splitlines()[-1]


@pytest.mark.parametrize(
    ("figures", "replace"),
    [
        ({"sentence_f1": 54.0, "mlm_ppl_paper": 70.0, "uas_argmax": 36.2}, True),
        ({"sentence_f1": 55.1, "mlm_ppl_paper": 70.01, "uas_argmax": 40.0}, False),
        ({"sentence_f1": 53.99, "mlm_ppl_paper": 60.0, "uas_argmax": 40.0}, False),
        ({"sentence_f1": 56.0, "mlm_ppl_paper": 60.0}, False),
    ],
)
def test_the_rule_needs_every_bound(tmp_path, figures, replace):
    (tmp_path / "eval.json").write_text(json.dumps(figures))
    result = subprocess.run(
        [sys.executable, str(ROOT / RECORD / "rule.py"), str(tmp_path / "eval.json")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(result.stdout)["replace"] is replace
