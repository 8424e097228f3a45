"""How R2D2 trains (`scripts/run_mlm.py`): a bidirectional language model, every word predicted from its left and
right context nodes (nothing masked). With Fast-R2D2's top-down parser, the parser and the language model train as
by two optimisers (the authors' code): each with its own learning rate, warm-up and, if asked, gradient clip, each
gradient norm logged apart; the parser may start late.

The parser may learn from a teacher's trees (`--teacher_model`, `--teacher_trees`: `parser_target="teacher"`), in
stages: alone (`--parser_only`), then beside the language model whose chart it prunes, then handing over to the
chart's own best tree (`--teacher_anneal_start`, `--teacher_anneal_end`). Training code only: no modeling file
imports this module."""

import logging
from dataclasses import dataclass, field

import torch
from transformers import PreTrainedTokenizerBase, TrainerCallback

from ...training import LanguageModelTraining
from ...training.arguments import EntryArgumentsError, TransformerSizeArguments
from ...training.teachers import (
    TEACHER_COLUMN,
    TeacherArguments,
    padded_teacher_merge_orders,
    with_teacher_merge_orders,
)
from ...training.trainer import OptimizerPart, SparsePrediction
from .configuration_r2d2 import R2D2Config

logger = logging.getLogger(__name__)


@dataclass
class R2D2TrainingArguments(TeacherArguments, TransformerSizeArguments):
    num_composition_layers: int = field(default=3, metadata={"help": "From scratch: composition layers."})
    window_size: int = field(default=4, metadata={"help": "From scratch: the pruning window m."})
    pruning: str = field(
        default="heuristic",
        metadata={
            "help": "From scratch: `heuristic` (the 2021 merge rule) or `parser` (Fast-R2D2: a top-down parser "
            "chooses the merges; its sizes, target and the other model options through --config_overrides, e.g. "
            "parser_num_layers=2,parser_target=best)."
        },
    )
    parser_learning_rate: float | None = field(
        default=None,
        metadata={
            "help": "Peak learning rate of the top-down parser (`split_parser`; the authors' 1e-2); default "
            "--learning_rate."
        },
    )
    parser_warmup_steps: int | None = field(
        default=None, metadata={"help": "The parser's warm-up steps; default the run's (--warmup_steps)."}
    )
    clip_parts_separately: bool = field(
        default=False,
        metadata={
            "help": "Clip the parser's and the language model's gradients each at --max_grad_norm on its own "
            "norm (the authors' two optimisers), instead of one clip over both."
        },
    )
    parser_start_step: int = field(
        default=0,
        metadata={
            "help": "Train the parser from this optimiser step on; before it, the chart merges by the untrained "
            "parser's scores and only the language model learns."
        },
    )
    parser_only: bool = field(
        default=False,
        metadata={
            "help": "Train the parser alone toward its teacher's trees: no chart is built and the language model "
            "is left as it is (the first stage of teacher bootstrapping)."
        },
    )

    def __post_init__(self):
        super().__post_init__()
        if self.parser_only and not self.has_teacher:
            raise EntryArgumentsError("--parser_only needs --teacher_model or --teacher_trees")


class EveryWordCollator:
    """Batches for a bidirectional language model (R2D2): the input is left as it is and every word is a target,
    except special tokens (`<unk>`, `<pad>`), whose labels are -100. Examples with a teacher's tree (a
    `teacher_merge_order` column) give it padded with -1. Deterministic, so a resumed run's batches are those of the
    uninterrupted run."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase):
        self.tokenizer = tokenizer
        self.special_ids = torch.tensor(sorted(tokenizer.all_special_ids))

    def __call__(self, examples):
        batch = self.tokenizer.pad({"input_ids": [example["input_ids"] for example in examples]}, return_tensors="pt")
        ignored = torch.isin(batch["input_ids"], self.special_ids) | batch["attention_mask"].eq(0)
        batch["labels"] = batch["input_ids"].masked_fill(ignored, -100)
        if TEACHER_COLUMN in examples[0]:
            batch[TEACHER_COLUMN] = padded_teacher_merge_orders(examples, batch["input_ids"].size(1))
        return batch


def new_config(arguments: R2D2TrainingArguments, tokenizer) -> R2D2Config:
    return R2D2Config(
        vocab_size=len(tokenizer),
        num_composition_layers=arguments.num_composition_layers,
        window_size=arguments.window_size,
        pruning=arguments.pruning,
        max_parse_words=arguments.max_position_embeddings,
        pad_token_id=tokenizer.pad_token_id,
        mask_token_id=tokenizer.mask_token_id,
        **arguments.transformer_sizes(),
    )


def every_word_collator(arguments: R2D2TrainingArguments, tokenizer, seed: int) -> EveryWordCollator:
    return EveryWordCollator(tokenizer)  # deterministic: nothing to seed


def is_parser_parameter(name: str) -> bool:
    return ".split_parser." in f".{name}"


def optimizer_parts(arguments: R2D2TrainingArguments, training_arguments) -> list[OptimizerPart]:
    """The top-down parser and the language model (every other parameter) as two parts, so that their gradient
    norms are logged apart (a model without a parser has only the second)."""
    clip = training_arguments.max_grad_norm if arguments.clip_parts_separately else None
    parser_rate = arguments.parser_learning_rate
    return [
        OptimizerPart(
            "parser",
            is_parser_parameter,
            training_arguments.learning_rate if parser_rate is None else parser_rate,
            arguments.parser_warmup_steps,
            clip,
        ),
        OptimizerPart("lm", lambda name: True, training_arguments.learning_rate, None, clip),
    ]


class ParserStart(TrainerCallback):
    """The parser's loss joins training at optimiser step `step` (`R2D2ForLanguageModeling.train_parser`)."""

    def __init__(self, step: int):
        self.step = step

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        model.train_parser = state.global_step >= self.step


class ParserOnly(TrainerCallback):
    """The parser trains alone (`R2D2ForLanguageModeling.train_language_model` off)."""

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        model.train_language_model = False


def callbacks(arguments: R2D2TrainingArguments) -> list[TrainerCallback]:
    found: list[TrainerCallback] = [SparsePrediction()]
    if arguments.parser_start_step > 0:
        found.append(ParserStart(arguments.parser_start_step))
    if arguments.parser_only:
        found.append(ParserOnly())
    return found + arguments.anneal_callbacks()


def teacher_columns(arguments: R2D2TrainingArguments, model, dataset, lines: list[str], output_dir: str):
    """With a teacher: each training example's teacher tree, as the merge order the parser learns from (the
    dataset's `teacher_merge_order` column), the teachers' trees averaged; the model's parser target set to
    `"teacher"`. The sentences are the words of `lines` as the examples hold them (one token a word, truncated
    alike)."""
    if not arguments.has_teacher:
        return dataset
    if model.config.pruning != "parser":
        raise EntryArgumentsError("a teacher trains the top-down parser: it needs --pruning parser (Fast-R2D2)")
    if model.config.parser_target != "teacher":
        logger.info(
            "teacher trees given: the parser's target becomes the teacher's (was %r)", model.config.parser_target
        )
        model.config.parser_target = "teacher"
    return with_teacher_merge_orders(arguments, dataset, lines, output_dir)


TRAINING = LanguageModelTraining(
    arguments=R2D2TrainingArguments,
    new_config=new_config,
    collator=every_word_collator,
    optimizer_parts=optimizer_parts,
    callbacks=callbacks,
    training_columns=teacher_columns,
)
