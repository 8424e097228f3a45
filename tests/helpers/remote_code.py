"""Run an exported folder's code in a child process where hf_structure (and nltk, and any other named package)
cannot be imported, offline: what a user without hf_structure gets from an exported folder. `pipeline(model=FOLDER,
trust_remote_code=True)` (`parse_without_hf_structure`), or the folder's Space, `python app.py`
(`serve_space_without_hf_structure`)."""

import json
import os
import subprocess
import sys

BLOCK = """
import json, sys
BLOCKED = {blocked!r}
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in BLOCKED:
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
"""
PARSE = """
from transformers import pipeline
parser = pipeline(model={folder!r}, trust_remote_code=True)
print(json.dumps(parser(json.loads(sys.argv[1]), **json.loads(sys.argv[2]))))
"""
# As `python app.py` in the folder: its own folder is found from `__file__`.
RUN_APP = """
import runpy
runpy.run_path('app.py', run_name='__main__')
"""


def without_hf_structure(code: str, blocked=()) -> str:
    """`code` preceded by an import hook that refuses `hf_structure`, `nltk` and `blocked`."""
    return BLOCK.format(blocked=("hf_structure", "nltk", *blocked)) + code


def offline_env(workdir, **extra) -> dict:
    """This environment, offline, with its own Hub home and remote-code cache under `workdir`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "PYTHON"))}
    env.update(
        HF_HUB_OFFLINE="1",
        HF_HOME=str(workdir / "hf"),
        HF_MODULES_CACHE=str(workdir / "modules"),
        TRANSFORMERS_VERBOSITY="error",
        **extra,
    )
    return env


def parse_without_hf_structure(folder, inputs, workdir, blocked=(), **options):
    """The JSON result of the folder's remote-code pipeline on `inputs` (with `options`), in a child where
    `hf_structure`, `nltk` and `blocked` cannot be imported; AssertionError with the child's stderr if it fails."""
    run = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            without_hf_structure(PARSE.format(folder=str(folder)), blocked),
            json.dumps(inputs),
            json.dumps(options),
        ],
        capture_output=True,
        text=True,
        env=offline_env(workdir),
        cwd=workdir,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def serve_space_without_hf_structure(folder, workdir, port: int) -> subprocess.Popen:
    """`python app.py` in the exported `folder`, serving on 127.0.0.1 from `port`, where hf_structure and nltk cannot
    be imported (-I: no PYTHONPATH, user site or current folder on sys.path; the hook does the rest)."""
    return subprocess.Popen(
        [sys.executable, "-I", "-c", without_hf_structure(RUN_APP)],
        cwd=folder,
        env=offline_env(workdir, GRADIO_SERVER_PORT=str(port), GRADIO_ANALYTICS_ENABLED="False"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
