#!/usr/bin/env bash
# Issue #37, experiment B (rule in README.md): the parser's target on the toy grammar, three seeds, 600 steps with
# decay: drawn trees (today's), the chart's best tree, the best tree without merge noise. One thread, in sequence.
set -uo pipefail
out=${1:-runs/expB}
mkdir -p "$out"
for seed in 0 1 2; do
  for variant in "--target sample" "--target argmax" "--target argmax --merge-noise off"; do
    name=$(echo "$variant" | tr -d ' -')
    .venv/bin/python ../shared/r2d2-diagnosis/toy_fast.py --seed $seed --steps 600 $variant > "$out/$name-s$seed.log" 2>&1
  done
done
