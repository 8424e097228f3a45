"""Files of constituency trees: JSON lines with `words` and `spans` (the output of `hf-structure parse --json`, the
cache of a teacher model, `../shared/teachers/`), read into a table from a sentence's words to its tree."""

import json
from pathlib import Path

from ..structs.trees import Span


class TreesFileError(ValueError):
    """A trees file that cannot be read, or a sentence it holds no tree for; the message names the file and its line
    or the sentence."""


def read_trees_file(path: str | Path) -> dict[tuple[str, ...], list[Span]]:
    """Each sentence's tree (its spans), by its words; a sentence that occurs twice keeps the file's first tree of
    it. Raises TreesFileError naming the file line of a bad record (not JSON, no words or spans, a span that is not
    two whole numbers or lies outside its words)."""
    trees: dict[tuple[str, ...], list[Span]] = {}
    try:
        with open(path, encoding="utf-8") as stream:
            for number, line in enumerate(stream, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    words = tuple(record["words"])
                    spans = [_span(span) for span in record["spans"]]
                except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
                    raise TreesFileError(f"{path}, line {number}: not a tree with words and spans ({error})") from None
                outside = [span for span in spans if not 0 <= span[0] < span[1] <= len(words)]
                if outside:
                    raise TreesFileError(f"{path}, line {number}: span {outside[0]} outside its {len(words)} words")
                trees.setdefault(words, spans)
    except OSError as error:
        raise TreesFileError(f"cannot read trees file {path}: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise TreesFileError(f"{path}: not UTF-8 text ({error.reason})") from None
    return trees


def _span(value) -> Span:
    start, end = value
    if not all(isinstance(bound, int) and not isinstance(bound, bool) for bound in (start, end)):
        raise ValueError(f"span {value!r}: its bounds must be whole numbers")
    return start, end
