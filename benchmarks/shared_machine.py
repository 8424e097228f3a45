#!/usr/bin/env python
"""Parsing time on an idle machine against the same machine with other CPU-bound processes, per thread setting.

For each bundled model and each thread setting, the first --lines sentences of UD English-EWT dev (their words, as
`hf-structure parse --pretokenized` reads them; --input: another CoNLL-U file or a text file of one pre-tokenized
sentence a line) are parsed through the `unsupervised-parsing` pipeline at batch size 32 (the CLI's default), once on
the machine as it is ("idle") and once with --busy extra CPU-bound processes (a busy loop each, in a session of its
own) started first ("busy"); the ratio busy/idle is the slowdown. Each configuration runs in a fresh subprocess,
because torch fixes its thread pool at first use; it loads the model and parses 8 lines untimed first. Settings:
`default` (the package's own choice: hf_structure.threads.default_num_threads), `torch` (torch's default count, given
explicitly), a number, or `passive` (torch's default count with OMP_WAIT_POLICY=PASSIVE, which only works set before
torch starts).

Other processes on the machine change every figure: before each configuration the script prints the cores that other
processes keep busy (measured over 0.5 s, hf_structure.threads.busy_cores_of_others, before the extra busy processes
start) and the load average. A busy run still going after BUSY_LIMIT times its idle run's wall time (loading
included; SHORTEST_LIMIT at least), or any run after --max-seconds, is stopped and shown as "stopped". It asserts
nothing; it also says whether each setting's parses equal the first setting's.

    python benchmarks/shared_machine.py                       # all bundled models, settings default,1,torch
    python benchmarks/shared_machine.py --settings default    # the acceptance check only (issue 31)
"""

import argparse
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from shared_data import DATA_DIR  # benchmarks/shared_data.py: the script's folder is on sys.path

ROOT = Path(__file__).resolve().parents[1]
if importlib.util.find_spec("hf_structure") is None:  # not installed: use the source tree (src layout)
    sys.path.insert(0, str(ROOT / "src"))
DEFAULT_INPUT = DATA_DIR / "ud-english-ewt" / "en_ewt-ud-dev.conllu"
MODELS = ("structformer-ptb", "arc-hybrid-ewt", "g2gtr-ewt")
WARMUP_LINES = 8
BUSY_LIMIT = 4  # a busy run this many times slower than idle has failed the 2x mark anyway
SHORTEST_LIMIT = 60.0  # seconds: no run is stopped sooner (loading alone can take that long on a loaded machine)


def read_sentences(path: Path, count: int) -> list[list[str]]:
    """The words of the first `count` sentences of a CoNLL-U file, or of a text file's first `count` non-blank lines."""
    if path.suffix == ".conllu":
        from hf_structure.data.conllu_format import read_conllu

        return [sentence["words"] for sentence in read_conllu(path)[:count]]
    return [line.split() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()][:count]


def child(model: str, setting: str, input_path: Path, lines: int) -> dict:
    """Load `model`, parse the first `lines` sentences of `input_path` with `setting`; seconds, threads seen inside
    the model's parse, and a digest of the parses."""
    import torch

    torch_default = torch.get_num_threads()
    from hf_structure.pipelines import load_parser

    sentences = read_sentences(input_path, lines)
    parser = load_parser(model)
    seen_threads = set()
    # An hf_structure model's parse: transformers' types, which the pipeline's model has, know no such method.
    parse = getattr(parser.model, "parse")  # noqa: B009

    def spy(*args, **kwargs):  # the thread count the model's parse runs with
        seen_threads.add(torch.get_num_threads())
        return parse(*args, **kwargs)

    setattr(parser.model, "parse", spy)  # noqa: B010
    options = (
        {}
        if setting == "default"
        else {"num_threads": torch_default if setting in ("torch", "passive") else int(setting)}
    )
    parser(sentences[:WARMUP_LINES], is_split_into_words=True, batch_size=32, **options)
    start = time.perf_counter()
    outputs = parser(sentences, is_split_into_words=True, batch_size=32, **options)
    seconds = time.perf_counter() - start
    parses = [{key: value for key, value in output.items() if key != "scores"} for output in outputs]
    digest = hashlib.sha1(json.dumps(parses, sort_keys=True).encode()).hexdigest()[:12]
    return {"seconds": seconds, "threads": sorted(seen_threads), "torch_default": torch_default, "digest": digest}


