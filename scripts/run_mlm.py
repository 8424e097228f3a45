#!/usr/bin/env python
"""Train or fine-tune an unsupervised parser as a language model with the Hugging Face `Trainer`: any registered
model with a language-model recipe, e.g. StructFormer (masked LM, the default) or R2D2 (`--model_type r2d2`,
bidirectional LM). `--model_type X --help` lists the model's own arguments.

From scratch on the PTB LM text (WSJ 00-01 excluded by default):
    python scripts/run_mlm.py --output_dir runs/sf --hidden_size 256 --num_hidden_layers 4 --max_steps 20000

Fine-tune a saved model on a text file (one sentence per line):
    python scripts/run_mlm.py --model_name_or_path structformer-ptb --train_file domain.txt --output_dir runs/ft

Runs under `torchrun --nproc_per_node 2` / `accelerate launch` unchanged; `--resume_from_checkpoint` continues a
killed run; `--max_train_time_s` ends the loop after a wall-clock budget and still saves.
"""

import sys

from hf_structure.training.language_model import main

if __name__ == "__main__":
    main(sys.argv[1:], default_model_type="structformer")
