#!/usr/bin/env python
"""Keep the generated copies in the package identical to their sources (as transformers' `make fix-copies`).

A Hub model folder must stand alone, so its code cannot import `hf_structure`: a model or pipeline file that needs a
shared function carries a copy, marked by the line above it,

    # Copied from hf_structure.structs.decoding.eisner
    def eisner(...):

and this script regenerates every marked top-level function or class from its source. The code files of the bundled
checkpoints (`checkpoints/<name>/*.py`, written by `save_pretrained` so that a folder loads with remote code) are
whole-file copies of the model's sources and are regenerated the same way.

    python scripts/fix_copies.py          # check: list the copies that differ, exit 1 if any
    python scripts/fix_copies.py --fix    # rewrite them
"""

import argparse
import ast
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "hf_structure"
MARKER = re.compile(r"^# Copied from hf_structure\.([\w.]+)\.(\w+)\s*$")


def _definition_lines(source: str, name: str) -> tuple[int, int] | None:
    """0-based [first, last) line range of the top-level function or class `name` (decorators included)."""
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            return first, node.end_lineno
    return None


def source_of(module: str, name: str) -> list[str]:
    """The lines of `hf_structure.<module>.<name>` as written in its source file."""
    path = PACKAGE.joinpath(*module.split(".")).with_suffix(".py")
    if not path.is_file():
        raise SystemExit(f"fix_copies: no source file {path} for hf_structure.{module}.{name}")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    found = _definition_lines("".join(lines), name)
    if found is None:
        raise SystemExit(f"fix_copies: {path} defines no top-level {name}")
    return lines[found[0] : found[1]]


def regenerated(path: Path) -> str:
    """The text `path` should have: every `# Copied from` block replaced by its source."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    markers = [(index, MARKER.match(line)) for index, line in enumerate(lines) if MARKER.match(line)]
    for index, match in reversed(markers):  # bottom-up, so earlier line numbers stay valid
        module, name = match.groups()
        tree = ast.parse("".join(lines))
        block = next(
            (
                node
                for node in tree.body
                if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                and min([node.lineno, *(d.lineno for d in node.decorator_list)]) == index + 2
            ),
            None,
        )
        if block is None or block.name != name:
            raise SystemExit(f"fix_copies: {path}:{index + 1}: the marker must stand right above `def {name}`")
        lines[index + 1 : block.end_lineno] = source_of(module, name)
    return "".join(lines)


def expected_files() -> dict[Path, str]:
    """Every file that holds generated code, with the text it should have."""
    expected = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "checkpoints" in path.relative_to(PACKAGE).parts:
            continue
        if any(MARKER.match(line) for line in path.read_text(encoding="utf-8").splitlines()):
            expected[path] = regenerated(path)
    for copy in sorted((PACKAGE / "checkpoints").glob("*/*.py")):
        sources = list((PACKAGE / "models").glob(f"*/{copy.name}"))
        if len(sources) != 1:
            raise SystemExit(f"fix_copies: {copy} matches {len(sources)} model source files")
        expected[copy] = expected.get(sources[0]) or sources[0].read_text(encoding="utf-8")
    return expected


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fix", action="store_true", help="rewrite the copies that differ")
    args = parser.parse_args(argv)
    expected = expected_files()
    stale = [path for path, text in expected.items() if path.read_text(encoding="utf-8") != text]
    if args.fix:
        for path in stale:
            path.write_text(expected[path], encoding="utf-8")
            print(f"fix_copies: rewrote {path.relative_to(PACKAGE.parents[1])}")
        return 0
    for path in stale:
        print(f"fix_copies: {path.relative_to(PACKAGE.parents[1])} differs from its sources")
    if stale:
        print("run `python scripts/fix_copies.py --fix`")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
