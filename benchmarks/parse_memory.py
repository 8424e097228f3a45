#!/usr/bin/env python
"""Resident memory of a long `hf-structure parse`: does it stay flat?

Runs `hf-structure parse --input LINES --output FILE` (one process, the installed command's code) on `--lines`
lines of UD English-EWT text (the `# text` of the train, dev and test sentences, repeated as needed), and samples
the process's resident set size and its peak so far (`/proc/PID/status` VmRSS, VmHWM) every 0.1 s together with how
many results the output holds. Prints the peak RSS once the output first holds `--after` results, the peak at the
end, and their ratio (the target: at most 1.2), with the run's lines per second and the RSS along the way; every
number comes from this one run. The
issue it guards: arc-hybrid-ewt's RSS climbed from about 560 to 880-960 MB over 8,000 lines (glibc holding freed
blocks).

    .venv/bin/python benchmarks/parse_memory.py                       # arc-hybrid-ewt, 20,000 lines
    .venv/bin/python benchmarks/parse_memory.py --model g2gtr-ewt --lines 3000
    .venv/bin/python benchmarks/parse_memory.py --quick              # smoke run: 300 lines, --after 100

Linux only (it reads /proc).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shared_data import DATA_DIR  # benchmarks/shared_data.py: the script's folder is on sys.path

DEFAULT_EWT = DATA_DIR / "ud-english-ewt"


def ewt_texts(folder: Path) -> list[str]:
    texts = []
    for split in ("train", "dev", "test"):
        for line in (folder / f"en_ewt-ud-{split}.conllu").read_text(encoding="utf-8").splitlines():
            if line.startswith("# text = "):
                texts.append(line[len("# text = ") :])
    return texts


def resident_mib(pid: int) -> tuple[float, float] | None:
    """The process's resident set size and its peak so far (VmRSS, VmHWM), in MiB; None once it has ended."""
    try:
        fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024
    except (OSError, KeyError, ValueError):  # the process has ended
        return None


def results_written(path: Path) -> int:
    try:
        with path.open("rb") as stream:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: stream.read(1 << 20), b""))
    except OSError:
        return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="arc-hybrid-ewt")
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--after", type=int, default=1000, help="the baseline: RSS once this many results are out")
    parser.add_argument("--ewt", type=Path, default=DEFAULT_EWT)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.lines, args.after = 300, 100

    texts = ewt_texts(args.ewt)
    lines = [texts[k % len(texts)] for k in range(args.lines)]
    with tempfile.TemporaryDirectory() as folder:
        source, output = Path(folder) / "in.txt", Path(folder) / "out.jsonl"
        source.write_text("\n".join(lines) + "\n", encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "hf_structure.cli",
            "parse",
            "--model",
            args.model,
            "--input",
            str(source),
            "--output",
            str(output),
            "--no-split-sentences",
            "--threads",
            str(args.threads),
            "--no-progress",
        ]
        start = time.perf_counter()
        child = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        assert child.stderr is not None  # piped
        samples = []  # (seconds, results written, RSS MiB, peak RSS so far MiB)
        while child.poll() is None:
            memory = resident_mib(child.pid)
            if memory is not None:
                samples.append((time.perf_counter() - start, results_written(output), *memory))
            time.sleep(0.1)
        stderr = child.stderr.read()
        if child.returncode != 0:
            sys.exit(f"parse failed ({child.returncode}): {stderr[-2000:]}")
        total = results_written(output)

    after = [sample for sample in samples if sample[1] >= args.after]
    if not after:
        sys.exit(f"the output never held {args.after} results while sampled")
    baseline, final = after[0], samples[-1]
    parsing = [sample for sample in samples if sample[1] > 0]
    seconds = parsing[-1][0] - parsing[0][0] if len(parsing) > 1 else float("nan")
    print(
        json.dumps(
            {
                "model": args.model,
                "lines": total,
                "threads": args.threads,
                "peak_rss_mib_after_first": {"results": baseline[1], "peak_rss": round(baseline[3])},
                "peak_rss_mib_at_the_end": {"results": final[1], "peak_rss": round(final[3])},
                "peak_ratio": round(final[3] / baseline[3], 3),
                "lines_per_s_while_parsing": round((parsing[-1][1] - parsing[0][1]) / seconds, 1) if seconds else None,
                "rss_mib_by_results": [
                    [results, round(rss)] for _, results, rss, _ in samples[:: max(1, len(samples) // 20)]
                ],
            }
        )
    )


if __name__ == "__main__":
    main()
