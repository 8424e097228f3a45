"""A model folder that cannot load as a parser gets one clear error naming the folder and what is wrong, the same
through `load_model_and_tokenizer`, `load_parser`, `transformers.pipeline` and the command line (`check_model_folder`),
before transformers loads anything."""

import json
import re
import shutil
from pathlib import Path

import pytest

from hf_structure.bundled import ModelFolderError, check_model_folder, load_model_and_tokenizer
from hf_structure.pipelines import TASK, load_parser
from tests.helpers.tiny_models import save_tiny_model


@pytest.fixture(scope="module")
def good_folder(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("folders") / "tiny")


def broken_copy(good_folder, tmp_path, breakage: str):
    """A copy of the tiny model folder with one thing wrong; the message the error must hold."""
    folder = tmp_path / breakage
    shutil.copytree(good_folder, folder)
    if breakage == "no-tokenizer":  # as the g2gtr-ewt and arc-hybrid-ewt folders name their tokenizer
        (folder / "tokenizer.json").unlink()
        tokenizer_config = json.loads((folder / "tokenizer_config.json").read_text())
        tokenizer_config["tokenizer_class"] = "BertTokenizer"
        (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
        return folder, rf"{folder} has no tokenizer: tokenizer.json is missing \(nor vocab.txt"
    if breakage == "no-sentencepiece-tokenizer":  # as the structformer-ptb folder names its tokenizer
        (folder / "tokenizer.json").unlink()
        return folder, f"{folder} has no tokenizer: tokenizer.json is missing"
    if breakage == "truncated-weights":
        weights = folder / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
        return folder, f"{weights}: not a complete safetensors file .* download or export the model again"
    if breakage in ("width-not-a-number", "layers-as-a-string"):
        name, value = ("hidden_size", "abc") if breakage == "width-not-a-number" else ("num_hidden_layers", "4")
        config = json.loads((folder / "config.json").read_text())
        config[name] = value
        (folder / "config.json").write_text(json.dumps(config))
        return folder, rf"{folder / 'config.json'}: {name} must be an integer, got '{value}'"
    if breakage == "missing-tensor":  # the parser head's first weight gone: it would load at random, parse nonsense
        from safetensors.torch import load_file, save_file

        weights = load_file(folder / "model.safetensors")
        del weights["structformer.parser.distance_out.weight"]
        save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
        return folder, (
            f"{folder}: model.safetensors lacks structformer.parser.distance_out.weight, a weight of the "
            "StructFormer(Model|ForMaskedLM) that config.json describes"
        )
    if breakage == "unknown-model-type":
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, "model_type": "no-such-model"}))
        return folder, (
            f"{folder / 'config.json'}: model type 'no-such-model' is not one hf_structure registers "
            r"\(.*structformer.*\).*trust_remote_code=True"
        )
    if breakage == "no-model-type":
        config = json.loads((folder / "config.json").read_text())
        del config["model_type"]
        (folder / "config.json").write_text(json.dumps(config))
        return folder, f"{folder / 'config.json'}: no model_type"
    if breakage == "no-config":
        (folder / "config.json").unlink()
        return folder, f"{folder} has no config.json"
    if breakage == "no-weights":
        (folder / "model.safetensors").unlink()
        return folder, rf"{folder} has no weights \(model.safetensors or pytorch_model.bin\)"
    if breakage == "missing-shard":  # sharded weights whose index names a file that is not there
        (folder / "model.safetensors").rename(folder / "model-00001-of-00002.safetensors")
        weight_map = {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}
        (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
        return folder, f"{folder} lacks model-00002-of-00002.safetensors, a part of its weights"
    raise AssertionError(breakage)


BREAKAGES = [
    "no-tokenizer",
    "no-sentencepiece-tokenizer",
    "truncated-weights",
    "unknown-model-type",
    "no-model-type",
    "no-config",
    "no-weights",
    "missing-shard",
    "width-not-a-number",
    "layers-as-a-string",
    "missing-tensor",
]


@pytest.mark.parametrize("breakage", BREAKAGES)
def test_a_broken_folder_is_refused_by_every_loading_path(good_folder, tmp_path, breakage, capsys):
    """The package's ways to a model (the CLI's: the next test); transformers' own `pipeline` and Auto classes load
    as transformers does, since importing hf_structure changes nothing of them."""
    folder, message = broken_copy(good_folder, tmp_path, breakage)
    with pytest.raises(ModelFolderError, match=message):
        load_model_and_tokenizer(str(folder))
    with pytest.raises(ModelFolderError, match=message):
        load_parser(str(folder))
    assert "[y/N]" not in capsys.readouterr().out  # no custom-code question


@pytest.mark.parametrize("breakage", BREAKAGES)
def test_the_command_line_gives_one_line_and_status_1(good_folder, tmp_path, breakage, capsys):
    from hf_structure import cli

    folder, message = broken_copy(good_folder, tmp_path, breakage)
    treebank = tmp_path / "one.conllu"
    treebank.write_text("1\tdogs\t_\t_\t_\t_\t2\tnsubj\t_\t_\n2\tbark\t_\t_\t_\t_\t0\troot\t_\t_\n\n")
    for command in (
        ["parse", "--model", str(folder), "a dog ran"],
        ["evaluate", "--model", str(folder), "--treebank", str(treebank)],
    ):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(command)
        text = str(exit_info.value.code)  # SystemExit(message): Python prints it on stderr and exits with 1
        assert text.startswith(f"hf-structure {command[0]}: ") and "\n" not in text
        assert re.search(message, text), text
    assert capsys.readouterr().out == ""


def test_a_config_setting_of_the_wrong_type_is_named_by_from_pretrained_too(good_folder, tmp_path):
    """Loading without the folder check (the Auto classes, or a folder's own code with trust_remote_code=True) names
    the setting, not `"abc" % 4`'s "not all arguments converted during string formatting"."""
    from transformers import AutoConfig, AutoModel

    folder, _ = broken_copy(good_folder, tmp_path, "width-not-a-number")
    for load in (AutoConfig.from_pretrained, AutoModel.from_pretrained):
        with pytest.raises(ValueError, match=r"^hidden_size must be an integer, got 'abc'$"):
            load(folder)


def test_a_folder_without_the_masked_lm_head_parses_but_is_no_language_model(good_folder, tmp_path):
    """The pipeline loads AutoModel, which has no masked-LM head: a folder saved from it parses. Evaluation loads the
    parsing class, whose head gives the perplexity: there, a missing one would be random, so it is refused."""
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "base-model"
    shutil.copytree(good_folder, folder)
    weights = load_file(folder / "model.safetensors")
    del weights["output_bias"]
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    assert load_parser(str(folder))("a dog ran")[0]["spans"]
    message = f"{folder}: model.safetensors lacks output_bias, a weight of the StructFormerForMaskedLM"
    with pytest.raises(ModelFolderError, match=f"^{message}"):
        load_model_and_tokenizer(str(folder))


def test_a_good_folder_passes_and_a_hub_id_is_left_to_the_hub(good_folder):
    check_model_folder(good_folder)
    check_model_folder("some-org/some-model")  # not a folder here: nothing is read, no network


def test_the_folder_check_allows_remote_code_when_trusted(good_folder, tmp_path):
    folder = tmp_path / "custom"
    shutil.copytree(good_folder, folder)
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="someone-elses-model", auto_map={"AutoModel": "modeling_x.XModel"})
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelFolderError, match="trust_remote_code=True"):
        check_model_folder(folder)
    check_model_folder(folder, trust_remote_code=True)


