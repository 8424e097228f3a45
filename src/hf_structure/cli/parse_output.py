"""What `hf-structure parse` writes and how: the output format, the `--output` file (locked, written a batch at a
time, only ever complete results), the writer of JSON lines, CoNLL-U, drawings and SVG pictures, and the joining of
torchrun parts."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from . import distributed
from .common import fail
from .parse_input import STDIN, Unit


def check_output(path: str | None, svg: str | None, source: str | None) -> None:
    """Refuse, before the model loads, an output whose folder is missing or that is the input file itself (opening
    it for writing would empty the input before it is read)."""
    for target in (path, svg):
        if not target:
            continue
        folder = Path(target).resolve().parent
        if not folder.is_dir():
            raise fail("parse", f"cannot write {target}: folder {folder} does not exist")
        if not Path(target).exists() and not os.access(folder, os.W_OK):  # read-only, or not this user's
            raise fail("parse", f"cannot write {target}: folder {folder} is not writable")
    if path and Path(path).is_dir():
        raise fail("parse", f"cannot write {path}: it is a folder; --output names a file")
    if path and Path(path).exists() and not os.access(path, os.W_OK):
        raise fail("parse", f"cannot write {path}: permission denied")
    if path and source and source != STDIN and Path(path).exists() and Path(path).samefile(source):
        raise fail(
            "parse", f"--output {path} is the input file: it would be emptied before it is read; write to another file"
        )


def join_parts(joined: OutputFile, output: str, processes: int, sentence_counts: list[int]) -> None:
    """The first process joins the parts into `joined` (`distributed.join_parts`); sentences the writer numbered
    (CoNLL-U of split raw text) run on from the parts before. A join that fails leaves `output` empty and the parts."""
    try:
        distributed.join_parts(joined.fd, output, processes, sentence_counts)
    except OSError as error:
        joined.discard()
        first, last = distributed.part_path(output, 0), distributed.part_path(output, processes - 1)
        raise fail(
            "parse", f"cannot write {output}: {error.strerror}; its parts {first} ... {last} hold every result"
        ) from None


# What an `--output` file's suffix says it holds, and the flag that writes it.
OUTPUT_SUFFIXES = {".conllu": ("conllu", "CoNLL-U"), ".jsonl": ("json", "JSON lines"), ".json": ("json", "JSON lines")}


OUTPUT_FLAGS = {"json": ("--json", "JSON lines"), "conllu": ("--conllu", "CoNLL-U"), "text": ("--draw", "drawings")}


def output_format_of(args, input_format: str) -> str:
    """json, conllu or text: as a flag says, else as the `--output` suffix says (.conllu, .jsonl, .json), else CoNLL-U
    for CoNLL-U input and JSON lines otherwise. A flag that contradicts the suffix is refused: the file would hold
    something other than its name says."""
    flagged = "json" if args.json else "conllu" if args.conllu else "text" if args.draw else None
    suffix = Path(args.output).suffix.lower() if args.output else ""
    named, description = OUTPUT_SUFFIXES.get(suffix, (None, None))
    if flagged and named and flagged != named:
        flag, writes = OUTPUT_FLAGS[flagged]
        raise fail(
            "parse", f"{flag} writes {writes}, but --output {args.output} names {description}; change one of them"
        )
    return flagged or named or ("conllu" if input_format == "conllu" else "json")


# A refused line's words can hold lone surrogates (bytes of an argument that are not UTF-8): written as `\udced`,
# which JSON reads as that character, so that the output stays UTF-8 text and every line is written.
OUTPUT_ERRORS = "backslashreplace"


class OutputFile:
    """The `--output` file (or a torchrun part), written a batch of results at a time, so that it only ever holds
    complete results: a write that fails (a full disk) is cut back to the last complete batch, and the command ends in
    one line. The file is locked while it is written: a second command writing the same file is refused in one line
    rather than interleaving its lines with this one's (an flock, released however the process ends)."""

    def __init__(self, path: str, first_unit: int, joined: str | None = None):
        """`first_unit`: the number of the first unit whose results go here; `joined`: for a part, the output it is
        joined into."""
        self.path, self.first_unit, self.joined = path, first_unit, joined
        self.fd = _opened(path)
        self.regular = stat.S_ISREG(os.fstat(self.fd).st_mode)  # a file, not a device or a pipe such as /dev/full
        if self.regular:  # a device or a pipe is shared by design (two commands may both write /dev/null)
            _lock(self.fd, path)
        self.discard()
        self.complete, self.last_unit = 0, first_unit - 1

    def append(self, text: str, last_unit: int, unit_name: str) -> None:
        data = text.encode("utf-8", OUTPUT_ERRORS)
        try:
            written = 0
            while written < len(data):
                written += os.write(self.fd, data[written:])
        except OSError as error:
            if self.regular:
                os.ftruncate(self.fd, self.complete)
            raise fail("parse", f"cannot write {self.path}: {error.strerror}{self._holds(unit_name)}") from None
        self.complete += len(data)
        self.last_unit = last_unit

    def _holds(self, unit_name: str) -> str:
        """What the file holds after a failed write, in the numbering of the input."""
        if not self.regular:
            return ""
        if self.last_unit < self.first_unit:
            held = "; it holds no result"
        else:
            held = f"; it holds the results of {unit_name}s {self.first_unit}-{self.last_unit}, each complete"
        return held + (f"; {self.joined} was not written" if self.joined else "")

    def discard(self) -> None:
        """Cut the file back to nothing (a file, not a device)."""
        if self.regular:
            os.ftruncate(self.fd, 0)

    def close(self) -> None:
        os.close(self.fd)


