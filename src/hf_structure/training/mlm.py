"""Language-model training of the unsupervised parsers through `Trainer` (the library side of
`scripts/run_mlm.py`): StructFormer as a masked LM, R2D2 as a bidirectional LM (every word predicted from its left
and right context nodes, nothing masked)."""

import logging
from dataclasses import dataclass, field

from datasets import load_from_disk
from transformers import AutoModelForMaskedLM, AutoTokenizer, set_seed

from ..data.collators import EveryWordCollator, ReproducibleMaskingCollator, tokenize_sentences
from ..data.text import ptb_lm_lines, text_file_lines
from ..data.tokenization import build_word_tokenizer
from ..models.r2d2 import R2D2Config, R2D2ForLanguageModeling
from ..models.structformer import StructFormerConfig, StructFormerForMaskedLM
from .precision import with_chosen_precision
from .trainer import LanguageModelTrainingArguments, MaskedLMTrainer, WallClockBudget, end_processes, train_resuming

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    model_name_or_path: str | None = field(
        default=None,
        metadata={"help": "A saved model folder (or `structformer-ptb`) to fine-tune; train from scratch if unset."},
    )
    model_type: str = field(
        default="structformer",
        metadata={"help": "From scratch: `structformer` (masked LM) or `r2d2` (bidirectional LM over a pruned chart)."},
    )
    hidden_size: int = field(default=512, metadata={"help": "From scratch: model width."})
    num_hidden_layers: int = field(default=8, metadata={"help": "From scratch: Transformer blocks."})
    num_attention_heads: int = field(default=8, metadata={"help": "From scratch: heads per block."})
    intermediate_size: int | None = field(default=None, metadata={"help": "From scratch: d_ff (default 4 d)."})
    hidden_dropout_prob: float = field(default=0.1, metadata={"help": "From scratch: dropout."})
    num_parser_layers: int = field(default=3, metadata={"help": "From scratch: parser convolution layers."})
    max_position_embeddings: int = field(default=512, metadata={"help": "From scratch: longest sentence."})
    num_composition_layers: int = field(default=3, metadata={"help": "From scratch, R2D2: composition layers."})
    window_size: int = field(default=4, metadata={"help": "From scratch, R2D2: the pruning window m."})
    pruning: str = field(
        default="heuristic",
        metadata={
            "help": "From scratch, R2D2: `heuristic` (the 2021 merge rule) or `parser` (Fast-R2D2: a top-down parser "
            "chooses the merges; its sizes through --config_overrides, e.g. parser_num_layers=2)."
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
    mlm_probability: float = field(default=0.3, metadata={"help": "Share of words masked (0.3 on PTB)."})
    mask_replace_prob: float = field(
        default=1.0,
        metadata={
            "help": "Share of the selected words replaced by <mask>. StructFormer replaces all of them (1.0, the "
            "paper and the authors' code); BERT's 80/10/10 is 0.8 with --random_replace_prob 0.1."
        },
    )
    random_replace_prob: float = field(
        default=0.0, metadata={"help": "Share of the selected words replaced by a random word (BERT: 0.1)."}
    )
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only this many training sentences."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Use only this many eval sentences."})
    treebank_dir: str | None = field(
        default=None,
        metadata={"help": "Gold treebank (mrg/, dp/) to report UF1 and UAS on at each evaluation, for monitoring."},
    )


def _split_lines(data_args: DataTrainingArguments) -> tuple[list[str], list[str]]:
    if data_args.dataset_path:
        dataset = load_from_disk(data_args.dataset_path)
        return list(dataset["train"][data_args.text_column]), list(dataset["validation"][data_args.text_column])
    if data_args.train_file:
        train = text_file_lines(data_args.train_file)
    else:
        train = ptb_lm_lines("train", exclude_wsj_00_01=not data_args.include_wsj_00_01)
    valid = text_file_lines(data_args.validation_file) if data_args.validation_file else ptb_lm_lines("valid")
    return train, valid


