"""Trainers: reproducible length-grouped batches, parts of a model trained as by optimisers of their own, and the
model's own loss terms and perplexity in the language-model logs; what both training entries share around them
(the checkpoint to resume, saves the file system refuses, the failures that end an entry in one line)."""

import contextlib
import errno
import json
import logging
import math
import os
import re
import shlex
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import torch
from torch.utils.data import DataLoader, Dataset
from transformers import Trainer, TrainerCallback, TrainingArguments, get_scheduler
from transformers.trainer_pt_utils import LengthGroupedSampler

from ..file_modes import with_default_mode
from .arguments import EntryArgumentsError

logger = logging.getLogger(__name__)


@dataclass
class EntryTrainingArguments(TrainingArguments):
    """`TrainingArguments` of both training entries (`train-lm`, `train-parser`), with the option that lets a run
    replace the trained model in its --output_dir (`checkpoint_to_resume`)."""

    overwrite_output_dir: bool = field(
        default=False,
        metadata={
            "help": "Train into an --output_dir that holds a trained model (and no checkpoint to resume from), "
            "replacing it; refused otherwise."
        },
    )


@dataclass
class LanguageModelTrainingArguments(EntryTrainingArguments):
    """The language-model entry's `TrainingArguments`, with a wall-clock budget for the training loop."""

    max_train_time_s: float | None = field(
        default=None,
        metadata={
            "help": "Stop training after this many seconds of this process's training loop, then save as at the "
            "end of a run (for a lent machine with a hard time limit; --max_steps still sets the schedule)."
        },
    )
    lr_decay_by_wall_clock: bool = field(
        default=False,
        metadata={
            "help": "With --max_train_time_s: the learning-rate schedule advances by steps or by the budget's "
            "spent share, whichever is further, so that its decay ends when the budget does even if --max_steps "
            "is not reached."
        },
    )
    tokens_per_batch: int | None = field(
        default=None,
        metadata={
            "help": "Batches of about this many tokens instead of --per_device_train_batch_size sentences: the "
            "sentences sorted by length and cut into batches that each reach the count (the last one may not), "
            "the batches shuffled each epoch (the StructFormer authors' batches of 4096 tokens)."
        },
    )


class SparsePrediction(TrainerCallback):
    """Training a model on the CPU predicts the labelled words alone: a language model's `sparse_prediction` (as
    transformers' ModernBERT), whose loss needs no other logits, is turned on while it trains, which saves about
    two thirds of the output layer's arithmetic. Elsewhere it stays off: picking the labelled words would make the
    host wait for the device to count them each step, and a GPU's step waits on dispatch, not on arithmetic. A
    saved or loaded model gives every position's logits."""

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        model.sparse_prediction = model.device.type == "cpu"


class WallClockBudget(TrainerCallback):
    """Ends training once `budget_s` seconds have passed since the training loop began; the run then saves its
    model and records as after its last step. Checked after each optimiser step, so it overruns by one step."""

    def __init__(self, budget_s: float, clock: Callable[[], float] = time.monotonic):
        if budget_s <= 0:
            raise ValueError(f"the wall-clock budget must be positive, got {budget_s}")
        self.budget_s = budget_s
        self.clock = clock
        self.started: float | None = None

    def spent(self) -> float:
        """The share of the budget spent (0 before the training loop begins; above 1 once it is over)."""
        return 0.0 if self.started is None else (self.clock() - self.started) / self.budget_s

    def on_train_begin(self, args, state, control, **kwargs):
        self.started = self.clock()

    def on_step_end(self, args, state, control, **kwargs):
        if self.spent() >= 1:
            logger.info("wall-clock budget of %.0f s spent at step %d: stopping", self.budget_s, state.global_step)
            control.should_training_stop = True


@dataclass(frozen=True)
class OptimizerPart:
    """Parameters trained as by an optimiser of their own: a peak learning rate, a warm-up and a gradient clip of
    their own, on the run's schedule type. (One AdamW with a parameter group per part is that: AdamW's state is per
    parameter.)

    Args:
        name: the part's name in the logs (`grad_norm_<name>`).
        selects: parameter name -> whether the parameter belongs to the part (the first part that selects it).
        learning_rate: its peak rate.
        warmup_steps: its warm-up; None: the run's.
        max_grad_norm: its gradient clip, on its own gradients' norm; None: the parameters join the run's one clip
            over every parameter not clipped by a part (`--max_grad_norm`).
    """

    name: str
    selects: Callable[[str], bool]
    learning_rate: float
    warmup_steps: int | None = None
    max_grad_norm: float | None = None


