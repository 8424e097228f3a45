"""CoNLL-U, read and written in this one place with the `conllu` library: gold treebanks in, parses out.

Reading keeps the word lines (multiword-token and empty-node lines are skipped) and checks that the heads form a
tree; errors name the file (or source) and line. Writing gives one sentence block per parse, with `# sent_id` and
`# text` comments when they are known. The pipeline's Hub copy cannot import `conllu`, so it returns parses and
leaves the format to this module (`hf-structure parse --conllu`, or `parses_to_conllu` on the pipeline's results).
A CoNLL-U file to be parsed again (`hf-structure parse --input FILE.conllu`) is read sentence by sentence as it
streams (`read_conllu_sentences`: its own words, its lines kept) and written back with the parse's heads and labels
in place (`conllu_with_parse`).
"""

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from ..structs.trees import check_heads
from .gold import GoldSentence, TreebankFormatError, content_heads

UNIVERSAL_PUNCTUATION = frozenset({"PUNCT"})


# ------------------------------------------------------------------------------------------------------- reading


def parse_conllu(text: str, source: str = "<text>") -> list[dict]:
    """Sentences of CoNLL-U `text` as dicts with `words`, `upos`, `xpos` (None where `_`), `feats` (`feats_string`),
    `heads` (0 = root), `deprels`, `id` (`sent_id` or index), `line` (where the sentence's block begins). Errors name
    `source` and the line: a row without 10 columns, a malformed row or a word without head the row's; heads that are
    no tree the sentence's first."""
    from conllu.models import Token
    from conllu.parser import DEFAULT_FIELDS, parse_comment_line, parse_line

    sentences: list[dict] = []
    line = 1
    for block in text.split("\n\n"):
        block_line = line + (len(block) - len(block.lstrip("\n")))
        line += block.count("\n") + 2
        metadata: dict[str, str | None] = {}
        tokens: list[tuple[int, Token]] = []  # (line number, token) of the word rows (integer ID)
        # Row by row with the `conllu` library's own line parsers (what `conllu.parse` runs on a block), so that an
        # error names its row.
        for number, row in enumerate(block.lstrip("\n").split("\n"), start=block_line):
            row = row.strip()
            if not row:
                continue
            try:
                if row.startswith("#"):
                    metadata.update(parse_comment_line(row))
                    continue
                columns = len(row.split("\t"))
                if columns != 10:
                    raise TreebankFormatError(
                        f"{source}:{number}: expected 10 tab-separated columns, got {columns}: {row[:60]!r}"
                    )
                token = parse_line(row, DEFAULT_FIELDS)
            except TreebankFormatError:
                raise
            except Exception as error:  # conllu raises several exception types for malformed rows
                raise TreebankFormatError(f"{source}:{number}: malformed CoNLL-U: {error}") from error
            if isinstance(token["id"], int):
                tokens.append((number, token))
        if not tokens:
            continue  # a comment-only block (e.g. a line `hf-structure parse` could not parse)
        headless = next((number for number, token in tokens if token["head"] is None), None)
        if headless is not None:
            raise TreebankFormatError(f"{source}:{headless}: a word has no head")
        heads = [token["head"] for _, token in tokens]
        try:
            check_heads(heads)
        except ValueError as error:
            raise TreebankFormatError(f"{source}:{block_line}: {error}") from error
        sentences.append(
            {
                "id": metadata.get("sent_id", str(len(sentences))),
                "words": [token["form"] for _, token in tokens],
                "upos": [token["upos"] for _, token in tokens],
                "xpos": [token["xpos"] for _, token in tokens],
                "feats": [feats_string(token["feats"]) for _, token in tokens],
                "heads": heads,
                "deprels": [token["deprel"] for _, token in tokens],
                "line": block_line,
            }
        )
    return sentences


def feats_string(feats: dict | None) -> str:
    """A word's FEATS as CoNLL-U writes it, features in UD's order (by name, case-insensitive), `_` for none: the
    one string a model's FEATS tagger predicts."""
    if not feats:
        return "_"
    return "|".join(f"{name}={value}" for name, value in sorted(feats.items(), key=lambda item: item[0].lower()))


