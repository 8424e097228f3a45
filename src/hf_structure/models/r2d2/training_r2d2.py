"""How R2D2 trains (`scripts/run_mlm.py`): a bidirectional language model, every word predicted from its left and
right context nodes (nothing masked); Fast-R2D2's top-down parser may train at a rate of its own. Training code
only: no modeling file imports this module."""

from dataclasses import dataclass, field

from ...data.collators import EveryWordCollator
from ...training import LanguageModelTraining
from ...training.arguments import TransformerSizeArguments
from .configuration_r2d2 import R2D2Config


@dataclass
class R2D2TrainingArguments(TransformerSizeArguments):
    num_composition_layers: int = field(default=3, metadata={"help": "From scratch: composition layers."})
    window_size: int = field(default=4, metadata={"help": "From scratch: the pruning window m."})
    pruning: str = field(
        default="heuristic",
        metadata={
            "help": "From scratch: `heuristic` (the 2021 merge rule) or `parser` (Fast-R2D2: a top-down parser "
            "chooses the merges; its sizes through --config_overrides, e.g. parser_num_layers=2)."
        },
    )
    parser_learning_rate: float | None = field(
        default=None,
        metadata={
            "help": "Peak learning rate of the parameters under `split_parser` (with --pruning parser; the "
            "authors' 1e-2), on the same schedule; default --learning_rate."
        },
    )


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


def learning_rates(arguments: R2D2TrainingArguments, learning_rate: float):
    """The top-down parser's parameters at `--parser_learning_rate`, the rest at `learning_rate`."""
    if arguments.parser_learning_rate is None:
        return None
    parser_rate = arguments.parser_learning_rate
    return lambda name: parser_rate if ".split_parser." in f".{name}" else learning_rate


TRAINING = LanguageModelTraining(
    arguments=R2D2TrainingArguments, new_config=new_config, collator=every_word_collator,
    learning_rates=learning_rates,
)
