"""Checkpoints that ship with the package, by short name, and loading any checkpoint for parsing.

Short names resolve to folders on this machine, so naming one never contacts the Hub. They come from two places:
the folders in `hf_structure/checkpoints/` (the checkpoints in the main wheel) and the entry points of the
`hf_structure.checkpoints` group, through which a separately installed model package (`pip install
hf-structure-<name>`) adds its own short names: `<short name> = "<module>:<attribute holding its folder>"`.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import logging
import os
import warnings
from collections.abc import Iterator
from functools import lru_cache
from importlib.metadata import entry_points
from pathlib import Path

CHECKPOINTS_DIR = Path(__file__).parent / "checkpoints"
DEFAULT_MODEL = "structformer-ptb"
ENTRY_POINT_GROUP = "hf_structure.checkpoints"

logger = logging.getLogger(__name__)


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
    never reaches the Hub, whose lookup of it would end in a long, unrelated error. Nor does a missing path that
    cannot be a Hub id (absolute, `./`, `~`, more than one `/`): ValueError naming it ("Repo id must be in the form
    ..." otherwise)."""
    name_or_path = str(name_or_path)
    folder = bundled_folder(name_or_path)
    if folder is not None:
        return str(folder)
    path = Path(name_or_path).expanduser()
    if path.exists():
        return name_or_path
    if path.is_absolute() or name_or_path.startswith((".", "~")) or name_or_path.count("/") > 1 or "\\" in name_or_path:
        siblings = [child.name for child in path.parent.iterdir()] if path.parent.is_dir() else []
        closest = difflib.get_close_matches(path.name, siblings, n=1)
        hint = f" (did you mean {str(path.parent / closest[0])!r}?)" if closest else ""
        missing = "it does not exist" if path.parent.is_dir() else f"{path.parent} does not exist"
        raise ValueError(f"no model folder {name_or_path}: {missing}{hint}")
    if "/" not in name_or_path:
        names = sorted(bundled_checkpoints())
        closest = difflib.get_close_matches(name_or_path, names, n=1)
        hint = f" (did you mean {closest[0]!r}?)" if closest else ""
        raise ValueError(
            f"unknown model {name_or_path!r}{hint}: not a folder, not a bundled model "
            f"({', '.join(names)}), not a Hub id (org/name)"
        )
    return name_or_path


def seed_hub_cache(cache_dir: str | Path | None = None) -> None:
    """Lay every bundled checkpoint out in the Hugging Face cache as the model repo of its short name
    (`models--structformer-ptb/snapshots/<revision>/`, each file a link to the bundled one, and `refs/main`), so that
    transformers itself resolves a short name offline: `AutoModel.from_pretrained("g2gtr-ewt")`,
    `pipeline("unsupervised-parsing", model="structformer-ptb")`. Nothing of transformers is changed; a folder of the
    same name in the working directory still wins, as it does for any Hub id. The revision is derived from the
    bundled files (paths, sizes, times), so a new install is laid out again and an unchanged one costs a few file
    checks. A cache that cannot be written (read-only, full) is left as it is: the short names then resolve only
    through this package's own entry points (`load_parser`, the CLI, spaCy), which find the folders directly.
    `cache_dir`: the Hub cache (default: `HF_HUB_CACHE`, as transformers reads it)."""
    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name

    cache = Path(cache_dir if cache_dir is not None else constants.HF_HUB_CACHE)
    for name, folder in bundled_checkpoints().items():
        files = sorted(path for path in folder.rglob("*") if path.is_file() and "__pycache__" not in path.parts)
        state = "".join(
            f"{path.relative_to(folder)}\0{path.stat().st_size}\0{path.stat().st_mtime_ns}\n" for path in files
        )
        revision = hashlib.sha1(f"{folder.resolve()}\n{state}".encode()).hexdigest()
        repo = cache / repo_folder_name(repo_id=name, repo_type="model")
        ref, snapshot = repo / "refs" / "main", repo / "snapshots" / revision
        try:
            if ref.is_file() and ref.read_text() == revision and snapshot.is_dir():
                continue
            for path in files:
                link = snapshot / path.relative_to(folder)
                link.parent.mkdir(parents=True, exist_ok=True)
                if not link.exists():
                    link.symlink_to(path.resolve())
            ref.parent.mkdir(parents=True, exist_ok=True)
            written = ref.with_name(f".main.{os.getpid()}")  # two processes seeding at once each write whole
            written.write_text(revision)
            written.replace(ref)
        except OSError as error:
            logger.debug("the Hub cache %s was not seeded with %s: %s", cache, name, error)


