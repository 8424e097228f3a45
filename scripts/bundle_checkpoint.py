#!/usr/bin/env python
"""Turn a finished language-model training run into the checkpoint that ships with the package.

Saves the model (safetensors), config (with auto_map), code and tokenizer into `--output`, scores it with the
package's scorer, and records `hf_structure_eval.json` (gold treebank UF1/UAS, baselines, and the perplexities of
the model's spec, `ModelSpec.perplexity`, on each `--lm-text`, e.g. `mlm_ppl_test`, `mlm_ppl_paper_test` or
`pppl_test`) and `hf_structure_training.json` (the exact command, wall time, machine, and the training data the run
recorded) beside it, and renders the model card (README.md) from them:

    python scripts/bundle_checkpoint.py --run runs/structformer-ptb --command-file runs/command.txt \
        --wall-time-s 5400 --treebank ../shared/data/ptb-sample/dev \
        --output src/hf_structure/checkpoints/structformer-ptb

A run that fine-tuned an earlier checkpoint (`run_mlm.py --model_name_or_path OLD`) is recorded as a further
stage of OLD's training with `--continues OLD`: the command, wall time, steps and epochs then cover all stages. A run
whose parser learned from a teacher's trees names it with `--teacher` (a model, or a file of its trees of the
treebank's sentences; given several times, the averaged teacher, `--teacher-tie-break`) and says where its trees
came from with `--teacher-origin`: the teacher is scored on the same treebank, and the record (and card) give its
scores beside the student's. `--stage NAME=FOLDER` scores a stage's saved model the same way, for the card's
lineage. A perplexity of the card that no
`--lm-text` measured is recorded as None ("not measured" on the card, left out of its model-index). Each weight
keeps the precision the run stored it in (a run saved by `scripts/export_half.py` stays in half precision where it
was).
"""

import argparse
import json
from pathlib import Path

from safetensors.torch import load_file, save_file

from hf_structure import model_spec
from hf_structure.bundled import load_model_and_tokenizer
from hf_structure.data.text import PTB_LM_TRAIN_DATA
from hf_structure.data.treebanks import read_treebank
from hf_structure.evaluation.perplexity import language_model_perplexity
from hf_structure.evaluation.scoring import evaluate, evaluate_baseline, evaluate_ensemble, gold_treebank
from hf_structure.hub import render_model_card
from hf_structure.hub.records import (
    TRAINING_RECORD,
    load_training_record,
    staged_training_record,
    treebank_record_fields,
    write_eval_record,
    write_training_record,
)
from hf_structure.pipelines.parser import Parser


def _as_stage(training: dict) -> dict:
    """A one-stage training record as an entry of `stages`."""
    keys = ("command", "wall_time_s", "steps", "epochs", "log_history", "notes")
    return {key: training[key] for key in keys if key in training}


def keep_stored_precision(stored: Path, saved: Path) -> None:
    """Rewrite `saved` with each weight in the dtype `stored` holds it in (the model loads in float32, so a weight
    stored in half precision comes back exactly)."""
    dtypes = {name: tensor.dtype for name, tensor in load_file(stored).items()}
    weights = load_file(saved)
    if any(dtypes.get(name, tensor.dtype) != tensor.dtype for name, tensor in weights.items()):
        weights = {name: tensor.to(dtypes.get(name, tensor.dtype)) for name, tensor in weights.items()}
        save_file(weights, saved, metadata={"format": "pt"})


