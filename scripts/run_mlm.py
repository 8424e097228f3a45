#!/usr/bin/env python
"""Train or fine-tune an unsupervised parser as a language model with the Hugging Face `Trainer`: any registered
model with a language-model recipe, e.g. StructFormer (masked LM, the default) or R2D2 (`--model_type r2d2`,
bidirectional LM). `--model_type X --help` lists the model's own arguments.

From scratch on the PTB LM text (WSJ 00-01 excluded by default):
    python scripts/run_mlm.py --output_dir runs/sf --hidden_size 256 --num_hidden_layers 4 --max_steps 20000 --do_train

Fine-tune a saved model on a text file (one sentence per line):
    python scripts/run_mlm.py --model_name_or_path structformer-ptb --train_file domain.txt --do_train \
        --output_dir runs/ft

Runs under `torchrun --nproc_per_node 2` / `accelerate launch` unchanged; a killed run continues from the last whole
checkpoint of its `--output_dir` (or `--resume_from_checkpoint`); `--max_train_time_s` ends the loop after a
wall-clock budget and still saves. `--do_train`, `--do_eval` or both say what to do.
"""

import sys
from pathlib import Path

from hf_structure.training.language_model import main
from hf_structure.training.trainer import one_line_failures

if __name__ == "__main__":
    with one_line_failures(Path(__file__).name):
        main(sys.argv[1:], default_model_type="structformer")
