"""`hf-structure export` keeps the precision the weights are stored in (the bundled parsers store most of theirs in
half precision), and the folder still loads with `trust_remote_code=True` where hf_structure cannot be imported.

The records' numbers are made-up TEST FIXTURES."""

import json

import torch
from safetensors.torch import load_file, save_file

from hf_structure import cli
from tests.helpers.remote_code import parse_without_hf_structure
from tests.helpers.tiny_models import save_tiny_model

EVAL_FIXTURE = {
    "dataset": "test fixture",
    "sentence_f1": 1.0,
    "corpus_f1": 2.0,
    "uas": 3.0,
    "uuas": 4.0,
    "uas_argmax": 5.0,
    "mlm_ppl_test": 6.0,
    "mlm_ppl_paper_test": 5.5,
}
TRAINING_FIXTURE = {"command": "test fixture", "wall_time_s": 1.0, "machine": "test fixture", "steps": 1, "epochs": 0.1}
WORDS = ["the", "old", "man", "sat", "on", "the", "bench"]


def test_export_keeps_half_precision_weights_half_and_loads_as_remote_code(tmp_path):
    folder = save_tiny_model(tmp_path / "tiny-half")
    weights = folder / "model.safetensors"
    # Mixed storage, as export_half.py and bundle_parser.py write it: the embeddings in float32, the rest in half.
    stored = {name: tensor if "embed" in name else tensor.half() for name, tensor in load_file(weights).items()}
    save_file(stored, weights, metadata={"format": "pt"})
    (folder / "hf_structure_eval.json").write_text(json.dumps(EVAL_FIXTURE))
    (folder / "hf_structure_training.json").write_text(json.dumps(TRAINING_FIXTURE))

    out = tmp_path / "export"
    cli.main(["export", "--model", str(folder), "--output", str(out), "--repo-id", "org/tiny-half"])

    exported = load_file(out / "model.safetensors")
    assert {name: tensor.dtype for name, tensor in exported.items()} == {name: stored[name].dtype for name in exported}
    assert {torch.float16, torch.float32} <= {tensor.dtype for tensor in exported.values()}
    assert all(torch.equal(exported[name], stored[name]) for name in exported)
    assert (out / "model.safetensors").stat().st_size < 0.7 * sum(t.numel() * 4 for t in stored.values())
    # The weights take the mode of the files beside them (safetensors alone writes them 0600).
    assert (out / "model.safetensors").stat().st_mode & 0o777 == (out / "config.json").stat().st_mode & 0o777

    from transformers import pipeline

    expected = pipeline("unsupervised-parsing", model=str(folder))(WORDS, is_split_into_words=True)  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    remote = parse_without_hf_structure(out, WORDS, tmp_path, is_split_into_words=True)
    assert (remote["spans"], remote["heads"]) == ([list(span) for span in expected["spans"]], expected["heads"])
