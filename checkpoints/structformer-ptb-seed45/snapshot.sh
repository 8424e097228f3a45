#!/bin/bash
# Commit the run's latest checkpoint under checkpoints/structformer-ptb-seed45/ so the run survives the session.
# History keeps one checkpoint, not one per snapshot (each is ~95 MB with the optimizer state): the previous
# snapshot commit is dropped when it is newer than BASE (the last commit that has landed; it must not be
# rewritten), by a soft reset when it is HEAD, or else by replaying the later commits onto its parent (they never
# touch this folder, so the replay cannot conflict).
# Usage: bash checkpoints/structformer-ptb-seed45/snapshot.sh BASE [runs/sf-seed45]
set -euo pipefail
base=$1
run=${2:-runs/sf-seed45}
here=checkpoints/structformer-ptb-seed45
subject='^structformer-ptb seed 45: checkpoint'
latest=$(ls -d "$run"/checkpoint-* | sort -t- -k3 -n | tail -1)
# A checkpoint is complete once its trainer_state.json exists (the Trainer writes it after the weights).
test -f "$latest/trainer_state.json" || { echo "incomplete checkpoint: $latest" >&2; exit 1; }
step=${latest##*-}
previous=$(git log --format=%H --grep="$subject" -1 "$base..HEAD")
if [ -n "$previous" ]; then
  if [ "$previous" = "$(git rev-parse HEAD)" ]; then
    git reset -q --soft HEAD~1
  else
    git rebase -q --autostash --onto "$previous~1" "$previous"
  fi
fi
rm -rf "$here"/checkpoint-*
cp -r "$latest" "$here/checkpoint-$step"
git add -A "$here"
git commit -q -m "structformer-ptb seed 45: checkpoint at step $step of the 7,000-step run (resume with --resume_from_checkpoint $here/checkpoint-$step)" -- "$here"
echo "committed $here/checkpoint-$step"
