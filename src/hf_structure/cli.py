"""The `hf-structure` command: `evaluate` parsers on a gold treebank, `parse` text into trees."""

import argparse
import json
import sys

from .baselines import BASELINES


def _evaluate(args) -> dict:
    from .evaluation import evaluate_baseline

    if args.baseline:
        return evaluate_baseline(args.treebank, args.baseline, args.seed)
    from .evaluation import evaluate_model
    from .pretrained import load_model_and_tokenizer
    from .treebanks import read_treebank

    model, tokenizer = load_model_and_tokenizer(args.model)
    scores = {"parser": args.model, **evaluate_model(model, tokenizer, read_treebank(args.treebank), args.batch_size)}
    if args.lm_text:
        from .lm_eval import masked_lm_perplexity

        scores["mlm_ppl"] = round(masked_lm_perplexity(model, tokenizer, args.lm_text, seed=args.seed), 2)
    return scores


def _parse(args) -> None:
    from .pipelines import load_parser

    if args.input:
        try:
            with open(args.input, encoding="utf-8") as handle:
                lines = [line.strip() for line in handle if line.strip()]
        except OSError as error:
            raise SystemExit(f"hf-structure parse: cannot read input file {args.input}: {error.strerror}") from None
    elif args.text:
        lines = list(args.text)
    else:
        raise SystemExit("hf-structure parse: give a sentence or --input FILE")
    if not lines:
        raise SystemExit(f"hf-structure parse: no sentence in {args.input}")
    parser = load_parser(args.model)
    inputs = [line.split() for line in lines] if args.pretokenized else lines
    try:
        results = parser(inputs, batch_size=args.batch_size)
    except (TypeError, ValueError) as error:  # a bad sentence: "sentence I: ..." (I counts non-blank lines from 0)
        raise SystemExit(f"hf-structure parse: {error}") from None
    if args.svg:
        from .visualization import save_svg

        for index, result in enumerate(results):  # OUT.svg, or OUT-1.svg, OUT-2.svg, ... for several sentences
            save_svg(result, args.svg if len(results) == 1 else _numbered(args.svg, index + 1))
    output = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    try:
        for result in results:
            if args.draw:
                from .visualization import draw_text

                output.write(draw_text(result) + "\n")
            else:
                output.write(json.dumps(result, ensure_ascii=False) + "\n")
    finally:
        if args.output:
            output.close()


def _numbered(path: str, number: int) -> str:
    """`out.svg` -> `out-3.svg`."""
    from pathlib import Path

    path = Path(path)
    return str(path.with_name(f"{path.stem}-{number}{path.suffix or '.svg'}"))


def build_parser() -> argparse.ArgumentParser:
    from .pretrained import DEFAULT_MODEL

    parser = argparse.ArgumentParser(prog="hf-structure", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    evaluate = commands.add_parser("evaluate", help="score a model or a baseline on a gold treebank (one JSON line)")
    evaluate.add_argument(
        "--treebank", required=True, help="folder with mrg/ and optionally dp/, or a .conllu file (dependencies only)"
    )
    source = evaluate.add_mutually_exclusive_group()
    source.add_argument("--baseline", choices=BASELINES)
    source.add_argument("--model", help=f"model folder, Hub id or bundled name (default {DEFAULT_MODEL})")
    evaluate.add_argument("--lm-text", help="text file (or ptb-test / ptb-valid) for masked-LM perplexity")
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument("--batch-size", type=int, default=64)

    parse = commands.add_parser("parse", help="parse sentences into constituency trees and dependency heads")
    parse.add_argument("text", nargs="*", help="sentences to parse, one per argument (quote each), or use --input")
    parse.add_argument("--model", default=DEFAULT_MODEL)
    parse.add_argument("--input", help="a file with one sentence per line")
    parse.add_argument("--output", help="write JSON lines here (default: standard output)")
    parse.add_argument("--pretokenized", action="store_true", help="lines are whitespace-separated words")
    parse.add_argument("--draw", action="store_true", help="draw the trees as text instead of JSON")
    parse.add_argument(
        "--svg", metavar="OUT.svg", help="also draw each parse as SVG: OUT.svg, or OUT-1.svg, OUT-2.svg, ... if several"
    )
    parse.add_argument("--batch-size", type=int, default=32)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.command == "evaluate":
        if not args.baseline and not args.model:
            from .pretrained import DEFAULT_MODEL

            args.model = DEFAULT_MODEL
        print(json.dumps(_evaluate(args)))
    else:
        _parse(args)


if __name__ == "__main__":
    main()
