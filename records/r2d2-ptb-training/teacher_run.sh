#!/usr/bin/env bash
# Issue #46: R2D2 (Fast-R2D2's parser pruning) bootstrapped from structformer-ptb's trees, in three stages.
# Run from the repository root: bash records/r2d2-ptb-training/teacher_run.sh [OUT]   (default runs/r2d2-teacher)
# Stage (a): the top-down parser imitates the teacher alone (no chart). Stages (b) and (c) are one run from (a)'s
# weights: steps 0-700 the parser is held to the teacher while the language model trains over the chart it prunes
# (b); from step 700 the teacher's weight falls linearly to 0 at step 1,400, the rest of the parser's target being
# the chart's best tree, and steps 1,400-2,000 follow R2D2's own objective alone (c).
set -euo pipefail
OUT=${1:-runs/r2d2-teacher}
PY=${PY:-.venv/bin/python}
THREADS=${THREADS:-2}
common=(--model_type r2d2 --seed 46 --per_device_train_batch_size 32 --per_device_eval_batch_size 64
        --max_eval_samples 500 --train_sampling_strategy group_by_length --prediction_loss_only --use_cpu
        --weight_decay 0.01 --max_grad_norm 1.0 --lr_scheduler_type linear --logging_steps 25
        --report_to none --disable_tqdm true)
export OMP_NUM_THREADS=$THREADS
date -u +"stage a start %FT%TZ"
"$PY" scripts/run_mlm.py "${common[@]}" --output_dir "$OUT/a" --do_train \
    --pruning parser --hidden_size 128 --num_attention_heads 4 --intermediate_size 512 --num_composition_layers 2 \
    --window_size 4 --hidden_dropout_prob 0.0 \
    --config_overrides attention_probs_dropout_prob=0.0,parse_window_size=8,parser_embedding_size=128,parser_hidden_size=128,parser_num_layers=2 \
    --teacher_model structformer-ptb --parser_only --max_steps 1500 --learning_rate 1e-3 --warmup_steps 50
date -u +"stage b/c start %FT%TZ"
"$PY" scripts/run_mlm.py "${common[@]}" --output_dir "$OUT/bc" --do_train --do_eval \
    --model_name_or_path "$OUT/a" --teacher_trees "$OUT/a/teacher-structformer-ptb.jsonl" \
    --teacher_anneal_start 700 --teacher_anneal_end 1400 --max_steps 2000 \
    --learning_rate 5e-4 --parser_learning_rate 1e-4 --warmup_steps 100 \
    --max_train_time_s 6000 --lr_decay_by_wall_clock \
    --eval_strategy steps --eval_steps 500 --save_steps 700
date -u +"end %FT%TZ"
