#!/usr/bin/env python
"""Check that an exported model loads where only torch, transformers, tokenizers, safetensors and huggingface_hub
are installed (no hf_structure, no nltk), by repo id from an offline Hub cache, and parses raw text exactly as the
installed package does; with --space, that the folder exported with `--space` runs as a Space there too.

    python scripts/check_minimal_env.py [--model structformer-ptb g2gtr-ewt ...] [--workdir /tmp/hf-minimal] [--space]

Makes a virtualenv with those packages only (pip), lays the export out in a Hub cache (`make_hf_cache`), parses a
few sentences there with `pipeline(model=REPO_ID, trust_remote_code=True)` under HF_HUB_OFFLINE=1, and compares
with this environment's `pipeline("unsupervised-parsing", model=...)`. With --space, it installs the Space's
`requirements.txt` into that virtualenv as a user would (Gradio), runs `python app.py` in the exported folder, asks
the page for the sentences over HTTP (`gradio_client`, from this environment) and compares what it shows (pictures,
table, text) with this environment's `hf_structure.demo.page_parts`. Exits 1 on any difference.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGES = ["torch==2.13.0", "transformers>=5,<6", "tokenizers", "safetensors", "huggingface_hub"]
REPO_ID = "org/minimal-env-check"
SENTENCES = [
    "The old man sat on the bench.",
    "Stocks fell sharply after the report, which surprised analysts, was released on Monday.",
    '"I can\'t go," she said (quietly).',
    "Great service :)",
    "Dogs bark. “Cats” don’t. Mr. Smith agreed… It rained.",  # sentences, offsets, typographic punctuation
]
CHILD = r"""
import json, sys
for name in ("hf_structure", "nltk"):
    try:
        __import__(name)
    except ImportError:
        continue
    raise SystemExit(f"{name} is importable in the minimal environment")
from transformers import pipeline
parser = pipeline(model=sys.argv[1], trust_remote_code=True)
print(json.dumps(parser(json.loads(sys.argv[2]))))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", nargs="+", default=["structformer-ptb"], help="bundled names or folders")
    parser.add_argument(
        "--workdir", help="where the virtualenv and the Hub cache go, kept (default: a temporary folder, removed)"
    )
    parser.add_argument("--space", action="store_true", help="also run each model's Space (`export --space`)")
    args = parser.parse_args()
    if args.workdir:
        return check(args, Path(args.workdir))
    with tempfile.TemporaryDirectory(prefix="hf_minimal_") as workdir:  # 1.3-1.7 GB: not left behind
        return check(args, Path(workdir))


def check(args, workdir: Path) -> int:
    """The checks of `main` in `workdir`; 1 if any failed."""
    venv, cache = workdir / "venv", workdir / "hub-cache"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], check=True)
    installed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True)
    print("minimal environment:", " ".join(sorted(line.split("==")[0] for line in installed.stdout.split())))

    from hf_structure.hub import make_hf_cache
    from hf_structure.pipelines import load_parser

    failed = 0
    for number, model in enumerate(args.model):
        repo_id, cache = f"{REPO_ID}-{number}", workdir / f"hub-cache-{number}"
        make_hf_cache(model, repo_id, cache)
        expected = load_parser(model)(SENTENCES)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "PYTHON"))}
        env.update(
            HF_HUB_OFFLINE="1",
            HF_HUB_CACHE=str(cache),
            HF_MODULES_CACHE=str(workdir / "modules"),
            TRANSFORMERS_VERBOSITY="error",
        )
        child = subprocess.run(
            [str(python), "-I", "-c", CHILD, repo_id, json.dumps(SENTENCES)],
            env=env,
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if child.returncode != 0:
            print(f"{model}: the minimal environment failed", file=sys.stderr)
            print(child.stderr[-3000:], file=sys.stderr)
            failed += 1
            continue
        got = json.loads(child.stdout.strip().splitlines()[-1])
        for text, mine, theirs in zip(SENTENCES, expected, got):  # a text gives one parse per sentence
            status = "same" if mine == theirs else "DIFFERENT"
            parses = "; ".join(
                " ".join(filter(None, (parse.get("tree"), f"heads {parse['heads']}" if "heads" in parse else None)))
                for parse in theirs
            )
            print(f"{model}: {status}: {text!r} -> {parses}")
        failed += got != expected
        if args.space:
            failed += not same_space(model, python, workdir / f"space-{number}", env)
    return 1 if failed else 0


def same_space(model: str, python: Path, folder: Path, env: dict) -> bool:
    """Export `model` with `--space` to `folder`, run its `python app.py` with `python` (its requirements installed
    first) and compare the page's answer for SENTENCES with `page_parts`; print what was found."""
    from gradio_client import Client

    from hf_structure.demo import MODEL_DEFAULT, page_option_names, page_parts
    from hf_structure.hub import export_model_folder
    from hf_structure.pipelines import load_parser

    export_model_folder(model, folder, space=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "-r", str(folder / "requirements.txt")], check=True)
    server = subprocess.Popen(
        [str(python), "-I", "app.py"], cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert server.stdout is not None and server.stderr is not None  # both piped
    try:
        line = server.stdout.readline()
        served = re.match(r"(.+): serving (http://\S+)$", line.strip())
        if not served:
            print(f"{model}: the Space did not start: {line}{server.stderr.read()[-3000:]}", file=sys.stderr)
            return False
        title, url = served.groups()
        pipeline = load_parser(model)
        # As the page reads them (demo.py): an hf_structure model's attribute, which transformers' types do not know.
        options = [MODEL_DEFAULT] * (1 + len(page_option_names([getattr(pipeline.model, "parse_options", {})])))
        text = " ".join(SENTENCES)
        message, pictures, table, copyable = Client(url, verbose=False).predict(
            text, title, *options, api_name="/parse"
        )
        expected = page_parts(pipeline, text, {})
        same = (pictures, table["data"], copyable, message) == expected
        print(f"{model}: the Space ({url}) shows {'the same' if same else 'a DIFFERENT'} page for {text!r}")
        return same
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
