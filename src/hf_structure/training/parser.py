"""Supervised training of dependency parsers on CoNLL-U treebanks through `Trainer`, the library side of
`scripts/run_parser.py`: the same for every parser; the model's training recipe (`hf_structure.training.
ParserTraining`) gives a new parser's config and initialisation, its training examples and their collator."""

import logging
import random
from dataclasses import dataclass, field
from pathlib import Path

from datasets import Dataset
from transformers import set_seed

from ..data.conllu_format import read_conllu
from ..data.gold import TreebankFormatError
from ..registry import model_spec
from . import ParserTraining
from .arguments import TrainingDataError, apply_config_overrides, parse_arguments
from .trainer import (
    EntryTrainingArguments,
    LengthGroupedTrainer,
    checkpoint_to_resume,
    end_processes,
    train_resuming,
    training_provenance,
)

logger = logging.getLogger(__name__)


# The paper's rates: 1e-5 for the pretrained encoder, 1e-4 for the parts a new parser adds to it.
NEW_PARSER_LR_SCALE = 10.0


@dataclass
class ParserModelArguments:
    model_type: str | None = field(
        default=None,
        metadata={
            "help": "New parser: a registered model type with a parser recipe (`g2gtr`, the "
            "Graph-to-Graph Transformer, if unset); its own arguments are listed with "
            "`--model_type X --help`."
        },
    )
    model_name_or_path: str | None = field(
        default=None, metadata={"help": "A saved parser folder (or bundled name) to fine-tune; else a new parser."}
    )
    new_parameters_lr_scale: float | None = field(
        default=None,
        metadata={
            "help": "Learning rate of the parameters the pretrained encoder did not have "
            "(classifiers, relation and label embeddings), as a multiple of --learning_rate "
            "(for a parser that says which parameters are pretrained: `is_pretrained_parameter`). "
            f"Default: {NEW_PARSER_LR_SCALE:g} for a new parser (its heads start untrained), 1 "
            "when fine-tuning a saved parser (--model_name_or_path: its heads are trained)."
        },
    )
    config_overrides: str | None = field(
        default=None,
        metadata={
            "help": "New parser: config settings, e.g. `encoder_type=bilstm,head_decoding=eisner` "
            "(`key=value` pairs separated by commas, as `PretrainedConfig.update_from_string`)."
        },
    )