def _opened(path: str) -> int:
    """A descriptor of `path` open for writing (created if absent, its content kept), or one line naming it."""
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT, 0o666)
    except OSError as error:
        raise fail("parse", f"cannot write {path}: {error.strerror}") from None


def _lock(fd: int, path: str) -> None:
    """Lock the file of `fd` against other writers, or close it and end in one line naming `path`."""
    if os.name != "posix":  # flock is POSIX's; elsewhere a second writer is not detected
        return
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise fail(
            "parse", f"cannot write {path}: another process is writing it; wait for it to end or choose another file"
        ) from None


class Writer:
    """Writes each unit's results as they come: JSON lines, CoNLL-U or drawings, and SVG pictures.

    A unit's result is one parse (a word list, a CoNLL-U sentence), a list of the results of its sentences (raw
    text, where a refused sentence is `{"words": ..., "error": ...}` among the others' parses, and is written as a
    comment block in CoNLL-U and in drawings), or for a blank or refused unit `{"words": []}` or `{"words": ...,
    "error": ...}`. Where raw text is split into sentences, each JSON line names its input `line`, CoNLL-U numbers
    the sentences in `# sent_id` and starts each line's first with `# newpar`, and SVG files are
    `OUT-<line>-<k>.svg` for the k-th of several sentences of a line. Otherwise there is one output per unit:
    CoNLL-U of a text line has `# sent_id` the line's number and `# text` the line, that of a CoNLL-U sentence is
    its block with HEAD and DEPREL filled. SVG files are `OUT-<line>.svg` (OUT.svg alone for an input of one
    sentence)."""

    def __init__(self, output, output_format: str, split_sentences: bool, svg: str | None, total: int | None):
        self.output, self.output_format, self.split_sentences = output, output_format, split_sentences
        self.svg, self.total = svg, total
        self.sentences = 0  # written so far, for `# sent_id` where sentences are split

    def write(self, unit: Unit, result) -> None:
        parses = result if isinstance(result, list) else [result]
        parsed = _is_parse(parses[0])
        split = self.split_sentences and unit.words is None  # raw text, split into sentences
        if self.svg:
            self._save_svgs(unit, parses)
        if self.output_format == "json":
            self._write_json(unit, parses, split)
        elif self.output_format == "conllu" and unit.conllu:
            from ..data.conllu_format import conllu_with_parse

            self.output.write(conllu_with_parse(unit.conllu, parses[0] if parsed else None, parses[0].get("error")))
        elif len(parses) == 1 and not parsed:
            self._write_unparsed(unit, parses[0].get("error"), split)
        elif self.output_format == "conllu":
            self._write_conllu(unit, parses, split)
        else:
            from ..data.conllu_format import comment_block
            from ..visualization import draw_text

            for parse in parses:  # a blank line between sentences, as in CoNLL-U
                text = draw_text(parse) + "\n\n" if _is_parse(parse) else comment_block(_refused(parse))
                self.output.write(text)

    def _write_json(self, unit: Unit, parses: list[dict], split: bool) -> None:
        for parse in parses:
            if split:
                parse = {"line": unit.number, **parse}
            elif unit.conllu and "sent_id" in unit.conllu.metadata:
                parse = {"sent_id": unit.conllu.metadata["sent_id"], **parse}
            self.output.write(json.dumps(parse, ensure_ascii=False) + "\n")

    def _write_unparsed(self, unit: Unit, error: str | None, split: bool) -> None:
        """A comment block in the place of a blank or refused unit, which keeps the output aligned with the input."""
        from ..data.conllu_format import comment_block

        comments = {"text": unit.text, "error": error} if error else {"empty line": None}
        if split and self.output_format == "conllu":
            self.output.write(comment_block({"newpar": None, **comments}))
        else:
            self.output.write(comment_block(comments, unit.number))

    def _write_conllu(self, unit: Unit, parses: list[dict], split: bool) -> None:
        from ..data.conllu_format import comment_block, parse_to_conllu

        for k, parse in enumerate(parses):
            if split:
                self.sentences += 1
                if _is_parse(parse):
                    self.output.write(parse_to_conllu(parse, self.sentences, parse.get("text"), newpar=k == 0))
                else:
                    newpar = {"newpar": None} if k == 0 else {}
                    self.output.write(comment_block({**newpar, **_refused(parse)}, self.sentences))
            else:
                self.output.write(parse_to_conllu(parse, unit.number, unit.text))

    def _save_svgs(self, unit: Unit, parses: list[dict]) -> None:
        from ..visualization import save_svg

        assert self.svg is not None  # `write` saves pictures only with --svg
        for k, parse in enumerate(parses, start=1):
            if not _is_parse(parse):
                continue
            if len(parses) > 1:
                path = numbered(self.svg, f"{unit.number}-{k}")
            else:
                path = self.svg if self.total == 1 else numbered(self.svg, unit.number)
            try:
                save_svg(parse, path)
            except OSError as error:
                raise fail("parse", f"cannot write {path}: {error.strerror}") from None


def _is_parse(result: dict) -> bool:
    """Whether a sentence's result is a parse (not a refused sentence's error, nor a blank line's empty result)."""
    return "error" not in result and bool(result["words"])


def _refused(result: dict) -> dict:
    """The comments that stand in for a refused sentence: its text (or words) and its error."""
    return {"text": result.get("text") or " ".join(result["words"]), "error": result["error"]}


def numbered(path: str, number: int | str) -> str:
    """`out.svg` -> `out-3.svg`."""
    given = Path(path)
    return str(given.with_name(f"{given.stem}-{number}{given.suffix or '.svg'}"))
