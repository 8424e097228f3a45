#!/usr/bin/env bash
# StructFormer at the paper's size, in one command on a lent CUDA machine (issue #32). Run from the repository root
# with runs/device/ carried: runs/device/wheels (from ../shared/gpu/wheels.sh) and runs/device/ptb-dev (a copy of
# ../shared/data/ptb-sample/dev, for the monitoring and the half-precision check; never committed).
# Writes under $OUT: train.log, and the run's folder as sf-paper.tar split into parts of 15 MiB (the device returns
# at most 8 files of 16 MiB; 38.5M parameters in float32 would not fit). In that folder everything a parse depends
# on (embeddings, parser network, temperatures: 13M parameters) stays float32 and the Transformer layers are stored
# in half precision, so no parse changes; half_precision_check.json says how many dev parses rounding everything
# would change.
# The defaults are the device run; the same script ran here on the CPU with a few steps first, e.g.
#   OUT=/tmp/out SIZE="--hidden_size 64 --num_hidden_layers 2" MAX_STEPS=6 BUDGET_S=60 DEVICE_FLAGS="--use_cpu" \
#     PYTHON=.venv/bin/python bash records/structformer-ptb-paper-size/device_run.sh
set -euo pipefail
: "${OUT:?OUT must name the folder for the results}"
PYTHON=${PYTHON:-python3}
SIZE=${SIZE:---hidden_size 512 --num_hidden_layers 8 --num_attention_heads 8}
MAX_STEPS=${MAX_STEPS:-5400}
BUDGET_S=${BUDGET_S:-440}
DEVICE_FLAGS=${DEVICE_FLAGS:---bf16 --dataloader_num_workers 2}
RUN=runs/sf-paper
start=$(date +%s)

if [ "$PYTHON" = python3 ]; then  # the device: torch and transformers are there, the rest comes from the wheels
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site runs/device/wheels/*.whl
  export PYTHONPATH=/tmp/site:$PWD/src
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$OUT/train.log"
fi
export HF_HUB_OFFLINE=1

# The paper's configuration (../shared/papers/NOTES.md): d 512, 8 layers, 8 heads, dropout 0.1, lr 3e-4, eps 1e-9,
# weight decay 1.2e-6, clip 0.25, masking 0.3 (every selected word -> <mask>), one calibration margin per batch,
# about 4,096 tokens a batch (192 PTB sentences). The paper's ReduceLROnPlateau schedule is replaced by
# warm-up / stable / decay over the steps that fit the budget, so the learning rate ends at 0 within it.
"$PYTHON" scripts/run_mlm.py --output_dir "$RUN" $SIZE --config_overrides calibration_scope=batch \
  --do_train --max_steps "$MAX_STEPS" --max_train_time_s "$BUDGET_S" \
  --per_device_train_batch_size 192 --per_device_eval_batch_size 128 \
  --learning_rate 3e-4 --lr_scheduler_type warmup_stable_decay --warmup_steps 200 \
  --lr_scheduler_kwargs "{\"num_decay_steps\": $((MAX_STEPS * 3 / 10)), \"decay_type\": \"linear\"}" \
  --weight_decay 1.2e-6 --max_grad_norm 0.25 --adam_epsilon 1e-9 \
  --eval_strategy steps --eval_steps $((MAX_STEPS / 3)) --save_strategy no --logging_steps 50 \
  --train_sampling_strategy group_by_length --prediction_loss_only --report_to none --seed 45 \
  --treebank_dir runs/device/ptb-dev --disable_tqdm true $DEVICE_FLAGS >> "$OUT/train.log" 2>&1
echo "training ended $(( $(date +%s) - start )) s after the start" >> "$OUT/train.log"

"$PYTHON" scripts/export_half.py --model "$RUN" --treebank runs/device/ptb-dev --output runs/sf-paper-half \
  --keep-float32 structformer.embed_tokens. structformer.parser. structformer.log_scales >> "$OUT/train.log" 2>&1
tar -C runs -cf - sf-paper-half | split -b 15M - "$OUT/sf-paper.tar."
echo "done $(( $(date +%s) - start )) s after the start" >> "$OUT/train.log"
