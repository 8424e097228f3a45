"""Readers for gold treebanks: PTB `.mrg` constituency files, `.dp` dependency files (CoNLL-U: `conllu_format`).

Cleaning follows the scoring conventions of the data README: `-NONE-` elements and punctuation are removed,
unary chains collapse, and the gold spans kept for unlabelled F1 are those of two or more words other than the
whole sentence. Errors name the file and line.
"""

import re
from collections.abc import Iterator
from pathlib import Path

import nltk

from ..structs.trees import Span, check_heads
from .conllu_format import read_conllu_gold
from .gold import PUNCTUATION_TAGS, GoldSentence, NoSentenceToScoreError, TreebankFormatError, content_heads

EVALUATED_LABELS = ("NP", "VP", "PP", "SBAR", "ADJP", "ADVP")


def _base_label(label: str) -> str:
    if label.startswith("-"):  # -NONE-, -LRB-
        return label
    return re.split(r"[-=]", label)[0]


def _clean(tree: nltk.Tree) -> nltk.Tree | None:
    """Remove traces and punctuation, then empty constituents; None when nothing is left."""
    if isinstance(tree[0], str):  # a pre-terminal (TAG word)
        return None if tree.label() == "-NONE-" or tree.label() in PUNCTUATION_TAGS else tree
    children = [c for c in (_clean(child) for child in tree) if c is not None]
    return nltk.Tree(tree.label(), children) if children else None


def _shape_problem(tree: nltk.Tree) -> str | None:
    """Why `tree` is not a PTB tree (each word the only child of its tag, every other node made of subtrees)."""
    for node in tree.subtrees():
        if not len(node):
            return f"empty constituent ({node.label()})"
        if len(node) > 1 and any(isinstance(child, str) for child in node):
            return f"({node.label()} ...) mixes words with other children"
    return None


def _gold_spans(tree: nltk.Tree) -> tuple[list[str], list[str], dict[Span, set[str]]]:
    words, tags = [], []
    labelled: dict[Span, set[str]] = {}

    def walk(node: nltk.Tree, start: int) -> int:
        if isinstance(node[0], str):
            words.append(node[0])
            tags.append(node.label())
            return start + 1
        end = start
        for child in node:
            end = walk(child, end)
        # Unary chains collapse: nodes over the same words are one span carrying every label of the chain.
        labelled.setdefault((start, end), set()).add(_base_label(node.label()))
        return end

    walk(tree, 0)
    n = len(words)
    labelled = {span: labels for span, labels in labelled.items() if span[1] - span[0] > 1 and span != (0, n)}
    return words, tags, labelled


def _split_bracketed(text: str, source: str) -> Iterator[tuple[int, str]]:
    """Top-level bracketed trees of a file with their starting line numbers."""
    depth, start, start_line, line = 0, None, 0, 1
    for index, char in enumerate(text):
        if char == "\n":
            line += 1
        elif char == "(":
            if depth == 0:
                start, start_line = index, line
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise TreebankFormatError(f"{source}:{line}: unbalanced brackets: ')' with no matching '('")
            if depth == 0:
                yield start_line, text[start : index + 1]
        elif depth == 0 and not char.isspace():
            raise TreebankFormatError(f"{source}:{line}: text outside any bracketed tree: {char!r}")
    if depth:
        raise TreebankFormatError(f"{source}:{start_line}: unbalanced brackets: tree never closed ({depth} open)")


