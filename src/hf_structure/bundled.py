"""Checkpoints that ship with the package, by short name, and loading any checkpoint for parsing.

Short names resolve to folders on this machine, so naming one never contacts the Hub. They come from two places:
the folders in `hf_structure/checkpoints/` (the checkpoints in the main wheel) and the entry points of the
`hf_structure.checkpoints` group, through which a separately installed model package (`pip install
hf-structure-<name>`) adds its own short names: `<short name> = "<module>:<attribute holding its folder>"`.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import warnings
from collections.abc import Iterator
from functools import lru_cache
from importlib.metadata import entry_points
from pathlib import Path

CHECKPOINTS_DIR = Path(__file__).parent / "checkpoints"
DEFAULT_MODEL = "structformer-ptb"
ENTRY_POINT_GROUP = "hf_structure.checkpoints"


@lru_cache(maxsize=1)
def _installed_model_packages() -> dict[str, Path]:
    """Short names declared by installed model packages. A package whose module cannot be imported (a broken or
    half-removed install) is left out with a warning naming it, so that the other models keep working."""
    folders = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            folders[entry.name] = Path(entry.load())
        except (ImportError, AttributeError) as error:
            warnings.warn(f"checkpoint {entry.name!r} ({entry.value}) is not available: {error}", stacklevel=2)
    return folders


def bundled_checkpoints() -> dict[str, Path]:
    """Short name -> checkpoint folder: the names each registered model declares (`ModelSpec.bundled`, folders in
    `checkpoints/`), then those of installed model packages."""
    from .registry import MODEL_SPECS

    folders = {name: CHECKPOINTS_DIR / name for spec in MODEL_SPECS.values() for name in spec.bundled}
    for name, folder in _installed_model_packages().items():
        folders.setdefault(name, folder)
    return folders


def bundled_folder(name_or_path: str | Path) -> Path | None:
    """The folder of the bundled checkpoint a short name stands for; None for anything else, and for a name that is
    also a path here (a folder of the same name in the working directory wins)."""
    if Path(name_or_path).exists():
        return None
    return bundled_checkpoints().get(str(name_or_path))


def resolve_model_path(name_or_path: str | Path) -> str:
    """A bundled checkpoint's folder for its short name; anything else as given (a folder or a Hub repo id).
    A folder of the same name in the working directory wins over a short name. A bare name (no `/`) that is neither
    a folder nor bundled raises ValueError naming the bundled models: it is taken for a mistyped short name, so it
    never reaches the Hub, whose lookup of it would end in a long, unrelated error."""
    name_or_path = str(name_or_path)
    folder = bundled_folder(name_or_path)
    if folder is not None:
        return str(folder)
    if Path(name_or_path).exists():
        return name_or_path
    if "/" not in name_or_path:
        names = sorted(bundled_checkpoints())
        closest = difflib.get_close_matches(name_or_path, names, n=1)
        hint = f" (did you mean {closest[0]!r}?)" if closest else ""
        raise ValueError(
            f"unknown model {name_or_path!r}{hint}: not a folder, not a bundled model "
            f"({', '.join(names)}), not a Hub id (org/name)"
        )
    return name_or_path


class ModelFolderError(ValueError):
    """A model folder that cannot be loaded for parsing: the message names the folder and what is wrong with it."""


WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


def check_model_folder(path: str | Path, trust_remote_code: bool = False, tokenizer: bool = True) -> None:
    """Refuse a local model folder that would not load as a parser, before transformers loads it: without this a
    folder missing its tokenizer.json loads an empty tokenizer that turns every word into the unknown piece
    (a BertTokenizer built from `tokenizer_config.json` alone) or asks for sentencepiece, a truncated weights file
    raises an error naming no file, and an unknown model type asks a `[y/N]` question on standard output.
    Reads `config.json`, the tokenizer's file names and the safetensors headers only (no network, no weights).
    A Hub id (not a folder here) is left to the Hub. `tokenizer=False` when the caller gives its own tokenizer."""
    from .registry import MODEL_SPECS

    folder = Path(path)
    if not folder.exists():
        return  # a Hub id
    if not folder.is_dir():
        raise ModelFolderError(f"model {folder} is a file, not a model folder")
    config_file = folder / "config.json"
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelFolderError(f"model folder {folder} has no config.json: is it a saved model folder?") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelFolderError(f"{config_file}: not a valid JSON config ({error})") from None
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if not isinstance(model_type, str):
        raise ModelFolderError(f"{config_file}: no model_type (is it a model's config?)")
    if model_type not in MODEL_SPECS and not (trust_remote_code and "auto_map" in config):
        raise ModelFolderError(
            f"{config_file}: model type {model_type!r} is not one hf_structure registers "
            f"({', '.join(sorted(MODEL_SPECS))}); a model that brings its own code needs trust_remote_code=True"
        )
    if model_type in MODEL_SPECS:
        _check_config_types(config_file, config, MODEL_SPECS[model_type].config_class)
    if tokenizer:
        _check_tokenizer_files(folder)
    _check_weight_files(folder)


_JSON_KINDS = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list",
    tuple: "a list",
}


def _check_config_types(config_file: Path, config: dict, config_class, prefix: str = "") -> None:
    """Each setting of config.json has the JSON type of its default in the config class, and so do the settings of
    its nested configs (a parser's encoder, nested or, in older folders, at the top level): otherwise the model's
    construction fails deep inside with a message that names no setting (`"abc" % 4`: "not all arguments converted
    during string formatting"; transformers' strict configs: an error the command line does not expect)."""
    import inspect

    for sub_name, sub_class in (getattr(config_class, "sub_configs", None) or {}).items():
        nested = config.get(sub_name)
        if isinstance(nested, dict):
            _check_config_types(config_file, nested, sub_class, f"{prefix}{sub_name}.")
        else:
            _check_config_types(config_file, config, sub_class, prefix)
    for name, parameter in inspect.signature(config_class.__init__).parameters.items():
        expected = type(parameter.default)
        if name not in config or expected not in _JSON_KINDS:
            continue
        value = config[name]
        if expected is bool:
            valid = isinstance(value, bool)
        elif expected is int:
            valid = isinstance(value, int) and not isinstance(value, bool)
        elif expected is float:
            valid = isinstance(value, (int, float)) and not isinstance(value, bool)
        else:
            valid = isinstance(value, list if expected is tuple else expected)
        if not valid:
            raise ModelFolderError(f"{config_file}: {prefix}{name} must be {_JSON_KINDS[expected]}, got {value!r}")


def _check_tokenizer_files(folder: Path) -> None:
    """A tokenizer loads from tokenizer.json, or from the vocabulary files its class reads (a BertTokenizer's
    vocab.txt); without them transformers builds an empty tokenizer from `tokenizer_config.json` without a word."""
    if (folder / "tokenizer.json").is_file():
        return
    try:
        tokenizer_config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        tokenizer_config = {}
    class_name = tokenizer_config.get("tokenizer_class") if isinstance(tokenizer_config, dict) else None
    vocabulary_files = ()
    if class_name:
        from transformers.models.auto.tokenization_auto import tokenizer_class_from_name

        tokenizer_class = tokenizer_class_from_name(class_name)
        names = getattr(tokenizer_class, "vocab_files_names", {}) if tokenizer_class else {}
        vocabulary_files = tuple(name for key, name in names.items() if key != "tokenizer_file")
        if vocabulary_files and all((folder / name).is_file() for name in vocabulary_files):
            return
    instead = f" (nor {', '.join(vocabulary_files)}, which {class_name} can read instead)" if vocabulary_files else ""
    raise ModelFolderError(
        f"model folder {folder} has no tokenizer: tokenizer.json is missing{instead}; "
        "copy it from where the model was saved or re-export the model"
    )


def _check_weight_files(folder: Path) -> None:
    """Weights are present, and each safetensors file's header covers the file (a truncated copy does not)."""
    present = [name for name in WEIGHT_FILES if (folder / name).is_file()]
    if not present:
        raise ModelFolderError(f"model folder {folder} has no weights ({' or '.join(WEIGHT_FILES[::2])})")
    if present[0] == "model.safetensors":
        weight_files = [folder / "model.safetensors"]
    elif present[0] == "model.safetensors.index.json":
        index_file = folder / present[0]
        try:
            shards = sorted(set(json.loads(index_file.read_text(encoding="utf-8"))["weight_map"].values()))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ModelFolderError(f"{index_file}: not a valid weights index ({error})") from None
        weight_files = [folder / shard for shard in shards]
    else:
        return  # pickled weights are left to torch to read
    from safetensors import SafetensorError, safe_open

    for weight_file in weight_files:
        try:
            with safe_open(weight_file, framework="pt"):
                pass
        except FileNotFoundError:
            raise ModelFolderError(f"model folder {folder} lacks {weight_file.name}, a part of its weights") from None
        except SafetensorError as error:
            raise ModelFolderError(
                f"{weight_file}: not a complete safetensors file ({error}); it may be truncated: "
                "download or export the model again"
            ) from None


@contextlib.contextmanager
def quiet_weight_files() -> Iterator[None]:
    """transformers' "Loading weights" and "Writing model shards" bars (and the Hub's download bars) off inside the
    block, as they were after it: our checkpoints load and save in about a second, and a bar per call is noise in a
    user's output. Trainer's training bar is not one of them."""
    from transformers.utils import logging

    enabled = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            logging.enable_progress_bar()


def load_model_and_tokenizer(name_or_path: str = DEFAULT_MODEL):
    """A parsing model (in eval mode) and its tokenizer. The class is the one the model's registry entry names for
    parsing (for StructFormer the masked-LM model, so perplexity can be measured with the same object). A local
    folder is checked first (`check_model_folder`)."""
    import transformers

    from .registry import model_spec

    path = resolve_model_path(name_or_path)
    check_model_folder(path)
    config = transformers.AutoConfig.from_pretrained(path)
    auto_class = getattr(transformers, model_spec(config.model_type).parsing_class)
    with quiet_weight_files():
        model = auto_class.from_pretrained(path, config=config)
    return model.eval(), transformers.AutoTokenizer.from_pretrained(path)
