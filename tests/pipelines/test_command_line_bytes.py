"""`hf-structure parse` given a command-line argument that is not UTF-8: Python reads each such byte as a lone
surrogate, which the tokenizers fail on. That line alone gets its error, in one line naming the character; the other
lines are parsed, and the output stays UTF-8: the line's words are written with `\udced` escapes, which JSON reads
back as the same characters."""

import json
import os
import subprocess
import sys

import pytest

from tests.helpers.paths import ROOT
from tests.helpers.tiny_models import save_tiny_model


@pytest.mark.skipif(os.name != "posix", reason="only a POSIX command line passes bytes that are not UTF-8")
@pytest.mark.parametrize("to_file", [False, True], ids=["standard output", "--output"])
def test_an_argument_that_is_not_utf8_is_its_own_line_s_error(tmp_path, to_file):
    model = save_tiny_model(tmp_path / "tiny", max_position_embeddings=16)
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env.update(PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
    env.update(PYTHONUTF8="1")  # arguments read as UTF-8 (a surrogate for each byte that is not), whatever the locale
    arguments: list[str | bytes] = [
        "Good text.",
        b"bad \xed\xa0\x80 text",
        "Another one.",
    ]  # \xed\xa0\x80: U+D800 encoded, not UTF-8
    command: list[str | bytes] = [
        sys.executable,
        "-m",
        "hf_structure.cli",
        "parse",
        "--model",
        str(model),
        "--no-progress",
    ]
    command += arguments
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        command + (["--output", str(out)] if to_file else []), env=env, capture_output=True, timeout=300
    )
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, stderr[-3000:]
    written = out.read_bytes() if to_file else done.stdout
    results = [json.loads(line) for line in written.decode("utf-8").splitlines()]
    assert [result["words"] for result in (results[0], results[2])] == [["Good", "text", "."], ["Another", "one", "."]]
    assert "error" not in results[0] and "error" not in results[2]
    assert results[1]["words"] == ["bad", "\udced\udca0\udc80", "text"]
    assert results[1]["error"] == (
        "line 2: character 5 is a lone surrogate (U+DCED, which stands for the byte 0xED of input that is not UTF-8), "
        "not text"
    )
    assert stderr.splitlines() == ["hf-structure parse: 1 of 3 lines could not be parsed (see their `error`)"]
