"""What every gold treebank reader gives, whatever its format: `GoldSentence`, `TreebankFormatError`, and
`content_heads` (heads over the words scored without punctuation). The readers are `treebanks` (PTB `.mrg` / `.dp`)
and `conllu_format` (CoNLL-U); both build on this module, so neither needs the other."""

from dataclasses import dataclass, field

from ..structs.trees import Span

# PTB part-of-speech tags of punctuation (left out of the scored words).
PUNCTUATION_TAGS = frozenset({"''", "``", ",", ".", ":", "-LRB-", "-RRB-", "#", "$"})


class TreebankFormatError(ValueError):
    """A treebank file that cannot be read; the message names the file and line."""


class NoSentenceToScoreError(TreebankFormatError):
    """A treebank with no sentence left once punctuation is set aside (empty, or punctuation alone): scored with its
    punctuation (a CoNLL-U file, by a parser that attaches punctuation), it may still have some."""


@dataclass
class GoldSentence:
    """One gold sentence after cleaning.

    `words`/`tags` are the scored words (no traces, no punctuation); `spans` the unlabelled gold constituents
    (two or more words, not the whole sentence); `labelled_spans` maps each such span to its labels (function tags
    stripped; all labels of a collapsed unary chain). `heads` (1-based over `words`, 0 = root) when a dependency
    file was read: heads that were punctuation are walked up to the nearest non-punctuation ancestor, so a tree
    whose root is punctuation (e.g. `$` in a few WSJ sentences) gives several root words, as the reference scorer
    counts them; `deprels` when the gold has dependency labels (CoNLL-U); `source` is `file:line`;
    `repeated_whole_span` when two or more constituents of the cleaned tree cover all its words (a unary chain at
    the top, e.g. `(S (VP ...))` once an empty subject is removed): the compound-PCFG scorer drops one
    whole-sentence span per tree, so its gold keeps the other (see `metrics.compound_pcfg_gold`).
    """

    words: list[str]
    tags: list[str]
    spans: set[Span]
    labelled_spans: dict[Span, set[str]] = field(default_factory=dict)
    heads: list[int] | None = None
    deprels: list[str] | None = None
    source: str = ""
    repeated_whole_span: bool = False


def content_heads(tags: list[str], heads: list[int], punctuation: frozenset[str] = PUNCTUATION_TAGS) -> list[int]:
    """Heads over the non-punctuation tokens only (1-based among them, 0 = root). A head that is punctuation is
    replaced by its nearest non-punctuation ancestor. `punctuation`: the tags that mark punctuation (PTB's by
    default; `{"PUNCT"}` for UD's UPOS)."""
    keep = [tag not in punctuation for tag in tags]
    new_index: dict[int, int] = {}
    for old, kept in enumerate(keep, start=1):
        if kept:
            new_index[old] = len(new_index) + 1
    result = []
    for old, kept in enumerate(keep, start=1):
        if not kept:
            continue
        head = heads[old - 1]
        while head != 0 and not keep[head - 1]:
            head = heads[head - 1]
        result.append(0 if head == 0 else new_index[head])
    return result
