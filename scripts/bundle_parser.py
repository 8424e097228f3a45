#!/usr/bin/env python
"""Turn a finished `run_parser.py` run into a bundled parser checkpoint: weights, tokenizer, the run's training
record, the evaluation record (test scores, with the dev scores beside them) and the model card.

The weights are stored in the smallest precision, within `--max-mb`, that changes no parse of the dev set (or at
most `--allow-changed`; the config keeps float32, so the model loads and runs in float32): all in half precision;
else the further storages the model's training recipe names, smallest first (e.g. for a parser whose graph input
enters only its top layers, half precision below them; for a BERT encoder under scorers, half precision for the
encoder, then for fewer and fewer of its layers from the top); else float32. The record says what one epoch of the
model's training is, as its recipe says.
The folder holds no copy of the model code: the installed package's classes load it (an export writes the code).

    python scripts/bundle_parser.py --run runs/g2gtr-ewt \
        --output packages/hf-structure-g2gtr-ewt/src/hf_structure_g2gtr_ewt/g2gtr-ewt \
        --dev ../shared/data/ud-english-ewt/en_ewt-ud-dev.conllu \
        --test ../shared/data/ud-english-ewt/en_ewt-ud-test.conllu --dataset "UD English-EWT r2.16 (test)"
"""

import argparse
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

import hf_structure  # noqa: F401  (registers the models)
from hf_structure.bundled import load_model_and_tokenizer
from hf_structure.data.conllu_format import read_conllu
from hf_structure.evaluation.scoring import evaluate, gold_treebank
from hf_structure.hub import render_model_card
from hf_structure.hub.records import (
    load_training_record,
    read_json,
    staged_training_record,
    write_eval_record,
    write_training_record,
)
from hf_structure.pipelines.parser import Parser
from hf_structure.registry import model_spec
from hf_structure.training import ParserTraining


def storage_plans(model, recipe: ParserTraining):
    """(description, which parameters go to half precision), smallest storage first: all in half precision, then
    the further plans of the model's training recipe."""
    return [("half precision", lambda name: True), *recipe.storage_plans(model)]


