"""What shared code asks of a model, shown two ways.

A model defined outside the package (tests/helpers/tiny_parser.py, with its own config and training recipe) goes
through the pipeline, the CLI's `parse` and `evaluate`, the parser training entry, bundling and a Hub export without
any change to shared code: its `MODEL_SPEC` (tests/helpers/tiny_parser_spec.py), registered.

Every registered model type goes through the checks below on the tiny models its spec declares
(`ModelSpec.tiny_models`): a saved folder passes the folder checks and parses at the command line, exports with its
card and parses the same as remote code, and its training recipe is one a training entry takes (the parse contract
and options: tests/pipelines/test_parse_options.py). A model added as CONTRIBUTING says is tested without editing
this file (tests/test_adding_a_model.py)."""

import json
import subprocess
import sys

import pytest

from hf_structure import model_spec, register_model
from hf_structure.configuration_utils import StructureConfig
from hf_structure.data.tokenization import build_word_tokenizer
from hf_structure.registry import MODEL_SPECS
from tests.helpers.paths import FIXTURES, ROOT
from tests.helpers.scripts import load_script
from tests.helpers.tiny_models import declared_tiny_models, save_declared_tiny_model
from tests.helpers.tiny_parser import TinyParserConfig, TinyParserModel
from tests.helpers.tiny_parser_spec import MODEL_SPEC

SENTENCES = ["the dog ran .", "a man sat on the bench"]


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    register_model(MODEL_SPEC)
    import torch

    folder = tmp_path_factory.mktemp("tiny")
    tokenizer = build_word_tokenizer(SENTENCES)
    torch.manual_seed(0)
    TinyParserModel(TinyParserConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id)).save_pretrained(
        folder
    )
    tokenizer.save_pretrained(folder)
    return folder


def test_the_pipeline_serves_a_new_model_and_applies_its_punctuation_policy(tiny_folder):
    from transformers import pipeline

    parser = pipeline("unsupervised-parsing", model=str(tiny_folder))  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    (result,) = parser("the dog ran.")
    assert result["words"] == ["the", "dog", "ran", "."]
    assert len(result["heads"]) == 4 and result["heads"][0] == 0  # policy "keep": the model saw the period
    assert result["deprels"] == ["root", "dep", "dep", "dep"]
    assert "spans" not in result and "tree" not in result  # the model gives no constituents
    batch = parser([["a", "man"], ["the", "dog", "ran"]], batch_size=2)
    assert [len(r["heads"]) for r in batch] == [2, 3]


def test_cli_parse_and_evaluate_a_new_model(tiny_folder, tmp_path, capsys):
    from hf_structure import cli

    (tmp_path / "in.txt").write_text("the dog ran .\n\na man sat\n")
    cli.main(
        [
            "parse",
            "--model",
            str(tiny_folder),
            "--pretokenized",
            "--input",
            str(tmp_path / "in.txt"),
            "--output",
            str(tmp_path / "out.jsonl"),
        ]
    )
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [line["words"] for line in lines] == [["the", "dog", "ran", "."], [], ["a", "man", "sat"]]
    assert set(lines[0]) == {"words", "heads", "deprels"}

    cli.main(
        [
            "evaluate",
            "--model",
            str(tiny_folder),
            "--treebank",
            str(FIXTURES / "tiny.conllu"),
            "--record",
            "--dataset-name",
            "two sentences",
        ]
    )
    scores = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert scores["sentences"] == 2 and scores["valid_trees"] == 100.0
    assert {"uas", "uuas", "las"} <= set(scores) and "sentence_f1" not in scores and "uas_argmax" not in scores
    assert scores["las"] <= scores["uas"]
    record = json.loads((tiny_folder / "hf_structure_eval.json").read_text())
    assert record["dataset"] == "two sentences" and record["uas"] == scores["uas"]