class ModelFolderError(ValueError):
    """A model folder that cannot be loaded for parsing: the message names the folder and what is wrong with it."""


WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


def check_model_folder(
    path: str | Path, trust_remote_code: bool = False, tokenizer: bool = True, auto_class: str | None = "AutoModel"
) -> None:
    """Refuse a local model folder that would not load as a parser, before transformers loads it: without this a
    folder missing its tokenizer.json loads an empty tokenizer that turns every word into the unknown piece
    (a BertTokenizer built from `tokenizer_config.json` alone) or asks for sentencepiece, a truncated weights file
    raises an error naming no file, an unknown model type asks a `[y/N]` question on standard output, a config whose
    sizes are not the weights' prints transformers' load report (twice through the pipeline) before an error holding
    a traceback, and another model's tokenizer fails every sentence with an error that blames the sentence.
    Reads `config.json`, the tokenizer's files and the safetensors headers only, and builds the model on the meta
    device (no network, no weights). A Hub id (not a folder here) is left to the Hub. `tokenizer=False` when the
    caller gives its own tokenizer. `auto_class`: what the caller loads, whose weights the folder must hold (the
    pipeline: AutoModel; None, as evaluation: the model type's parsing class, with a masked-LM head for
    perplexity)."""
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
    spec = MODEL_SPECS.get(model_type)
    model_config = _model_config(config_file, config, spec.config_class) if spec else None
    if tokenizer:
        _check_tokenizer_files(folder)
    weight_files = _check_weight_files(folder)
    if spec and weight_files:
        _check_weights(config_file, config, model_config, spec, auto_class or spec.parsing_class, weight_files)
    if tokenizer:
        _check_tokenizer_against_config(folder, config)


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


def _check_weight_files(folder: Path) -> list[Path]:
    """Weights are present, and each safetensors file's header covers the file (a truncated copy does not). Returns
    the safetensors files (none for pickled weights)."""
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
        return []  # pickled weights are left to torch to read
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
    return weight_files


def _model_config(config_file: Path, config: dict, config_class):
    """The config of config.json, or the reason its class refuses it (a setting of the wrong JSON type, a width that
    is no multiple of the heads) named by its file."""
    try:
        return config_class.from_dict(config)
    except ValueError as error:
        raise ModelFolderError(f"{config_file}: {error}") from None


