"""What a source file imports, read from its syntax tree: for the files that travel with a saved model folder and
so may import only what is there (the standard library, transformers)."""

import ast
from pathlib import Path


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports (`"re"`, `"collections.abc"`, `".word_tokenization"` for a relative one)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add("." * node.level + (node.module or ""))
    return imported


def called_names(path: Path) -> set[str]:
    """The plain names `path` calls (`__import__`, `exec`, `eval` would be back doors for imports)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
