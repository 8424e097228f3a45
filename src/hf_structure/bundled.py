"""Checkpoints that ship with the package, by short name, and loading any checkpoint for parsing.

Short names resolve to folders on this machine, so naming one never contacts the Hub. They come from two places:
the folders in `hf_structure/checkpoints/` (the checkpoints in the main wheel) and the entry points of the
`hf_structure.checkpoints` group, through which a separately installed model package (`pip install
hf-structure-<name>`) adds its own short names: `<short name> = "<module>:<attribute holding its folder>"`.
"""

from __future__ import annotations

import difflib
import warnings
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


def resolve_model_path(name_or_path: str | Path) -> str:
    """A bundled checkpoint's folder for its short name; anything else as given (a folder or a Hub repo id).
    A folder of the same name in the working directory wins over a short name. A bare name (no `/`) that is neither
    a folder nor bundled raises ValueError naming the bundled models: it is taken for a mistyped short name, so it
    never reaches the Hub, whose lookup of it would end in a long, unrelated error."""
    name_or_path = str(name_or_path)
    if Path(name_or_path).exists():
        return name_or_path
    folders = bundled_checkpoints()
    if name_or_path in folders:
        return str(folders[name_or_path])
    if "/" not in name_or_path:
        names = sorted(folders)
        closest = difflib.get_close_matches(name_or_path, names, n=1)
        hint = f" (did you mean {closest[0]!r}?)" if closest else ""
        raise ValueError(f"unknown model {name_or_path!r}{hint}: not a folder, not a bundled model "
                         f"({', '.join(names)}), not a Hub id (org/name)")
    return name_or_path


def load_model_and_tokenizer(name_or_path: str = DEFAULT_MODEL):
    """A parsing model (in eval mode) and its tokenizer. The class is the one the model's registry entry names for
    parsing (for StructFormer the masked-LM model, so perplexity can be measured with the same object)."""
    import transformers

    from .registry import model_spec

    path = resolve_model_path(name_or_path)
    config = transformers.AutoConfig.from_pretrained(path)
    auto_class = getattr(transformers, model_spec(config.model_type).parsing_class)
    model = auto_class.from_pretrained(path, config=config)
    return model.eval(), transformers.AutoTokenizer.from_pretrained(path)