def test_a_caller_that_gives_its_own_tokenizer_needs_none_in_the_folder(good_folder, tmp_path):
    from transformers import AutoTokenizer, pipeline

    folder = tmp_path / "no-tokenizer"
    shutil.copytree(good_folder, folder)
    (folder / "tokenizer.json").unlink()
    parser = pipeline(TASK, model=str(folder), tokenizer=AutoTokenizer.from_pretrained(good_folder))  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    assert parser(["a", "dog", "ran"], is_split_into_words=True)["words"] == ["a", "dog", "ran"]


@pytest.mark.parametrize(
    "model, field, value, kind",
    [
        ("arc-hybrid-ewt", "lstm_layers", "2", "an integer"),
        ("g2gtr-ewt", "hidden_dropout_prob", "high", "a number"),
        ("structformer-ptb", "relations", "parent", "a list"),
    ],
)
def test_a_wrongly_typed_setting_of_any_bundled_model_is_named(model, field, value, kind, tmp_path):
    """The supervised parsers' strict configs raised StrictDataclassFieldValidationError (not a ValueError, so the
    command line printed a traceback); every model's config is checked the same way before loading."""
    from hf_structure.bundled import resolve_model_path

    folder = tmp_path / model
    folder.mkdir()
    config = json.loads((Path(resolve_model_path(model)) / "config.json").read_text())
    config[field] = value
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelFolderError, match=rf"config.json: {field} must be {kind}, got '{value}'"):
        check_model_folder(folder)
