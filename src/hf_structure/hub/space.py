"""What makes an exported model folder a Gradio Space as well as a model repository (`export_model_folder(...,
space=True)`, `hf-structure export --space`): `app.py` (generated from `modular_app.py`: the page of
`hf-structure demo` for the folder's own model, loaded with `trust_remote_code=True`), `requirements.txt`, and the
Space's settings in the model card's metadata (the Hub reads `sdk`, `sdk_version` and `app_file` in a Space's README
and ignores them in a model's)."""

from __future__ import annotations

import shutil
from importlib.metadata import requires
from pathlib import Path

SPACE_FILES = ("app.py", "requirements.txt")
# What the folder's code imports: the model's and the pipeline's code (as scripts/check_minimal_env.py installs),
# and Gradio for the page (the `demo` extra).
SPACE_PACKAGES = ("torch", "transformers", "tokenizers", "safetensors", "huggingface_hub")
PAGE_EXTRA = "demo"
SPACE_URL = "https://huggingface.co/spaces/{}"


def _needed_requirements() -> list:
    """hf_structure's own `packaging` Requirements of the packages the folder's code imports, and of Gradio in its
    `demo` extra."""
    from packaging.requirements import Requirement

    needed = []
    for line in requires("hf_structure") or ():
        requirement = Requirement(line)
        marker = requirement.marker
        if requirement.name in SPACE_PACKAGES if marker is None else marker.evaluate({"extra": PAGE_EXTRA}):
            needed.append(requirement)
    return needed


def space_requirements() -> list[str]:
    """The lines of `requirements.txt`: the ranges hf_structure requires of the packages the folder's code imports,
    and of Gradio in its `demo` extra."""
    lines = []
    for requirement in _needed_requirements():  # the lower bound first, as people write it
        bounds = sorted(map(str, requirement.specifier), key=lambda bound: not bound.startswith(">"))
        lines.append(requirement.name + ",".join(bounds))
    return lines


def gradio_sdk_version() -> str:
    """The Space's `sdk_version`: the lowest Gradio the demo extra allows, the release its page is tested with."""
    from packaging.version import Version

    (gradio,) = [requirement for requirement in _needed_requirements() if requirement.name == "gradio"]
    (lowest,) = [Version(spec.version) for spec in gradio.specifier if spec.operator == ">="]
    return ".".join(map(str, (*lowest.release, 0, 0)[:3]))


def space_card_data(title: str, repo_id: str | None) -> dict:
    """The Space's settings for the card's metadata: its title, Gradio SDK, app file, and the model it shows."""
    return {
        "title": title,
        "emoji": "🌳",
        "sdk": "gradio",
        "sdk_version": gradio_sdk_version(),
        "app_file": "app.py",
        "pinned": False,
        **({"models": [repo_id]} if repo_id else {}),
    }


def space_note(space_id: str | None) -> str:
    """The card's paragraph under its title for a folder that is also a Space (`space_id`: the Space it runs as)."""
    running = f"**Try it in a browser:** [{space_id}]({SPACE_URL.format(space_id)}). " if space_id else ""
    return (
        f"\n\n{running}This repository is also a Gradio Space: `pip install -r requirements.txt` and then `python "
        "app.py` in it serve a page on which to parse text with this model and see its trees (needs no hf_structure)."
    )


def write_space_files(folder: Path) -> None:
    """Write `app.py` and `requirements.txt` into `folder`."""
    shutil.copyfile(Path(__file__).with_name("app.py"), folder / "app.py")
    (folder / "requirements.txt").write_text("\n".join(space_requirements()) + "\n", encoding="utf-8")