def read_mrg(path: str | Path) -> list[GoldSentence]:
    """Gold sentences of a PTB `.mrg` file (several trees per file, each wrapped in an unlabelled bracket)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"treebank file not found: {path}")
    sentences = []
    for line, text in _split_bracketed(path.read_text(encoding="utf-8-sig"), str(path)):
        try:
            tree = nltk.Tree.fromstring(text, remove_empty_top_bracketing=True)
        except ValueError as error:
            raise TreebankFormatError(f"{path}:{line}: malformed tree: {error}") from error
        if isinstance(tree, str) or not len(tree):
            raise TreebankFormatError(f"{path}:{line}: empty tree")
        problem = _shape_problem(tree)
        if problem:
            raise TreebankFormatError(f"{path}:{line}: malformed tree: {problem}")
        cleaned = _clean(tree)
        if cleaned is None:
            continue  # a sentence of punctuation and traces only has no scored word
        words, tags, labelled = _gold_spans(cleaned)
        # A root with a single child over two or more words: that child covers the whole sentence too.
        repeated = len(cleaned) == 1 and len(words) > 1
        sentences.append(
            GoldSentence(words, tags, set(labelled), labelled, source=f"{path}:{line}", repeated_whole_span=repeated)
        )
    return sentences


def read_dp(path: str | Path) -> list[tuple[list[str], list[str], list[int], int]]:
    """Blocks of a `.dp` file (`word TAB POS TAB head`, blank line between sentences) as (words, tags, heads,
    first line), all tokens kept (punctuation included)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"dependency file not found: {path}")
    blocks: list[tuple[list[str], list[str], list[int], int]] = []
    words: list[str] = []
    tags: list[str] = []
    heads: list[int] = []
    first = 0
    lines = path.read_text(encoding="utf-8-sig").split("\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            if words:
                blocks.append((words, tags, heads, first))
                words, tags, heads = [], [], []
            continue
        columns = raw.split("\t")
        if len(columns) != 3 or not columns[2].strip().lstrip("-").isdigit():
            raise TreebankFormatError(f"{path}:{number}: expected 'word<TAB>POS<TAB>head', got {raw!r}")
        if not words:
            first = number
        words.append(columns[0])
        tags.append(columns[1])
        heads.append(int(columns[2]))
    if words:
        blocks.append((words, tags, heads, first))
    for _, _, heads, first in blocks:
        try:
            check_heads(heads)
        except ValueError as error:
            raise TreebankFormatError(f"{path}:{first}: {error}") from error
    return blocks


def read_treebank(directory: str | Path) -> list[GoldSentence]:
    """Gold sentences of a folder with `mrg/` (required) and `dp/` (optional, same file stems, same sentences),
    or of a CoNLL-U file (dependencies only, see `read_conllu_gold`).

    With `dp/`, each sentence also gets its gold heads over the scored words; a `.dp` block whose words differ
    from the `.mrg` tree's raises a TreebankFormatError naming both places, and so does a treebank with no sentence
    to score.
    """
    directory = Path(directory)
    if not directory.exists():
        raise FileNotFoundError(f"treebank not found: {directory}")
    if directory.suffix == ".conllu":
        return _some_sentence(read_conllu_gold(directory), directory)
    mrg_dir, dp_dir = directory / "mrg", directory / "dp"
    if not mrg_dir.is_dir():
        raise FileNotFoundError(f"{directory} has no mrg/ folder of .mrg files")
    files = sorted(mrg_dir.glob("*.mrg"))
    if not files:
        raise FileNotFoundError(f"{mrg_dir} holds no .mrg file")
    sentences = []
    for mrg_path in files:
        gold = read_mrg(mrg_path)
        dp_path = dp_dir / (mrg_path.stem + ".dp")
        if dp_dir.is_dir():
            blocks = read_dp(dp_path)
            blocks = [b for b in blocks if any(tag not in PUNCTUATION_TAGS for tag in b[1])]
            if len(blocks) != len(gold):
                raise TreebankFormatError(
                    f"{dp_path}: {len(blocks)} sentences with words, but {mrg_path} has {len(gold)}"
                )
            for sentence, (words, tags, heads, line) in zip(gold, blocks):
                kept = [w for w, t in zip(words, tags) if t not in PUNCTUATION_TAGS]
                if kept != sentence.words:
                    raise TreebankFormatError(
                        f"{dp_path}:{line}: words {' '.join(kept)!r} disagree with the tree at {sentence.source} "
                        f"({' '.join(sentence.words)!r})"
                    )
                sentence.heads = content_heads(tags, heads)
        sentences.extend(gold)
    return _some_sentence(sentences, directory)


def _some_sentence(sentences: list[GoldSentence], source: Path) -> list[GoldSentence]:
    """`sentences`, or a NoSentenceToScoreError naming the treebank when it holds none to score (an empty file, or
    sentences of punctuation alone): scoring nothing would end in an error that names no file."""
    if not sentences:
        raise NoSentenceToScoreError(f"{source}: no sentence with a word to score (empty, or punctuation only)")
    return sentences
