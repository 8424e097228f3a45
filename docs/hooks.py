"""MkDocs hooks (mkdocs.yml `hooks:`): what the site shows from outside docs/, as it is in the repository.

- The training records (`records/`, kept apart from the user documentation) become pages under `records/`, each
  folder's scripts and command files beside its README, so that the docs link to them as to any page.
- A page whose front matter names `model_card: <checkpoint>` ends with that checkpoint's card, read from
  `modeling_cards/<checkpoint>.md` (rendered from the checkpoint's records; `make check` keeps it current). The
  card's Hub metadata block is left out, its title becomes "Model card: `<checkpoint>`" and its headings go one
  level down, under the page's own title.
"""

import re
from pathlib import Path

from mkdocs.structure.files import File
from mkdocs.utils.meta import get_data

ROOT = Path(__file__).resolve().parent.parent
HEADING = re.compile(r"^#{1,5} ")
FENCE = re.compile(r"^(```|~~~)")


def on_files(files, config):
    for path in sorted((ROOT / "records").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            uri = path.relative_to(ROOT).as_posix()
            files.append(File(uri, str(ROOT), config["site_dir"], config["use_directory_urls"]))
    return files


def on_page_markdown(markdown, page, config, files):
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
