#!/usr/bin/env bash
# Issue #37, experiments C and C2 (rules in README.md): heuristic vs parser pruning on a PTB slice (10,000 training
# sentences) at a constant learning rate, the LM and parser losses logged apart every 25 steps. One thread each, side
# by side. C: `bash schedule_c.sh runs/expC` (300 steps); C2: `STEPS=1200 bash schedule_c.sh runs/expC2`.
set -uo pipefail
out=${1:-runs/expC}
mkdir -p "$out"
common=(--model_type r2d2 --hidden_size 64 --num_attention_heads 4 --intermediate_size 256
  --num_composition_layers 2 --window_size 4 --hidden_dropout_prob 0 --do_train --do_eval --max_steps "${STEPS:-300}"
  --max_train_samples 10000 --max_eval_samples 500 --per_device_train_batch_size 32 --per_device_eval_batch_size 64
  --learning_rate 5e-4 --warmup_steps 20 --lr_scheduler_type constant_with_warmup --weight_decay 0.01
  --max_grad_norm 1.0 --bf16 --save_strategy no --logging_steps 25 --train_sampling_strategy group_by_length
  --prediction_loss_only --report_to none --use_cpu --disable_tqdm true --seed 1)
for pruning in heuristic parser; do
  OMP_NUM_THREADS=1 .venv/bin/python scripts/run_mlm.py "${common[@]}" --pruning $pruning \
    --config_overrides attention_probs_dropout_prob=0,parser_target=best --output_dir "$out/$pruning" \
    > "$out/$pruning.log" 2>&1 &
done
wait
