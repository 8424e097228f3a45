"""`hf-structure package-spacy MODEL DIR`: an installable spaCy pipeline package of a model, which
`spacy.load("en_hf_structure_<model>")` loads by name once `pip install`ed.

The pipeline is `spacy.blank(lang)` with the `hf_structure` component over the model, saved with the model inside it
(`save_model=True`), so that the package needs nothing but its requirements; spaCy's own `spacy package` lays the
package out (setup.py, meta.json with the requirements spaCy finds: spaCy and hf_structure, which brings the
component's factory) and pip builds its wheel.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from ..version import __version__
from .common import fail


def add_command(commands) -> None:
    package = commands.add_parser(
        "package-spacy",
        help="build an installable spaCy pipeline package of a model (a wheel in DIR): after `pip install`, "
        '`spacy.load("en_hf_structure_<model>")` (needs hf_structure[spacy])',
    )
    package.add_argument("model", metavar="MODEL", help="bundled name, model folder or Hub id")
    package.add_argument("output", metavar="DIR", type=Path, help="folder the package is written in (made if missing)")
    package.add_argument(
        "--name",
        help="package name without the language prefix (default: hf_structure_ and the model's name, e.g. "
        "hf_structure_arc_hybrid_ewt: installed as en_hf_structure_arc_hybrid_ewt)",
    )
    package.add_argument("--lang", default="en", help="the pipeline's language (spaCy's code, default en)")
    package.add_argument(
        "--package-version", default=__version__, help=f"the package's version (default: hf_structure's, {__version__})"
    )
    package.set_defaults(run=run)


def package_name(model: str) -> str:
    """`hf_structure_` and the model's name (a folder's last part, a Hub id's name) as a Python identifier."""
    return "hf_structure_" + re.sub(r"\W+", "_", Path(model.rstrip("/")).name).strip("_").lower()


def run(args) -> None:
    from ..extras import MissingExtraError, require_extra

    try:
        require_extra("spacy", "a spaCy package", ["spacy"])
    except MissingExtraError as error:
        raise fail("package-spacy", str(error)) from None
    try:
        wheel = build_package(
            args.model, args.output, args.name or package_name(args.model), args.lang, args.package_version
        )
    except (OSError, ValueError) as error:
        raise fail("package-spacy", str(error)) from None
    print(f"wrote {wheel}; `pip install {wheel}` makes it `spacy.load({wheel.name.split('-')[0]!r})`")


def build_package(model: str, output: Path, name: str, lang: str, version: str) -> Path:
    """Save the pipeline, lay its package out in `output` with `spacy package` and build its wheel there; returns
    the wheel's path."""
    import spacy
    from spacy.cli.package import package

    output.mkdir(parents=True, exist_ok=True)
    nlp = spacy.blank(lang)
    nlp.add_pipe("hf_structure", config={"model": model, "save_model": True})
    nlp.meta.update(
        name=name,
        version=version,
        description=f"hf_structure's {model} as a spaCy pipeline: sentences, the model's tags and its parse",
        # spaCy itself: `spacy package` adds only the packages of the pipeline's factories (hf_structure).
        requirements=[f"spacy{nlp.meta['spacy_version']}"],
    )
    with tempfile.TemporaryDirectory(prefix="hf-structure-spacy-") as pipeline:
        nlp.to_disk(pipeline)
        # No sdist (a second copy of the weights) and no wheel from spaCy: that needs `build`, pip is at hand.
        package(Path(pipeline), output, create_sdist=False, force=True, silent=True)
    folder = output / f"{lang}_{name}-{version}"
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(folder / "dist"),
            str(folder),
        ],
        capture_output=True,
        text=True,
    )
    if built.returncode != 0:
        raise ValueError(f"pip could not build the wheel of {folder}: {built.stderr.strip()[-2000:]}")
    return next((folder / "dist").glob(f"{lang}_{name}-{version}-*.whl"))
