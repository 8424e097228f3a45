"""A small arc-hybrid parser taught by a trained one (`--teacher_model`, issue #58): it starts from the teacher's
embeddings, bottom layers and same-shaped scorers, and learns the teacher's head and label distributions beside the
gold tree's."""

import json
import subprocess
import sys

import pytest
import torch

from hf_structure.models.arc_hybrid.modeling_arc_hybrid import ArcHybridForParsing
from hf_structure.models.arc_hybrid.training_arc_hybrid import (
    ArcHybridCollator,
    ArcHybridTrainingArguments,
    examples,
    initialise,
    load_teacher,
    new_config,
)
from hf_structure.training.arguments import EntryArgumentsError, apply_config_overrides
from hf_structure.training.parser import new_parser
from tests.helpers.tiny_treebank import DEPRELS, SENTENCES, conllu_text
from tests.training.test_run_parser import ENV, SCRIPT


@pytest.fixture(scope="module")
def teacher_folder(bert_folder, tmp_path_factory):
    """A three-layer arc-hybrid parser over the tiny BERT, saved (its random scorers stand in for trained ones)."""
    torch.manual_seed(0)
    arguments = ArcHybridTrainingArguments(encoder=str(bert_folder))
    model, tokenizer = new_parser("arc_hybrid", arguments, SENTENCES, DEPRELS)
    assert model.config.encoder_config.num_hidden_layers == 3
    folder = tmp_path_factory.mktemp("teacher") / "arc-hybrid"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def student(teacher_folder, **settings):
    load_teacher.cache_clear()
    arguments = ArcHybridTrainingArguments(teacher_model=str(teacher_folder), **settings)
    config, tokenizer = new_config(arguments, SENTENCES, DEPRELS)
    apply_config_overrides(config, "label_size=8,head_decoding=eisner")
    model = ArcHybridForParsing(config)
    initialise(model, arguments)
    return model, tokenizer, arguments


def test_the_student_starts_from_the_teachers_bottom_layers_and_same_shaped_scorers(teacher_folder):
    model, _, arguments = student(teacher_folder, student_layers=1, teacher_weight=0.3)
    teacher, _ = load_teacher(str(teacher_folder))
    assert model.config.encoder_config.num_hidden_layers == 1 and teacher.config.encoder_config.num_hidden_layers == 3
    assert model.config.head_decoding == "eisner" and model.teacher_weight == 0.3
    taught, own = teacher.state_dict(), model.state_dict()
    for name in ("encoder.embeddings.word_embeddings.weight", "encoder.encoder.layer.0.output.dense.weight"):
        assert torch.equal(own[name], taught[name])
    assert "encoder.encoder.layer.1.output.dense.weight" not in own
    for name in ("arc_scorer.weight", "transition_scorer.0.weight", "matching_scorer.weight"):
        assert torch.equal(own[name], taught[name])
    assert own["label_scorer.weight"].shape != taught["label_scorer.weight"].shape  # narrower: its own


def test_the_teachers_distributions_are_collated_where_the_loss_reads_them(teacher_folder):
    model, tokenizer, arguments = student(teacher_folder)
    rows = examples(model, SENTENCES, tokenizer, arguments)
    teacher, _ = load_teacher(str(teacher_folder))
    batch = ArcHybridCollator(tokenizer.pad_token_id)(rows)
    for row, sentence in zip(rows, SENTENCES, strict=True):
        n = len(sentence["words"])
        assert len(row["teacher_arcs"]) == n and all(len(heads) == n + 1 for heads in row["teacher_arcs"])
        assert torch.allclose(torch.tensor(row["teacher_arcs"]).sum(-1), torch.ones(n), atol=1e-5)
        assert torch.allclose(torch.tensor(row["teacher_labels"]).sum(-1), torch.ones(n), atol=1e-5)
    inputs = {key: batch[key] for key in ("input_ids", "attention_mask", "first_pieces", "lengths")}
    with torch.no_grad():
        expected = teacher(**inputs).arc_log_probs.exp()
    real = batch["heads"].ne(-100)[:, None, :].expand_as(expected)  # [b, h, d] for the words d
    assert torch.allclose(batch["teacher_arcs"][real], expected[real], atol=1e-6)
    assert batch["teacher_arcs"][~real].eq(0).all()

    model.eval()  # no dropout: the losses below differ only in their targets
    targets = {key: batch[key] for key in ("heads", "labels", "steps", "matchings")}
    with torch.no_grad():
        gold = model(**inputs, **targets).loss
        model.teacher_weight = 0.0
        assert torch.allclose(model(**inputs, **targets, **_teacher(batch)).loss, gold)
        # A teacher whose distributions are the gold tree's one-hot ones teaches what the gold tree does.
        model.teacher_weight = 1.0
        one_hot = _teacher(batch)
        one_hot["teacher_arcs"] = torch.zeros_like(one_hot["teacher_arcs"])
        one_hot["teacher_arcs"].scatter_(1, batch["heads"].clamp(min=0)[:, None], 1.0)
        one_hot["teacher_labels"] = torch.nn.functional.one_hot(batch["labels"].clamp(min=0), len(DEPRELS)).float()
        assert torch.allclose(model(**inputs, **targets, **one_hot).loss, gold, atol=1e-5)
        assert not torch.allclose(model(**inputs, **targets, **_teacher(batch)).loss, gold, atol=1e-3)


def _teacher(batch: dict) -> dict:
    return {"teacher_arcs": batch["teacher_arcs"].clone(), "teacher_labels": batch["teacher_labels"].clone()}


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"student_layers": 4}, "--student_layers must be 1 to the teacher's 3"),
        ({"teacher_weight": 1.5}, "--teacher_weight must be between 0 and 1, got 1.5"),
    ],
)
def test_settings_the_teacher_cannot_meet_are_refused(teacher_folder, settings, message):
    with pytest.raises(EntryArgumentsError, match=message):
        student(teacher_folder, **settings)


def test_run_parser_trains_a_student_that_saves_and_parses(teacher_folder, tmp_path):
    from hf_structure.bundled import load_model_and_tokenizer

    treebank = tmp_path / "train.conllu"
    treebank.write_text(conllu_text(SENTENCES))
    command = [
        *(sys.executable, str(SCRIPT), "--model_type", "arc_hybrid", "--train_file", str(treebank)),
        *("--teacher_model", str(teacher_folder), "--student_layers", "1"),
        *("--config_overrides", "label_size=8,head_decoding=eisner"),
        *("--per_device_train_batch_size", "2", "--max_steps", "3", "--use_cpu", "--report_to", "none"),
        *("--disable_tqdm", "true", "--output_dir", str(tmp_path / "student")),
    ]
    result = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    config = json.loads((tmp_path / "student" / "config.json").read_text())
    assert config["encoder_config"]["num_hidden_layers"] == 1 and config["label_size"] == 8
    assert config["encoder_init"] == f"{teacher_folder}: its embeddings and bottom 1 of 3 layers"
    model, tokenizer = load_model_and_tokenizer(str(tmp_path / "student"))
    assert len(model.parse([["the", "dog", "ran", "."]], tokenizer)[0]["heads"]) == 4
