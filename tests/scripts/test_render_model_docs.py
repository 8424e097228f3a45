"""The documentation's model pages and models tables (scripts/render_model_docs.py): each shipped checkpoint has its
written page and a row with its record's scores, a registered model that ships none gets a page made from its folder,
what is missing is named (and fails `mkdocs build --strict`), and the README's table is current, a stale one failing
the check until `--fix` makes it again."""

import dataclasses
import importlib.util
import inspect
import os
import shutil
import subprocess
import sys
import types

import pytest

from hf_structure.bundled import bundled_checkpoints
from hf_structure.hub.cards import folder_model_spec
from hf_structure.hub.records import EVAL_RECORD, read_record
from hf_structure.registry import MODEL_SPECS
from tests.helpers import tiny_parser
from tests.helpers.paths import ROOT
from tests.helpers.tiny_parser_spec import MODEL_SPEC as TINY_PARSER_SPEC

DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("render_model_docs", ROOT / "scripts" / "render_model_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def test_the_readme_s_models_table_is_current(script, capsys):
    assert script.main([]) == 0, capsys.readouterr()


def test_each_shipped_checkpoint_has_its_written_page_and_a_row_with_the_scores_its_card_reports(script):
    pages, problems = script.model_pages(DOCS)
    assert problems == []
    written = [page for page in pages if page.checkpoint is not None]
    assert sorted(page.checkpoint for page in written) == sorted(bundled_checkpoints())
    assert all(page.markdown is None and (DOCS / page.path).is_file() for page in written)
    rows = script.models_table(pages, str).splitlines()
    for name, folder in bundled_checkpoints().items():
        (row,) = [row for row in rows if f"`{name}`" in row]
        record = read_record(folder, EVAL_RECORD)
        assert record["dataset"] in row
        for metric in folder_model_spec(folder).card_metrics:
            value = record[metric.key]
            assert f"{metric.label} {'not measured' if value is None else format(value, '.2f')}" in row


def test_a_model_that_ships_no_checkpoint_gets_a_page_made_from_its_folder_and_a_row(script, monkeypatch):
    monkeypatch.setitem(MODEL_SPECS, TINY_PARSER_SPEC.model_type, dataclasses.replace(TINY_PARSER_SPEC, training=None))
    pages, problems = script.model_pages(DOCS)
    assert problems == []
    (page,) = [page for page in pages if page.model_type == TINY_PARSER_SPEC.model_type]
    assert page.checkpoint is None and page.path == "models/tiny-test-parser.md"
    assert inspect.getdoc(tiny_parser) in page.markdown
    assert "it has no training recipe, so the training entries do not train it" in page.markdown
    assert f"| [{page.title}](models/tiny-test-parser.md) | none ships | | |" in script.models_table(pages, str)
    with_recipe = script.generated_page(TINY_PARSER_SPEC)
    assert f"its recipe is `{TINY_PARSER_SPEC.training}`" in with_recipe


def test_a_checkpoint_without_a_page_a_page_of_no_checkpoint_and_a_model_with_nothing_to_show_are_named(
    script, tmp_path, monkeypatch
):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS / "models", docs / "models")
    pages, _ = script.model_pages(DOCS)
    removed = next(page for page in pages if page.checkpoint is not None)
    (docs / removed.path).unlink()
    (docs / "models" / "retired.md").write_text("---\nmodel_card: retired-model\n---\n\n# Retired\n")
    # A model whose modeling module says nothing of it.
    undocumented = types.ModuleType("undocumented_model")
    monkeypatch.setitem(sys.modules, undocumented.__name__, undocumented)
    parser_class = type("UndocumentedParser", (tiny_parser.TinyParserModel,), {"__module__": undocumented.__name__})
    spec = dataclasses.replace(TINY_PARSER_SPEC, auto_classes={"AutoModel": parser_class})
    monkeypatch.setitem(MODEL_SPECS, spec.model_type, spec)

    _, problems = script.model_pages(docs)
    assert len(problems) == 3
    assert "docs/models/retired.md: its front matter's model_card ('retired-model') is not a shipped" in problems[0]
    assert problems[1].startswith(f"the shipped checkpoint {removed.checkpoint} ({removed.model_type}) has no page")
    assert problems[2].startswith(f"the registered model {spec.model_type} has no page")


def test_the_site_does_not_build_with_strict_when_a_shipped_checkpoint_has_no_page(script, tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra (MkDocs) is not installed")
    site = tmp_path / "repository"
    for name in ("docs", "records", "modeling_cards", "scripts"):
        shutil.copytree(ROOT / name, site / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "mkdocs.yml", site / "mkdocs.yml")
    os.symlink(ROOT / "src", site / "src")  # read by the API pages, never written
    pages, _ = script.model_pages(DOCS)
    removed = next(page for page in pages if page.checkpoint is not None)
    (site / "docs" / removed.path).unlink()
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=site,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode != 0
    assert f"the shipped checkpoint {removed.checkpoint} ({removed.model_type}) has no page" in built.stderr


def test_a_stale_readme_table_fails_the_check_and_fix_makes_only_it_again(script, tmp_path, monkeypatch, capsys):
    current = (ROOT / "README.md").read_text(encoding="utf-8")
    table = current.split(script.TABLE_START, 1)[1].split(script.TABLE_END, 1)[0]
    stale = current.replace(table, "\n" + "\n".join(table.strip().splitlines()[:-1]) + "\n")
    readme = tmp_path / "README.md"
    readme.write_text(stale, encoding="utf-8")
    monkeypatch.setattr(script, "README", readme)
    assert script.main([]) == 1
    assert f"stale: {readme}'s models table" in capsys.readouterr().out
    assert script.main(["--fix"]) == 0 and script.main([]) == 0
    assert readme.read_text(encoding="utf-8") == current
