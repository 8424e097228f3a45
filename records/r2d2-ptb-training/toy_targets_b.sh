#!/usr/bin/env bash
# Issue #37, experiment B (rule in README.md): the parser's target on the toy grammar, three seeds, 600 steps with
# decay (the round-2 recipe): the chart's best tree, with and without merge noise. The drawn-tree target of the same
# recipe is round 2's (seed 0 reproduced this session). One thread, in sequence.
set -uo pipefail
out=${1:-runs/expB}
mkdir -p "$out"
for seed in 0 1 2; do
  for overrides in "parser_target=best" "parser_target=best,merge_noise=false"; do
    name=$(echo "$overrides" | tr ',=' '--')
    .venv/bin/python records/r2d2-ptb-training/toy_grammar.py --pruning parser --steps 600 --decay \
      --learning-rate 3e-4 --parser-learning-rate 1e-3 --seed $seed --config-overrides "$overrides" \
      > "$out/$name-s$seed.log" 2>&1
  done
done
