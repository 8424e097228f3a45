"""The bundled `g2gtr-ewt` (package `hf-structure-g2gtr-ewt`, installed by `make setup`), guarded: its card is what
its records render, the short name reproduces pinned scores on a slice of EWT dev, its folder fits the size limit,
and its Hub export parses identically where hf_structure cannot be imported."""

import json
import os
import subprocess
import sys

import pytest
import torch

from hf_structure.bundled import bundled_checkpoints

FOLDER = bundled_checkpoints().get("g2gtr-ewt")
pytestmark = pytest.mark.skipif(FOLDER is None, reason="hf-structure-g2gtr-ewt is not installed (make setup does)")
# Scores of the bundled g2gtr-ewt on the first 200 sentences of EWT dev (all words, universal labels), measured when
# it was bundled (2026-11-25) and pinned here.
SLICE = 200
SLICE_SCORES = {"uas": 91.14, "las": 89.24, "valid_trees": 100.0}
SENTENCES = ["The old man sat on the bench.", "I wouldn't go there again, it was terrible!"]


def test_the_card_is_what_its_records_render():
    from hf_structure.hub import render_model_card

    committed = (FOLDER / "README.md").read_text(encoding="utf-8")
    assert "\n# g2gtr-ewt\n" in committed
    assert str(render_model_card(FOLDER)).rstrip() == committed.rstrip()


def test_the_folder_is_at_most_60_mb_and_loads_in_float32():
    from safetensors import safe_open

    from hf_structure.bundled import load_model_and_tokenizer

    assert sum(path.stat().st_size for path in FOLDER.iterdir()) <= 60 * 2**20
    with safe_open(FOLDER / "model.safetensors", "pt") as weights:
        assert str(weights.get_tensor("embeddings.word_embeddings.weight").dtype) == "torch.float16"
    model, _ = load_model_and_tokenizer("g2gtr-ewt")
    assert {parameter.dtype for parameter in model.parameters()} == {torch.float32}


def test_the_short_name_reproduces_the_pinned_dev_slice(data_dir):
    from hf_structure.bundled import load_model_and_tokenizer
    from hf_structure.data.treebanks import read_conllu
    from hf_structure.evaluation.scoring import parse_word_lists, score_all_words

    gold = read_conllu(data_dir / "ud-english-ewt" / "en_ewt-ud-dev.conllu")[:SLICE]
    model, tokenizer = load_model_and_tokenizer("g2gtr-ewt")
    scores = score_all_words(gold, parse_word_lists(model, tokenizer, [g["words"] for g in gold]))
    assert {key: scores[key] for key in SLICE_SCORES} == SLICE_SCORES


def test_the_export_parses_the_same_without_hf_structure(tmp_path):
    from transformers import pipeline

    from hf_structure.hub import push_model

    out = push_model("g2gtr-ewt", "org/g2gtr-ewt", dry_run_dir=str(tmp_path / "export"))
    parser = pipeline("unsupervised-parsing", model="g2gtr-ewt")
    expected = [[result["heads"], result["deprels"]] for result in parser(SENTENCES)]
    code = f"""
import json, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('hf_structure', 'hf_structure_g2gtr_ewt', 'nltk'):
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
from transformers import pipeline
parser = pipeline(model={str(out)!r}, trust_remote_code=True)
print(json.dumps([[r["heads"], r["deprels"]] for r in parser({SENTENCES!r})]))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"), TRANSFORMERS_VERBOSITY="error")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == expected
