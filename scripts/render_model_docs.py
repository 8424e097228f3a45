#!/usr/bin/env python
"""The documentation's model pages and models tables, made from the registered models and their checkpoints' records.

A shipped checkpoint's page is written by hand in `docs/models/` and names the checkpoint in its front matter
(`model_card: <short name>`); the site shows the checkpoint's card at its end. A registered model that ships no
checkpoint gets a page generated from its folder: its modeling module's docstring and what its spec declares.
`docs/hooks.py` puts every model's pages under Models in the site's navigation and the models table into
`docs/models/index.md` when the site is built; what it finds wrong here (a checkpoint no page shows, a page naming no
shipped checkpoint, a model with nothing to make its page from) is a warning, so `mkdocs build --strict` fails.

The README's models table (the shipped checkpoints) is this script's output, between two marker lines:

    python scripts/render_model_docs.py          # check: exit 1 if README.md's models table is stale
    python scripts/render_model_docs.py --fix    # rewrite it
"""

from __future__ import annotations

import argparse
import inspect
import posixpath
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import distributions
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TABLE_START = "<!-- models table: scripts/render_model_docs.py writes it from the checkpoints' records -->"
TABLE_END = "<!-- end of the models table -->"


@dataclass(frozen=True)
class ModelPage:
    """A page of the site's Models section: `path` relative to `docs/`, the model type it documents, the checkpoint
    whose card it ends with (None for a model that ships none), and a generated page's Markdown (None: written)."""

    path: str
    title: str
    model_type: str
    checkpoint: str | None
    markdown: str | None = None


def front_matter_and_title(text: str) -> tuple[dict, str | None]:
    """A Markdown page's YAML front matter ({} without one) and the text of its first level-1 heading."""
    meta: dict = {}
    if text.startswith("---\n"):
        block, _, text = text[4:].partition("\n---\n")
        meta = yaml.safe_load(block) or {}
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), None)
    return meta, title


def checkpoint_model_types() -> dict[str, str]:
    """Short name -> model type of every shipped checkpoint (its `config.json`), in the order of its name."""
    from hf_structure.bundled import bundled_checkpoints
    from hf_structure.hub.records import read_json

    return {
        name: read_json(folder / "config.json")["model_type"] for name, folder in sorted(bundled_checkpoints().items())
    }


def generated_page(spec) -> str | None:
    """The page of a model that ships no checkpoint, from its folder: its modeling module's docstring (None where it
    has none: nothing says what the model is), then what its spec declares."""
    description = inspect.getdoc(inspect.getmodule(spec.auto_classes[spec.parsing_class]))
    if not description:
        return None
    options = "; ".join(
        f"`{name}`: {', '.join(f'`{value}`' for value in values)}" for name, values in spec.parse_options.items()
    )
    training = (
        f"its recipe is `{spec.training}` ([training and fine-tuning](../training.md) says how to run it)"
        if spec.training
        else "it has no training recipe, so the training entries do not train it"
    )
    lines = [
        f"# {spec.config_class.__name__.removesuffix('Config')}",
        "",
        description,
        "",
        f"No checkpoint of this model ships with hf_structure; this page is made from its folder "
        f"(`{spec.config_class.__module__.rsplit('.', 1)[0]}`).",
        "",
        f"- Model type `{spec.model_type}`, loaded for parsing as `{spec.parsing_class}`.",
        f"- A parse holds `words` and {', '.join(f'`{key}`' for key in spec.parse_outputs)}.",
        f"- Options of `parse`: {options or 'none'}.",
        f"- Its card reports: {', '.join(metric.label for metric in spec.card_metrics)}.",
        f"- Training: {training}.",
    ]
    return "\n".join(lines) + "\n"


