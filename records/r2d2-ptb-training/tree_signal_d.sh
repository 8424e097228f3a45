#!/usr/bin/env bash
# Issue #37, experiment D (rule in README.md): does the tree signal of the LM objective grow with width, dropout or a
# decoder of its own? Forced encoding along gold and random trees (fixed_tree_objective.py), 300 steps, seed 0, one
# thread each, in sequence; width 64 first, to check that it reproduces experiment A's forced runs.
set -uo pipefail
out=${1:-runs/expD}
mkdir -p "$out"
cd records/r2d2-ptb-training
for factor in "--hidden-size 64" "--hidden-size 192" "--dropout 0.1" "--separate-decoder"; do
  name=$(echo "$factor" | tr -d ' -')
  for tree in gold random; do
    ../../.venv/bin/python fixed_tree_objective.py --tree $tree --forced --steps 300 --seed 0 \
      --treebank ../../../shared/data/ptb-sample/dev $factor > "../../$out/$name-$tree.log" 2>&1
  done
done