def model_and_tokenizer_for_training(model_args: ModelArguments):
    """A saved model and its tokenizer, or a new model over a word vocabulary built from the PTB train split."""
    if model_args.model_name_or_path:
        from ..bundled import resolve_model_path

        path = resolve_model_path(model_args.model_name_or_path)
        model = AutoModelForMaskedLM.from_pretrained(path)
        if model_args.config_overrides:
            model.config.update_from_string(model_args.config_overrides)
        return model, AutoTokenizer.from_pretrained(path)
    # The PTB vocabulary is fixed by the LM text (10k words); the evaluation lines are never read for training.
    tokenizer = build_word_tokenizer(ptb_lm_lines("train", exclude_wsj_00_01=False))
    shared = {
        "vocab_size": len(tokenizer),
        "hidden_size": model_args.hidden_size,
        "num_attention_heads": model_args.num_attention_heads,
        "intermediate_size": model_args.intermediate_size or 4 * model_args.hidden_size,
        "hidden_dropout_prob": model_args.hidden_dropout_prob,
        "pad_token_id": tokenizer.pad_token_id,
        "mask_token_id": tokenizer.mask_token_id,
    }
    if model_args.model_type == "r2d2":
        config = R2D2Config(
            num_composition_layers=model_args.num_composition_layers,
            window_size=model_args.window_size,
            pruning=model_args.pruning,
            max_parse_words=model_args.max_position_embeddings,
            **shared,
        )
        model_class = R2D2ForLanguageModeling
    elif model_args.model_type == "structformer":
        config = StructFormerConfig(
            num_hidden_layers=model_args.num_hidden_layers,
            num_parser_layers=model_args.num_parser_layers,
            max_position_embeddings=model_args.max_position_embeddings,
            **shared,
        )
        model_class = StructFormerForMaskedLM
    else:
        raise ValueError(f"--model_type must be structformer or r2d2, got {model_args.model_type!r}")
    if model_args.config_overrides:
        config.update_from_string(model_args.config_overrides)
    return model_class(config), tokenizer


def main(model_args: ModelArguments, data_args: DataTrainingArguments, training_args: LanguageModelTrainingArguments):
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    training_args = with_chosen_precision(training_args, model_args.precision)
    set_seed(training_args.seed)
    train_lines, valid_lines = _split_lines(data_args)
    if data_args.max_train_samples:
        train_lines = train_lines[: data_args.max_train_samples]
    if data_args.max_eval_samples:
        valid_lines = valid_lines[: data_args.max_eval_samples]
    model, tokenizer = model_and_tokenizer_for_training(model_args)
    max_length = model.max_parse_words
    train_dataset = tokenize_sentences(train_lines, tokenizer, max_length)
    eval_dataset = tokenize_sentences(valid_lines, tokenizer, max_length)
    logger.info(
        "train: %d sentences, %d words; eval: %d sentences; model: %.1fM parameters",
        len(train_dataset),
        sum(train_dataset["length"]),
        len(eval_dataset),
        model.num_parameters() / 1e6,
    )

    callbacks = []
    if getattr(training_args, "max_train_time_s", None):
        callbacks.append(WallClockBudget(training_args.max_train_time_s))
    if data_args.treebank_dir:
        from ..evaluation.callbacks import ParsingEvaluationCallback

        callbacks.append(ParsingEvaluationCallback(data_args.treebank_dir, tokenizer))
    # `<unk>` and `<pad>` are special tokens, so the collators never mask nor predict them.
    if model.config.model_type == "r2d2":
        collator = EveryWordCollator(tokenizer)
    else:
        collator = ReproducibleMaskingCollator(
            tokenizer,
            data_args.mlm_probability,
            seed=training_args.seed,
            mask_replace_prob=data_args.mask_replace_prob,
            random_replace_prob=data_args.random_replace_prob,
        )
    trainer = MaskedLMTrainer(
        model=model,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        data_collator=collator,
        processing_class=tokenizer,
        callbacks=callbacks,
    )

    if training_args.do_train:
        train_resuming(trainer)
    if training_args.do_eval:
        metrics = trainer.evaluate()
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)
    end_processes(trainer)
    return trainer
