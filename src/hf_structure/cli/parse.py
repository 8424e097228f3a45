"""`hf-structure parse`: text or CoNLL-U in, trees out, streamed a window of batches at a time through the pipeline's
batched-parsing core; under torchrun each process parses a share and the first joins them."""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import io
import itertools
import sys
from collections.abc import Iterable

from ..bundled import DEFAULT_MODEL
from . import distributed
from .common import (
    QUANTIZATIONS,
    QUANTIZE_HELP,
    THREADS_HELP,
    check_device,
    count_argument,
    fail,
    load_or_fail,
    progress_bar,
    quantize_or_fail,
    resolved_model_path,
)
from .parse_input import (
    MAX_LINE_BYTES,
    Unit,
    count_units,
    decoded_lines,
    input_format_of,
    input_name,
    is_counted_first,
    opened_input,
    read_units,
    until_input_error,
)
from .parse_output import OUTPUT_ERRORS, OutputFile, Writer, check_output, join_parts, output_format_of

WINDOW_BATCHES = 4  # input is read and parsed this many batches at a time: memory stays flat, output streams


def add_command(commands) -> None:
    """The `parse` command; its options are added when it parses or prints its help (`add_options`)."""
    parse = commands.add_parser(
        "parse", help="parse text into sentences and trees (one JSON line per sentence, written as it goes)"
    )
    parse.defer(add_options)