def model_pages(docs_dir: Path) -> tuple[list[ModelPage], list[str]]:
    """The pages of every registered model, in the order the models were registered (a model's pages in the order of
    their checkpoints' names), and what is wrong: a page of `docs/models/` that names no shipped checkpoint, a
    shipped checkpoint that no page names, a model without a checkpoint that has no docstring to make its page."""
    import hf_structure  # noqa: F401  (registers the models)
    from hf_structure.registry import MODEL_SPECS

    types = checkpoint_model_types()
    written: dict[str, ModelPage] = {}
    problems = []
    for path in sorted((docs_dir / "models").glob("*.md")):
        if path.name == "index.md":
            continue
        meta, title = front_matter_and_title(path.read_text(encoding="utf-8"))
        relative = path.relative_to(docs_dir).as_posix()
        checkpoint = meta.get("model_card")
        if checkpoint not in types:
            problems.append(
                f"docs/{relative}: its front matter's model_card ({checkpoint!r}) is not a shipped checkpoint "
                f"({', '.join(types)})"
            )
            continue
        written[checkpoint] = ModelPage(relative, title or path.stem, types[checkpoint], checkpoint)
    pages = []
    for model_type, spec in MODEL_SPECS.items():
        checkpoints = [name for name, checkpoint_type in types.items() if checkpoint_type == model_type]
        for name in checkpoints:
            if name in written:
                pages.append(written[name])
            else:
                problems.append(
                    f"the shipped checkpoint {name} ({model_type}) has no page: write one in docs/models/ whose front "
                    f"matter names it (`model_card: {name}`)"
                )
        if checkpoints:
            continue
        markdown = generated_page(spec)
        if markdown is None:
            problems.append(
                f"the registered model {model_type} has no page: it ships no checkpoint, and its modeling module has "
                "no docstring to make its page from"
            )
            continue
        title = markdown.splitlines()[0][2:]
        pages.append(ModelPage(f"models/{model_type.replace('_', '-')}.md", title, model_type, None, markdown))
    return pages, problems


def _checkpoint_cell(name: str) -> str:
    """The checkpoint and where it comes from: the main package, or the package that installs it."""
    from hf_structure.bundled import CHECKPOINTS_DIR, ENTRY_POINT_GROUP, bundled_checkpoints

    if bundled_checkpoints()[name].is_relative_to(CHECKPOINTS_DIR):
        return f"`{name}` (bundled)"
    package = next(
        dist.metadata["Name"]
        for dist in distributions()
        if any(entry.group == ENTRY_POINT_GROUP and entry.name == name for entry in dist.entry_points)
    )
    return f"`{name}` (package `{package}`)"


def _scores_cell(name: str, spec) -> tuple[str, str]:
    """The data a checkpoint's evaluation record was measured on, and each score its card reports, from the record."""
    from hf_structure.bundled import bundled_checkpoints
    from hf_structure.hub.records import EVAL_RECORD, read_record

    record = read_record(bundled_checkpoints()[name], EVAL_RECORD)
    scores = [
        f"{metric.label} {'not measured' if record.get(metric.key) is None else format(record[metric.key], '.2f')}"
        for metric in spec.card_metrics
    ]
    return record.get("dataset", ""), "<br>".join(scores)


def models_table(pages: list[ModelPage], link: Callable[[str], str]) -> str:
    """The Markdown table of `pages`: a row per page, its checkpoint with the data and scores of its evaluation
    record (the scores its card reports); `link` turns a page's path (relative to `docs/`) into the link to it."""
    from hf_structure.registry import model_spec

    rows = ["| model | checkpoint | evaluated on | scores |", "|---|---|---|---|"]
    for page in pages:
        model = f"[{page.title}]({link(page.path)})"
        if page.checkpoint is None:
            rows.append(f"| {model} | none ships | | |")
            continue
        dataset, scores = _scores_cell(page.checkpoint, model_spec(page.model_type))
        rows.append(f"| {model} | {_checkpoint_cell(page.checkpoint)} | {dataset} | {scores} |")
    return "\n".join(rows)


def readme_with_models_table(readme: str) -> str:
    """`readme` with the table between its marker lines made again: the shipped checkpoints, linked to their pages."""
    if TABLE_START not in readme or TABLE_END not in readme:
        raise ValueError(f"README.md lacks the models table's marker lines: {TABLE_START!r} and {TABLE_END!r}")
    before, rest = readme.split(TABLE_START, 1)
    _, after = rest.split(TABLE_END, 1)
    pages, _ = model_pages(ROOT / "docs")
    shipped = [page for page in pages if page.checkpoint is not None]
    table = models_table(shipped, lambda path: posixpath.join("docs", path))
    return f"{before}{TABLE_START}\n{table}\n{TABLE_END}{after}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fix", action="store_true", help="rewrite README.md's models table")
    args = parser.parse_args(argv)
    current = README.read_text(encoding="utf-8")
    made = readme_with_models_table(current)
    if made == current:
        print("README.md's models table is current")
        return 0
    if args.fix:
        README.write_text(made, encoding="utf-8")
        print("README.md's models table rewritten")
        return 0
    print(f"stale: {README}'s models table")
    print("run `python scripts/render_model_docs.py --fix`", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
