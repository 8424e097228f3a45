"""A Griffe extension (mkdocs.yml, mkdocstrings' `extensions`): doctest examples written in a docstring's text show
as Python console blocks.

The package's docstrings put `>>>` examples in their prose, not in an `Examples:` section; Markdown would read them
as nested block quotes, and their outputs (`[...][0]`) as cross-references that do not exist.
"""

import griffe

DOCTEST = ">>>"


def fenced_doctests(text: str) -> str:
    """`text` with each run of lines from a `>>>` line to the next blank line fenced as a `pycon` block."""
    lines, in_example = [], False
    for line in text.splitlines():
        if not in_example and line.lstrip().startswith(DOCTEST):
            lines.append("```pycon")
            in_example = True
        elif in_example and not line.strip():
            lines.append("```")
            in_example = False
        lines.append(line)
    if in_example:
        lines.append("```")
    return "\n".join(lines)


class DoctestBlocks(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        docstring = obj.docstring
        if docstring is not None and DOCTEST in docstring.value and "Examples:" not in docstring.value:
            docstring.value = fenced_doctests(docstring.value)