def stored_mb(model, in_half) -> float:
    """Size of the weights when the parameters `in_half` selects are stored in half precision, in MiB."""
    return sum(p.numel() * (2 if in_half(name) else 4) for name, p in model.named_parameters()) / 2**20


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", required=True, help="run_parser.py output folder (final model + training record)")
    parser.add_argument("--output", required=True)
    parser.add_argument("--dev", required=True, help="dev CoNLL-U: the half-precision check and the dev scores")
    parser.add_argument("--test", required=True, help="test CoNLL-U: the scores the card reports")
    parser.add_argument("--dataset", required=True, help="display name of the test treebank")
    parser.add_argument("--notes", default="", help="anything about the run a reader should know")
    parser.add_argument("--max-mb", type=float, default=60.0, help="the largest weights file allowed")
    parser.add_argument(
        "--allow-changed",
        type=int,
        default=0,
        help="dev parses a storage may change (when no storage within --max-mb changes none, e.g. "
        "because of a near-tie that any rounding flips; say why in --notes)",
    )
    parser.add_argument(
        "--continues",
        help="what this run fine-tuned, so that its stages come first: the earlier run folder (its training record), "
        "or a JSON file listing the earlier stages' records (a weights-only snapshot's stages.json)",
    )
    parser.add_argument(
        "--teacher",
        help="the parser the run learned from (--teacher_model): scored on the same dev and test data, for the card",
    )
    args = parser.parse_args(argv)
    run, output = Path(args.run), Path(args.output)

    model, tokenizer = load_model_and_tokenizer(str(run))
    recipe = model_spec(model.config.model_type).training_recipe()
    if not isinstance(recipe, ParserTraining):
        raise SystemExit(f"{run}: a {model.config.model_type} model is not a supervised parser (no parser recipe)")
    dev_words = [sentence["words"] for sentence in read_conllu(args.dev)]
    full = Parser(model, tokenizer).parse_words(dev_words)
    storage: str | None = "float32"
    in_half: Callable[[str], bool] | None = None  # which parameters are stored in half precision
    storage_changed = 0
    if stored_mb(model, lambda name: False) > args.max_mb:
        storage = None  # float32 is too large: a plan below must change no dev parse
    for description, rule in storage_plans(model, recipe):
        if stored_mb(model, rule) > args.max_mb:
            print(f"{description}: {stored_mb(model, rule):.1f} MB, over --max-mb")
            continue
        trial = load_model_and_tokenizer(str(run))[0]
        with torch.no_grad():
            for name, parameter in trial.named_parameters():
                if rule(name):
                    parameter.copy_(parameter.half().float())
        changed = sum(a != b for a, b in zip(full, Parser(trial, tokenizer).parse_words(dev_words)))
        print(f"{description}: {changed} of {len(dev_words)} dev parses change")
        if changed <= args.allow_changed:
            storage, in_half, storage_changed = description, rule, changed
            break
    if storage is None:
        raise SystemExit(
            f"no storage of at most {args.max_mb} MB changes at most {args.allow_changed} dev parses: nothing bundled"
        )

    if output.exists():
        shutil.rmtree(output)
    model.save_pretrained(output)
    tokenizer.save_pretrained(output)
    for code in output.glob("*.py"):
        code.unlink()
    if in_half is not None:
        weights = output / "model.safetensors"
        save_file(
            {name: tensor.half() if in_half(name) else tensor for name, tensor in load_file(weights).items()},
            weights,
            metadata={"format": "pt"},
        )

    training = load_training_record(run)
    training["notes"] = "; ".join(filter(None, [training.get("notes"), args.notes]))
    stages = [training]
    if args.continues:  # each stage fine-tunes the model the stage before it saved
        source = Path(args.continues)
        earlier = read_json(source) if source.is_file() else load_training_record(source)
        stages = [*(earlier if isinstance(earlier, list) else earlier.get("stages", [earlier])), training]
    keys = ("command", "wall_time_s", "steps", "epochs", "notes")
    record = staged_training_record(
        stages,
        machine=training["machine"],
        train_data=f"{Path(args.dev).name.replace('-dev', '-train')} ({recipe.epoch})",
        notes=f"weights stored as: {storage} (the smallest storage of at most {args.max_mb:g} MB that changes "
        f"{storage_changed or 'none'} of the {len(dev_words)} dev parses)",
    )
    record["stages"] = [{key: stage[key] for key in keys if stage.get(key)} for stage in stages]
    write_training_record(output, record)

    bundled, tokenizer = load_model_and_tokenizer(str(output))
    dev = evaluate(Parser(bundled, tokenizer), gold_treebank(bundled, args.dev))[0]
    test = evaluate(Parser(bundled, tokenizer), gold_treebank(bundled, args.test))[0]
    record = {
        "dataset": args.dataset,
        "dataset_id": "universal_dependencies",
        "dataset_split": "en_ewt test",
        **test,
        "dev": {key: value for key, value in dev.items() if key != "scoring"},
    }
    if args.teacher:
        teacher, teacher_tokenizer = load_model_and_tokenizer(args.teacher)
        teacher_dev = evaluate(Parser(teacher, teacher_tokenizer), gold_treebank(teacher, args.dev))[0]
        teacher_test = evaluate(Parser(teacher, teacher_tokenizer), gold_treebank(teacher, args.test))[0]
        record["teacher"] = {
            "model": args.teacher,
            "layers": teacher.config.encoder_config.num_hidden_layers,
            "uas": teacher_test["uas"],
            "las": teacher_test["las"],
            "dev": {"uas": teacher_dev["uas"], "las": teacher_dev["las"]},
        }
    write_eval_record(output, record)
    render_model_card(output).save(output / "README.md")
    print(json.dumps(record))


if __name__ == "__main__":
    main()
