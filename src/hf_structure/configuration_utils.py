"""The base of every hf_structure model configuration: the conventions all of them share, and the pretrained encoder
of the supervised parsers as a nested config.

Imported by the models' modular sources; `scripts/modular_converter.py` inlines it into each generated
`configuration_<name>.py`, so that a saved folder's configuration stands alone.
"""

import importlib.util
import os
import shutil
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar

from transformers import BertConfig, PreTrainedConfig

# What a model does with punctuation. "reattach": the model was trained without punctuation, so the pipeline removes
# it before the model sees a sentence and re-attaches it afterwards; "keep": the model sees every word.
PUNCTUATION_POLICIES = ("reattach", "keep")

# How the pipeline cuts raw text into words for a model: as its training text was cut, "ptb" as the Penn Treebank
# does (hyphenated words whole), "ud" as UD English-EWT does (hyphens and slashes between words split off); see the
# pipeline's word_tokenization.py. A config class names its model's default (`default_word_convention`).
WORD_CONVENTIONS = ("ptb", "ud")


# The JSON type a config.json setting must have, by the type of its default in the config class's `__init__`.
JSON_KINDS = MappingProxyType(
    {bool: "true or false", int: "an integer", float: "a number", str: "a string", list: "a list", tuple: "a list"}
)


def mistyped_setting(config_dict: dict, config_class, prefix: str = "") -> str | None:
    """What is wrong with the first setting of `config_dict` (a config.json's) whose JSON type is not that of its
    default in `config_class`, or in one of its nested configs (a parser's encoder, nested or, in older folders, at
    the top level); None when every one fits. Otherwise the model's construction fails deep inside with a message
    that names no setting (`"abc" % 4`: "not all arguments converted during string formatting")."""
    import inspect

    for sub_name, sub_class in (getattr(config_class, "sub_configs", None) or {}).items():
        nested = config_dict.get(sub_name)
        found = mistyped_setting(
            *(
                (nested, sub_class, f"{prefix}{sub_name}.")
                if isinstance(nested, dict)
                else (config_dict, sub_class, prefix)
            )
        )
        if found:
            return found
    for name, parameter in inspect.signature(config_class.__init__).parameters.items():
        expected = type(parameter.default)
        if name not in config_dict or expected not in JSON_KINDS:
            continue
        value = config_dict[name]
        if expected is bool:
            valid = isinstance(value, bool)
        elif expected is int:
            valid = isinstance(value, int) and not isinstance(value, bool)
        elif expected is float:
            valid = isinstance(value, (int, float)) and not isinstance(value, bool)
        else:
            valid = isinstance(value, (list, tuple) if expected in (list, tuple) else expected)  # a tuple from Python
        if not valid:
            return f"{prefix}{name} must be {JSON_KINDS[expected]}, got {value!r}"
    return None


# The parsing pipeline's task and code: the pipeline's module, then the modules it imports from its folder. Every saved
# folder holds them beside the model's code, and its config.json's `custom_pipelines` names the pipeline, so that
# `pipeline(model=folder, trust_remote_code=True)` parses where hf_structure is not installed.
PIPELINE_TASK = "unsupervised-parsing"
PIPELINE_CLASS = "unsupervised_parsing.UnsupervisedParsingPipeline"
PIPELINE_FILES = (
    "unsupervised_parsing.py",
    "parser.py",
    "batched_parsing.py",
    "quantization.py",
    "word_tokenization.py",
)


def installed_pipeline_folder() -> Path | None:
    """The folder of hf_structure's parsing pipeline code (`hf_structure/pipelines`), found without importing
    hf_structure (this code also runs as a saved folder's remote code); None where hf_structure is not installed."""
    spec = importlib.util.find_spec("hf_structure")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "pipelines"
    return folder if all((folder / name).is_file() for name in PIPELINE_FILES) else None


def _installed_pipeline_registered() -> bool:
    from transformers.pipelines import PIPELINE_REGISTRY

    return "unsupervised-parsing" in PIPELINE_REGISTRY.get_supported_tasks()