def test_evaluate_record_prints_the_scores_first_and_a_record_it_cannot_write_is_one_line(
    tiny_folder, tmp_path, capsys
):
    import shutil

    from hf_structure import cli

    folder = tmp_path / "model"
    shutil.copytree(tiny_folder, folder)
    (folder / "hf_structure_eval.json").unlink(missing_ok=True)
    (folder / "hf_structure_eval.json").mkdir()  # a record that cannot be written (whoever runs the test)
    unwritable = r"--record: cannot write .*hf_structure_eval.json: .*\(the scores are above\)"
    with pytest.raises(SystemExit, match=unwritable):
        cli.main(["evaluate", "--model", str(folder), "--treebank", str(FIXTURES / "tiny.conllu"), "--record"])
    scores = json.loads(capsys.readouterr().out)  # printed before recording was tried
    assert scores["sentences"] == 2 and "uas" in scores
    # Refused before any work: a Hub id has no folder to write into, and a missing folder is named as such.
    with pytest.raises(SystemExit, match="org/some-model is not a local folder"):
        cli.main(["evaluate", "--model", "org/some-model", "--treebank", str(FIXTURES / "tiny.conllu"), "--record"])
    with pytest.raises(SystemExit):
        cli.main(
            ["evaluate", "--model", str(folder / "missing"), "--treebank", str(FIXTURES / "tiny.conllu"), "--record"]
        )
    assert f"no model folder {folder / 'missing'}: it does not exist" in capsys.readouterr().err


def test_a_new_model_exports_with_its_own_card_and_loads_as_remote_code(tiny_folder, tmp_path):
    from hf_structure import cli
    from hf_structure.hub import TRAINING_RECORD, export_model_folder
    from hf_structure.hub.records import write_json

    cli.main(["evaluate", "--model", str(tiny_folder), "--treebank", str(FIXTURES / "tiny.conllu"), "--record"])
    write_json(
        tiny_folder / TRAINING_RECORD,
        {"command": "python train_tiny.py", "wall_time_s": 60, "machine": "x", "steps": 1, "epochs": 1},
    )
    out = export_model_folder(tiny_folder, tmp_path / "export", repo_id="org/tiny")
    card = (out / "README.md").read_text()
    assert "# tiny" in card and 'AutoModel.from_pretrained("org/tiny"' in card and "| LAS |" in card
    assert (out / "tiny_parser.py").is_file() and (out / "unsupervised_parsing.py").is_file()
    # Where neither hf_structure nor nltk can be imported, the folder parses through its own remote code.
    code = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('hf_structure', 'nltk', 'tests'):
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
from transformers import pipeline
parser = pipeline(model={str(out)!r}, trust_remote_code=True)
print(parser('the dog ran.')[0]['words'])
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "['the', 'dog', 'ran', '.']"


def test_a_new_model_trains_evaluates_bundles_and_exports_through_the_shared_entries(tiny_folder, tmp_path):
    from transformers import pipeline

    from hf_structure.hub import export_model_folder
    from hf_structure.training.parser import main as train_parser

    treebank = FIXTURES / "tiny.conllu"
    train = tmp_path / "train.conllu"
    train.write_text((treebank.read_text().strip() + "\n\n") * 4)
    run = tmp_path / "run"
    arguments = [
        "--model_type",
        "tiny-test-parser",
        "--tiny_width",
        "6",
        "--train_file",
        str(train),
        "--validation_file",
        str(treebank),
        "--max_steps",
        "4",
        "--per_device_train_batch_size",
        "2",
        "--learning_rate",
        "0.1",
        "--eval_strategy",
        "steps",
        "--eval_steps",
        "2",
        "--save_steps",
        "2",
        "--use_cpu",
        "--report_to",
        "none",
        "--remove_unused_columns",
        "false",
        "--disable_tqdm",
        "true",
        "--output_dir",
        str(run),
    ]
    trainer = train_parser(arguments, default_model_type="g2gtr")
    state = json.loads((run / "trainer_state.json").read_text())
    assert state["global_step"] == 4 and json.loads((run / "config.json").read_text())["hidden_size"] == 6
    dev_scores = [entry for entry in state["log_history"] if "parse_uas" in entry]
    assert [entry["step"] for entry in dev_scores] == [2, 4] and all("parse_las" in entry for entry in dev_scores)
    assert {"eval_loss", "eval_parse_uas", "eval_parse_las"} <= set(trainer.evaluate())  # the Trainer's eval_ keys

    bundle_parser = load_script("bundle_parser")
    bundled = tmp_path / "bundled"
    bundle_parser.main(
        [
            "--run",
            str(run),
            "--output",
            str(bundled),
            "--dev",
            str(treebank),
            "--test",
            str(treebank),
            "--dataset",
            "two sentences",
            "--allow-changed",
            "2",
        ]
    )
    training = json.loads((bundled / "hf_structure_training.json").read_text())
    assert training["steps"] == 4 and "(every sentence once an epoch)" in training["train_data"]
    assert training["notes"].startswith("weights stored as: half precision")  # the first storage within --allow-changed
    assert json.loads((bundled / "hf_structure_eval.json").read_text())["sentences"] == 2
    assert pipeline("unsupervised-parsing", model=str(bundled))("the dog ran .")[0]["heads"][0] == 0  # type: ignore[call-overload]  # transformers' overloads name only its own tasks

    exported = export_model_folder(bundled, tmp_path / "export", repo_id="org/tiny-trained")
    assert (exported / "tiny_parser.py").is_file() and "| LAS |" in (exported / "README.md").read_text()


