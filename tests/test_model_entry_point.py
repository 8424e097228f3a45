"""A model that lives in another installed package joins through the `hf_structure.models` entry point: the test
builds that package (the tiny test parser under another model type, its spec and card template beside it), installs
it with pip into a folder of its own, and uses it from a fresh interpreter that has only that folder added."""

import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.helpers.paths import FIXTURES, ROOT

MODEL_TYPE = "entry-point-test-parser"


def _write_package(folder):
    """The package's source: modeling.py (the tiny parser's code, renamed), __init__.py (its MODEL_SPEC) and
    model_card.md beside them, and a pyproject.toml that declares the entry point."""
    code = folder / "entry_point_parser"
    code.mkdir(parents=True)
    modeling = (ROOT / "tests" / "helpers" / "tiny_parser.py").read_text()
    (code / "modeling.py").write_text(modeling.replace('"tiny-test-parser"', f'"{MODEL_TYPE}"'))
    shutil.copy(FIXTURES / "tiny_card.md", code / "model_card.md")
    (code / "__init__.py").write_text(
        textwrap.dedent("""
        from hf_structure import CardMetric, ModelSpec

        from .modeling import TinyParserConfig, TinyParserModel

        MODEL_SPEC = ModelSpec(
            config_class=TinyParserConfig,
            auto_classes={"AutoModel": TinyParserModel},
            parsing_class="AutoModel",
            card_metrics=(CardMetric("uas", "UAS", "Unlabelled attachment score"),
                          CardMetric("las", "LAS", "Labelled attachment score")),
        )
    """)
    )
    (folder / "pyproject.toml").write_text(
        textwrap.dedent("""
        [build-system]
        requires = ["setuptools>=64"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "entry-point-parser"
        version = "0.1"

        [project.entry-points."hf_structure.models"]
        entry-point-parser = "entry_point_parser:MODEL_SPEC"

        [tool.setuptools]
        packages = ["entry_point_parser"]

        [tool.setuptools.package-data]
        entry_point_parser = ["model_card.md"]
    """)
    )


def _run(code: str, site, cwd):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "PYTHONPATH": f"{site}:{ROOT / 'src'}", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The installed package: a folder as `pip install --target` leaves it (code and its .dist-info)."""
    source, site = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("site")
    _write_package(source)
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    return site


def test_a_model_from_another_package_parses_evaluates_and_exports(site, tmp_path):
    code = f"""
        import json, sys
        import hf_structure
        from hf_structure import cli, model_spec
        from hf_structure.data.tokenization import build_word_tokenizer
        from hf_structure.hub import export_model_folder
        from hf_structure.hub.records import write_json
        from transformers import AutoModel, pipeline

        spec = model_spec({MODEL_TYPE!r})
        config_class = spec.config_class
        tokenizer = build_word_tokenizer(["the dog ran .", "a man sat"])
        folder = "model"
        spec.auto_classes["AutoModel"](config_class(vocab_size=len(tokenizer))).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        assert type(AutoModel.from_pretrained(folder)).__module__ == "entry_point_parser.modeling"
        (parse,) = pipeline("unsupervised-parsing", model=folder)("the dog ran.")
        cli.main(["evaluate", "--model", folder, "--treebank", {str(FIXTURES / "tiny.conllu")!r}, "--record"])
        write_json(folder + "/hf_structure_training.json",
                   {{"command": "python train.py", "wall_time_s": 60, "machine": "x", "steps": 1, "epochs": 1}})
        exported = export_model_folder(folder, "export", repo_id="org/entry")
        print(json.dumps({{"parse": parse, "card": (exported / "README.md").read_text(),
                          "files": sorted(p.name for p in exported.iterdir()),
                          "template": str(spec.card_template_path)}}))
    """
    run = _run(code, site, tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["parse"]["words"] == ["the", "dog", "ran", "."] and len(result["parse"]["heads"]) == 4
    assert result["template"] == str(site / "entry_point_parser" / "model_card.md")  # beside the model, installed
    assert "A tiny test parser" in result["card"] and "| LAS |" in result["card"]
    assert "modeling.py" in result["files"]  # the model's own code travels as remote code


def test_a_broken_model_package_is_left_out_with_a_warning_and_the_others_work(site, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(site, broken)
    shutil.rmtree(broken / "entry_point_parser")  # a half-removed install: its entry point names a missing module
    code = f"""
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import hf_structure
        from hf_structure.registry import MODEL_SPECS
        print([str(w.message) for w in caught if "entry-point-parser" in str(w.message)])
        print({MODEL_TYPE!r} in MODEL_SPECS, "structformer" in MODEL_SPECS)
    """
    run = _run(code, broken, tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    warned, registered = run.stdout.strip().splitlines()[-2:]
    assert "model 'entry-point-parser' (entry_point_parser:MODEL_SPEC) is not available" in warned
    assert registered == "False True"
