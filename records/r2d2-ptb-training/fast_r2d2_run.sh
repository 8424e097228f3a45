#!/usr/bin/env bash
# Issue #28, fifth session: Fast-R2D2 (parser pruning) on PTB, two seeds side by side, one thread each, with a
# schedule that ends at 0 (the toy grammar's round 2: peak 3e-4, parser 1e-3). The rule that picks the candidate and
# decides bundling is in README.md ("Fast-R2D2 on PTB: fixed before the run"); dev F1 here is monitoring only.
set -euo pipefail
common=(--model_type r2d2 --pruning parser --parser_learning_rate 1e-3 --hidden_size 128 --num_attention_heads 4
  --intermediate_size 512 --num_composition_layers 3 --window_size 4 --hidden_dropout_prob 0.0
  --config_overrides attention_probs_dropout_prob=0.0,parse_window_size=8
  --do_train --do_eval --max_steps 1150 --max_train_time_s 7000 --per_device_train_batch_size 32
  --per_device_eval_batch_size 64 --max_eval_samples 500 --learning_rate 3e-4 --warmup_steps 100
  --lr_scheduler_type linear --weight_decay 0.01 --max_grad_norm 1.0 --bf16 --eval_strategy steps --eval_steps 400
  --save_steps 200 --save_total_limit 1 --logging_steps 50 --train_sampling_strategy group_by_length
  --prediction_loss_only --report_to none --use_cpu --disable_tqdm true --treebank_dir ../shared/data/ptb-sample/dev)
for seed in 1 2; do
  OMP_NUM_THREADS=1 .venv/bin/python scripts/run_mlm.py "${common[@]}" --seed "$seed" \
    --output_dir "runs/fast-r2d2-seed$seed" > "runs/fast-r2d2-seed$seed.log" 2>&1 &
done
wait
