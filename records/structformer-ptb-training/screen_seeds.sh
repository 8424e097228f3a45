#!/bin/bash
# Seed screening: each seed runs the full 7,000-step command and is stopped once its step-400 checkpoint exists.
# Rule (fixed before any result): the seed with the highest UAS on UD English-EWT dev at step 400 continues
# (--resume_from_checkpoint); the PTB dev sample (the acceptance set) plays no part in the choice.
for seed in 45 46 47; do
  out=runs/sf-seed$seed
  sed "s/SEED/$seed/g" records/structformer-ptb-training/command_template.txt > $out.command.txt
  bash $out.command.txt > $out.log 2>&1 &
  pid=$!
  until [ -f $out/checkpoint-400/trainer_state.json ]; do sleep 5; done
  sleep 15; pkill -f "output_dir $out " ; wait $pid
  .venv/bin/hf-structure evaluate --model $out/checkpoint-400 --treebank ../shared/data/ud-english-ewt/en_ewt-ud-dev.conllu > $out.ewt.json
done
