#!/usr/bin/env bash
# Issue #37, experiment A (rule in README.md): PTB LM loss after 300 steps with merges fixed along each kind of tree,
# for window 2, window 4 and forced encoding; gold again with seed 1 for the seed spread. One thread, in sequence.
set -uo pipefail
out=${1:-runs/expA}
mkdir -p "$out"
for setting in "--window 2" "--window 4" "--forced"; do
  name=$(echo "$setting" | tr -d ' -')
  for tree in gold right left random; do
    .venv/bin/python ../shared/r2d2-diagnosis/ptb_fixed_trees.py --tree $tree $setting --steps 300 --seed 0 \
      > "$out/$name-$tree-s0.log" 2>&1
  done
  .venv/bin/python ../shared/r2d2-diagnosis/ptb_fixed_trees.py --tree gold $setting --steps 300 --seed 1 \
    > "$out/$name-gold-s1.log" 2>&1
done
