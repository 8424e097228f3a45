"""Trainers: reproducible length-grouped batches, and perplexity in the masked-LM logs."""

import math
import os
import re

import torch
from transformers import Trainer
from transformers.trainer_pt_utils import LengthGroupedSampler


class EpochSeededLengthGroupedSampler(LengthGroupedSampler):
    """Length-grouped batches whose order depends only on (seed, epoch), not on the global random state, so that a
    run resumed from a checkpoint sees exactly the batches the uninterrupted run would have seen."""

    def __init__(self, *args, seed: int, **kwargs):
        super().__init__(*args, generator=torch.Generator(), **kwargs)
        self.seed = seed
        self.set_epoch(0)

    def set_epoch(self, epoch: int) -> None:
        self.generator.manual_seed(self.seed + epoch)


class LengthGroupedTrainer(Trainer):
    """`Trainer` whose length-grouped batches (`train_sampling_strategy="group_by_length"`) depend only on the seed
    and the epoch, so a resumed run sees the batches of the uninterrupted one."""

    def _get_train_sampler(self, train_dataset=None):
        train_dataset = train_dataset if train_dataset is not None else self.train_dataset
        if self.args.train_sampling_strategy != "group_by_length" or "length" not in train_dataset.column_names:
            return super()._get_train_sampler(train_dataset)
        return EpochSeededLengthGroupedSampler(
            self.args.train_batch_size * self.args.gradient_accumulation_steps,
            lengths=train_dataset["length"],
            seed=self.args.data_seed if self.args.data_seed is not None else self.args.seed,
        )


class MaskedLMTrainer(LengthGroupedTrainer):
    """The length-grouped trainer with `eval_perplexity` (= exp eval_loss) in the logs."""

    def evaluate(self, *args, **kwargs):
        metrics = super().evaluate(*args, **kwargs)
        prefix = kwargs.get("metric_key_prefix", "eval")
        if f"{prefix}_loss" in metrics:
            metrics[f"{prefix}_perplexity"] = math.exp(min(metrics[f"{prefix}_loss"], 50.0))
            self.log({f"{prefix}_perplexity": metrics[f"{prefix}_perplexity"]})
        return metrics


def last_complete_checkpoint(output_dir: str) -> str | None:
    """The newest `checkpoint-N` folder of `output_dir` that was written to the end (`trainer_state.json` is saved
    last), so that a run killed while saving resumes from the checkpoint before."""
    if not os.path.isdir(output_dir):
        return None
    steps = [
        int(match.group(1))
        for name in os.listdir(output_dir)
        if (match := re.fullmatch(r"checkpoint-(\d+)", name))
        and os.path.isfile(os.path.join(output_dir, name, "trainer_state.json"))
    ]
    return os.path.join(output_dir, f"checkpoint-{max(steps)}") if steps else None
