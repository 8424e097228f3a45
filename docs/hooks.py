"""MkDocs hooks (mkdocs.yml `hooks:`): what the site shows from outside docs/, as it is in the repository.

- The training records (`records/`, kept apart from the user documentation) become pages under `records/`, each
  folder's scripts and command files beside its README, so that the docs link to them as to any page.
- A page whose front matter names `model_card: <checkpoint>` ends with that checkpoint's card, read from
  `modeling_cards/<checkpoint>.md` (rendered from the checkpoint's records; `make check` keeps it current). The
  card's Hub metadata block is left out, its title becomes "Model card: `<checkpoint>`" and its headings go one
  level down, under the page's own title.
- The Models section of the navigation lists every registered model's pages after `models/index.md`, and that page's
  models table is made where it says `<!-- models table -->`: both from the registered models and their checkpoints'
  records (`scripts/render_model_docs.py`, which also generates the page of a model that ships no checkpoint). What
  that script finds wrong (a shipped checkpoint without a page ...) is a warning, so `mkdocs build --strict` fails.
"""

import importlib.util
import posixpath
import re
import sys
from pathlib import Path

from mkdocs.plugins import get_plugin_logger
from mkdocs.structure.files import File
from mkdocs.utils.meta import get_data

ROOT = Path(__file__).resolve().parent.parent
HEADING = re.compile(r"^#{1,5} ")
FENCE = re.compile(r"^(```|~~~)")
MODELS_INDEX = "models/index.md"
TABLE_MARKER = "<!-- models table -->"

log = get_plugin_logger("hooks")
_spec = importlib.util.spec_from_file_location("render_model_docs", ROOT / "scripts" / "render_model_docs.py")
model_docs = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)  # its dataclass looks itself up there
_spec.loader.exec_module(model_docs)
# This build's model pages (`on_config` finds them; the later events read them).
model_pages = []


def on_config(config):
    pages, problems = model_docs.model_pages(Path(config["docs_dir"]))
    model_pages[:] = pages
    for problem in problems:
        log.warning(problem)
    section = next((entries for entries in _sections(config["nav"]) if MODELS_INDEX in entries), None)
    if section is None:
        log.warning(f"mkdocs.yml's nav has no section holding {MODELS_INDEX}: the model pages have no place in it")
        return config
    # `mkdocs serve` may run this again on the same nav: each page is listed once.
    section.extend(page.path for page in model_pages if page.path not in section)
    return config


def _sections(nav):
    """Every list of entries in the navigation, nested ones included."""
    if isinstance(nav, list):
        yield nav
        for entry in nav:
            yield from _sections(entry)
    elif isinstance(nav, dict):
        for entries in nav.values():
            yield from _sections(entries)


def on_files(files, config):
    for path in sorted((ROOT / "records").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            uri = path.relative_to(ROOT).as_posix()
            files.append(File(uri, str(ROOT), config["site_dir"], config["use_directory_urls"]))
    for page in model_pages:
        if page.markdown is not None:
            files.append(File.generated(config, page.path, content=page.markdown))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == MODELS_INDEX:
        if TABLE_MARKER not in markdown:
            log.warning(f"{MODELS_INDEX} has no line {TABLE_MARKER} where its models table goes")
        table = model_docs.models_table(model_pages, lambda path: posixpath.relpath(path, "models"))
        return markdown.replace(TABLE_MARKER, table)
    checkpoint = page.meta.get("model_card")
    if checkpoint is None:
        return markdown
    card, _ = get_data((ROOT / "modeling_cards" / f"{checkpoint}.md").read_text(encoding="utf-8"))
    lines, in_code = [], False
    for line in card.splitlines():
        if FENCE.match(line):
            in_code = not in_code
        elif not in_code and line.startswith("# "):  # the card's title, the checkpoint's name
            line = f"# Model card: `{line[2:].strip()}`"
        lines.append("#" + line if not in_code and HEADING.match(line) else line)
    return markdown.rstrip() + "\n\n" + "\n".join(lines) + "\n"
