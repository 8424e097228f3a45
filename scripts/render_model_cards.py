#!/usr/bin/env python
"""Render the model card of every shipped checkpoint and check it against the files that hold it.

A shipped checkpoint's card lives twice: as the checkpoint folder's `README.md` (what `export` and the Hub read) and
as `modeling_cards/<short name>.md` at the top of the repository (where a reader finds every card together). Both
must be what `hf_structure.hub.render_model_card` makes of the checkpoint's records and its model type's template
today, so a changed template, record or renderer shows as a stale card.

    python scripts/render_model_cards.py          # check: list the stale cards, exit 1 if any
    python scripts/render_model_cards.py --fix    # rewrite them
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

CARDS_DIR = Path(__file__).resolve().parents[1] / "modeling_cards"


def card_files() -> dict[Path, str]:
    """Each file that holds a shipped checkpoint's card -> the card as rendered now."""
    import hf_structure  # noqa: F401  (registers the models)
    from hf_structure.bundled import bundled_checkpoints
    from hf_structure.hub import render_model_card

    files = {}
    for name, folder in sorted(bundled_checkpoints().items()):
        card = str(render_model_card(folder))
        files[folder / "README.md"] = card
        files[CARDS_DIR / f"{name}.md"] = card
    return files


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fix", action="store_true", help="rewrite the stale cards")
    args = parser.parse_args(argv)
    files = card_files()
    stale = [path for path, card in files.items() if not path.is_file() or path.read_text(encoding="utf-8") != card]
    kept = {path.name for path in files if path.parent == CARDS_DIR}
    unknown = sorted(path for path in CARDS_DIR.glob("*.md") if path.name not in kept)
    if args.fix:
        CARDS_DIR.mkdir(exist_ok=True)
        for path in stale:
            path.write_text(files[path], encoding="utf-8")
        for path in unknown:
            path.unlink()
        print(f"{len(stale)} card(s) rewritten, {len(unknown)} removed")
        return 0
    for path in stale:
        print(f"stale: {path}")
    for path in unknown:
        print(f"no shipped checkpoint has this card: {path}")
    if stale or unknown:
        print("run `python scripts/render_model_cards.py --fix`", file=sys.stderr)
        return 1
    print(f"{len(files)} card files current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
