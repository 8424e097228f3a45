"""Words per second of StructFormer training steps at two batch sizes, on PTB sentences as `run_mlm.py` groups them
(similar lengths in a batch), and the batch size the run will use: the larger one only if it trains at least
`--min_gain` times as many words per second (issue #38: steps of 192 sentences looked overhead-bound).

    python records/structformer-ptb-paper-recipe/batch_probe.py --sizes 192 384 --steps 10 [--config_overrides ...]

Prints one JSON line per size and, last, the chosen size alone on its own line (for the shell).
"""

import argparse
import json
import random
import time

import torch

from hf_structure import StructFormerConfig, StructFormerForMaskedLM
from hf_structure.data.text import ptb_lm_lines
from hf_structure.data.tokenization import build_word_tokenizer
from hf_structure.training.arguments import apply_config_overrides


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs=2, default=[192, 384], metavar=("SMALL", "LARGE"))
    parser.add_argument("--steps", type=int, default=10, help="timed steps per size, after 3 untimed ones")
    parser.add_argument("--min_gain", type=float, default=1.15)
    parser.add_argument("--hidden_size", type=int, default=512)
    parser.add_argument("--num_hidden_layers", type=int, default=8)
    parser.add_argument("--config_overrides", default="")
    args = parser.parse_args()

    lines = ptb_lm_lines("train")
    tokenizer = build_word_tokenizer(ptb_lm_lines("train", exclude_wsj_00_01=False))
    config = StructFormerConfig(
        vocab_size=len(tokenizer), hidden_size=args.hidden_size, num_hidden_layers=args.num_hidden_layers,
        intermediate_size=4 * args.hidden_size, pad_token_id=tokenizer.pad_token_id,
        mask_token_id=tokenizer.mask_token_id, calibration_scope="batch",
    )
    if args.config_overrides:
        apply_config_overrides(config, args.config_overrides)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = StructFormerForMaskedLM(config).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, eps=1e-9, weight_decay=1.2e-6)
    by_length = sorted(lines, key=lambda line: len(line.split()))
    generator = random.Random(0)

    def step(batch_size: int) -> int:
        first = generator.randrange(len(by_length) - batch_size)
        encoded = tokenizer(by_length[first : first + batch_size], padding=True, return_tensors="pt")
        input_ids, attention_mask = encoded["input_ids"].to(device), encoded["attention_mask"].to(device)
        masked = (torch.rand(input_ids.shape, device=device) < 0.3) & attention_mask.bool()
        with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
            loss = model(
                input_ids=input_ids.masked_fill(masked, tokenizer.mask_token_id),
                attention_mask=attention_mask,
                labels=input_ids.masked_fill(~masked, -100),
            ).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return int(attention_mask.sum())

    speed = {}
    for batch_size in args.sizes:
        for _ in range(3):
            step(batch_size)
        if device == "cuda":
            torch.cuda.synchronize()
        start, words = time.perf_counter(), 0
        for _ in range(args.steps):
            words += step(batch_size)
        if device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        speed[batch_size] = words / seconds
        print(json.dumps({"batch_size": batch_size, "words_per_s": round(speed[batch_size]),
                          "ms_per_step": round(1000 * seconds / args.steps, 1)}), flush=True)
    small, large = args.sizes
    print(large if speed[large] >= args.min_gain * speed[small] else small)


if __name__ == "__main__":
    main()
