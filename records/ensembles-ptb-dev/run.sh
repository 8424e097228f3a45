#!/usr/bin/env bash
# Issue #56: every subset of three teachers, averaged on the PTB dev sample, with each tie-break.
# Run from the repository root: bash records/ensembles-ptb-dev/run.sh OUT.jsonl
# DEV_TREES: the paper-size StructFormer's dev trees (../shared/teachers/, gunzipped).
set -euo pipefail
OUT=${1:-runs/ensembles-ptb-dev.jsonl}
HF=${HF:-.venv/bin/hf-structure}
DEV=${DEV:-../shared/data/ptb-sample/dev}
DEV_TREES=${DEV_TREES:-runs/teachers/structformer-paper-size.ptb-sample-dev.jsonl}
: > "$OUT"
run() { "$HF" evaluate --treebank "$DEV" --no-progress --threads 1 "$@" >> "$OUT"; }
run --model structformer-ptb
run --model r2d2-ptb
run --trees "$DEV_TREES"
for tie_break in right left; do
    run --model structformer-ptb --model r2d2-ptb --tie-break $tie_break
    run --model structformer-ptb --trees "$DEV_TREES" --tie-break $tie_break
    run --model r2d2-ptb --trees "$DEV_TREES" --tie-break $tie_break
    run --model structformer-ptb --model r2d2-ptb --trees "$DEV_TREES" --tie-break $tie_break
done
