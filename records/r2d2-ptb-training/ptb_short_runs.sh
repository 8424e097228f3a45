#!/usr/bin/env bash
# PTB short runs of issue #28's recipe search: heuristic and parser pruning side by side, the same model size and
# schedule, 900 s of training each (one thread each, run at the same time), dev monitoring every 150 steps.
# The parser has the authors' sizes and learning rate (BiLSTM 4 x 256 over 128-wide embeddings, 256 trees drawn per
# sentence, lr 1e-2). Monitoring only: these runs choose a recipe, nothing is bundled from them.
set -euo pipefail
common=(--model_type r2d2 --hidden_size 128 --num_attention_heads 4 --intermediate_size 512
  --num_composition_layers 3 --window_size 4 --hidden_dropout_prob 0.0 --do_train --max_steps 1200
  --max_train_time_s 900 --per_device_train_batch_size 32 --per_device_eval_batch_size 64 --max_eval_samples 500
  --learning_rate 5e-4 --warmup_steps 100 --lr_scheduler_type linear --weight_decay 0.01 --max_grad_norm 1.0 --bf16
  --eval_strategy steps --eval_steps 150 --save_strategy no --logging_steps 50
  --train_sampling_strategy group_by_length --prediction_loss_only --report_to none --use_cpu --disable_tqdm true
  --seed 404 --treebank_dir ../shared/data/ptb-sample/dev)
OMP_NUM_THREADS=1 .venv/bin/python scripts/run_mlm.py "${common[@]}" --output_dir runs/ptb-short-heuristic \
  --config_overrides attention_probs_dropout_prob=0.0,parse_window_size=8 > runs/ptb-short-heuristic.log 2>&1 &
OMP_NUM_THREADS=1 .venv/bin/python scripts/run_mlm.py "${common[@]}" --output_dir runs/ptb-short-parser \
  --pruning parser --parser_learning_rate 1e-2 \
  --config_overrides attention_probs_dropout_prob=0.0,parse_window_size=8 \
  > runs/ptb-short-parser.log 2>&1 &
wait
