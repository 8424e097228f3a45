"""Run `pipeline(model=FOLDER, trust_remote_code=True)` in a child process where hf_structure (and nltk, and any
other named package) cannot be imported, offline: what a user without hf_structure gets from an exported folder."""

import json
import os
import subprocess
import sys

CHILD = """
import json, sys
BLOCKED = {blocked!r}
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in BLOCKED:
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
from transformers import pipeline
parser = pipeline(model={folder!r}, trust_remote_code=True)
print(json.dumps(parser(json.loads(sys.argv[1]), **json.loads(sys.argv[2]))))
"""


def parse_without_hf_structure(folder, inputs, workdir, blocked=(), **options):
    """The JSON result of the folder's remote-code pipeline on `inputs` (with `options`), in a child where
    `hf_structure`, `nltk` and `blocked` cannot be imported; AssertionError with the child's stderr if it fails."""
    code = CHILD.format(blocked=("hf_structure", "nltk", *blocked), folder=str(folder))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "PYTHON"))}
    env.update(
        HF_HUB_OFFLINE="1",
        HF_HOME=str(workdir / "hf"),
        HF_MODULES_CACHE=str(workdir / "modules"),
        TRANSFORMERS_VERBOSITY="error",
    )
    run = subprocess.run(
        [sys.executable, "-I", "-c", code, json.dumps(inputs), json.dumps(options)],
        capture_output=True,
        text=True,
        env=env,
        cwd=workdir,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])
