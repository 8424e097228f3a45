#!/usr/bin/env bash
# Issue #28 on a lent CUDA machine, one short command: R2D2's chart and composition before issue 28 and now (width 16
# and width 256, batches of 32 and 256; dropout 0 for the equality checks, 0.1 for speed, which also runs the
# composition's CUDA dropout path), then training steps of both prunings at width 256. Results in $OUT/gpu_check.log.
# Here, as a smoke run: OUT=/tmp/out PYTHON=.venv/bin/python QUICK=--quick bash records/r2d2-ptb-training/gpu_check.sh
set -uo pipefail
: "${OUT:?}"
PYTHON=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
QUICK=${QUICK:-}
if [ "$PYTHON" = python3 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site runs/device/wheels/*.whl
  export PYTHONPATH=/tmp/site:$PWD/src
fi
export HF_HUB_OFFLINE=1
log=$OUT/gpu_check.log
wide=(--hidden-size 256 --num-attention-heads 4 --intermediate-size 1024)
for args in "--dropout 0" "--dropout 0.1" "--dropout 0 ${wide[*]}" "--dropout 0.1 ${wide[*]}"; do
  echo "== r2d2_chart_speed.py --device $DEVICE --steps 3 $args $QUICK" >> "$log"
  timeout 100 "$PYTHON" benchmarks/r2d2_chart_speed.py --device "$DEVICE" --steps 3 $args $QUICK >> "$log" 2>&1
done
echo "== training steps, width 256, both prunings" >> "$log"
timeout 120 "$PYTHON" - "$DEVICE" "$QUICK" >> "$log" 2>&1 <<'PY'
import sys, time, torch
from hf_structure.data.text import ptb_lm_lines
from hf_structure.data.tokenization import build_word_tokenizer
from hf_structure.models.r2d2 import R2D2Config, R2D2ForLanguageModeling
device, quick = torch.device(sys.argv[1]), sys.argv[2] == "--quick"
tokenizer = build_word_tokenizer(ptb_lm_lines("train", exclude_wsj_00_01=False))
lines = [line.split() for line in ptb_lm_lines("valid") if 18 <= len(line.split()) <= 22]
for pruning in ("heuristic", "parser"):
    torch.manual_seed(0)
    config = R2D2Config(vocab_size=len(tokenizer), hidden_size=64 if quick else 256, num_attention_heads=4,
                        intermediate_size=256 if quick else 1024, window_size=4, pruning=pruning)
    model = R2D2ForLanguageModeling(config).to(device).train()
    for batch_size in ((4,) if quick else (32, 256)):
        encoded = tokenizer(lines[:batch_size], is_split_into_words=True, padding=True, return_tensors="pt",
                            return_token_type_ids=False).to(device)
        labels = encoded["input_ids"].masked_fill(encoded["attention_mask"] == 0, -100)
        times = []
        for step in range(1 if quick else 4):
            if device.type == "cuda":
                torch.cuda.synchronize()
            began = time.perf_counter()
            with torch.autocast(device.type, dtype=torch.bfloat16):
                loss = model(**encoded, labels=labels).loss
            loss.backward()
            model.zero_grad()
            if device.type == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - began)
        step_s = min(times[1:] or times)
        print(f"{pruning}, width {config.hidden_size}, batch {batch_size}: {step_s:.3f} s a step, "
              f"{batch_size / step_s:.1f} sentences/s, loss {loss.item():.3f}", flush=True)
PY
echo "== done" >> "$log"