class StructureConfig(PreTrainedConfig):
    """A syntactic-structure model's configuration: its punctuation policy (checked), the Auto classes a saved folder
    names, and the parsing pipeline it announces.

    Subclasses set `default_auto_map`, `{Auto class: "module.Class"}` for every class the model can be loaded as:
    each saved folder names them all (`save_pretrained` alone records only the saved class's own Auto class, and the
    parsing pipeline loads AutoModel); an `auto_map` given when loading adds to it.

    Args:
        punctuation_policy: one of `PUNCTUATION_POLICIES`.
        word_convention: how the pipeline cuts raw text into words, as the model's training text was cut: one of
            `WORD_CONVENTIONS`; None (and a config.json without the key): the config class's
            `default_word_convention` ("ptb" unless a model trained on other text says otherwise).
    """

    # ClassVar: every PreTrainedConfig subclass is a dataclass, whose annotated attributes would be config fields.
    default_auto_map: ClassVar[dict[str, str]] = {}
    default_word_convention = "ptb"

    def __init__(self, punctuation_policy="keep", word_convention=None, **kwargs):
        if punctuation_policy not in PUNCTUATION_POLICIES:
            raise ValueError(f"punctuation_policy must be one of {PUNCTUATION_POLICIES}, got {punctuation_policy!r}")
        if word_convention is None:
            word_convention = self.default_word_convention
        if word_convention not in WORD_CONVENTIONS:
            raise ValueError(f"word_convention must be one of {WORD_CONVENTIONS}, got {word_convention!r}")
        self.punctuation_policy = punctuation_policy
        self.word_convention = word_convention
        kwargs["auto_map"] = {**self.default_auto_map, **(kwargs.get("auto_map") or {})}
        if kwargs.get("custom_pipelines") and _installed_pipeline_registered():
            # hf_structure is imported: its registered pipeline serves the task, so the folder's copy (which would
            # demand trust_remote_code=True) is not announced.
            kwargs.pop("custom_pipelines")
        super().__init__(**kwargs)

    def save_pretrained(self, save_directory: str | os.PathLike, push_to_hub: bool = False, **kwargs):
        """As `PreTrainedConfig.save_pretrained` (which `model.save_pretrained` calls), and, where hf_structure is
        installed, the folder is a parsing pipeline too: the pipeline's code files (`PIPELINE_FILES`) beside
        config.json, whose `custom_pipelines` names the pipeline (the model's own code and `auto_map` are
        transformers'). A `custom_pipelines` the config already holds (a pipeline's `save_pretrained` sets one) is
        kept. Where hf_structure is not installed, the folder is saved as the config alone would be."""
        code = installed_pipeline_folder()
        if code is None or getattr(self, "custom_pipelines", None):
            return super().save_pretrained(save_directory, push_to_hub, **kwargs)
        os.makedirs(save_directory, exist_ok=True)
        for name in PIPELINE_FILES:
            shutil.copyfile(code / name, Path(save_directory) / name)
        # Written, not kept: with hf_structure imported, the config announces no custom pipeline (see __init__).
        self.custom_pipelines = {PIPELINE_TASK: {"impl": PIPELINE_CLASS, "pt": ["AutoModel"], "type": "text"}}
        try:
            return super().save_pretrained(save_directory, push_to_hub, **kwargs)
        finally:
            del self.custom_pipelines

    @classmethod
    def from_dict(cls, config_dict: dict, **kwargs):
        """The config of a config.json's settings (as `PreTrainedConfig.from_dict`), each first checked to have its
        default's JSON type (`mistyped_setting`): ValueError naming the first that does not."""
        mistyped = mistyped_setting(config_dict, cls)
        if mistyped:
            raise ValueError(mistyped)
        return super().from_dict(config_dict, **kwargs)


# The settings of a supervised parser's pretrained BERT encoder, which folders saved before the encoder became the
# nested `encoder_config` hold at the top level of their config.json. Their `pad_token_id`, the encoder's too, stays
# there: it is also the model's own (transformers' Trainer aligns a model's with its tokenizer's).
FLAT_ENCODER_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "type_vocab_size",
    "layer_norm_eps",
    "initializer_range",
)

# all-MiniLM-L6-v2's sizes (BERT's defaults otherwise): the encoder of a parser configured without one.
DEFAULT_ENCODER = MappingProxyType({"hidden_size": 384, "num_hidden_layers": 6, "intermediate_size": 1536})


def nested_encoder_config(encoder_config, config_kwargs: dict) -> BertConfig:
    """A supervised parser's pretrained encoder as a `BertConfig`, from the parser config's `encoder_config` (a
    `BertConfig` or its dict) or, in a folder saved before the encoder was nested, from the flat keys
    (`FLAT_ENCODER_KEYS`, taken out of `config_kwargs`, the parser config's other keyword arguments, and its
    `pad_token_id`, left there), missing ones and a missing encoder taking `DEFAULT_ENCODER`. Raises ValueError for
    settings given both ways, or an encoder that is not a BERT."""
    flat = {key: config_kwargs.pop(key) for key in FLAT_ENCODER_KEYS if key in config_kwargs}
    if encoder_config is None:
        padding = {"pad_token_id": config_kwargs["pad_token_id"]} if "pad_token_id" in config_kwargs else {}
        return BertConfig(**{**DEFAULT_ENCODER, **flat, **padding})
    if flat:
        raise ValueError(f"the encoder's {', '.join(flat)} given beside encoder_config: give them in encoder_config")
    if isinstance(encoder_config, dict):
        if encoder_config.get("model_type", "bert") != "bert":
            raise ValueError(f"encoder_config must be a BERT's, got model_type {encoder_config['model_type']!r}")
        return BertConfig(**encoder_config)
    if not isinstance(encoder_config, BertConfig):
        raise ValueError(f"encoder_config must be a BertConfig or its dict, got {type(encoder_config).__name__}")
    return encoder_config
