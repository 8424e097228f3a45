"""How StructFormer trains (`scripts/run_mlm.py`): a masked language model; the paper replaces every selected word by
`<mask>`. With a teacher's trees (`--teacher_model`, `--teacher_trees`: distillation), the parser's distances also
learn the teacher's splits (`StructFormerForMaskedLM`'s `teacher_loss`), weighted by `--teacher_weight` and
annealed to 0 (`--teacher_anneal_start`, `--teacher_anneal_end`). Training code only: no modeling file imports this
module."""

from dataclasses import dataclass, field

from transformers import TrainerCallback

from ...training import LanguageModelTraining
from ...training.arguments import TransformerSizeArguments
from ...training.collators import ReproducibleMaskingCollator
from ...training.teachers import TeacherArguments, with_teacher_merge_orders
from ...training.trainer import SparsePrediction
from .configuration_structformer import StructFormerConfig


@dataclass
class StructFormerTrainingArguments(TeacherArguments, TransformerSizeArguments):
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
    teacher_weight: float = field(
        default=1.0,
        metadata={
            "help": "With teacher trees: the weight of the distances' loss against them beside the masked LM's "
            "(before --teacher_anneal_start)."
        },
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


class TeacherWeight(TrainerCallback):
    """The weight of the teacher's loss when no anneal is asked for (`StructFormerForMaskedLM.teacher_weight`)."""

    def __init__(self, weight: float):
        self.weight = weight

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        model.teacher_weight = self.weight


def callbacks(arguments: StructFormerTrainingArguments) -> list[TrainerCallback]:
    found: list[TrainerCallback] = [SparsePrediction()]
    if arguments.has_teacher:
        found += arguments.anneal_callbacks(arguments.teacher_weight) or [TeacherWeight(arguments.teacher_weight)]
    return found


def teacher_columns(arguments: StructFormerTrainingArguments, model, dataset, lines: list[str], output_dir: str):
    """With a teacher: each training example's teacher tree as a merge order (`teacher_merge_order`)."""
    if not arguments.has_teacher:
        return dataset
    return with_teacher_merge_orders(arguments, dataset, lines, output_dir)


TRAINING = LanguageModelTraining(
    arguments=StructFormerTrainingArguments,
    new_config=new_config,
    collator=masking_collator,
    callbacks=callbacks,
    training_columns=teacher_columns,
)