class EpochSeededLengthGroupedSampler(LengthGroupedSampler):
    """Length-grouped batches whose order depends only on (seed, epoch), not on the global random state, so that a
    run resumed from a checkpoint sees exactly the batches the uninterrupted run would have seen."""

    def __init__(
        self,
        batch_size: int,
        dataset: Dataset | None = None,
        lengths: list[int] | None = None,
        model_input_name: str | None = None,
        *,
        seed: int,
    ):
        super().__init__(batch_size, dataset, lengths, model_input_name, generator=torch.Generator())
        self.seed = seed
        self.set_epoch(0)

    def set_epoch(self, epoch: int) -> None:
        self.generator.manual_seed(self.seed + epoch)


class TokenBudgetBatchSampler:
    """Batches of about `tokens_per_batch` tokens, as the StructFormer authors' `batchify` makes them: the sentences
    sorted by length (ties in corpus order), then taken in that order into a batch until its tokens reach the
    count, so that a batch overshoots by less than one sentence and only the last can fall short. The batches are
    fixed; their order is shuffled each epoch by (seed, epoch), so a resumed run sees the uninterrupted run's.
    Every example is in exactly one batch an epoch; a batch holds sentences of nearly one length, so padding stays
    small, and every token weighs about the same in the update, whatever its sentence's length."""

    def __init__(self, lengths: list[int], tokens_per_batch: int, seed: int):
        if tokens_per_batch <= 0:
            raise EntryArgumentsError(f"--tokens_per_batch must be positive, got {tokens_per_batch}")
        self.batches: list[list[int]] = []
        batch: list[int] = []
        tokens = 0
        for index in sorted(range(len(lengths)), key=lengths.__getitem__):
            batch.append(index)
            tokens += lengths[index]
            if tokens >= tokens_per_batch:
                self.batches.append(batch)
                batch, tokens = [], 0
        if batch:
            self.batches.append(batch)
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[list[int]]:
        order = torch.randperm(len(self.batches), generator=torch.Generator().manual_seed(self.seed + self.epoch))
        return (self.batches[i] for i in order.tolist())