def test_no_shared_file_names_the_tiny_model():
    """The tiny model trains, bundles and exports with shared code that does not know it."""
    names = ("tiny-test-parser", "tiny_parser", "TinyParser", "entry-point-test-parser", "entry_point_parser")
    files = [
        path
        for folder in ("src", "scripts")
        for path in (ROOT / folder).rglob("*")
        if path.is_file() and path.suffix in (".py", ".json", ".md", ".txt", ".sh")
    ]
    naming = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in files
        for name in names
        if name in path.read_text(errors="replace")
    ]
    assert naming == []


def test_training_recipes_are_imported_only_to_train():
    """`import hf_structure` (parsing, export) imports no training module, and no model's Hub code imports one."""
    code = "import sys, hf_structure; print(sorted(m for m in sys.modules if '.training' in m))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "[]", run.stderr[-2000:]
    models = ROOT / "src" / "hf_structure" / "models"
    hub_code = [
        path
        for pattern in ("*/modeling_*.py", "*/modular_*.py", "*/configuration_*.py")
        for path in models.glob(pattern)
    ]
    importing = [
        path.name
        for path in hub_code
        for line in path.read_text().splitlines()
        if line.lstrip().startswith(("from ", "import ")) and "training" in line
    ]
    assert hub_code and importing == []


# ---------------------------------------------------------------------------------------------------------------
# Every registered model type, on the tiny models its spec declares.

TINY_MODELS = declared_tiny_models()
PACKAGE_MODEL_TYPES = [
    model_type for model_type, spec in MODEL_SPECS.items() if spec.config_class.__module__.startswith("hf_structure.")
]
WORDS = ["the", "old", "man", "sat", "on", "the", "bench", "."]


@pytest.fixture(scope="module")
def tiny_folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-models")
    return {name: save_declared_tiny_model(name, root / name) for name in TINY_MODELS}


@pytest.mark.parametrize("model_type", PACKAGE_MODEL_TYPES)
def test_each_model_type_of_the_package_declares_tiny_models_of_its_own(model_type):
    """The shared tests run a model type through its tiny models: one that declared none would go untested."""
    names = [tiny.name for tiny in model_spec(model_type).tiny_models]
    others = [tiny.name for spec in MODEL_SPECS.values() if spec.model_type != model_type for tiny in spec.tiny_models]
    assert names, f"{model_type}: its ModelSpec declares no tiny_models"
    assert len(set(names)) == len(names) and not set(names) & set(others), f"{model_type}: {names} among {others}"


