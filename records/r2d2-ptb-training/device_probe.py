#!/usr/bin/env python
"""Issue #37's device probe: R2D2 training steps (forward, backward, AdamW) on one batch of PTB sentences for
`--seconds`, after two warm-up steps; prints one JSON line with the sentences per second. `device_run.sh` runs it
alone, then as 4 processes at once, to see whether processes overlap on one GPU."""

import argparse
import json
import time

import torch

from hf_structure.data.text import ptb_lm_lines
from hf_structure.data.tokenization import build_word_tokenizer
from hf_structure.models.r2d2 import R2D2Config, R2D2ForLanguageModeling

parser = argparse.ArgumentParser()
parser.add_argument("--seconds", type=float, default=10.0)
parser.add_argument("--batch-size", type=int, default=256)
parser.add_argument("--hidden-size", type=int, default=256)
parser.add_argument("--pruning", default="parser")
parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
args = parser.parse_args()
device = torch.device(args.device)
tokenizer = build_word_tokenizer(ptb_lm_lines("train", exclude_wsj_00_01=False))
lines = [line for line in ptb_lm_lines("valid") if 10 <= len(line.split()) <= 40][: args.batch_size]
torch.manual_seed(0)
config = R2D2Config(vocab_size=len(tokenizer), hidden_size=args.hidden_size, num_attention_heads=4,
                    intermediate_size=4 * args.hidden_size, pruning=args.pruning)
model = R2D2ForLanguageModeling(config).to(device).train()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
encoded = tokenizer(lines, padding=True, return_tensors="pt", return_token_type_ids=False).to(device)
labels = encoded["input_ids"].masked_fill(encoded["attention_mask"] == 0, -100)


def step():
    with torch.autocast(device.type, dtype=torch.bfloat16):
        loss = model(**encoded, labels=labels).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()


def synchronize():
    if device.type == "cuda":
        torch.cuda.synchronize()


for _ in range(2):
    step()
synchronize()
began, steps = time.perf_counter(), 0
while time.perf_counter() - began < args.seconds:
    step()
    steps += 1
synchronize()
elapsed = time.perf_counter() - began
print(json.dumps({"steps": steps, "seconds": round(elapsed, 2), "batch": len(lines),
                  "sentences_per_s": round(steps * len(lines) / elapsed, 1)}), flush=True)