def _check_weights(config_file: Path, config: dict, model_config, spec, auto_class: str, weight_files: list[Path]):
    """The safetensors headers hold every weight of the model type's `auto_class` but those it ties to another, each
    with the shape the config gives it in the parsing class (the models built on the meta device: no memory, a few
    milliseconds). Otherwise transformers fills a missing weight at random (a parser head: trees at random, with no
    error) or, for a shape, prints its load report and raises an error whose message holds a traceback. Names the
    first mismatched weight with both shapes and, where one setting explains them all, that setting
    (`_mismatched_setting`), or the first missing one as the folder would hold it."""
    import torch
    from safetensors import safe_open

    stored = {}
    for weight_file in weight_files:
        with safe_open(weight_file, framework="pt") as weights:
            for name in weights.keys():
                stored[name] = (weight_file.name, tuple(weights.get_slice(name).get_shape()))
    parsing_class, required_class = spec.auto_classes[spec.parsing_class], spec.auto_classes[auto_class]
    with torch.device("meta"):
        model = parsing_class(model_config)
        required = model if required_class is parsing_class else required_class(model_config)
    mismatches = _shape_mismatches(model, stored)
    if mismatches:
        name, file_name, stored_shape, config_shape = mismatches[0]
        setting = _mismatched_setting(parsing_class, model_config, config, stored, mismatches)
        raise ModelFolderError(
            f"{config_file.parent}: config.json does not match {file_name}: {name} is {list(stored_shape)} there, "
            f"{list(config_shape)} by the config" + (f" ({setting})" if setting else "")
        )
    prefix = f"{model.base_model_prefix}."
    prefixed = any(name.startswith(prefix) for name in stored)
    tied = set(getattr(required, "all_tied_weights_keys", None) or ())
    for name in required.state_dict():
        # A base model's checkpoint holds its weights without the prefix that a model with a head adds, and the
        # other way round: transformers loads either way.
        if name not in tied and not {name, name.removeprefix(prefix), prefix + name} & stored.keys():
            as_stored = prefix + name if prefixed and required is not model else name  # a base model's weight
            files = " and ".join(weight_file.name for weight_file in weight_files)
            raise ModelFolderError(
                f"{config_file.parent}: {files} lacks {as_stored}, a weight of the {type(required).__name__} that "
                "config.json describes: the folder is incomplete or another model's; export or save it again"
            )


def _shape_mismatches(model, stored: dict) -> list[tuple]:
    """`(name, file name, stored shape, shape by the config)` of each stored weight whose shape differs from that of
    `model` (on the meta device). Weights the model does not have are left to transformers' loading."""
    expected = {name: tuple(tensor.shape) for name, tensor in model.state_dict().items()}
    prefix = f"{model.base_model_prefix}."
    mismatches = []
    for name, (file_name, shape) in stored.items():
        # A base model's checkpoint holds its weights without the prefix that a model with a head adds, and the
        # other way round: transformers loads either way.
        key = next((key for key in (name, prefix + name, name.removeprefix(prefix)) if key in expected), None)
        if key is not None and expected[key] != shape:
            mismatches.append((name, file_name, shape, expected[key]))
    return mismatches


def _mismatched_setting(model_class, model_config, config: dict, stored: dict, mismatches: list[tuple]) -> str | None:
    """`"hidden_size 1024?"`: the integer setting (of the config or of a nested one) whose value is a size of a
    mismatched weight by the config, and which, set to that weight's stored size instead, makes every shape match;
    None when no single setting does. Only runs once a folder is refused, so it may build a few models."""
    import copy

    import torch

    changes = {
        (by_config, there)
        for _, _, stored_shape, config_shape in mismatches
        if len(stored_shape) == len(config_shape)
        for there, by_config in zip(stored_shape, config_shape)
        if there != by_config
    }
    for sub_name in (None, *(getattr(model_config, "sub_configs", None) or {})):
        owner = model_config if sub_name is None else getattr(model_config, sub_name)
        for setting, value in vars(owner).items():
            for by_config, there in sorted(changes):
                if setting.startswith("_") or not _is_int(value) or value != by_config:
                    continue
                candidate = copy.deepcopy(model_config)
                setattr(candidate if sub_name is None else getattr(candidate, sub_name), setting, there)
                try:
                    with torch.device("meta"):
                        fits = not _shape_mismatches(model_class(candidate), stored)
                except Exception:  # a size the model cannot be built with is not the one
                    continue
                if fits:
                    # Named where config.json holds it: nested, or (a parser's older flat folders) at the top level.
                    nested = sub_name is not None and isinstance(config.get(sub_name), dict)
                    return f"{sub_name + '.' if nested else ''}{setting} {value}?"
    return None


# The special tokens that a config may record by id (`pad_token_id` ...) and a tokenizer by content (`pad_token`).
SPECIAL_TOKENS = ("pad", "mask", "cls", "sep", "bos", "eos", "unk")


