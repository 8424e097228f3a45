"""The `hf-structure` command: `parse` text into trees, `evaluate` parsers on a gold treebank.

Works with any model of the package (it goes through the pipeline and the parsing contract only).
"""

import argparse
import contextlib
import json
import sys
from pathlib import Path

from . import __version__
from .bundled import DEFAULT_MODEL, resolve_model_path
from .cli_train_publish import (PUBLISH_COMMANDS, TRAINING_COMMANDS, add_train_publish_commands,
                                run_publish_command, train)
from .evaluation.baselines import BASELINES


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
    such as a Hub model's custom code that the command does not run), folded onto one line."""
    try:
        return loader(model_path)
    except (ValueError, OSError) as error:  # ModelFolderError is a ValueError
        message = " ".join(str(error).split())
        raise _fail(command, message if model_path in message else f"cannot load {model_path}: {message}") from None


def _count(text: str) -> int:
    """An argparse type for counts such as `--batch-size`: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


# ----------------------------------------------------------------------------------------------------------- parse


def _read_lines(path: str) -> list[str]:
    """The lines of a UTF-8 text file (blank ones kept, for alignment), or a clear error naming the file. Only a line
    feed ends a line (a CRLF's carriage return is dropped): `str.splitlines` also breaks at form feeds, U+001C-U+001E,
    U+0085 and U+2028, which would give more results than input lines and shift every later one."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise _fail("parse", f"cannot read input file {path}: {error.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise _fail("parse", f"{path}:{line}: not UTF-8 text (byte {error.start}); is it a binary file?") from None
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return lines[:-1] if lines[-1] == "" else lines  # the text after a final newline is no line


def _check_output(path: str | None, svg: str | None) -> None:
    for target in (path, svg):
        if target and not Path(target).resolve().parent.is_dir():
            raise _fail("parse", f"cannot write {target}: folder {Path(target).resolve().parent} does not exist")


def _parse_lines(parser, lines: list[str], pretokenized: bool, batch_size: int, options: dict) -> list[dict]:
    """One result per line: a parse, `{"words": []}` for a blank line, or `{"words": ..., "error": ...}` for a line
    that cannot be parsed. A batch that fails is retried item by item, so one bad line never costs the others."""
    results: list[dict | None] = [None] * len(lines)
    pending = []
    for index, line in enumerate(lines):
        if not line.strip():
            results[index] = {"words": []}
            continue
        item = line.split() if pretokenized else line
        try:
            parser.sentences(item, pretokenized, f"line {index + 1}", split_sentences=False)
        except (TypeError, ValueError) as error:
            results[index] = {"words": line.split(), "error": str(error)}
            continue
        pending.append((index, item))

    def run(items):
        # One sentence per line (a text gives a list of one parse).
        parsed = parser([item for _, item in items], batch_size=batch_size, is_split_into_words=pretokenized,
                        split_sentences=False, **options)
        return parsed if pretokenized else [sentences[0] for sentences in parsed]

    for first in range(0, len(pending), batch_size):
        chunk = pending[first : first + batch_size]
        try:
            parsed = run(chunk)
        except (TypeError, ValueError, RuntimeError):
            parsed = []
            for single in chunk:
                try:
                    parsed.extend(run([single]))
                except (TypeError, ValueError, RuntimeError) as error:
                    parsed.append({"words": lines[single[0]].split(), "error": f"line {single[0] + 1}: {error}"})
        for (index, _), result in zip(chunk, parsed):
            results[index] = result
    return results


def _format(result: dict, output_format: str, number: int, line: str) -> str:
    """The output of input line `number` (1-based; its text `line`): a JSON line, CoNLL-U (with `# sent_id` the
    line's number and `# text` the line) or a drawing."""
    from .data.conllu_format import comment_block, parse_to_conllu
    from .visualization import draw_text

    if output_format == "json":
        return json.dumps(result, ensure_ascii=False) + "\n"
    if "error" in result or not result["words"]:  # a comment block in the sentence's place keeps the alignment
        comments = {"text": line, "error": result["error"]} if "error" in result else {"empty line": None}
        return comment_block(comments, number)
    if output_format == "conllu":
        return parse_to_conllu(result, number, line)
    return draw_text(result) + "\n\n"  # a blank line between sentences, as in CoNLL-U


def _parse(args) -> None:
    if args.input and args.text:
        raise _fail("parse", "give sentences as arguments or --input FILE, not both")
    lines = _read_lines(args.input) if args.input else list(args.text)
    if not lines:
        raise _fail("parse", f"no sentence in {args.input}" if args.input else "give a sentence or --input FILE")
    _check_output(args.output, args.svg)
    from .pipelines import load_parser
    from .pipelines.unsupervised_parsing import UnsupportedOptionError, check_options, model_description

    parser = _load("parse", load_parser, _model_path("parse", args.model))
    options, flags = _pipeline_options(args)
    try:  # every option the command was given, against what the model declares, before any line is parsed
        check_options(parser.model, options)
    except UnsupportedOptionError as error:
        raise _fail("parse", f"{' '.join(flags[option] for option in error.options)}: {error}") from None
    if args.conllu and "heads" not in parser.model.parse_outputs:
        raise _fail("parse", f"--conllu: {model_description(parser.model)} gives no dependency heads, which CoNLL-U "
                             "holds; use the JSON output, --draw or --svg")
    results = _parse_lines(parser, lines, args.pretokenized, args.batch_size, options)
    output_format = "conllu" if args.conllu else "text" if args.draw else "json"
    with open(args.output, "w", encoding="utf-8") if args.output else contextlib.nullcontext(sys.stdout) as output:
        for number, (line, result) in enumerate(zip(lines, results), 1):
            output.write(_format(result, output_format, number, line))
    if args.svg:
        from .visualization import save_svg

        parsed = [(number, r) for number, r in enumerate(results, 1) if r["words"] and "error" not in r]
        for number, result in parsed:  # OUT.svg, or OUT-<line>.svg for each line when there are several
            save_svg(result, args.svg if len(lines) == 1 else _numbered(args.svg, number))
    failed = sum("error" in result for result in results)
    if failed:
        print(f"hf-structure parse: {failed} of {len(lines)} lines could not be parsed (see their `error`)",
              file=sys.stderr)
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


def _numbered(path: str, number: int) -> str:
    """`out.svg` -> `out-3.svg`."""
    path = Path(path)
    return str(path.with_name(f"{path.stem}-{number}{path.suffix or '.svg'}"))


# -------------------------------------------------------------------------------------------------------- evaluate


def _evaluate(args) -> dict:
    from .data.treebanks import TreebankFormatError, read_treebank
    from .evaluation.scoring import evaluate_baseline, evaluate_model

    try:
        gold = read_treebank(args.treebank)
    except (FileNotFoundError, TreebankFormatError) as error:
        raise _fail("evaluate", str(error)) from None
    if args.baseline:
        return evaluate_baseline(args.treebank, args.baseline, args.seed)
    from .bundled import load_model_and_tokenizer
    from .registry import model_spec

    model_path = _model_path("evaluate", args.model)
    model, tokenizer = _load("evaluate", load_model_and_tokenizer, model_path)
    perplexity_kind = model_spec(model.config.model_type).language_model_perplexity
    if args.lm_text and perplexity_kind is None:  # refused before the treebank is parsed
        raise _fail("evaluate", f"--lm-text: {args.model} is not a language model")
    if Path(args.treebank).suffix == ".conllu" and getattr(model.config, "punctuation_policy", "keep") == "keep":
        from .evaluation.scoring import evaluate_on_conllu

        scores = {"parser": args.model, **evaluate_on_conllu(model, tokenizer, args.treebank, args.batch_size)}
    else:
        scores = {"parser": args.model, **evaluate_model(model, tokenizer, gold, args.batch_size)}
    perplexity_key = None
    if args.lm_text:
        from .evaluation.perplexity import language_model_perplexity

        perplexity_key, perplexity = language_model_perplexity(model, tokenizer, args.lm_text, args.seed)
        scores[perplexity_key] = perplexity
    if args.record:
        from .hub.records import EVAL_RECORD, read_record, write_eval_record

        record = read_record(model_path, EVAL_RECORD)  # other keys of an existing record are kept
        record.update({key: value for key, value in scores.items() if key != "parser"})
        record["dataset"] = args.dataset_name or record.get("dataset") or str(args.treebank)
        if args.lm_text == "ptb-test":
            record[f"{perplexity_key}_test"] = record.pop(perplexity_key)
        record["baselines"] = {name: evaluate_baseline(args.treebank, name, args.seed) for name in BASELINES}
        for baseline in record["baselines"].values():
            baseline.pop("parser")
        write_eval_record(model_path, record)
    return scores


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hf-structure", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    parse = commands.add_parser("parse", help="parse sentences (one JSON line per input line)")
    parse.add_argument("text", nargs="*", help="sentences to parse, one per argument (quote each), or use --input")
    parse.add_argument("--model", default=DEFAULT_MODEL, help=f"folder, Hub id or bundled name ({DEFAULT_MODEL})")
    parse.add_argument("--input", help="a UTF-8 file with one sentence per line (blank lines give empty results)")
    parse.add_argument("--output", help="write here (default: standard output)")
    parse.add_argument("--pretokenized", action="store_true", help="lines are whitespace-separated words")
    for option, values in _model_option_values().items():  # the models' own options, as they declare them
        takes = "; ".join(f"{model_type}: {', '.join(map(str, accepted))}" for model_type, accepted in values.items())
        parse.add_argument(_option_flag(option), dest=option, metavar="VALUE",
                           help=f"the model's {option} ({takes}; default: the model's own)")
    parse.add_argument("--structures", type=lambda text: tuple(text.split(",")), metavar="NAMES",
                       help="only these structures, comma-separated: constituency, dependency (default: all the model "
                       "gives; a model that can skip the work for the others skips it)")
    parse.add_argument("--scores", action="store_true", help="add the model's scores to each JSON line (models "
                       "whose parses have them)")
    parse.add_argument("--drop-punctuation", action="store_true", help="leave out the punctuation the model did not "
                       "see (models that reattach punctuation)")
    style = parse.add_mutually_exclusive_group()
    style.add_argument("--draw", action="store_true", help="draw the trees as text instead of JSON")
    style.add_argument("--conllu", action="store_true", help="write CoNLL-U instead of JSON")
    parse.add_argument("--svg", metavar="OUT.svg", help="also draw each parse as SVG (OUT-<line>.svg if several)")
    parse.add_argument("--strict", action="store_true", help="exit with status 1 when any line fails")
    parse.add_argument("--batch-size", type=_count, default=32)

    evaluate = commands.add_parser("evaluate", help="score a model or a baseline on a gold treebank (one JSON line)")
    evaluate.add_argument(
        "--treebank", required=True, help="folder with mrg/ and optionally dp/, or a .conllu file (dependencies only)"
    )
    source = evaluate.add_mutually_exclusive_group()
    source.add_argument("--baseline", choices=BASELINES)
    source.add_argument("--model", help=f"model folder, Hub id or bundled name (default {DEFAULT_MODEL})")
    evaluate.add_argument("--lm-text", help="text file (or ptb-test / ptb-valid) for the model's perplexity "
                                            "(masked-LM or pseudo-perplexity, by model)")
    evaluate.add_argument("--record", action="store_true",
                          help="also write the scores (and the baselines') into the model folder's "
                               "hf_structure_eval.json, for its model card (other keys there are kept)")
    evaluate.add_argument("--dataset-name", help="display name of the treebank in the record")
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument("--batch-size", type=_count, default=64)
    add_train_publish_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in TRAINING_COMMANDS:  # the training entry parses the rest, `--help` included
        train(argv[0], argv[1:])
        return
    args = build_parser().parse_args(argv)
    if args.command in PUBLISH_COMMANDS:
        run_publish_command(args)
        return
    if args.command == "evaluate":
        if not args.baseline and not args.model:
            args.model = DEFAULT_MODEL
        print(json.dumps(_evaluate(args)))
    else:
        _parse(args)


if __name__ == "__main__":
    main()