def run_configuration(model: str, setting: str, busy: int, args, limit: float) -> dict:
    """One configuration in a fresh subprocess, with `busy` busy-loop processes running around it, stopped after
    `limit` seconds."""
    from hf_structure.threads import busy_cores_of_others

    others = busy_cores_of_others(0.5)
    load = os.getloadavg()[0]
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)  # every setting starts from torch's own default
    if setting == "passive":
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    # Each loop in a session of its own, as another user's job: Linux's autogroup scheduling shares the CPU between
    # sessions first, so a loop in this session would halve the parse's share on a machine that others keep full.
    # A loop ends when this script does, even when it is killed.
    loop_code = f"import os\nwhile os.getppid() == {os.getpid()}: pass"
    loops = [subprocess.Popen([sys.executable, "-c", loop_code], start_new_session=True) for _ in range(busy)]
    try:
        time.sleep(0.5 if busy else 0)  # the loops are running before the parse starts
        command = [
            sys.executable,
            __file__,
            "--child",
            model,
            setting,
            "--input",
            str(args.input),
            "--lines",
            str(args.lines),
        ]
        start = time.perf_counter()
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            return {"seconds": None, "others": others, "load": load, "wall": limit}
        wall = time.perf_counter() - start
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    if done.returncode != 0:
        raise SystemExit(f"{model} {setting} busy={busy} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {**result, "others": others, "load": load, "wall": wall}


def shown_seconds(result: dict) -> str:
    return "stopped" if result["seconds"] is None else f"{result['seconds']:.2f}"


def main(argv=None):
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--models", default=",".join(MODELS), help="comma list of bundled names or folders")
    options.add_argument(
        "--settings",
        default="default,1,torch",
        help="comma list: default, torch, passive or a thread count (default,1,torch)",
    )
    options.add_argument("--busy", type=int, default=1, help="extra CPU-bound processes in the busy runs (1)")
    options.add_argument("--lines", type=int, default=200, help="sentences parsed per configuration (200)")
    options.add_argument(
        "--input",
        type=Path,
        default=DEFAULT_INPUT,
        help=f"CoNLL-U, or text with one pre-tokenized sentence a line ({DEFAULT_INPUT})",
    )
    options.add_argument(
        "--max-seconds", type=float, default=300.0, help="stop any run after this long, loading included (300)"
    )
    options.add_argument("--child", nargs=2, metavar=("MODEL", "SETTING"), help=argparse.SUPPRESS)
    args = options.parse_args(argv)
    if args.child:
        model, setting = args.child
        print(json.dumps(child(model, setting, args.input, args.lines)))
        return
    if not args.input.is_file():
        raise SystemExit(f"no input file {args.input}: give --input (CoNLL-U, or one pre-tokenized sentence a line)")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(
        f"{args.lines} sentences of {args.input}, batch 32, {cores} usable cores, busy runs with {args.busy} extra "
        f"busy-loop process(es); 'others': cores other processes kept busy just before the run, 'load': 1-min "
        f"load average then; uptime at start: {subprocess.run(['uptime'], capture_output=True, text=True).stdout}"
    )
    header = (
        f"{'model':18} {'setting':8} {'threads':>8} {'idle s':>8} {'busy s':>8} {'ratio':>6} "
        f"{'others idle/busy':>17} {'load idle/busy':>15}  same parses"
    )
    print(header)
    print("-" * len(header))
    start = time.perf_counter()
    for model in args.models.split(","):
        first_digest = None
        for setting in args.settings.split(","):
            idle = run_configuration(model, setting, 0, args, args.max_seconds)
            limit = min(args.max_seconds, max(SHORTEST_LIMIT, BUSY_LIMIT * idle["wall"]))
            busy = run_configuration(model, setting, args.busy, args, limit)
            if None in (idle["seconds"], busy["seconds"]):
                ratio = "-" if idle["seconds"] is None else f">{BUSY_LIMIT}"
            else:
                ratio = f"{busy['seconds'] / idle['seconds']:.2f}"
            threads = "/".join(",".join(map(str, run.get("threads", ["?"]))) for run in (idle, busy))
            digests = {run["digest"] for run in (idle, busy) if "digest" in run}
            first_digest = first_digest or next(iter(digests), None)
            same = "yes" if digests == {first_digest} else "NO" if digests else "-"
            print(
                f"{model:18} {setting:8} {threads:>8} {shown_seconds(idle):>8} {shown_seconds(busy):>8} {ratio:>6} "
                f"{idle['others']:>8.2f}/{busy['others']:<8.2f} {idle['load']:>7.2f}/{busy['load']:<7.2f}  {same}",
                flush=True,
            )
    print(
        f"total {time.perf_counter() - start:.0f} s; uptime at end: "
        f"{subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}"
    )


if __name__ == "__main__":
    main()