@pytest.mark.parametrize("name", TINY_MODELS)
def test_each_tiny_model_saves_a_folder_that_passes_the_checks_and_parses_at_the_command_line(
    name, tiny_folders, tmp_path
):
    from hf_structure import cli
    from hf_structure.bundled import check_model_folder

    spec, _ = TINY_MODELS[name]
    check_model_folder(tiny_folders[name])
    out = tmp_path / "out.jsonl"
    cli.main(["parse", "--model", str(tiny_folders[name]), "--output", str(out), "The old man sat on the bench."])
    (line,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert line["words"] == ["The", *WORDS[1:]]
    assert set(spec.parse_outputs) - {"scores"} <= set(line)  # scores only when asked for (--scores)


@pytest.mark.parametrize("name", TINY_MODELS)
def test_each_tiny_model_exports_with_its_card_and_parses_the_same_without_hf_structure(name, tiny_folders, tmp_path):
    import shutil

    from transformers import pipeline

    from hf_structure.hub import EVAL_RECORD, TRAINING_RECORD, export_model_folder
    from hf_structure.hub.records import write_json
    from tests.helpers.remote_code import parse_without_hf_structure

    spec, _ = TINY_MODELS[name]
    folder = shutil.copytree(tiny_folders[name], tmp_path / name)
    write_json(folder / EVAL_RECORD, {"dataset": "two sentences", **{metric.key: 50.0 for metric in spec.card_metrics}})
    write_json(folder / TRAINING_RECORD, {"command": "x", "wall_time_s": 1, "machine": "x", "steps": 1, "epochs": 1})
    out = export_model_folder(folder, tmp_path / "export", repo_id=f"org/{name}")
    card = (out / "README.md").read_text()
    assert f"# {name}" in card and all(f"| {metric.label} |" in card for metric in spec.card_metrics)
    code_classes = [spec.config_class, *spec.auto_classes.values()]
    assert all((out / f"{cls.__module__.rsplit('.', 1)[-1]}.py").is_file() for cls in code_classes)
    sentences = [WORDS, ["a", "dog", "ran"]]
    expected = pipeline("unsupervised-parsing", model=str(out))(sentences, is_split_into_words=True)  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    assert parse_without_hf_structure(out, sentences, tmp_path, is_split_into_words=True) == expected


@pytest.mark.parametrize("name", TINY_MODELS)
def test_each_tiny_model_s_saved_folder_is_a_parsing_pipeline_without_hf_structure(name, tiny_folders, tmp_path):
    """`model.save_pretrained` and the tokenizer's, no export: the folder holds the pipeline's code and its config.json
    names it, so `pipeline(model=folder, trust_remote_code=True)` parses where hf_structure cannot be imported as the
    installed pipeline does."""
    from hf_structure.configuration_utils import PIPELINE_FILES
    from hf_structure.pipelines import load_parser
    from tests.helpers.remote_code import parse_without_hf_structure

    folder = tiny_folders[name]
    assert all((folder / file).is_file() for file in PIPELINE_FILES)
    sentences = [WORDS, ["a", "dog", "ran"]]
    expected = load_parser(str(folder))(sentences, is_split_into_words=True)
    assert parse_without_hf_structure(folder, sentences, tmp_path, is_split_into_words=True) == expected


@pytest.mark.parametrize("model_type", [model_type for model_type, spec in MODEL_SPECS.items() if spec.training])
def test_each_model_type_s_training_recipe_is_one_a_training_entry_takes(model_type):
    from hf_structure.training import LanguageModelTraining, ParserTraining

    assert isinstance(model_spec(model_type).training_recipe(), (LanguageModelTraining, ParserTraining))


class WrongAutoMapConfig(TinyParserConfig):
    """A config whose `default_auto_map` names another model class than its spec's (and a class it has not)."""

    model_type = "wrong-auto-map-test-parser"
    default_auto_map = {
        "AutoConfig": "test_model_contract.WrongAutoMapConfig",
        "AutoModel": "tiny_parser.TinyParserModel",
        "AutoModelForMaskedLM": "test_model_contract.WrongAutoMapModel",
    }


class WrongAutoMapModel(TinyParserModel):
    config_class = WrongAutoMapConfig


class NoAutoMapConfig(StructureConfig):
    """A config that names no class: it keeps `StructureConfig`'s empty `default_auto_map`."""

    model_type = "no-auto-map-test-parser"


class NoAutoMapModel(TinyParserModel):
    config_class = NoAutoMapConfig


def test_a_config_whose_default_auto_map_is_not_the_spec_s_classes_is_not_registered():
    from hf_structure import ModelSpec

    for config_class, model_class, mismatch in (
        (
            WrongAutoMapConfig,
            WrongAutoMapModel,
            "AutoModel is 'tiny_parser.TinyParserModel', not 'test_model_contract.WrongAutoMapModel'; "
            "AutoModelForMaskedLM is not among them",
        ),
        (
            NoAutoMapConfig,
            NoAutoMapModel,
            "AutoConfig ('test_model_contract.NoAutoMapConfig') is missing; "
            "AutoModel ('test_model_contract.NoAutoMapModel') is missing",
        ),
    ):
        spec = ModelSpec(
            config_class=config_class,
            auto_classes={"AutoModel": model_class},
            parsing_class="AutoModel",
            card_metrics=(),
        )
        with pytest.raises(ValueError) as error:
            register_model(spec)
        assert str(error.value) == (
            f"{config_class.model_type}: {config_class.__name__}.default_auto_map does not name the spec's "
            f"auto_classes and the config class: {mismatch}"
        )
        assert config_class.model_type not in MODEL_SPECS