class LengthGroupedTrainer(Trainer):
    """`Trainer` whose length-grouped batches (`train_sampling_strategy="group_by_length"`) depend only on the seed
    and the epoch, so a resumed run sees the batches of the uninterrupted one; with `learning_rate_of` (parameter
    name -> peak learning rate), parameters train at rates of their own, on the same schedule; with
    `optimizer_parts`, parts of the model train as by optimisers of their own (`OptimizerPart`), each part's
    gradient norm logged as `grad_norm_<part>`. With `tokens_per_batch` in its arguments, training batches hold
    about that many tokens (`TokenBudgetBatchSampler`)."""

    def __init__(
        self,
        *args,
        learning_rate_of: Callable[[str], float] | None = None,
        optimizer_parts: list[OptimizerPart] | None = None,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        budget_s = getattr(self.args, "max_train_time_s", None)
        self.wall_clock = WallClockBudget(budget_s) if budget_s else None
        if self.wall_clock:
            self.add_callback(self.wall_clock)
        if getattr(self.args, "lr_decay_by_wall_clock", False) and not self.wall_clock:
            raise EntryArgumentsError("--lr_decay_by_wall_clock needs --max_train_time_s")
        if learning_rate_of is not None and optimizer_parts:
            raise ValueError("give learning_rate_of or optimizer_parts, not both")
        self.optimizer_parts = optimizer_parts or []
        if self.optimizer_parts:
            learning_rate_of = self._part_learning_rate
        self.learning_rate_of = learning_rate_of
        # The optimizer `create_optimizer` has moved parameters to groups of their own rates.
        self._regrouped_optimizer: torch.optim.Optimizer | None = None
        self._grad_norms: dict[str, list[torch.Tensor]] = {}

    def part_of(self, name: str) -> OptimizerPart | None:
        """The optimizer part a parameter belongs to; None: the rest of the model, at the run's settings."""
        return next((part for part in self.optimizer_parts if part.selects(name)), None)

    def _part_learning_rate(self, name: str) -> float:
        part = self.part_of(name)
        return self.args.learning_rate if part is None else part.learning_rate

    def _save(self, output_dir: str | None = None, state_dict=None):
        """Trainer's save (the final model and every checkpoint), the weights then given the umask's mode."""
        super()._save(output_dir, state_dict)
        # TrainingArguments' __post_init__ sets output_dir (default "trainer_output"): a str here.
        with_default_mode(output_dir if output_dir is not None else self.args.output_dir)  # type: ignore[arg-type]

    def _save_checkpoint(self, model, trial):
        """Trainer's checkpoint save, which a full or read-only file system ends with a SaveRefusedError naming the
        checkpoint (`refused_saves`)."""
        name = f"checkpoint-{self.state.global_step}"
        output_dir: str = self.args.output_dir  # type: ignore[assignment]  # TrainingArguments sets a default
        with refused_saves(name, os.path.join(output_dir, name)):
            super()._save_checkpoint(model, trial)

    def get_train_dataloader(self):
        """Trainer's training data loader; with `--tokens_per_batch`, one whose batches are a
        `TokenBudgetBatchSampler`'s (the Trainer's own loader takes batches of a fixed number of examples)."""
        tokens_per_batch = getattr(self.args, "tokens_per_batch", None)
        if not tokens_per_batch:
            return super().get_train_dataloader()
        if self.args.world_size > 1:
            raise EntryArgumentsError("--tokens_per_batch trains on one process; leave it out for several")
        train_dataset = self.train_dataset
        if not isinstance(train_dataset, datasets.Dataset) or "length" not in train_dataset.column_names:
            raise EntryArgumentsError("--tokens_per_batch needs a training set with a `length` column")
        batches = TokenBudgetBatchSampler(
            train_dataset["length"],
            tokens_per_batch,
            seed=self.args.data_seed if self.args.data_seed is not None else self.args.seed,
        )
        dataset = self._remove_unused_columns(train_dataset, description="training")
        loader = DataLoader(
            dataset,
            batch_sampler=batches,
            collate_fn=self.data_collator,
            num_workers=self.args.dataloader_num_workers,
            pin_memory=self.args.dataloader_pin_memory,
            persistent_workers=self.args.dataloader_persistent_workers and self.args.dataloader_num_workers > 0,
        )
        return self.accelerator.prepare(loader)

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
        if self.learning_rate_of is None or optimizer is self._regrouped_optimizer:
            return optimizer
        model = self.model if model is None else model
        rate_of = {id(parameter): self.learning_rate_of(name) for name, parameter in model.named_parameters()}
        for group in list(optimizer.param_groups):
            moved: dict[float, list[torch.nn.Parameter]] = {}
            for parameter in group["params"]:
                if rate_of[id(parameter)] != group["lr"]:
                    moved.setdefault(rate_of[id(parameter)], []).append(parameter)
            if moved:
                group["params"] = [parameter for parameter in group["params"] if rate_of[id(parameter)] == group["lr"]]
                settings = {key: value for key, value in group.items() if key != "params"}
                for rate, parameters in moved.items():
                    optimizer.add_param_group({**settings, "params": parameters, "lr": rate})
        self._regrouped_optimizer = optimizer  # the Trainer may ask again for the optimizer it has
        return optimizer

    def _parameter_parts(self, model) -> dict[str | None, list[torch.nn.Parameter]]:
        parts: dict[str | None, list[torch.nn.Parameter]] = {}
        for name, parameter in model.named_parameters():
            if parameter.requires_grad:
                part = self.part_of(name)
                parts.setdefault(None if part is None else part.name, []).append(parameter)
        return parts

    def create_scheduler(self, num_training_steps: int, optimizer=None):
        """Trainer's schedule; where a part has a warm-up of its own, its parameter groups follow the same schedule
        type with that warm-up (one `LambdaLR` with a factor per group); with `--lr_decay_by_wall_clock`, every
        factor advances by steps or by the wall-clock budget's spent share, whichever is further."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler
        own_warmup = {part.name: part.warmup_steps for part in self.optimizer_parts if part.warmup_steps is not None}
        if own_warmup:
            self._create_part_scheduler(num_training_steps, own_warmup, optimizer)
        else:
            super().create_scheduler(num_training_steps, optimizer)
        if getattr(self.args, "lr_decay_by_wall_clock", False):
            if not isinstance(self.lr_scheduler, torch.optim.lr_scheduler.LambdaLR):
                raise ValueError(
                    f"--lr_decay_by_wall_clock needs a LambdaLR schedule, not {self.args.lr_scheduler_type!r}"
                )
            clock = self.wall_clock

            def by_steps_or_clock(factor):
                return lambda step: factor(max(step, int(clock.spent() * num_training_steps)))

            self.lr_scheduler.lr_lambdas = [by_steps_or_clock(factor) for factor in self.lr_scheduler.lr_lambdas]
        return self.lr_scheduler

    def _create_part_scheduler(self, num_training_steps: int, own_warmup: dict, optimizer=None) -> None:
        optimizer = self.optimizer if optimizer is None else optimizer
        run_warmup = self.args.get_warmup_steps(num_training_steps)
        part_of_parameter = {id(p): part for part, ps in self._parameter_parts(self.model).items() for p in ps}

        def factor(warmup_steps: int):
            # The schedule type's factor function, read off a scheduler made for a throwaway optimizer.
            probe = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
            # TrainingArguments' __post_init__ reads a str of lr_scheduler_kwargs as JSON: a dict or None here.
            scheduler = get_scheduler(
                self.args.lr_scheduler_type,
                optimizer=probe,
                num_warmup_steps=warmup_steps,
                num_training_steps=num_training_steps,
                scheduler_specific_kwargs=self.args.lr_scheduler_kwargs,  # type: ignore[arg-type]
            )
            if not isinstance(scheduler, torch.optim.lr_scheduler.LambdaLR):
                raise ValueError(
                    f"a part's own warm-up needs a LambdaLR schedule type, not {self.args.lr_scheduler_type!r}"
                )
            return scheduler.lr_lambdas[0]

        factors = []
        for group in optimizer.param_groups:
            part = part_of_parameter.get(id(group["params"][0])) if group["params"] else None
            factors.append(factor(own_warmup.get(part, run_warmup)))
        self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factors)
        self._created_lr_scheduler = True

    def _clip_grad_norm(self, model):
        """Trainer's one clip over every parameter, except that a part with a clip of its own is clipped on its own
        gradients' norm; each part's norm (before clipping) is kept for the logs. Returns the norm of all the
        gradients before clipping."""
        if not self.optimizer_parts:
            return super()._clip_grad_norm(model)
        self.accelerator.unscale_gradients()
        # None, the rest of the model, is in no part: clipped jointly.
        clip_of: dict[str | None, float | None] = {part.name: part.max_grad_norm for part in self.optimizer_parts}
        jointly_clipped, squared_norms = [], []
        for name, parameters in self._parameter_parts(model).items():
            grads = [parameter.grad for parameter in parameters if parameter.grad is not None]
            if not grads:
                continue
            norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.float()) for g in grads]))
            squared_norms.append(norm.square())
            self._grad_norms.setdefault(name or "rest", []).append(norm.detach())
            own_clip = clip_of.get(name)
            if own_clip is None:
                jointly_clipped += parameters
            else:
                torch.nn.utils.clip_grad_norm_(parameters, own_clip)
        if jointly_clipped:
            torch.nn.utils.clip_grad_norm_(jointly_clipped, self.args.max_grad_norm)
        return torch.stack(squared_norms).sum().sqrt() if squared_norms else torch.zeros(())

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """Trainer's log, with each part's mean gradient norm since the last training log (`grad_norm_<part>`)."""
        if "loss" in logs:
            for name, norms in self._grad_norms.items():
                logs[f"grad_norm_{name}"] = round(float(torch.stack(norms).mean()), 4)
            self._grad_norms = {}
        super().log(logs, start_time)


class LanguageModelTrainer(LengthGroupedTrainer):
    """The length-grouped trainer of language models: `eval_perplexity` (= exp eval_loss) in the logs where the eval
    loss is the mean cross-entropy of the predicted words (`perplexity_from_eval_loss`, the recipe's
    `eval_loss_is_word_cross_entropy`), and in its training logs the mean since the last log of every scalar the
    model's training output holds besides `loss` (R2D2: `lm_loss`, `parser_loss`, `split_entropy`)."""

    def __init__(self, *args, perplexity_from_eval_loss: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.perplexity_from_eval_loss = perplexity_from_eval_loss
        self._output_terms: dict[str, list[torch.Tensor]] = {}

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        loss, outputs = super().compute_loss(model, inputs, return_outputs=True, num_items_in_batch=num_items_in_batch)
        if model.training and isinstance(outputs, dict):
            for name, value in outputs.items():
                if name != "loss" and isinstance(value, torch.Tensor) and value.dim() == 0:
                    self._output_terms.setdefault(name, []).append(value.detach().float())
        return (loss, outputs) if return_outputs else loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if "loss" in logs:
            for name, values in self._output_terms.items():
                logs[name] = round(float(torch.stack(values).mean()), 4)
            self._output_terms = {}
        super().log(logs, start_time)

    def evaluate(self, *args, **kwargs):
        metrics = super().evaluate(*args, **kwargs)
        prefix = kwargs.get("metric_key_prefix", "eval")
        if self.perplexity_from_eval_loss and f"{prefix}_loss" in metrics:
            metrics[f"{prefix}_perplexity"] = math.exp(min(metrics[f"{prefix}_loss"], 50.0))
            self.log({f"{prefix}_perplexity": metrics[f"{prefix}_perplexity"]})
        return metrics


class OutputFolderError(FileExistsError):
    """The output folder holds a trained model that the run would replace without being told to."""


class CheckpointError(ValueError):
    """`--resume_from_checkpoint` names a folder that is missing or not a whole checkpoint; the message names it and
    what it lacks."""


class SaveRefusedError(OSError):
    """The file system refused a checkpoint or the trained model (full, over quota, read-only); the message names
    what was being saved, where, and the system's reason."""


# What a file system that refuses writes answers; another OSError is a fault of the run, left as raised.
REFUSED_WRITES = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


@contextlib.contextmanager
def refused_saves(what: str, folder: str) -> Iterator[None]:
    """Turn a save of `what` into `folder` that the file system refuses (`REFUSED_WRITES`) into a SaveRefusedError
    naming both; any other failure goes on as raised. torch and safetensors report a full disk in errors of their
    own (a RuntimeError after a failed write, a SafetensorError ending in `(os error 28)`), so those are read too."""
    from safetensors import SafetensorError

    try:
        yield
    except (OSError, RuntimeError, SafetensorError) as error:
        code = _refusal_code(error, folder)
        if code is None:
            raise
        advice = "choose another --output_dir" if code == errno.EROFS else "free space or choose another --output_dir"
        raise SaveRefusedError(f"{os.strerror(code)} while saving {what} to {folder}; {advice}") from error


def _refusal_code(error: BaseException, folder: str) -> int | None:
    """The `REFUSED_WRITES` code behind `error`, raised while writing into `folder`; None for anything else."""
    if isinstance(error, OSError):
        return error.errno if error.errno in REFUSED_WRITES else None
    number = re.search(r"\(os error (\d+)\)", str(error))
    if number:
        return int(number.group(1)) if int(number.group(1)) in REFUSED_WRITES else None
    # torch's writer keeps no errno ("file write failed", "unexpected pos"): ask the file system with a write of
    # its own. The failed write's part-file is still there, so a full disk is still full.
    existing = Path(folder)
    while not existing.is_dir() and existing != existing.parent:
        existing = existing.parent
    try:
        with tempfile.TemporaryFile(dir=existing) as probe:
            probe.write(bytes(1 << 16))
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as refusal:
        return refusal.errno if refusal.errno in REFUSED_WRITES else None
    return None


def checkpoint_defect(folder: str, with_optimizer: bool = True) -> str | None:
    """What keeps the checkpoint folder `folder` from continuing its run (None: nothing). Trainer restores the
    weights and `trainer_state.json` (saved last) and, unless the run saves the model only (`with_optimizer` False),
    the optimiser, the learning-rate schedule and the random generators; it loads whichever of these it finds and
    starts the others afresh without a word. A save cut short (a kill, a full disk) or a file removed since leaves
    such a folder: each file must be there and whole (a safetensors header that covers its file, a torch file's zip
    directory, which is written last)."""
    path = Path(folder)
    if not path.is_dir():
        return "no such folder"
    try:
        json.loads((path / "trainer_state.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "no trainer_state.json"
    except (OSError, ValueError):
        return "trainer_state.json is cut short"
    defect = _weights_defect(path)
    if defect or not with_optimizer:
        return defect
    for name in ("optimizer.pt", "scheduler.pt"):
        if not zipfile.is_zipfile(path / name):
            return f"{name} is cut short" if (path / name).is_file() else f"no {name}"
    # one per process of the run that saved it: rng_state.pth, or rng_state_<rank>.pth
    if not any(zipfile.is_zipfile(state) for state in path.glob("rng_state*.pth")):
        return "no whole rng_state.pth"
    return None


def _weights_defect(path: Path) -> str | None:
    if (path / "pytorch_model.bin").is_file():
        return None if zipfile.is_zipfile(path / "pytorch_model.bin") else "pytorch_model.bin is cut short"
    index = path / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return f"{index.name} is cut short"
    else:
        shards = ["model.safetensors"]
    from safetensors import SafetensorError, safe_open

    for shard in shards:
        if not (path / shard).is_file():
            return f"no {shard}"
        try:
            with safe_open(path / shard, framework="pt"):
                pass
        except (OSError, SafetensorError):
            return f"{shard} is cut short"
    return None


def last_complete_checkpoint(output_dir: str, with_optimizer: bool = True) -> str | None:
    """The newest `checkpoint-N` folder of `output_dir` that is whole (`checkpoint_defect`), so that a run killed
    while saving, or one whose disk filled up, resumes from the checkpoint before; each newer one passed over is
    logged, with what it lacks."""
    if not os.path.isdir(output_dir):
        return None
    steps = sorted(
        (int(match.group(1)) for name in os.listdir(output_dir) if (match := re.fullmatch(r"checkpoint-(\d+)", name))),
        reverse=True,
    )
    for step in steps:
        checkpoint = os.path.join(output_dir, f"checkpoint-{step}")
        defect = checkpoint_defect(checkpoint, with_optimizer)
        if defect is None:
            return checkpoint
        logger.warning("passing over %s, not a whole checkpoint: %s", checkpoint, defect)
    return None


def checkpoint_to_resume(args: EntryTrainingArguments) -> str | None:
    """The checkpoint a run continues from: `--resume_from_checkpoint`, which must be whole (else a CheckpointError
    naming it), or the output folder's last whole checkpoint (`last_complete_checkpoint`), or None. Raises
    OutputFolderError for an output folder that holds a trained model (its config and weights) and no checkpoint to
    resume from, unless `--overwrite_output_dir`: a new run would replace that model without a word; a folder with
    checkpoints is a run to continue. Both entries call it before reading any data."""
    with_optimizer = not args.save_only_model
    given = args.resume_from_checkpoint
    if given is not None:
        defect = checkpoint_defect(given, with_optimizer)
        if defect == "no such folder":
            raise CheckpointError(f"--resume_from_checkpoint {given}: no such folder")
        if defect:
            raise CheckpointError(f"--resume_from_checkpoint {given} is not a whole checkpoint: {defect}")
    folder = Path(args.output_dir)  # type: ignore[arg-type]  # TrainingArguments sets a default
    weights = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
    holds_model = (folder / "config.json").is_file() and any((folder / name).is_file() for name in weights)
    last = last_complete_checkpoint(str(folder), with_optimizer)
    if holds_model and not args.overwrite_output_dir and last is None:
        raise OutputFolderError(
            f"--output_dir {folder} holds a trained model; give another folder, or --overwrite_output_dir to replace it"
        )
    if given is None and last is not None:
        logger.info("resuming from the last checkpoint in the output folder: %s", last)
    return given or last


def train_resuming(trainer, provenance: dict, checkpoint: str | None):
    """Train, continuing from `checkpoint` (`checkpoint_to_resume`); then save the model, the metrics, the trainer
    state and the training record (with `provenance`: see `training_provenance`), a refused save ending in a
    SaveRefusedError. Returns the train output."""
    args = trainer.args
    result = trainer.train(resume_from_checkpoint=checkpoint)
    with refused_saves("the trained model", args.output_dir):
        trainer.save_model()
        trainer.log_metrics("train", result.metrics)
        trainer.save_metrics("train", result.metrics)
        trainer.save_state()
        if trainer.is_world_process_zero():
            write_training_record(args.output_dir, trainer, result.metrics["train_runtime"], checkpoint, provenance)
    return result


def portable_command(argv: list[str], prog: str | None = None) -> str:
    """The command line as a reader on another machine can read it: `prog` (the installed command, e.g.
    `hf-structure train-lm`) or `python SCRIPT` (the script's path relative to here, else its name), then `argv`
    with each absolute path (`/home/me/data/a.txt`, `--x=/abs/b`) as its last component."""

    def portable(argument: str) -> str:
        option, equals, value = argument.partition("=") if argument.startswith("--") else ("", "", argument)
        return option + equals + (Path(value).name if os.path.isabs(value) else value)

    if prog is None:
        script = Path(sys.argv[0]).resolve()
        prog = "python " + str(script.relative_to(Path.cwd()) if script.is_relative_to(Path.cwd()) else script.name)
    return " ".join([prog, *(shlex.quote(portable(argument)) for argument in argv)])


def training_provenance(argv: list[str], prog: str | None, base_model: str | None, train_data: str | None) -> dict:
    """What a model card says of how a run was trained: its `command` (`portable_command`), the model it was
    fine-tuned from (`base_model`, a bundled name or a folder's name) and its training data (`train_data`, as the
    card prints it; None: the recipe's default corpus)."""
    provenance: dict[str, str | None] = {"command": portable_command(argv, prog)}
    if base_model:
        provenance["base_model"] = Path(base_model).name if Path(base_model).is_dir() else base_model
    if train_data:  # not the PTB text, so whether it held the evaluation sample's WSJ 00-01 is not ours to say
        provenance.update(train_data=train_data, wsj_00_01_excluded=None)
    return provenance


@contextlib.contextmanager
def one_line_failures(command: str) -> Iterator[None]:
    """End a training entry's failures that are the user's to mend (an output folder, a checkpoint, a data or trees
    file, a setting, a missing extra, a full or read-only disk) as one line on standard error, `command: message`,
    exit status 1. Any other error keeps its traceback: it is a fault to report."""
    from ..extras import MissingExtraError
    from .arguments import ConfigOverrideError, TrainingDataError
    from .teachers import TeacherTreesError

    try:
        yield
    except (
        OutputFolderError,
        CheckpointError,
        SaveRefusedError,
        ConfigOverrideError,
        EntryArgumentsError,
        TrainingDataError,
        TeacherTreesError,
        MissingExtraError,
    ) as error:
        raise SystemExit(f"{command}: {' '.join(str(error).split())}") from None


def end_processes(trainer) -> None:
    """End a distributed run's process here, once every process has saved its part (a single process returns).
    Freeing the DDP model in Python frees the gloo process group with the GIL held, joining gloo's threads, one of
    which may still want the GIL to free its last barrier: a deadlock seen under torch 2.13 beside another test
    suite (and torch 2.6's `destroy_process_group` can wait for ever, see `cli.distributed.finish`). So nothing is
    torn down: the output is flushed and the process exits (atexit hooks do not run; the Trainer's callbacks have
    ended the run)."""
    if trainer.accelerator.num_processes == 1:
        return
    trainer.accelerator.wait_for_everyone()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def write_training_record(
    output_dir: str, trainer, wall_time_s: float, resumed_from: str | None, provenance: dict
) -> None:
    """The output folder's `hf_structure_training.json` (see `hf_structure.hub.records`), so that the saved model
    can be published with a card that states how it was trained (`provenance`: see `training_provenance`)."""
    from ..hub import records

    record = {
        **provenance,
        "wall_time_s": round(wall_time_s, 1),
        "steps": trainer.state.global_step,
        "epochs": round(trainer.state.epoch or 0.0, 2),
    }
    if resumed_from:
        record["notes"] = f"resumed from {Path(resumed_from).name}; wall_time_s counts the last process only"
    records.write_training_record(output_dir, record)  # with this machine's description
