"""Trainers: reproducible length-grouped batches, and perplexity in the masked-LM logs."""

import logging
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from transformers import Trainer, TrainerCallback, TrainingArguments
from transformers.trainer_pt_utils import LengthGroupedSampler

logger = logging.getLogger(__name__)


@dataclass
class LanguageModelTrainingArguments(TrainingArguments):
    """`TrainingArguments` with a wall-clock budget for the training loop."""

    max_train_time_s: float | None = field(
        default=None,
        metadata={
            "help": "Stop training after this many seconds of this process's training loop, then save as at the "
            "end of a run (for a lent machine with a hard time limit; --max_steps still sets the schedule)."
        },
    )


class WallClockBudget(TrainerCallback):
    """Ends training once `budget_s` seconds have passed since the training loop began; the run then saves its
    model and records as after its last step. Checked after each optimiser step, so it overruns by one step."""

    def __init__(self, budget_s: float):
        if budget_s <= 0:
            raise ValueError(f"the wall-clock budget must be positive, got {budget_s}")
        self.budget_s = budget_s
        self.started = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.started = time.monotonic()

    def on_step_end(self, args, state, control, **kwargs):
        if time.monotonic() - self.started >= self.budget_s:
            logger.info("wall-clock budget of %.0f s spent at step %d: stopping", self.budget_s, state.global_step)
            control.should_training_stop = True


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
    and the epoch, so a resumed run sees the batches of the uninterrupted one; with `learning_rate_of` (parameter
    name -> peak learning rate), parameters train at rates of their own, on the same schedule."""

    def __init__(self, *args, learning_rate_of: Callable[[str], float] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.learning_rate_of = learning_rate_of

    def _get_train_sampler(self, train_dataset=None):
        train_dataset = train_dataset if train_dataset is not None else self.train_dataset
        if self.args.train_sampling_strategy != "group_by_length" or "length" not in train_dataset.column_names:
            return super()._get_train_sampler(train_dataset)
        return EpochSeededLengthGroupedSampler(
            self.args.train_batch_size * self.args.gradient_accumulation_steps,
            lengths=train_dataset["length"],
            seed=self.args.data_seed if self.args.data_seed is not None else self.args.seed,
        )

    def create_optimizer(self, model=None):
        """Trainer's optimizer, whose parameters with a rate of their own are moved to groups of that rate (one per
        rate and weight-decay setting)."""
        optimizer = super().create_optimizer(model)
        if self.learning_rate_of is None or getattr(optimizer, "has_own_rates", False):
            return optimizer
        model = self.model if model is None else model
        rate_of = {id(parameter): self.learning_rate_of(name) for name, parameter in model.named_parameters()}
        for group in list(optimizer.param_groups):
            moved = {}
            for parameter in group["params"]:
                if rate_of[id(parameter)] != group["lr"]:
                    moved.setdefault(rate_of[id(parameter)], []).append(parameter)
            if moved:
                group["params"] = [parameter for parameter in group["params"] if rate_of[id(parameter)] == group["lr"]]
                settings = {key: value for key, value in group.items() if key != "params"}
                for rate, parameters in moved.items():
                    optimizer.add_param_group({**settings, "params": parameters, "lr": rate})
        optimizer.has_own_rates = True  # the Trainer may ask again for the optimizer it has
        return optimizer


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


def train_resuming(trainer):
    """Train, continuing from `--resume_from_checkpoint` or else the output folder's last complete checkpoint; then
    save the model, the metrics, the trainer state and the training record. Returns the train output."""
    args = trainer.args
    checkpoint = args.resume_from_checkpoint
    if checkpoint is None:
        checkpoint = last_complete_checkpoint(args.output_dir)
        if checkpoint:
            logger.info("resuming from the last checkpoint in the output folder: %s", checkpoint)
    result = trainer.train(resume_from_checkpoint=checkpoint)
    trainer.save_model()
    trainer.log_metrics("train", result.metrics)
    trainer.save_metrics("train", result.metrics)
    trainer.save_state()
    if trainer.is_world_process_zero():
        write_training_record(args.output_dir, trainer, result.metrics["train_runtime"], checkpoint)
    return result


def end_processes(trainer) -> None:
    """Tear the process group down before the interpreter exits: under `torchrun` with gloo, its threads otherwise
    race the shutdown ("terminate called without an active exception", SIGABRT on one rank)."""
    trainer.accelerator.wait_for_everyone()
    trainer.accelerator.end_training()


def write_training_record(output_dir: str, trainer, wall_time_s: float, resumed_from: str | None) -> None:
    """The output folder's `hf_structure_training.json` (see `hf_structure.hub.records`), so that the saved model
    can be published with a card that states how it was trained."""
    import shlex
    import sys

    from ..hub import records

    command = "python " + " ".join(shlex.quote(argument) for argument in sys.argv)
    record = {
        "command": command,
        "wall_time_s": round(wall_time_s, 1),
        "steps": trainer.state.global_step,
        "epochs": round(trainer.state.epoch or 0.0, 2),
    }
    if resumed_from:
        record["notes"] = f"resumed from {resumed_from}; wall_time_s counts the last process only"
    records.write_training_record(output_dir, record)  # with this machine's description
