#!/bin/bash
# Full EWT dev scores of the three stage-3 bundling candidates (the rule in records/g2gtr-ewt-training/README.md).
cd /work/main
for m in snapshots/g2gtr-ewt-stage2 runs/g2gtr-ewt-stage3/checkpoint-1500 runs/g2gtr-ewt-stage3; do
  echo "== $m"
  /usr/bin/time -f "%e s" .venv/bin/hf-structure evaluate --model $m --treebank ../shared/data/ud-english-ewt/en_ewt-ud-dev.conllu
done
