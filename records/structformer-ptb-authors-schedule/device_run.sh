#!/usr/bin/env bash
# StructFormer at the paper's size on the authors' schedule (issue #59), one command on a lent CUDA machine, run from
# a plain copy of the working tree (no .git, the bundled model.safetensors left out) with two folders carried:
# $WHEELS (made by ../shared/gpu/wheels.sh) and $TREEBANK (a copy of ../shared/data/ptb-sample/dev). It writes only
# under $OUT and /tmp:
#   $OUT/train.log          the machine, the training log (PTB valid loss each epoch, the rate), the times
#   $OUT/trainer_state.json the run's log history and its best-valid checkpoint
#   $OUT/eval.json          the rule's evaluation of the kept weights, on the device
#   $OUT/rule.json          the rule's answer on eval.json (rule.py)
#   $OUT/sf.tar.aa..ad      the first four 15 MiB parts of the weights (sf-half/: a tar, split)
# The other parts stay in $WORK/parts on the warm machine for a second call, made if the rule holds:
#   cp /tmp/sf/parts/sf.tar.a[e-z] "$OUT"/
# The whole first call ends within 9 minutes: the evaluation is cut at $DEADLINE_S (the weights are out first).
# The CPU smoke run (tests/records/test_authors_schedule_device_run.py) sets the variables below for a tiny model.
set -euo pipefail
: "${OUT:?OUT must name the folder for the results}"
PYTHON=${PYTHON:-python3}
WHEELS=${WHEELS:-runs/device/wheels}
TREEBANK=${TREEBANK:-runs/device/ptb-sample-dev}
WORK=${WORK:-/tmp/sf}  # run/: the training run; sf-half/: the weights as stored; parts/: sf-half as a split tar
SIZE=${SIZE:---hidden_size 512 --num_hidden_layers 8 --num_attention_heads 8}
BUDGET_S=${BUDGET_S:-440}
DEADLINE_S=${DEADLINE_S:-530}
PART_SIZE=${PART_SIZE:-15M}
DEVICE_FLAGS=${DEVICE_FLAGS:---bf16 --dataloader_num_workers 2}
EVAL_DEVICE=${EVAL_DEVICE:-cuda}
EXTRA_FLAGS=${EXTRA_FLAGS:-}
here=$(dirname "$0")
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }

if [ "$PYTHON" = python3 ]; then  # the device: torch and transformers are there, the rest comes from the wheels
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$WHEELS"/*.whl
  export PYTHONPATH=/tmp/site:$PWD/src
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$OUT/train.log"
fi
export HF_HUB_OFFLINE=1
echo "setup ended $(elapsed) s after the start" >> "$OUT/train.log"

# The authors' model (google-research structformer/): dropout 0.1 on the final hidden state before the tied output
# layer and none on the input embeddings, Xavier-uniform attention projections, one calibration margin per batch.
AUTHORS="calibration_scope=batch,embedding_dropout_prob=0.0,output_dropout_prob=0.1,attention_initialization=xavier"
# The authors' schedule (main.py): Adam at 3e-4 (eps 1e-9, weight decay 1.2e-6, clip 0.25) from the first step,
# halved when PTB valid loss has not improved for two epochs (ReduceLROnPlateau, threshold 0), the best-valid weights
# kept and judged; batches of about 4,096 tokens, length-sorted, shuffled each epoch; masking 0.3. Their 100 epochs
# are cut by the wall clock. Validation is the LM loss alone: no parsing during training.
"$PYTHON" scripts/run_mlm.py --output_dir "$WORK/run" $SIZE --config_overrides "$AUTHORS" \
  --do_train --num_train_epochs 100 --max_train_time_s "$BUDGET_S" --tokens_per_batch 4096 \
  --per_device_eval_batch_size 128 --learning_rate 3e-4 --weight_decay 1.2e-6 --max_grad_norm 0.25 \
  --adam_epsilon 1e-9 --optim adamw_torch_fused \
  --lr_scheduler_type reduce_lr_on_plateau --lr_scheduler_kwargs '{"factor": 0.5, "patience": 2, "threshold": 0}' \
  --eval_strategy epoch --save_strategy epoch --save_only_model --save_total_limit 2 \
  --load_best_model_at_end --metric_for_best_model eval_loss \
  --logging_steps 50 --prediction_loss_only --report_to none --seed 45 --disable_tqdm true \
  $DEVICE_FLAGS $EXTRA_FLAGS >> "$OUT/train.log" 2>&1
cp "$WORK/run/trainer_state.json" "$OUT/"
echo "training ended $(elapsed) s after the start" >> "$OUT/train.log"

# Stored as before: what a parse depends on in float32, the Transformer layers in half precision.
"$PYTHON" scripts/export_half.py --model "$WORK/run" --treebank "$TREEBANK" --output "$WORK/sf-half" \
  --keep-float32 structformer.embed_tokens. structformer.parser. structformer.log_scales >> "$OUT/train.log" 2>&1
rm -rf "$WORK/parts" && mkdir -p "$WORK/parts"
tar -C "$WORK" -cf - sf-half | split -b "$PART_SIZE" - "$WORK/parts/sf.tar."
(cd "$WORK/parts" && md5sum sf.tar.*) >> "$OUT/train.log"
for part in "$WORK"/parts/sf.tar.a[a-d]; do cp "$part" "$OUT/"; done
echo "weights out $(elapsed) s after the start" >> "$OUT/train.log"

left=$(( DEADLINE_S - $(elapsed) ))
if [ "$left" -gt 0 ] && timeout "$left" "$PYTHON" -m hf_structure.cli evaluate --model "$WORK/sf-half" \
    --treebank "$TREEBANK" --lm-text ptb-test --device "$EVAL_DEVICE" > "$OUT/eval.json" 2>> "$OUT/train.log"; then
  "$PYTHON" "$here/rule.py" "$OUT/eval.json" > "$OUT/rule.json"
else
  echo "the evaluation did not end by ${DEADLINE_S} s: run it in the second call" >> "$OUT/train.log"
fi
echo "done $(elapsed) s after the start" >> "$OUT/train.log"
