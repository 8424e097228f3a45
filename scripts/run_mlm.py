#!/usr/bin/env python
"""Train or fine-tune an unsupervised parser as a language model with the Hugging Face `Trainer`: StructFormer
(masked LM, the default) or R2D2 (`--model_type r2d2`, bidirectional LM).

From scratch on the PTB LM text (WSJ 00-01 excluded by default):
    python scripts/run_mlm.py --output_dir runs/sf --hidden_size 256 --num_hidden_layers 4 --max_steps 20000

Fine-tune a saved model on a text file (one sentence per line):
    python scripts/run_mlm.py --model_name_or_path structformer-ptb --train_file domain.txt --output_dir runs/ft

Runs under `torchrun --nproc_per_node 2` / `accelerate launch` unchanged; `--resume_from_checkpoint` continues a
killed run; `--max_train_time_s` ends the loop after a wall-clock budget and still saves.
"""

import sys

from transformers import HfArgumentParser

from hf_structure.training.mlm import DataTrainingArguments, ModelArguments, main
from hf_structure.training.trainer import LanguageModelTrainingArguments

if __name__ == "__main__":
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, LanguageModelTrainingArguments))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        model_args, data_args, training_args = parser.parse_json_file(sys.argv[1])
    else:
        model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    main(model_args, data_args, training_args)