def teacher_scores(teachers: list[str], tie_break: str, treebank: str, gold) -> dict:
    """The teacher's record: one model's scores, or the scores of the averaged trees of several teachers (models, or
    files of trees of the treebank's sentences) with each member's own F1."""
    if len(teachers) == 1 and not Path(teachers[0]).is_file():
        teacher, teacher_tokenizer = load_model_and_tokenizer(teachers[0])
        return {
            "model": teachers[0],
            **evaluate(Parser(teacher, teacher_tokenizer), gold_treebank(teacher, treebank))[0],
        }
    members = [
        (Path(name).name, name) if Path(name).is_file() else (name, Parser(*load_model_and_tokenizer(name)))
        for name in teachers
    ]
    scores = evaluate_ensemble(members, gold, tie_break)
    if len(members) == 1:  # one file of trees: its own trees
        scores = {key: value for key, value in scores.items() if key not in ("tie_break", "members")}
        scores = {key: value for key, value in scores.items() if not key.endswith("_random")}
    return {"model": " + ".join(name for name, _ in members), **scores}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", required=True, help="training output folder (final model + trainer_state.json)")
    parser.add_argument("--output", required=True)
    parser.add_argument("--treebank", required=True, help="gold treebank folder with mrg/ and dp/")
    parser.add_argument("--command-file", required=True, help="file holding the exact training command")
    parser.add_argument("--wall-time-s", type=float, required=True, help="training wall-clock time")
    parser.add_argument("--notes", default="", help="anything about the run a reader should know")
    parser.add_argument("--continues", help="checkpoint folder (with its training record) this run started from")
    parser.add_argument(
        "--teacher",
        action="append",
        help="a teacher whose trees the run learned from: a model, or a JSON-lines file of its trees of the treebank's "
        "sentences; several: their averaged trees (--teacher-tie-break); scored on the same treebank",
    )
    parser.add_argument("--teacher-tie-break", default="right", help="the averaged teacher's tie-break (default right)")
    parser.add_argument("--teacher-origin", help="where the teacher's trees came from, for the card")
    parser.add_argument(
        "--stage",
        action="append",
        default=[],
        metavar="NAME=FOLDER",
        help="an earlier stage's saved model, scored on the treebank for the card's lineage (in order)",
    )
    parser.add_argument(
        "--lm-text",
        nargs="*",
        default=["ptb-test", "ptb-valid"],
        help="texts the model's perplexities are measured on (`ptb-test`, `ptb-valid` or a file; "
        "keys `<perplexity>_<test|valid|file stem>`); none for a model without perplexity",
    )
    parser.add_argument(
        "--paper-mask-seeds",
        type=int,
        default=5,
        help="mask seeds of a paper's protocol on the first --lm-text (where the spec's perplexity "
        "has one; the paper reports the test text)",
    )
    args = parser.parse_args()
    previous = load_training_record(args.continues) if args.continues else None

    run, output = Path(args.run), Path(args.output)
    model, tokenizer = load_model_and_tokenizer(str(run))
    model.save_pretrained(output)
    tokenizer.save_pretrained(output)
    keep_stored_precision(run / "model.safetensors", output / "model.safetensors")

    gold = read_treebank(args.treebank)
    scores = evaluate(Parser(model, tokenizer), gold_treebank(model, args.treebank))[0]
    baselines = {}
    for name in ("right-branching", "left-branching", "random"):
        baseline = evaluate_baseline(args.treebank, name)
        baseline.pop("parser")
        baselines[name] = baseline
    results = {**treebank_record_fields(args.treebank), **scores}
    spec = model_spec(model.config.model_type)
    for number, text in enumerate(args.lm_text if spec.perplexity else []):
        name = text.removeprefix("ptb-") if text.startswith("ptb-") else Path(text).stem
        paper_seeds = args.paper_mask_seeds if number == 0 else 0
        for key, perplexity in language_model_perplexity(model, tokenizer, text, 0, paper_seeds).items():
            results[f"{key}_{name}"] = perplexity
    for metric in spec.card_metrics:  # a perplexity no --lm-text measured: the record says so (None)
        if metric.metric_type == "perplexity" and metric.key not in results:
            results[metric.key] = None
    results["baselines"] = baselines
    if args.teacher:
        results["teacher"] = teacher_scores(args.teacher, args.teacher_tie_break, args.treebank, gold)
        if args.teacher_origin:
            results["teacher"]["origin"] = args.teacher_origin
    stage_records = []
    for given in args.stage:
        name, _, folder = given.partition("=")
        stage_model, stage_tokenizer = load_model_and_tokenizer(folder)
        stage_scores = evaluate(Parser(stage_model, stage_tokenizer), gold_treebank(stage_model, args.treebank))[0]
        stage_records.append({"stage": name, **{key: stage_scores[key] for key in ("sentence_f1", "corpus_f1")}})
    if stage_records:
        results["stages"] = stage_records
    state = json.loads((run / "trainer_state.json").read_text())
    command = Path(args.command_file).read_text().strip()
    stage = {
        "command": command,
        "wall_time_s": round(args.wall_time_s),
        "steps": state["global_step"],
        "epochs": round(state["epoch"], 2),
        "log_history": [entry for entry in state["log_history"] if "eval_loss" in entry or "eval_perplexity" in entry],
        "notes": args.notes,
    }
    stages = [*previous.get("stages", [_as_stage(previous)]), stage] if previous else [stage]
    # The data the run itself recorded (`train-lm --train_file`), else the default corpus.
    run_record = load_training_record(run) if (run / TRAINING_RECORD).is_file() else {}
    data = {key: run_record[key] for key in ("train_data", "wsj_00_01_excluded") if key in run_record} or {
        "train_data": PTB_LM_TRAIN_DATA,
        "wsj_00_01_excluded": all("--include_wsj_00_01" not in entry["command"] for entry in stages),
    }
    if "machine" in run_record:  # the machine that trained, not the one bundling
        data["machine"] = run_record["machine"]
    training = staged_training_record(stages, **data)
    write_eval_record(output, results)
    write_training_record(output, training)  # the machine: this one's description
    render_model_card(output).save(output / "README.md")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