def read_conllu(path: str | Path) -> list[dict]:
    """Sentences of a CoNLL-U file, as `parse_conllu`; errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"CoNLL-U file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark is not text
    except UnicodeDecodeError as error:
        raise TreebankFormatError(f"{path}: not UTF-8 text (byte {error.start})") from None
    return parse_conllu(text, str(path))


def read_conllu_gold(path: str | Path) -> list[GoldSentence]:
    """Dependency-only gold sentences of a CoNLL-U file, cleaned like the `.dp` files: words tagged `PUNCT` are
    removed and heads that were punctuation are walked up to the nearest kept ancestor. `spans` stay empty (no
    constituency gold); sentences that are all punctuation are skipped."""
    sentences = []
    for sentence in read_conllu(path):
        if all(tag == "PUNCT" for tag in sentence["upos"]):
            continue
        kept = [i for i, t in enumerate(sentence["upos"]) if t != "PUNCT"]
        sentences.append(
            GoldSentence(
                words=[sentence["words"][i] for i in kept],
                tags=[sentence["upos"][i] for i in kept],
                spans=set(),
                heads=content_heads(sentence["upos"], sentence["heads"], UNIVERSAL_PUNCTUATION),
                deprels=[sentence["deprels"][i] for i in kept],
                source=f"{path}:{sentence['line']}",
            )
        )
    return sentences


# ------------------------------------------------------------------------------------ parsing a CoNLL-U file again


class ConlluSentence(NamedTuple):
    """A sentence block of a CoNLL-U file to be parsed with its own (gold) tokenisation: its lines as read
    (comments, word lines, multiword-token ranges, empty nodes; no line ends), the line number of the first, and the
    FORM of each word line (integer ID) in order: the words to parse. `metadata` holds the comments as the `conllu`
    library reads them (`sent_id`, `text` ...). A block of comments alone has no words."""

    line: int
    lines: list[str]
    words: list[str]
    metadata: dict


def read_conllu_sentences(lines: Iterable[str], source: str = "<text>") -> Iterator[ConlluSentence]:
    """The sentence blocks of CoNLL-U `lines` (a file's lines, line ends allowed), one at a time as they are read,
    so a file of any size streams. Each line is read by the `conllu` library's own line parsers (so multiword
    tokens and empty nodes are what it makes of them); HEAD and DEPREL may be `_` (the file is to be parsed). Every
    error (not 10 tab-separated columns, a value `conllu` cannot read, word IDs that are not 1, 2, 3 ...) is a
    TreebankFormatError naming `source` and the line."""
    block: list[str] = []
    first = 0
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if line.strip():
            first = first or number
            block.append(line)
        elif block:
            yield _conllu_sentence(block, first, source)
            block, first = [], 0
    if block:
        yield _conllu_sentence(block, first, source)


def _conllu_sentence(block: list[str], first: int, source: str) -> ConlluSentence:
    from conllu.parser import DEFAULT_FIELDS, ParseException, parse_comment_line, parse_line

    metadata: dict[str, str | None] = {}
    words: list[str] = []
    for number, line in enumerate(block, start=first):
        try:
            if line.startswith("#"):
                metadata.update(parse_comment_line(line))
                continue
            columns = line.count("\t") + 1
            if columns != 10:
                raise ParseException(f"expected 10 tab-separated columns, got {columns}: {line[:60]!r}")
            token = parse_line(line, DEFAULT_FIELDS)
        except ParseException as error:
            raise TreebankFormatError(f"{source}:{number}: {error}") from None
        if isinstance(token["id"], int):
            if token["id"] != len(words) + 1:
                raise TreebankFormatError(
                    f"{source}:{number}: word ID {token['id']} where {len(words) + 1} was "
                    "expected (the words of a sentence are numbered 1, 2, 3 ...)"
                )
            words.append(token["form"])
    return ConlluSentence(first, block, words, metadata)


# The CoNLL-U columns (0-based) of the word tags a parse may hold (a model with taggers): `conllu_with_parse` writes
# the parse's over the input's, the other columns but HEAD, DEPREL and DEPS staying as they were read.
TAG_COLUMNS = {3: "upos", 4: "xpos", 5: "feats"}


def conllu_with_parse(sentence: ConlluSentence, parse: dict | None = None, error: str | None = None) -> str:
    """The sentence block as it was read, ending in a blank line, with HEAD and DEPREL of each word line from
    `parse` (labels as `parse_to_conllu` gives them), every other column and line (comments, multiword tokens)
    unchanged, but for the input's enhanced graph: no model here gives one, and the input's would disagree with the
    new tree, so DEPS is `_` on each word line and the empty nodes (`3.1`, nodes of the enhanced graph alone) are
    left out. Without a parse (a sentence that could not be parsed: `error`, written as an `# error` comment after
    the others) HEAD, DEPREL and DEPS are `_`, so that no value of the input passes for a parse."""
    if parse is not None:
        heads = parse["heads"]
        deprels = parse.get("deprels") or ["root" if head == 0 else "dep" for head in heads]
        if len(heads) != len(sentence.words):
            raise ValueError(f"{len(sentence.words)} words but {len(heads)} heads")
    from conllu.parser import ID_DOT_ID, ID_SINGLE

    lines, word = [], 0
    for line in sentence.lines:
        columns = line.split("\t")
        if not line.startswith("#") and ID_DOT_ID.fullmatch(columns[0]):  # an empty node
            continue
        if not line.startswith("#") and ID_SINGLE.fullmatch(columns[0]):  # a word line, not a range
            for column, name in TAG_COLUMNS.items():  # the model's tags replace the input's, where it gives them
                if parse is not None and name in parse:
                    columns[column] = parse[name][word]
            columns[6:9] = (str(heads[word]), deprels[word], "_") if parse is not None else ("_", "_", "_")
            word += 1
            line = "\t".join(columns)
        lines.append(line)
    if error is not None:  # after the comments, before the first token line
        comments = next((k for k, line in enumerate(lines) if not line.startswith("#")), len(lines))
        lines.insert(comments, "# error = " + " ".join(error.split()))
    return "".join(line + "\n" for line in lines) + "\n"


# ------------------------------------------------------------------------------------------------------- writing


def parse_to_conllu(
    parse: dict, sent_id: str | int | None = None, text: str | None = None, newpar: bool = False
) -> str:
    """One CoNLL-U sentence block (ending in a blank line) of a parse with `words` and `heads` (1-based, 0 = root),
    and `deprels`, `upos`, `xpos` or `feats` where it has them. A parse without labels gets `root` for its root
    word and `dep` (UD's unspecified dependency) for the others; columns the parse does not give are `_`. A parse of
    raw text (with the words' character `offsets`) marks each word that the next one follows without a space
    `SpaceAfter=No`, as UD does; `newpar` starts a paragraph (`# newpar`, e.g. the first sentence of an input line)."""
    from conllu.models import Metadata, Token, TokenList

    words, heads = parse["words"], parse.get("heads")
    if heads is None:
        raise ValueError("CoNLL-U holds dependency heads, and this parse has none")
    if len(heads) != len(words):
        raise ValueError(f"{len(words)} words but {len(heads)} heads")
    deprels = parse.get("deprels") or ["root" if head == 0 else "dep" for head in heads]
    upos = parse.get("upos") or [None] * len(words)
    xpos, feats = parse.get("xpos") or [None] * len(words), parse.get("feats") or [None] * len(words)
    offsets = parse.get("offsets")
    misc: list[dict[str, str] | None] = [None] * len(words)
    if offsets:
        for i in range(len(words) - 1):
            if offsets[i][1] == offsets[i + 1][0]:
                misc[i] = {"SpaceAfter": "No"}
    tokens = [
        Token(
            id=i,
            form=word,
            lemma=None,
            upos=tag,
            xpos=word_xpos,
            feats=None if word_feats in (None, "_") else word_feats,
            head=head,
            deprel=deprel,
            deps=None,
            misc=extra,
        )
        for i, (word, tag, word_xpos, word_feats, head, deprel, extra) in enumerate(
            zip(words, upos, xpos, feats, heads, deprels, misc), start=1
        )
    ]
    metadata = {"newpar": None} if newpar else {}
    return TokenList(tokens, metadata=Metadata({**metadata, **_metadata(sent_id, text)})).serialize()


def comment_block(comments: dict, sent_id: str | int | None = None) -> str:
    """A sentence block of comments only, so that an input without a parse (a blank line, a line that could not be
    parsed: `{"error": message}`) keeps its place in the output; a value None gives a bare `# key` comment."""
    from conllu.models import Metadata, TokenList

    return TokenList([], metadata=Metadata({**_metadata(sent_id, None), **comments})).serialize()


def parses_to_conllu(parses: Iterable[dict], texts: Iterable[str] | None = None) -> str:
    """CoNLL-U of several parses (e.g. the pipeline's results), numbered from 1 in `# sent_id`, with `# text` the
    given texts (default: a parse's own `text`, which parses of raw text hold, else its words joined by spaces)."""
    parses = list(parses)
    texts = list(texts) if texts is not None else [parse.get("text", " ".join(parse["words"])) for parse in parses]
    if len(texts) != len(parses):
        raise ValueError(f"{len(texts)} texts for {len(parses)} parses")
    return "".join(parse_to_conllu(parse, number, text) for number, (parse, text) in enumerate(zip(parses, texts), 1))


def _metadata(sent_id, text) -> dict:
    metadata = {}
    if sent_id is not None:
        metadata["sent_id"] = str(sent_id)
    if text is not None:
        # One line, as CoNLL-U readers split comments: a sentence of raw text may span lines, and `str.splitlines`
        # readers also break at U+0085, U+2028 and the like.
        metadata["text"] = " ".join(text.splitlines())
    return metadata