@dataclass
class ParserDataArguments:
    train_file: str | None = field(
        default=None, metadata={"help": "CoNLL-U file (or folder of .conllu files) to train on."}
    )
    validation_file: str | None = field(default=None, metadata={"help": "CoNLL-U file for the dev scores."})
    max_eval_sentences: int | None = field(default=500, metadata={"help": "Dev sentences scored at each evaluation."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only this many training sentences."})


def conllu_sentences(path: str | Path, option: str = "--train_file") -> list[dict]:
    """The sentences of a CoNLL-U file, or of every `.conllu` file of a folder (sorted by name); a TrainingDataError
    naming `option` and the file when there is none or one cannot be read."""
    path = Path(path)
    files = sorted(path.glob("*.conllu")) if path.is_dir() else [path]
    if not files:
        raise TrainingDataError(f"{option}: no .conllu file in {path}")
    try:
        sentences = [sentence for file in files for sentence in read_conllu(file)]
    except (FileNotFoundError, TreebankFormatError) as error:
        raise TrainingDataError(f"{option}: {error}") from None
    if not sentences:
        raise TrainingDataError(f"{option}: {path} holds no sentence (only comments or blank lines)")
    return sentences


def with_known_labels(sentences: list[dict], deprels: list[str], skip_unknown_labels: bool = False) -> list[dict]:
    """The sentences whose labels are all among `deprels`. Another is a TrainingDataError naming the sentence and the
    labels, or with `skip_unknown_labels` left out with a warning."""
    known, kept = set(deprels), []
    for sentence in sentences:
        unknown = sorted(set(sentence["deprels"]) - known)
        if unknown:
            message = f"sentence {sentence['id']}: labels {unknown} are not among the parser's {len(known)}"
            if not skip_unknown_labels:
                raise TrainingDataError(
                    f"--train_file: {message}: a saved parser keeps its labels (train a new "
                    "one without --model_name_or_path, or map the labels to its own)"
                )
            logger.warning("%s; left out", message)
            continue
        kept.append(sentence)
    return kept


def new_parser(
    model_type: str, own_args, sentences: list[dict], deprels: list[str], config_overrides: str | None = None
):
    """A new parser of `model_type` for `sentences` and their labels, and its tokenizer: its recipe's config from
    `own_args` (the recipe's arguments), the overrides applied, then the recipe's initialisation (e.g. a pretrained
    encoder's weights)."""
    spec = model_spec(model_type)
    recipe = spec.training_recipe()
    config, tokenizer = recipe.new_config(own_args, sentences, deprels)
    if config_overrides:
        apply_config_overrides(config, config_overrides)
    model = spec.auto_classes[spec.parsing_class](config)
    if recipe.initialise is not None:
        recipe.initialise(model, own_args)
    return model, tokenizer


def new_parameters_lr_scale(model_args: ParserModelArguments) -> float:
    """The multiple of --learning_rate for the parameters the encoder did not have: as given, else 10 for a new parser
    and 1 for a saved one (whose heads are trained: 10x would undo a fine-tuning's small rate); the choice is logged."""
    if model_args.new_parameters_lr_scale is not None:
        scale, why = model_args.new_parameters_lr_scale, "as given by --new_parameters_lr_scale"
    elif model_args.model_name_or_path:
        scale, why = 1.0, f"fine-tuning the saved parser {model_args.model_name_or_path}, whose heads are trained"
    else:
        scale, why = NEW_PARSER_LR_SCALE, "a new parser: its heads start untrained, the encoder pretrained"
    logger.info(
        "learning rate of the parameters the pretrained encoder did not have: %g x --learning_rate (%s)", scale, why
    )
    return scale


def learning_rates(model, learning_rate: float, model_args: ParserModelArguments):
    """`learning_rate` for the parameters the model says are pretrained (`is_pretrained_parameter`), scaled for the
    others by `new_parameters_lr_scale(model_args)`; None for a model that does not say."""
    is_pretrained = getattr(model, "is_pretrained_parameter", None)
    if is_pretrained is None:
        return None
    scale = new_parameters_lr_scale(model_args)
    return lambda name: learning_rate if is_pretrained(name) else learning_rate * scale


def parse_command_line(argv: list[str], default_model_type: str, prog: str | None = None):
    """The model's recipe and (model, data, training, the model's own) arguments; `default_model_type` is the model
    type of a new parser when `argv` names none."""
    return parse_arguments(
        argv,
        (ParserModelArguments, ParserDataArguments, EntryTrainingArguments),
        ParserTraining,
        default_model_type,
        prog,
    )


def main(argv: list[str], default_model_type: str, prog: str | None = None):
    """Train as `argv` says (see `parse_command_line`)."""
    recipe, (model_args, data_args, training_args, own_args) = parse_command_line(argv, default_model_type, prog)
    # Each recipe's collator builds the model's inputs from its examples' columns (G2GTr's `first_pieces` among
    # them): the Trainer must not drop the columns the model's forward does not name.
    training_args.remove_unused_columns = False
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    checkpoint = checkpoint_to_resume(training_args)  # it trains, --do_train or not
    set_seed(training_args.seed)
    train = conllu_sentences(data_args.train_file)
    if data_args.max_train_samples:
        train = random.Random(training_args.seed).sample(train, data_args.max_train_samples)
    if model_args.model_name_or_path:
        from ..bundled import load_model_and_tokenizer

        model, tokenizer = load_model_and_tokenizer(model_args.model_name_or_path)
        model.train()
        deprels = model.config.deprels
    else:
        deprels = sorted({label for sentence in train for label in sentence["deprels"]})
        model, tokenizer = new_parser(model_args.model_type, own_args, train, deprels, model_args.config_overrides)
    train = with_known_labels(train, deprels)
    dataset = Dataset.from_list(recipe.examples(model, train, tokenizer, own_args))
    logger.info(
        "train: %d sentences, %d examples; %d labels; model %.1fM parameters",
        len(train),
        len(dataset),
        len(deprels),
        model.num_parameters() / 1e6,
    )
    callbacks, eval_dataset = [], None
    if data_args.validation_file:
        from ..evaluation.callbacks import ParsingEvaluationCallback

        callbacks.append(ParsingEvaluationCallback(data_args.validation_file, tokenizer, data_args.max_eval_sentences))
        # eval_loss over the dev sentences' examples; the callback adds the parsing scores
        dev = conllu_sentences(data_args.validation_file, "--validation_file")[: data_args.max_eval_sentences]
        dev = with_known_labels(dev, deprels, skip_unknown_labels=True)
        eval_dataset = Dataset.from_list(recipe.examples(model, dev, tokenizer, own_args))
    trainer = LengthGroupedTrainer(
        model=model,
        args=training_args,
        train_dataset=dataset,
        eval_dataset=eval_dataset,
        data_collator=recipe.collator(model, tokenizer, own_args),
        processing_class=tokenizer,
        callbacks=callbacks,
        learning_rate_of=learning_rates(model, training_args.learning_rate, model_args),
    )
    train_data = f"`{Path(data_args.train_file).name}` ({len(train):,} sentences)"
    train_resuming(trainer, training_provenance(argv, prog, model_args.model_name_or_path, train_data), checkpoint)
    end_processes(trainer)
    return trainer
