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


class Unit(NamedTuple):
    """One input to parse: a line of text (`number` its line number; an argument's rank), or a sentence of a
    CoNLL-U file (`number` its rank, `conllu` its block). `words` are the given words (--pretokenized, CoNLL-U),
    None for raw text."""

    number: int
    text: str
    words: list[str] | None = None
    conllu: ConlluSentence | None = None

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
        return not (self.text.strip() if self.words is None else self.words)


def input_name(path: str) -> str:
    return "standard input" if path == STDIN else path


def decoded_lines(stream, name: str) -> Iterator[str]:
    """The lines of a UTF-8 byte stream, without their ends, or a clear error naming the input and line. Only a line
    feed ends a line (a CRLF's carriage return is dropped): `str.splitlines` also breaks at form feeds,
    U+001C-U+001E, U+0085 and U+2028, which would give more results than input lines and shift every later one. A
    byte-order mark at the start is not text."""
    for number, data in enumerate(stream, start=1):
        try:
            text = data.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as error:
            raise fail(
                "parse", f"{name}:{number}: not UTF-8 text (byte {error.start} of the line); is it a binary file?"
            ) from None
        yield text.removesuffix("\n").removesuffix("\r")


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


def read_units(lines: Iterable[str], input_format: str, pretokenized: bool, name: str) -> Iterator[Unit]:
    if input_format == "conllu":
        from ..data.conllu_format import read_conllu_sentences
        from ..data.gold import TreebankFormatError

        try:
            for number, sentence in enumerate(read_conllu_sentences(lines, name), start=1):
                yield Unit(number, " ".join(sentence.words), sentence.words, sentence)
        except TreebankFormatError as error:
            raise fail("parse", str(error)) from None
        return
    for number, line in enumerate(lines, start=1):
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


def count_units(path: str, input_format: str) -> int:
    """How many units a file holds, read once before the model loads: a file that is not UTF-8 or not CoNLL-U is
    refused before any work, and the progress bar knows its total. Nothing is kept."""
    with opened_input(path) as stream:
        return sum(1 for _ in read_units(decoded_lines(stream, path), input_format, False, path))


def input_format_of(args) -> str:
    if args.input_format:
        return args.input_format
    return "conllu" if args.input and Path(args.input).suffix.lower() == ".conllu" else "text"
