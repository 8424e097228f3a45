#!/usr/bin/env python
"""Train or fine-tune a transition-based dependency parser (Graph-to-Graph Transformer) with the Hugging Face
`Trainer` on a CoNLL-U treebank.

New parser on UD English-EWT, encoder initialised from all-MiniLM-L6-v2 (`pip install '.[g2gtr-train]'`):
    python scripts/run_parser.py --train_file ../shared/data/ud-english-ewt/en_ewt-ud-train.conllu \
        --validation_file ../shared/data/ud-english-ewt/en_ewt-ud-dev.conllu --output_dir runs/g2gtr \
        --num_train_epochs 2 --per_device_train_batch_size 8 --learning_rate 1e-4 --use_cpu --bf16 \
        --eval_strategy steps --eval_steps 500 --save_steps 500 --remove_unused_columns false

Fine-tune a saved parser on another treebank: `--model_name_or_path FOLDER --train_file other.conllu ...`.
Runs under `torchrun --nproc_per_node 2` / `accelerate launch` unchanged; a killed run continues from the last
checkpoint of its `--output_dir` (or `--resume_from_checkpoint`).
"""

import sys

from transformers import HfArgumentParser, TrainingArguments

from hf_structure.training.parser import ParserDataArguments, ParserModelArguments, main

if __name__ == "__main__":
    parser = HfArgumentParser((ParserModelArguments, ParserDataArguments, TrainingArguments))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        model_args, data_args, training_args = parser.parse_json_file(sys.argv[1])
    else:
        model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    main(model_args, data_args, training_args)
