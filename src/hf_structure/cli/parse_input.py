"""What `hf-structure parse` reads: lines of text or CoNLL-U sentences, from files, standard input or arguments, as
units to parse, each named as errors name it."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from .common import fail

if TYPE_CHECKING:
    from ..data.conllu_format import ConlluSentence


STDIN = "-"
# The longest line read (in UTF-8 bytes, its line feed aside), spaCy's `nlp.max_length` in characters: parsing holds
# about 100 bytes per byte of a line, so a line without a line feed (`/dev/zero`, a binary file) would take all the
# memory there is. A longer line is skipped unkept, as an error record; `--max-line-bytes` changes it.
MAX_LINE_BYTES = 1_000_000
# How much of a skipped line is read at a time.
SKIP_CHUNK_BYTES = 1 << 16


class SkippedLine(NamedTuple):
    """A line of more than the cap's bytes, read through without being kept."""

    size: int  # its bytes, as far as they were read (a stream that ends in it ends the count)


class Unit(NamedTuple):
    """One input to parse: a line of text (`number` its line number; an argument's rank), or a sentence of a
    CoNLL-U file (`number` its rank, `conllu` its block). `words` are the given words (--pretokenized, CoNLL-U),
    None for raw text."""

    number: int
    text: str
    words: list[str] | None = None
    conllu: ConlluSentence | None = None
    error: str | None = None  # why it is not parsed, found while reading it (a line over the cap)

    @property
    def name(self) -> str:
        """How errors name the unit."""
        return f"sentence {self.number} (line {self.conllu.line})" if self.conllu else f"line {self.number}"

    @property
    def item(self):
        """What the parser is given."""
        return self.text if self.words is None else self.words

    @property
    def blank(self) -> bool:
        return self.error is None and not (self.text.strip() if self.words is None else self.words)


def input_name(path: str) -> str:
    return "standard input" if path == STDIN else path


def decoded_lines(stream, name: str, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[str | SkippedLine]:
    """The lines of a UTF-8 byte stream, without their ends, or a clear error naming the input and line. Only a line
    feed ends a line (a CRLF's carriage return is dropped): `str.splitlines` also breaks at form feeds,
    U+001C-U+001E, U+0085 and U+2028, which would give more results than input lines and shift every later one. A
    byte-order mark at the start is not text. A line of more than `max_line_bytes` is read through in chunks and
    given as a `SkippedLine`, so that no input holds more than the cap in memory."""
    number = 0
    while data := stream.readline(max_line_bytes + 1):
        number += 1
        if len(data) > max_line_bytes and not (len(data) == max_line_bytes + 1 and data.endswith(b"\n")):
            size = len(data)
            while not data.endswith(b"\n") and (data := stream.readline(SKIP_CHUNK_BYTES)):
                size += len(data)
            yield SkippedLine(size - data.endswith(b"\n"))
            continue
        try:
            text = data.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as error:
            raise fail(
                "parse", f"{name}:{number}: not UTF-8 text (byte {error.start} of the line); is it a binary file?"
            ) from None
        yield text.removesuffix("\n").removesuffix("\r")


def skipped_line_error(line: SkippedLine, max_line_bytes: int) -> str:
    return (
        f"{line.size:,} bytes, over the cap of {max_line_bytes:,} for one line (--max-line-bytes): not read, not parsed"
    )


@contextlib.contextmanager
def opened_input(path: str):
    """The input's bytes, read line by line (standard input for `-`), or a clear error naming the file."""
    if path == STDIN:
        yield sys.stdin.buffer
        return
    try:
        stream = open(path, "rb")
    except OSError as error:
        raise fail("parse", f"cannot read input file {path}: {error.strerror}") from None
    with stream:
        yield stream


def read_units(
    lines: Iterable[str | SkippedLine], input_format: str, pretokenized: bool, name: str, max_line_bytes: int
) -> Iterator[Unit]:
    """The units of `lines` (`decoded_lines`): a skipped line of text is its error record; in CoNLL-U, whose blocks
    it would break, it ends the input with an error naming it."""
    if input_format == "conllu":
        from ..data.conllu_format import read_conllu_sentences
        from ..data.gold import TreebankFormatError

        def whole(lines):
            for number, line in enumerate(lines, start=1):
                if isinstance(line, SkippedLine):
                    raise fail("parse", f"{name}:{number}: {skipped_line_error(line, max_line_bytes)}")
                yield line

        try:
            for number, sentence in enumerate(read_conllu_sentences(whole(lines), name), start=1):
                yield Unit(number, " ".join(sentence.words), sentence.words, sentence)
        except TreebankFormatError as error:
            raise fail("parse", str(error)) from None
        return
    for number, line in enumerate(lines, start=1):
        if isinstance(line, SkippedLine):
            yield Unit(number, "", error=f"line {number}: {skipped_line_error(line, max_line_bytes)}")
        else:
            yield Unit(number, line, line.split() if pretokenized else None)


def until_input_error(units: Iterable[Unit], errors: list) -> Iterator[Unit]:
    """`units` up to a bad line of a stream read as it goes (standard input: not UTF-8, not CoNLL-U), whose error
    is kept in `errors`: what comes before it is parsed and written before the error ends the command."""
    try:
        yield from units
    except SystemExit as error:
        errors.append(error)


def is_counted_first(path: str) -> bool:
    """Whether the input is read twice, counted before the model loads, then parsed: a regular file, or a path that
    cannot be read (the count names the error before any work). Standard input, a FIFO, `/dev/stdin` or a shell's
    `<(...)` is read once, as it goes."""
    if path == STDIN:
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True


def count_units(path: str, input_format: str, max_line_bytes: int) -> int:
    """How many units a file holds, read once before the model loads: a file that is not UTF-8 or not CoNLL-U is
    refused before any work, and the progress bar knows its total. Nothing is kept."""
    with opened_input(path) as stream:
        lines = decoded_lines(stream, path, max_line_bytes)
        return sum(1 for _ in read_units(lines, input_format, False, path, max_line_bytes))


def input_format_of(args) -> str:
    if args.input_format:
        return args.input_format
    return "conllu" if args.input and Path(args.input).suffix.lower() == ".conllu" else "text"
