#!/usr/bin/env bash
# Issue #37 on a lent GPU, one command: a probe (is 4 processes at once at least 2x one?), then the runs of
# device_variants.txt side by side (or its first alone at a 4x batch), each stopped by wall clock with its learning
# rate decayed to 0 by then; each run's eval LM loss (PTB valid), dev F1 (both decodings) and tree sensitivity; the
# weights of the candidate run with the lowest eval LM loss, in half precision. device_variants.txt: one run a line,
# its name, `candidate` or `measure` (an experiment's run, never picked), then its own run_mlm.py arguments. The rule
# that picks and bundles is in README.md (fixed before the run).
# On the device (wheels from ../shared/gpu/wheels.sh in runs/device/wheels, the dev sample in runs/device/):
#   bash records/r2d2-ptb-training/device_run.sh
# Here, as a smoke run on the CPU:
#   OUT=/tmp/out PYTHON=.venv/bin/python DEVICE=cpu QUICK=1 bash records/r2d2-ptb-training/device_run.sh
set -uo pipefail
: "${OUT:?}"
PYTHON=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
QUICK=${QUICK:-}
TRAIN_S=${TRAIN_S:-270}
PROBE_S=${PROBE_S:-10}
BATCH=${BATCH:-256}
TREEBANK=${TREEBANK:-runs/device/ptb-sample-dev}
VARIANTS=${VARIANTS:-records/r2d2-ptb-training/device_variants.txt}
if [ "$PYTHON" = python3 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site runs/device/wheels/*.whl
  export PYTHONPATH=/tmp/site:$PWD/src
fi
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
log=$OUT/device_run.log
runs=runs/gpu
mkdir -p "$runs"
say() { echo "$(date -u +%T) $*" | tee -a "$log"; }
say "device: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || echo "$DEVICE")"
[ -n "$QUICK" ] && { TRAIN_S=20; PROBE_S=2; BATCH=8; }
probe=("$PYTHON" records/r2d2-ptb-training/device_probe.py --seconds "$PROBE_S" --batch-size "$BATCH" --device "$DEVICE")
[ -n "$QUICK" ] && probe+=(--hidden-size 32)

# 1. The probe: one process, then four at once (PROBED_ONE and PROBED_FOUR: an earlier probe's figures on this kind).
if [ -n "${PROBED_ONE:-}" ]; then one=$PROBED_ONE; four=$PROBED_FOUR; else
one=$("${probe[@]}" 2>>"$log" | tail -1 | "$PYTHON" -c "import json,sys; print(json.load(sys.stdin)['sentences_per_s'])")
for i in 1 2 3 4; do "${probe[@]}" > "$runs/probe$i.json" 2>>"$log" & done
wait
four=$(cat "$runs"/probe?.json | "$PYTHON" -c "import json,sys; print(sum(json.loads(l)['sentences_per_s'] for l in sys.stdin))")
fi
parallel=${PARALLEL:-$("$PYTHON" -c "print(int($four >= 2 * $one))")}  # PARALLEL: a smoke run's override
say "probe: one process $one sentences/s; four at once $four in all; side by side: $parallel"

# 2. The runs: steps that fit the wall-clock budget at the probed rate (80% of it), decayed to 0 by then.
mapfile -t lines < <(grep -v '^#' "$VARIANTS" | grep .)
if [ "$parallel" = 1 ]; then batch=$BATCH; rate=$("$PYTHON" -c "print($four / 4)")
else lines=("${lines[0]}"); batch=$((${BATCH_FACTOR:-4} * BATCH)); rate=$one; fi  # 4x ran out of memory on an H100
steps=$("$PYTHON" -c "print(max(10, int(0.8 * $rate * $TRAIN_S / $batch)))")
steps=${STEPS:-$steps}  # STEPS: the step count a measured run's own rate gives
warmup=$((steps / 10))
say "runs: ${#lines[@]}, batch $batch, $steps steps each, wall-clock guard $TRAIN_S s"
common=(--model_type r2d2 --do_train --do_eval --max_steps "$steps" --max_train_time_s "$TRAIN_S"
  --per_device_train_batch_size "$batch" --per_device_eval_batch_size 256 --warmup_steps "$warmup"
  --lr_scheduler_type linear --weight_decay 0.01 --max_grad_norm 1.0 --bf16 --save_strategy no
  --eval_strategy no --logging_steps 10 --train_sampling_strategy group_by_length --prediction_loss_only
  --report_to none --disable_tqdm true --dataloader_num_workers 0)
[ "$DEVICE" = cpu ] && common+=(--use_cpu)
[ -n "$QUICK" ] && common+=(--max_train_samples 64 --max_eval_samples 16)
names=()
candidates=()
for line in "${lines[@]}"; do
  read -r name role arguments <<< "$line"
  names+=("$name")
  [ "$role" = candidate ] && candidates+=("$name")
  [ -n "$QUICK" ] && arguments+=" --hidden_size 32 --intermediate_size 64 --num_composition_layers 1"
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=3 "$PYTHON" scripts/run_mlm.py "${common[@]}" $arguments --output_dir "$runs/$name" \
    > "$runs/$name.log" 2>&1 &
done
wait
say "training done"

# 3. Dev F1 (both decodings) and tree sensitivity of every run, side by side.
for name in "${names[@]}"; do
  OMP_NUM_THREADS=2 timeout 120 "$PYTHON" -m hf_structure.cli evaluate --model "$runs/$name" --treebank "$TREEBANK" \
    --device "$DEVICE" --batch-size 128 > "$runs/$name.f1.txt" 2>&1 &
  OMP_NUM_THREADS=2 timeout 120 "$PYTHON" records/r2d2-ptb-training/tree_sensitivity.py --model "$runs/$name" \
    --treebank "$TREEBANK" --device "$DEVICE" > "$runs/$name.sensitivity.json" 2>"$runs/$name.sensitivity.err" &
done
wait
for name in "${names[@]}"; do
  say "== $name: $(tail -c 300 "$runs/$name/eval_results.json" 2>/dev/null | tr -d '\n ')"
  grep -i -E "f1|error" "$runs/$name.f1.txt" | head -4 | tee -a "$log"
  tee -a "$log" < "$runs/$name.sensitivity.json"
  grep -E "loss|grad_norm" "$runs/$name.log" | tail -2 | tee -a "$log"
done

# 4. The run with the lowest eval LM loss, in half precision but for the top-down parser (the default decoding then
# parses exactly as in float32; the parses that rounding changes are counted).
chosen=$("$PYTHON" - "$runs" "${candidates[@]}" <<'PY'
import json, sys
from pathlib import Path
losses = {}
for name in sys.argv[2:]:
    path = Path(sys.argv[1]) / name / "eval_results.json"
    if path.exists():
        losses[name] = json.loads(path.read_text())["eval_loss"]
print(min(losses, key=losses.get) if losses else "")
PY
)
say "chosen (lowest eval LM loss of ${candidates[*]}): ${chosen:-none}"
if [ -n "$chosen" ]; then
  timeout 120 "$PYTHON" scripts/export_half.py --model "$runs/$chosen" --treebank "$TREEBANK" \
    --output "$runs/chosen-half" --device "$DEVICE" --keep-float32 r2d2.split_parser. 2>>"$log" | tee -a "$log"
  tar -cf - -C "$runs" chosen-half | split -b 15M - "$OUT/chosen-half.tar.part-"
fi
tar -czf "$OUT/runs.tar.gz" --exclude='*.safetensors' --exclude='chosen-half' "$runs"
say "done"