def _check_tokenizer_against_config(folder: Path, config: dict) -> None:
    """tokenizer.json is this model's: it makes no id the embedding lacks (more tokens than the config's
    `vocab_size`; fewer is fine: an embedding may be padded to a round size), and each special token whose id the
    config records (`pad_token_id`, `mask_token_id` ..., at its top level or in a nested config) has that id there.
    Otherwise, with another model's tokenizer, every sentence fails with an error about the sentence (the tokenizer
    cuts words into another number of pieces) or an index error. Tokenizers read from vocabulary files are not
    compared."""
    try:
        tokenizer = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # vocabulary files, or a file the tokenizer's own loading reports
    ids = _tokenizer_ids(tokenizer)
    if not ids:
        return
    # (where config.json holds it, its name, its value)
    settings = [(name, name, value) for name, value in config.items()] + [
        (f"{nested}.{name}", name, value)
        for nested, values in config.items()
        if isinstance(values, dict)
        for name, value in values.items()
    ]
    special_tokens = _special_tokens(folder)
    for label, name, value in settings:  # the vocabulary first: the plainest sign of another model's tokenizer
        if name == "vocab_size" and _is_int(value) and max(ids.values()) >= value:
            raise _tokenizer_mismatch(
                folder, f"the tokenizer has {max(ids.values()) + 1} tokens, config.json's {label} is {value}"
            )
    for label, name, value in settings:
        token = special_tokens.get(name.removesuffix("_token_id")) if name.endswith("_token_id") else None
        if token in ids and _is_int(value) and ids[token] != value:
            kind = name.removesuffix("_token_id")
            raise _tokenizer_mismatch(
                folder, f"config.json's {label} is {value}, the tokenizer's {kind} token {token!r} is {ids[token]}"
            )


def _tokenizer_mismatch(folder: Path, found: str) -> ModelFolderError:
    return ModelFolderError(
        f"{folder}: tokenizer.json does not match config.json: {found} (is it another model's tokenizer?)"
    )


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _tokenizer_ids(tokenizer: dict) -> dict[str, int]:
    """Token -> id of a tokenizer.json: its model's vocabulary (a dict, or a Unigram's list of `[piece, score]`) and
    its added tokens. Empty for a file of another shape, left to the tokenizer's loading to report."""
    model = tokenizer.get("model") if isinstance(tokenizer, dict) else None
    vocabulary = model.get("vocab") if isinstance(model, dict) else None
    if isinstance(vocabulary, dict):
        ids = {token: index for token, index in vocabulary.items() if _is_int(index)}
    elif isinstance(vocabulary, list):
        ids = {entry[0]: index for index, entry in enumerate(vocabulary) if isinstance(entry, list) and entry}
    else:
        return {}
    for added in tokenizer.get("added_tokens") or ():
        if isinstance(added, dict) and isinstance(added.get("content"), str) and _is_int(added.get("id")):
            ids[added["content"]] = added["id"]
    return ids


def _special_tokens(folder: Path) -> dict[str, str]:
    """Kind (`pad`, `mask` ...) -> the token a tokenizer's `tokenizer_config.json` names, or an older folder's
    `special_tokens_map.json`; each a string or an added token's dict (`{"content": ...}`)."""
    tokens = {}
    for name in ("special_tokens_map.json", "tokenizer_config.json"):
        try:
            saved = json.loads((folder / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for kind in SPECIAL_TOKENS:
            token = saved.get(f"{kind}_token") if isinstance(saved, dict) else None
            token = token.get("content") if isinstance(token, dict) else token
            if isinstance(token, str):
                tokens[kind] = token
    return tokens


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
    check_model_folder(path, auto_class=None)
    config = transformers.AutoConfig.from_pretrained(path)
    auto_class = getattr(transformers, model_spec(config.model_type).parsing_class)
    with quiet_weight_files():
        model = auto_class.from_pretrained(path, config=config)
    return model.eval(), transformers.AutoTokenizer.from_pretrained(path)