def add_options(parse) -> None:
    """The `parse` command's options: the models' own options as the registered models declare them (which registers
    them), the choices of others as the torch code and the pipeline declare them."""
    from ..pipelines.word_tokenization import WORD_CONVENTIONS
    from ..structs.decoding import TIE_BREAKS

    parse.add_argument("text", nargs="*", help="sentences to parse, one per argument (quote each), or use --input")
    parse.add_argument(
        "--model",
        action="append",
        help=f"folder, Hub id or bundled name ({DEFAULT_MODEL}); given several times (or with --trees), each parses "
        "and the averaged constituency tree of the ensemble is written (the first model's sentences and words)",
    )
    parse.add_argument(
        "--trees",
        action="append",
        metavar="FILE",
        help="a file of trees (JSON lines with words and spans) as one more member of an ensemble, matched to a "
        "sentence by the first model's words",
    )
    parse.add_argument(
        "--tie-break",
        choices=TIE_BREAKS,
        default="right",
        help="of an ensemble's averaged trees with equal votes, which wins: toward right-branching (the default), "
        "toward left-branching, or at random (--seed)",
    )
    parse.add_argument("--seed", type=int, default=0, help="the seed of --tie-break random (default 0)")
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
    parse.add_argument(
        "--max-line-bytes",
        type=count_argument,
        default=MAX_LINE_BYTES,
        metavar="N",
        help=f"the longest line of --input read, in UTF-8 bytes (default {MAX_LINE_BYTES:,}): a longer one is "
        "skipped, unread, as an error record (in CoNLL-U, an error that ends the input); the memory a parse takes "
        "grows with it, about 100 bytes per byte",
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
    for option, values in model_option_values().items():  # the models' own options, as they declare them
        takes = "; ".join(f"{model_type}: {', '.join(map(str, accepted))}" for model_type, accepted in values.items())
        parse.add_argument(
            option_flag(option),
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
        type=count_argument,
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
    parse.add_argument("--threads", type=count_argument, metavar="N", help=THREADS_HELP)
    parse.add_argument("--quantize", choices=QUANTIZATIONS, help=QUANTIZE_HELP)
    parse.set_defaults(run=run)


def _parsed_units(parser, units: Iterable[Unit], pretokenized: bool, batch_size: int, options: dict):
    """Parse `units` with `parser` (a `Parser`, or an `EnsembleParser`: `results`), which holds WINDOW_BATCHES
    batches of sentences at a time (within them, in order of length, so that a batch pads little), and after each
    batch yield the units, in input order, whose results are complete (with their results). Each unit is split into
    sentences and checked once; a sentence refused (before parsing or by the model) is its own result's error, and
    the unit's other sentences parse. Only one window is held, whatever the input's size, and the memory each batch
    freed goes back to the system (`memory.release_freed_memory`), so a long parse stays flat."""
    from .memory import release_freed_memory

    read: collections.deque[tuple[Unit, int]] = collections.deque()  # units not yet complete: their sentences
    results: list[dict] = []  # the results of their sentences that are complete, in order

    def sentences():
        for unit in units:
            checked = (
                []
                if unit.blank or unit.error
                else parser.sentences(
                    unit.item,
                    is_split_into_words=pretokenized,
                    name=unit.name,
                    split_sentences=options.get("split_sentences", True),
                    on_error="record",
                    word_convention=options.get("word_convention"),
                )
            )
            read.append((unit, len(checked)))
            yield from checked

    def complete() -> list[tuple[Unit, dict | list[dict]]]:
        finished = []
        while read and read[0][1] <= len(results):
            unit, count = read.popleft()
            finished.append((unit, _unit_result(unit, results[:count])))
            del results[:count]
        return finished

    parsing = {key: value for key, value in options.items() if key not in ("split_sentences", "word_convention")}
    window = batch_size * WINDOW_BATCHES
    for done in parser.results(sentences(), batch_size=batch_size, on_error="record", window=window, **parsing):
        release_freed_memory()
        results.extend(result for _, result in done)
        yield complete()
    yield complete()  # blank units after the last sentence


def _unit_result(unit: Unit, results: list[dict]) -> dict | list[dict]:
    """A unit's result from those of its sentences: `{"words": []}` for a blank unit, `{"words": [], "error": ...}`
    for one refused before it was split; the result of given words; for a text, the list of its sentences' results,
    where a refused sentence is `{"words": ..., "error": ...}` beside the others' parses."""
    if unit.blank:
        return {"words": []}
    if unit.error:
        return {"words": [], "error": unit.error}
    return results if unit.words is None else results[0]


def run(args) -> None:
    args.model = args.model or [DEFAULT_MODEL]
    if args.input and args.text:
        raise fail("parse", "give sentences as arguments or --input FILE, not both")
    if not args.input and not args.text:
        raise fail("parse", "give a sentence, --input FILE or --input - (standard input)")
    input_format = input_format_of(args)
    if input_format == "conllu" and not args.input:
        raise fail("parse", "--input-format conllu: give the CoNLL-U file with --input FILE (or - for standard input)")
    # A regular file is counted first (the progress bar's total, a bad line refused before the model loads); any
    # other input, standard input, a FIFO or `<(...)`, is read once, as it is parsed.
    total = (
        len(args.text)
        if args.text
        else count_units(args.input, input_format, args.max_line_bytes)
        if is_counted_first(args.input)
        else None
    )
    check_output(args.output, args.svg, args.input)
    output_format = output_format_of(args, input_format)
    processes = distributed.process_count()  # started by torchrun / accelerate launch: each parses a share
    if processes > 1 and (total is None or args.text or not args.output):
        raise fail(
            "parse",
            f"in {processes} processes, give --input FILE (each reads its share) and --output FILE "
            "(the first process joins the shares)",
        )
    share = distributed.start(total) if processes > 1 and total is not None else None
    device = check_device("parse", args.device) if args.device else None
    if share and device is None:
        device = distributed.local_device()
    from ..pipelines import load_parser
    from ..pipelines.parser import UnsupportedOptionError, check_options, model_description

    load = functools.partial(load_parser, device=device, num_threads=args.threads, quantize=args.quantize)
    load = quantize_or_fail("parse", args.quantize, load)
    pipelines = [load_or_fail("parse", load, resolved_model_path("parse", name)) for name in args.model]
    options, flags = _pipeline_options(args)
    try:  # every option the command was given, against what the model declares, before any line is parsed
        if len(pipelines) > 1 or args.trees:
            parser = _ensemble(pipelines, args)
            parser.check_options(options)
            outputs = parser.parse_outputs
        else:
            parser = pipelines[0].parser
            check_options(parser.model, options)
            outputs = parser.model.parse_outputs
    except UnsupportedOptionError as error:
        raise fail("parse", f"{' '.join(flags[option] for option in error.options)}: {error}") from None
    if args.no_split_sentences:
        options["split_sentences"] = False  # the pipeline's own option, for every model
    if args.word_convention:
        options["word_convention"] = args.word_convention  # the pipeline's too
    if output_format == "conllu" and "heads" not in outputs:
        flag = "--conllu" if args.conllu else "CoNLL-U output (the default for CoNLL-U input)"
        what = "an ensemble" if len(pipelines) > 1 or args.trees else model_description(pipelines[0].model)
        raise fail(
            "parse", f"{flag}: {what} gives no dependency heads, which CoNLL-U holds; use --json, --draw or --svg"
        )
    pretokenized = args.pretokenized or input_format == "conllu"
    unit_name = "sentence" if input_format == "conllu" else "line"
    failed = unparsed = blank = count = 0
    first_error = None
    with contextlib.ExitStack() as stack:
        if args.text:
            lines = args.text
        else:
            stream = stack.enter_context(opened_input(args.input))
            lines = decoded_lines(stream, input_name(args.input), args.max_line_bytes)
        input_errors: list[SystemExit] = []
        units = until_input_error(
            read_units(lines, input_format, pretokenized, input_name(args.input or ""), args.max_line_bytes),
            input_errors,
        )
        output_file = joined_file = None
        if share:
            units = itertools.islice(units, share.units.start, share.units.stop)
            part = distributed.part_path(args.output, share.rank)
            output_file = OutputFile(part, share.units.start + 1, joined=args.output)
            if share.rank == 0:  # the joined output is claimed now, so that a second run is refused before it parses
                joined_file = OutputFile(args.output, 1)
        elif args.output:
            output_file = OutputFile(args.output, 1)
        for claimed in (output_file, joined_file):
            if claimed:
                stack.callback(claimed.close)
        batch_text = io.StringIO()  # a batch's results, appended to the output file whole
        output = batch_text if args.output else sys.stdout
        if not args.output and hasattr(sys.stdout, "reconfigure"):
            sys.stdout.reconfigure(errors=OUTPUT_ERRORS)
        progress = stack.enter_context(progress_bar(args, len(share.units) if share else total, unit_name))
        writer = Writer(output, output_format, not args.no_split_sentences, args.svg, total)
        for finished in _parsed_units(parser, units, pretokenized, args.batch_size, options):
            for unit, result in finished:
                writer.write(unit, result)
                errors = [one["error"] for one in (result if isinstance(result, list) else [result]) if "error" in one]
                if errors:
                    failed += 1
                    first_error = first_error or errors[0]
                    unparsed += len(errors) == len(result) if isinstance(result, list) else 1
                blank += result == {"words": []}
                count += 1
            if output_file and finished:  # each batch's results are there to read as soon as they are parsed
                output_file.append(batch_text.getvalue(), finished[-1][0].number, unit_name)
                batch_text.seek(0)
                batch_text.truncate()
            else:
                output.flush()
            progress.update(len(finished))
        if input_errors:
            raise input_errors[0]
        if share:
            counts = distributed.gather((count, failed, unparsed, blank, writer.sentences, first_error))
            if joined_file:
                join_parts(joined_file, args.output, processes, [part[4] for part in counts])
            distributed.finish()
            if share.rank:
                return
            count, failed, unparsed, blank = (sum(part[k] for part in counts) for k in range(4))
            first_error = next((part[5] for part in counts if part[5]), None)
    if count == 0:  # an empty input gives an empty output, as a blank line gives an empty result
        print(f"hf-structure parse: no {unit_name} in {input_name(args.input)}", file=sys.stderr)
        if args.strict:
            raise SystemExit(1)
    elif unparsed and unparsed == count - blank:  # nothing parsed: the model, not the input, is the likely cause
        raise fail(
            "parse", f"every {unit_name} failed ({failed} of {count}; see their `error`); the first: {first_error}"
        )
    elif failed:
        partly = failed - unparsed  # lines of several sentences, some parsed
        what = (
            f"held a sentence that could not be parsed ({partly} of them had their other sentences parsed; see "
            "their `error`)"
            if partly
            else "could not be parsed (see their `error`)"
        )
        print(f"hf-structure parse: {failed} of {count} {unit_name}s {what}", file=sys.stderr)
        if args.strict:
            raise SystemExit(1)


def _ensemble(pipelines: list, args):
    """The ensemble of the command's models and trees files, or the command's one-line failure."""
    from ..data.trees_files import TreesFileError
    from ..pipelines.ensemble import EnsembleParser

    if args.quantize:
        raise fail("parse", "--quantize is for one model: parse an ensemble without it")
    try:
        return EnsembleParser(pipelines, args.trees or [], args.tie_break, args.seed)
    except TreesFileError as error:
        raise fail("parse", f"--trees: {error}") from None


def model_option_values() -> dict[str, dict[str, tuple]]:
    """Each keyword option of a registered model's `parse` (`head_decoding` ...), with the values each model type
    takes; `structures` is the pipeline's (`--structures`). Registers the models first."""
    from .. import register
    from ..registry import MODEL_SPECS

    register()

    values: dict[str, dict[str, tuple]] = {}
    for spec in MODEL_SPECS.values():
        for option, accepted in spec.parse_options.items():
            if option != "structures":
                values.setdefault(option, {})[spec.model_type] = accepted
    return dict(sorted(values.items()))


def option_flag(option: str) -> str:
    return "--" + option.replace("_", "-")


def _pipeline_options(args) -> tuple[dict, dict]:
    """The pipeline options the command line gives, and for each the flags that gave it (for error messages)."""
    options = {option: getattr(args, option) for option in model_option_values() if getattr(args, option)}
    flags = {option: f"{option_flag(option)} {value}" for option, value in options.items()}
    if args.structures:
        options["structures"], flags["structures"] = args.structures, f"--structures {','.join(args.structures)}"
    if args.scores:
        options["return_scores"], flags["return_scores"] = True, "--scores"
    if args.drop_punctuation:
        options["keep_punctuation"], flags["keep_punctuation"] = False, "--drop-punctuation"
    return options, flags
