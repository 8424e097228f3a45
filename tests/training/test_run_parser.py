"""Training the supervised parsers through `scripts/run_parser.py` (every package model whose training recipe is a
`ParserTraining`): a killed run resumes from its last checkpoint and ends with the weights of an uninterrupted run,
two-process `torchrun` runs, and fine-tuning a saved parser on new data. A parser on a pretrained encoder starts from
the tiny BERT; a model's own tests may give its runs options of its own (`RUN_PARSER_OPTIONS` in
`tests/models/<name>/__init__.py`)."""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from hf_structure.registry import model_spec
from hf_structure.training import ParserTraining
from tests.helpers.model_tests import own_tests, package_model_types
from tests.helpers.paths import ROOT
from tests.helpers.tiny_treebank import SENTENCES, conllu_text

PARSER_TYPES = [
    model_type
    for model_type in package_model_types()
    if model_spec(model_type).training and isinstance(model_spec(model_type).training_recipe(), ParserTraining)
]
SCRIPT = ROOT / "scripts" / "run_parser.py"
ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT / "src"), HF_HUB_OFFLINE="1")


def run_parser_command(model_type, bert_folder, treebank, output, *extra):
    arguments = {field.name for field in dataclasses.fields(model_spec(model_type).training_recipe().arguments)}
    return [
        sys.executable,
        str(SCRIPT),
        "--model_type",
        model_type,
        *getattr(own_tests(model_type), "RUN_PARSER_OPTIONS", ()),
        *(["--encoder", str(bert_folder)] if "encoder" in arguments else []),
        "--train_file",
        str(treebank),
        "--per_device_train_batch_size",
        "2",
        "--max_steps",
        "40",
        "--save_steps",
        "4",
        "--learning_rate",
        "1e-3",
        "--use_cpu",
        "--report_to",
        "none",
        "--seed",
        "3",
        "--train_sampling_strategy",
        "group_by_length",
        "--remove_unused_columns",
        "false",
        "--dataloader_num_workers",
        "0",
        "--disable_tqdm",
        "true",
        "--output_dir",
        str(output),
        *extra,
    ]


@pytest.mark.parametrize("model_type", PARSER_TYPES)
def test_a_killed_parser_run_resumes_from_its_last_checkpoint_and_loses_nothing(model_type, bert_folder, tmp_path):
    from safetensors.torch import load_file

    treebank = tmp_path / "train.conllu"
    treebank.write_text(conllu_text(SENTENCES * 2))
    straight = subprocess.run(
        run_parser_command(model_type, bert_folder, treebank, tmp_path / "a"),
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert straight.returncode == 0, straight.stderr[-3000:]
    assert json.loads((tmp_path / "a" / "hf_structure_training.json").read_text())["steps"] == 40

    process = subprocess.Popen(
        run_parser_command(model_type, bert_folder, treebank, tmp_path / "b"),
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 600
        while not (tmp_path / "b" / "checkpoint-4" / "trainer_state.json").exists():
            assert process.poll() is None and time.time() < deadline, "no checkpoint-4 to resume from"
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert not (tmp_path / "b" / "model.safetensors").exists()
    resumed = subprocess.run(
        run_parser_command(model_type, bert_folder, treebank, tmp_path / "b"),
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming from the last checkpoint in the output folder" in resumed.stderr
    expected, actual = load_file(tmp_path / "a" / "model.safetensors"), load_file(tmp_path / "b" / "model.safetensors")
    assert all(torch.allclose(expected[name], actual[name], atol=1e-6) for name in expected)


@pytest.mark.parametrize("model_type", PARSER_TYPES)
def test_two_cpu_processes_with_torchrun(model_type, bert_folder, tmp_path):
    treebank = tmp_path / "train.conllu"
    treebank.write_text(conllu_text(SENTENCES * 4))
    command = run_parser_command(model_type, bert_folder, treebank, tmp_path / "ddp", "--ddp_backend", "gloo")
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--standalone",  # a free port: the suite may run beside another
        *command[1:],
    ]
    command[command.index("--max_steps") + 1] = "3"
    result = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    state = json.loads((tmp_path / "ddp" / "trainer_state.json").read_text())
    assert state["global_step"] == 3 and (tmp_path / "ddp" / "model.safetensors").exists()


def test_a_saved_arc_hybrid_parser_is_fine_tuned_on_new_data_with_dev_scores(bert_folder, tmp_path):
    """Fine-tuning continues from a saved folder (its labels and encoder), logs dev UAS/LAS, saves a parser that
    loads and parses; a training sentence with a label the parser lacks is named."""
    from hf_structure.bundled import load_model_and_tokenizer

    treebank = tmp_path / "train.conllu"
    treebank.write_text(conllu_text(SENTENCES))
    first = subprocess.run(
        run_parser_command("arc_hybrid", bert_folder, treebank, tmp_path / "first"),
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert first.returncode == 0, first.stderr[-3000:]
    other = [
        {**SENTENCES[0], "id": "c", "words": ["the", "old", "man", "sat", "."]}
        | {"heads": [3, 3, 4, 0, 4], "deprels": ["det", "det", "nsubj", "root", "punct"]}
    ]
    (tmp_path / "other.conllu").write_text(conllu_text(other * 3))
    (tmp_path / "dev.conllu").write_text(conllu_text(other))
    command = run_parser_command(
        "arc_hybrid",
        bert_folder,
        tmp_path / "other.conllu",
        tmp_path / "tuned",
        "--model_name_or_path",
        str(tmp_path / "first"),
        "--validation_file",
        str(tmp_path / "dev.conllu"),
        "--eval_strategy",
        "steps",
        "--eval_steps",
        "10",
    )
    command[command.index("--max_steps") + 1] = "10"
    tuned = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=600)
    assert tuned.returncode == 0, tuned.stderr[-3000:]
    state = json.loads((tmp_path / "tuned" / "trainer_state.json").read_text())
    assert any("parse_las" in entry for entry in state["log_history"])
    model, tokenizer = load_model_and_tokenizer(str(tmp_path / "tuned"))
    assert model.config.deprels == sorted({d for s in SENTENCES for d in s["deprels"]})
    assert len(model.parse([["the", "old", "man", "sat", "."]], tokenizer)[0]["heads"]) == 5

    odd = [{**other[0], "deprels": ["det", "det", "nsubj", "root", "punct:odd"]}]
    (tmp_path / "odd.conllu").write_text(conllu_text(odd))
    command[command.index("--train_file") + 1] = str(tmp_path / "odd.conllu")
    command[command.index("--output_dir") + 1] = str(tmp_path / "odd")
    failed = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=600)
    assert failed.returncode != 0 and "labels ['punct:odd'] are not among the parser's" in failed.stderr
