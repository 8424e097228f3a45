"""How StructFormer trains (`scripts/run_mlm.py`): a masked language model; the paper replaces every selected word by
`<mask>`. Training code only: no modeling file imports this module."""

from dataclasses import dataclass, field

from transformers import TrainerCallback

from ...training import LanguageModelTraining
from ...training.arguments import TransformerSizeArguments
from ...training.collators import ReproducibleMaskingCollator
from ...training.trainer import SparsePrediction
from .configuration_structformer import StructFormerConfig


@dataclass
class StructFormerTrainingArguments(TransformerSizeArguments):
    num_hidden_layers: int = field(default=8, metadata={"help": "From scratch: Transformer blocks."})
    num_parser_layers: int = field(default=3, metadata={"help": "From scratch: parser convolution layers."})
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


def new_config(arguments: StructFormerTrainingArguments, tokenizer) -> StructFormerConfig:
    return StructFormerConfig(
        vocab_size=len(tokenizer),
        num_hidden_layers=arguments.num_hidden_layers,
        num_parser_layers=arguments.num_parser_layers,
        max_position_embeddings=arguments.max_position_embeddings,
        pad_token_id=tokenizer.pad_token_id,
        mask_token_id=tokenizer.mask_token_id,
        **arguments.transformer_sizes(),
    )


def masking_collator(arguments: StructFormerTrainingArguments, tokenizer, seed: int) -> ReproducibleMaskingCollator:
    # `<unk>` and `<pad>` are special tokens, so they are never masked nor predicted.
    return ReproducibleMaskingCollator(
        tokenizer,
        arguments.mlm_probability,
        seed=seed,
        mask_replace_prob=arguments.mask_replace_prob,
        random_replace_prob=arguments.random_replace_prob,
    )


def callbacks(arguments: StructFormerTrainingArguments) -> list[TrainerCallback]:
    return [SparsePrediction()]


TRAINING = LanguageModelTraining(
    arguments=StructFormerTrainingArguments, new_config=new_config, collator=masking_collator, callbacks=callbacks
)
