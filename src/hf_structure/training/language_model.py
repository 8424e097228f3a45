"""Language-model training through `Trainer`, the library side of `scripts/run_mlm.py`: the same for every model;
the model's training recipe (`hf_structure.training.LanguageModelTraining`) gives a new model's config, its
arguments and the collator of its objective."""

import logging
from dataclasses import dataclass, field
from pathlib import Path

from datasets import load_from_disk
from transformers import set_seed

from ..data.text import ptb_lm_lines, text_file_lines
from ..data.tokenization import build_word_tokenizer
from ..registry import model_spec
from . import LanguageModelTraining
from .arguments import EntryArgumentsError, TrainingDataError, apply_config_overrides, parse_arguments
from .collators import tokenize_sentences
from .precision import with_chosen_precision
from .trainer import (
    LanguageModelTrainer,
    LanguageModelTrainingArguments,
    checkpoint_to_resume,
    end_processes,
    refused_saves,
    train_resuming,
    training_provenance,
)

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    model_name_or_path: str | None = field(
        default=None,
        metadata={"help": "A saved model folder (or `structformer-ptb`) to fine-tune; train from scratch if unset."},
    )
    model_type: str | None = field(
        default=None,
        metadata={
            "help": "From scratch: a registered model type with a language-model recipe (`structformer`, a "
            "masked LM, if unset); `--model_type X --help` lists its own arguments (sizes, objective)."
        },
    )
    precision: str = field(
        default="auto",
        metadata={
            "help": "`auto`: on a CPU with native bf16 (avx512_bf16 / AMX) train under bf16 autocast unless --bf16 "
            "or --fp16 says otherwise; `fp32`: float32 unless --bf16 / --fp16 is given."
        },
    )
    config_overrides: str | None = field(
        default=None,
        metadata={
            "help": "Config settings applied to a new or loaded model, e.g. `calibration_scope=batch` "
            "(`key=value` pairs separated by commas, parsed as by `PretrainedConfig.update_from_string`)."
        },
    )


@dataclass
class DataTrainingArguments:
    train_file: str | None = field(
        default=None, metadata={"help": "Text file, one sentence per line; default: the PTB LM train split."}
    )
    validation_file: str | None = field(
        default=None, metadata={"help": "Text file for evaluation; default: the PTB LM valid split."}
    )
    dataset_path: str | None = field(
        default=None,
        metadata={"help": "A `datasets` DatasetDict saved with save_to_disk, with a text column (train/validation)."},
    )
    text_column: str = field(default="text", metadata={"help": "Text column of --dataset_path."})
    include_wsj_00_01: bool = field(
        default=False,
        metadata={"help": "Keep the first 3,911 PTB train lines (WSJ 00-01, the gold evaluation sample)."},
    )
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only this many training sentences."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Use only this many eval sentences."})
    treebank_dir: str | None = field(
        default=None,
        metadata={
            "help": "Gold treebank (a folder with mrg/ and dp/, or a CoNLL-U file) to report UF1 and UAS on "
            "at each evaluation, for monitoring (`parse_<score>` in the log)."
        },
    )


def split_lines(data_args: DataTrainingArguments) -> tuple[list[str], list[str]]:
    """The training and evaluation sentences the data arguments name."""
    if data_args.dataset_path:
        dataset = load_from_disk(data_args.dataset_path)
        return list(dataset["train"][data_args.text_column]), list(dataset["validation"][data_args.text_column])
    if data_args.train_file:
        train = _text_lines(data_args.train_file, "--train_file")
    else:
        train = ptb_lm_lines("train", exclude_wsj_00_01=not data_args.include_wsj_00_01)
    if data_args.validation_file:
        return train, _text_lines(data_args.validation_file, "--validation_file")
    return train, ptb_lm_lines("valid")


def _text_lines(path: str, option: str) -> list[str]:
    try:
        return text_file_lines(path)
    except UnicodeDecodeError as error:
        raise TrainingDataError(f"{option}: {path}: not UTF-8 (byte {error.start})") from None
    except (FileNotFoundError, ValueError) as error:  # missing, or no line with a word
        raise TrainingDataError(f"{option}: {error}") from None


