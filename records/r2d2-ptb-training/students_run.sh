#!/usr/bin/env bash
# Issue #56: R2D2 students of a stronger teacher. Run from the repository root:
#   bash records/r2d2-ptb-training/students_run.sh CANDIDATE OUT
# CANDIDATE: `paper` (the paper-size StructFormer's trees of ../shared/teachers/, gunzipped to TREES) or
# `paper+sf` (those trees averaged with structformer-ptb's, ties toward right-branching).
# Stage (a): the top-down parser imitates the teacher alone (no chart), as #46's stage (a).
# Stage (b): from (a), the language model trains over the chart that the parser prunes while the parser stays held
# to the teacher (#46's stage (b), the stage after imitation whose parser scored highest); eval LM loss at its end.
set -euo pipefail
CANDIDATE=$1
OUT=$2
PY=${PY:-.venv/bin/python}
THREADS=${THREADS:-1}
TREES=${TREES:-runs/teachers/structformer-paper-size.ptb-train.jsonl}
common=(--model_type r2d2 --seed 56 --per_device_train_batch_size 32 --per_device_eval_batch_size 64
        --max_eval_samples 500 --train_sampling_strategy group_by_length --prediction_loss_only --use_cpu
        --weight_decay 0.01 --max_grad_norm 1.0 --lr_scheduler_type linear --logging_steps 25
        --report_to none --disable_tqdm true --teacher_tie_break right)
case $CANDIDATE in
    paper) teacher_a=(--teacher_trees "$TREES"); teacher_b=(--teacher_trees "$TREES") ;;
    paper+sf) teacher_a=(--teacher_trees "$TREES" --teacher_model structformer-ptb)
              teacher_b=(--teacher_trees "$TREES" "$OUT/a/teacher-structformer-ptb.jsonl") ;;
    *) echo "CANDIDATE must be paper or paper+sf" >&2; exit 2 ;;
esac
export OMP_NUM_THREADS=$THREADS
date -u +"stage a start %FT%TZ"
"$PY" scripts/run_mlm.py "${common[@]}" --output_dir "$OUT/a" --do_train \
    --pruning parser --hidden_size 128 --num_attention_heads 4 --intermediate_size 512 --num_composition_layers 2 \
    --window_size 4 --hidden_dropout_prob 0.0 \
    --config_overrides attention_probs_dropout_prob=0.0,parse_window_size=8,parser_embedding_size=128,parser_hidden_size=128,parser_num_layers=2 \
    "${teacher_a[@]}" --parser_only --max_steps 1500 --learning_rate 1e-3 --warmup_steps 50
date -u +"stage b start %FT%TZ"
"$PY" scripts/run_mlm.py "${common[@]}" --output_dir "$OUT/b" --do_train --do_eval \
    --model_name_or_path "$OUT/a" "${teacher_b[@]}" --max_steps 500 \
    --learning_rate 5e-4 --parser_learning_rate 1e-4 --warmup_steps 100 --save_steps 250
date -u +"end %FT%TZ"
