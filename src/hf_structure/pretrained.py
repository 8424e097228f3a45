"""The pretrained checkpoints that ship inside the package."""

from pathlib import Path

BUNDLED_DIR = Path(__file__).parent / "pretrained"
DEFAULT_MODEL = "structformer-ptb"


def resolve_model_path(name_or_path: str) -> str:
    """A bundled checkpoint's folder for its short name (`structformer-ptb`); anything else is returned as given
    (a local folder or a Hub repo id for `from_pretrained`)."""
    bundled = BUNDLED_DIR / name_or_path
    if (bundled / "config.json").is_file():
        return str(bundled)
    return name_or_path


def load_model_and_tokenizer(name_or_path: str = DEFAULT_MODEL):
    """A parsing model (masked-LM head included when the checkpoint has one) and its tokenizer, in eval mode."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    path = resolve_model_path(name_or_path)
    model = AutoModelForMaskedLM.from_pretrained(path)
    return model.eval(), AutoTokenizer.from_pretrained(path)
