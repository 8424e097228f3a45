"""The folder check (`check_model_folder`) compares a folder's files with each other before anything loads (issue
#47): a tokenizer that is not the model's (more tokens than its embedding has rows, a special token at another id
than the config records) and a config whose sizes are not those of the weights are refused in one line naming the
folder, the setting and both values, instead of failing every sentence or printing transformers' load report."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from hf_structure.bundled import ModelFolderError, bundled_checkpoints, check_model_folder, load_model_and_tokenizer
from hf_structure.data.tokenization import build_word_tokenizer
from hf_structure.pipelines import load_parser
from hf_structure.registry import MODEL_SPECS
from hf_structure.training.arguments import PretrainedEncoderArguments
from tests.helpers.paths import ROOT
from tests.helpers.tiny_models import new_declared_tiny_model, save_tiny_model

# A tokenizer of another model: more words than the tiny models' corpus.
OTHER_CORPUS = ["colourless green ideas sleep furiously", "time flies like an arrow", "fruit flies like a banana"]
# The registered model types whose new parsers start from a pretrained BERT (their training recipe's arguments are
# `PretrainedEncoderArguments`): training saves each with the encoder's tokenizer.
ON_A_PRETRAINED_ENCODER = [
    model_type
    for model_type, spec in MODEL_SPECS.items()
    if spec.training is not None and issubclass(spec.training_recipe().arguments, PretrainedEncoderArguments)
]


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("checks") / "tiny", max_position_embeddings=16)


def copy_of(folder, tmp_path, name="copy"):
    copy = tmp_path / name
    shutil.copytree(folder, copy)
    return copy


def edit_config(folder, **settings):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **settings}))


def parse_command(folder):
    """`hf-structure parse --model FOLDER "A sentence."`, as a user types it."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env.update(PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    command = [sys.executable, "-m", "hf_structure.cli", "parse", "--model", str(folder), "A sentence."]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


# --- the tokenizer against the config ------------------------------------------------------------------------------


def test_another_models_tokenizer_is_refused_at_the_command_line_in_one_line(tiny_folder, tmp_path):
    folder = copy_of(tiny_folder, tmp_path)
    other = build_word_tokenizer(OTHER_CORPUS)
    other.save_pretrained(folder)
    vocab_size = json.loads((folder / "config.json").read_text())["vocab_size"]
    assert len(other) > vocab_size
    result = parse_command(folder)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"hf-structure parse: {folder}: tokenizer.json does not match config.json: the tokenizer has {len(other)} "
        f"tokens, config.json's vocab_size is {vocab_size} (is it another model's tokenizer?)\n"
    )


def test_a_special_token_at_another_id_than_the_config_records_is_refused(tiny_folder, tmp_path):
    folder = copy_of(tiny_folder, tmp_path)
    edit_config(folder, mask_token_id=2)  # the tokenizer's <mask> is 1 (<unk> is 2)
    message = (
        f"{folder}: tokenizer.json does not match config.json: config.json's mask_token_id is 2, the tokenizer's "
        "mask token '<mask>' is 1 (is it another model's tokenizer?)"
    )
    for load in (check_model_folder, load_model_and_tokenizer, load_parser):
        with pytest.raises(ModelFolderError) as error:
            load(str(folder))
        assert str(error.value) == message


def test_a_tokenizer_smaller_than_the_embedding_passes(tmp_path):
    """An embedding may have spare rows (a vocabulary padded to a round size); only more tokens than rows is wrong."""
    model, tokenizer = new_declared_tiny_model("r2d2")
    assert len(tokenizer) < model.config.vocab_size
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    check_model_folder(tmp_path)


def test_a_caller_that_gives_its_own_tokenizer_is_not_checked_against_the_folders(tiny_folder, tmp_path):
    folder = copy_of(tiny_folder, tmp_path)
    build_word_tokenizer(OTHER_CORPUS).save_pretrained(folder)
    check_model_folder(folder, tokenizer=False)


@pytest.mark.parametrize("name", sorted(bundled_checkpoints()))
def test_every_bundled_model_passes(name):
    check_model_folder(bundled_checkpoints()[name])


@pytest.mark.parametrize("model_type", ON_A_PRETRAINED_ENCODER)
def test_tiny_supervised_parsers_as_saved_pass(model_type, bert_folder, tmp_path):
    """A new parser as training makes it, over the tiny BERT (`training.parser.new_parser`)."""
    from hf_structure.training.parser import new_parser
    from tests.helpers.tiny_treebank import DEPRELS, SENTENCES

    arguments = MODEL_SPECS[model_type].training_recipe().arguments(encoder=str(bert_folder))
    model, tokenizer = new_parser(model_type, arguments, SENTENCES, DEPRELS)
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    check_model_folder(tmp_path)


# --- the config against the weights --------------------------------------------------------------------------------


def test_a_config_wider_than_the_weights_is_refused_at_the_command_line_in_one_line(tiny_folder, tmp_path):
    folder = copy_of(tiny_folder, tmp_path)
    edit_config(folder, hidden_size=64)  # the weights are 32 wide
    result = parse_command(folder)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"hf-structure parse: {folder}: config.json does not match model.safetensors: "
        "structformer.embed_positions.weight is [16, 32] there, [16, 64] by the config (hidden_size 64?)\n"
    )


def test_a_config_that_does_not_match_the_weights_is_refused_by_every_loading_path(tiny_folder, tmp_path, capfd):
    folder = copy_of(tiny_folder, tmp_path)
    vocab_size = json.loads((folder / "config.json").read_text())["vocab_size"]
    edit_config(folder, vocab_size=vocab_size + 3)
    message = (
        f"{folder}: config.json does not match model.safetensors: output_bias is [{vocab_size}] there, "
        f"[{vocab_size + 3}] by the config (vocab_size {vocab_size + 3}?)"
    )
    for load in (check_model_folder, load_model_and_tokenizer, load_parser):
        with pytest.raises(ModelFolderError) as error:
            load(str(folder))
        assert str(error.value) == message
    assert "LOAD REPORT" not in capfd.readouterr().err


def test_a_mismatch_no_single_setting_explains_names_the_weight_alone(tiny_folder, tmp_path):
    folder = copy_of(tiny_folder, tmp_path)
    edit_config(folder, hidden_size=64, intermediate_size=128)
    with pytest.raises(ModelFolderError) as error:
        check_model_folder(folder)
    assert str(error.value) == (
        f"{folder}: config.json does not match model.safetensors: "
        "structformer.embed_positions.weight is [16, 32] there, [16, 64] by the config"
    )


def test_an_invalid_config_is_named_by_its_file(tiny_folder, tmp_path):
    folder = copy_of(tiny_folder, tmp_path)
    edit_config(folder, hidden_size=30)  # not a multiple of its 4 heads
    with pytest.raises(ModelFolderError) as error:
        check_model_folder(folder)
    assert str(error.value) == (
        f"{folder / 'config.json'}: hidden_size (30) must be a multiple of num_attention_heads (4)"
    )