def model_and_tokenizer_for_training(
    model_args: ModelArguments, recipe: LanguageModelTraining, own_args, train_lines: list[str]
):
    """A saved model and its tokenizer, or a new model (its recipe's config from `own_args`) over its recipe's
    tokenizer of the training sentences `train_lines` (`new_tokenizer`), by default a word vocabulary of the PTB
    train split."""
    spec = model_spec(model_args.model_type)  # type: ignore[arg-type]  # parse_arguments sets model_type
    if model_args.model_name_or_path:
        from ..bundled import load_model_and_tokenizer

        model, tokenizer = load_model_and_tokenizer(model_args.model_name_or_path)
        if model_args.config_overrides:
            apply_config_overrides(model.config, model_args.config_overrides)
        return model, tokenizer
    if recipe.new_tokenizer:
        tokenizer = recipe.new_tokenizer(own_args, train_lines)
    else:
        # The PTB vocabulary is fixed by the LM text (10k words); the evaluation lines are never read for training.
        tokenizer = build_word_tokenizer(ptb_lm_lines("train", exclude_wsj_00_01=False))
    config = recipe.new_config(own_args, tokenizer)
    if model_args.config_overrides:
        apply_config_overrides(config, model_args.config_overrides)
    return spec.auto_classes[spec.parsing_class](config), tokenizer


def parse_command_line(argv: list[str], default_model_type: str, prog: str | None = None):
    """The model's recipe and (model, data, training, the model's own) arguments; `default_model_type` is the model
    type of a new model when `argv` names none. Arguments that neither train nor evaluate are an
    EntryArgumentsError: the run would build its model and data, then end without a word."""
    recipe, parsed = parse_arguments(
        argv,
        (ModelArguments, DataTrainingArguments, LanguageModelTrainingArguments),
        LanguageModelTraining,
        default_model_type,
        prog,
    )
    if not (parsed[2].do_train or parsed[2].do_eval):
        raise EntryArgumentsError("nothing to do: give --do_train, --do_eval or both")
    return recipe, parsed


def main(argv: list[str], default_model_type: str, prog: str | None = None):
    """Train (and evaluate) as `argv` says (see `parse_command_line`)."""
    recipe, (model_args, data_args, training_args, own_args) = parse_command_line(argv, default_model_type, prog)
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    checkpoint = checkpoint_to_resume(training_args) if training_args.do_train else None
    training_args = with_chosen_precision(training_args, model_args.precision)
    set_seed(training_args.seed)
    train_lines, valid_lines = split_lines(data_args)
    if data_args.max_train_samples:
        train_lines = train_lines[: data_args.max_train_samples]
    if data_args.max_eval_samples:
        valid_lines = valid_lines[: data_args.max_eval_samples]
    model, tokenizer = model_and_tokenizer_for_training(model_args, recipe, own_args, train_lines)
    max_length = getattr(model, "max_parse_words", None)  # a model that parses any length takes any sentence
    train_dataset = tokenize_sentences(train_lines, tokenizer, max_length)
    eval_dataset = tokenize_sentences(valid_lines, tokenizer, max_length)
    if recipe.training_columns and training_args.do_train:
        train_dataset = recipe.training_columns(own_args, model, train_dataset, train_lines, training_args.output_dir)
    logger.info(
        "train: %d sentences, %d words; eval: %d sentences; model: %.1fM parameters",
        len(train_dataset),
        sum(train_dataset["length"]),
        len(eval_dataset),
        model.num_parameters() / 1e6,
    )

    callbacks = recipe.callbacks(own_args) if recipe.callbacks else []
    if data_args.treebank_dir:
        from ..evaluation.callbacks import ParsingEvaluationCallback

        callbacks.append(ParsingEvaluationCallback(data_args.treebank_dir, tokenizer))
    optimizer_parts = recipe.optimizer_parts(own_args, training_args) if recipe.optimizer_parts else None
    trainer = LanguageModelTrainer(
        model=model,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        data_collator=recipe.collator(own_args, tokenizer, training_args.seed),
        processing_class=tokenizer,
        callbacks=callbacks,
        optimizer_parts=optimizer_parts,
        perplexity_from_eval_loss=recipe.eval_loss_is_word_cross_entropy,
    )

    if training_args.do_train:
        train_data = None
        if data_args.train_file:
            train_data = f"`{Path(data_args.train_file).name}` ({len(train_dataset):,} sentences)"
        provenance = training_provenance(argv, prog, model_args.model_name_or_path, train_data)
        train_resuming(trainer, provenance, checkpoint)
    if training_args.do_eval:
        metrics = trainer.evaluate()
        trainer.log_metrics("eval", metrics)
        with refused_saves("the evaluation's metrics", str(training_args.output_dir)):
            trainer.save_metrics("eval", metrics)
    end_processes(trainer)
    return trainer
