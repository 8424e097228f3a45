"""Trainers: reproducible length-grouped batches, parts of a model trained as by optimisers of their own, and the
model's own loss terms and perplexity in the language-model logs."""

import logging
import math
import os
import re
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.utils.data import Dataset
from transformers import Trainer, TrainerCallback, TrainingArguments, get_scheduler
from transformers.trainer_pt_utils import LengthGroupedSampler

from ..file_modes import with_default_mode

logger = logging.getLogger(__name__)


@dataclass
class EntryTrainingArguments(TrainingArguments):
    """`TrainingArguments` of both training entries (`train-lm`, `train-parser`), with the option that lets a run
    replace the trained model in its --output_dir (`check_output_folder`)."""

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


class SparsePrediction(TrainerCallback):
    """Training predicts the labelled words alone: a language model's `sparse_prediction` (as transformers'
    ModernBERT), whose loss needs no other logits, is turned on while it trains; a saved or loaded model gives
    every position's logits."""

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        model.sparse_prediction = True


class WallClockBudget(TrainerCallback):
    """Ends training once `budget_s` seconds have passed since the training loop began; the run then saves its
    model and records as after its last step. Checked after each optimiser step, so it overruns by one step."""

    def __init__(self, budget_s: float, clock: Callable[[], float] = time.monotonic):
        if budget_s <= 0:
            raise ValueError(f"the wall-clock budget must be positive, got {budget_s}")
        self.budget_s = budget_s
        self.clock = clock
        self.started = None

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


class LengthGroupedTrainer(Trainer):
    """`Trainer` whose length-grouped batches (`train_sampling_strategy="group_by_length"`) depend only on the seed
    and the epoch, so a resumed run sees the batches of the uninterrupted one; with `learning_rate_of` (parameter
    name -> peak learning rate), parameters train at rates of their own, on the same schedule; with
    `optimizer_parts`, parts of the model train as by optimisers of their own (`OptimizerPart`), each part's
    gradient norm logged as `grad_norm_<part>`."""

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
            raise ValueError("--lr_decay_by_wall_clock needs --max_train_time_s")
        if learning_rate_of is not None and optimizer_parts:
            raise ValueError("give learning_rate_of or optimizer_parts, not both")
        self.optimizer_parts = optimizer_parts or []
        if self.optimizer_parts:
            learning_rate_of = self._part_learning_rate
        self.learning_rate_of = learning_rate_of
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
        clip_of = {part.name: part.max_grad_norm for part in self.optimizer_parts}
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


def check_output_folder(output_dir: str, overwrite: bool) -> None:
    """Raise OutputFolderError for an output folder that holds a trained model (its config and weights) and no
    checkpoint to resume from, unless `overwrite`: a new run would replace that model without a word. A folder with
    checkpoints is a run to continue (`train_resuming`). Both entries call it before reading any data."""
    folder = Path(output_dir)
    weights = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
    holds_model = (folder / "config.json").is_file() and any((folder / name).is_file() for name in weights)
    if holds_model and not overwrite and last_complete_checkpoint(output_dir) is None:
        raise OutputFolderError(
            f"--output_dir {output_dir} holds a trained model; give another folder, or "
            "--overwrite_output_dir to replace it"
        )


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


def train_resuming(trainer, provenance: dict):
    """Train, continuing from `--resume_from_checkpoint` or else the output folder's last complete checkpoint; then
    save the model, the metrics, the trainer state and the training record (with `provenance`: see
    `training_provenance`). Returns the train output."""
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
