#!/usr/bin/env python
"""How long a visitor of `hf-structure demo` waits for a short text while another visitor's long one is served,
measured in one run (issue 57).

For each model, `hf-structure demo --model MODEL --port 0` is started in a subprocess (`--src DIR`: with that
checkout's hf_structure, e.g. the code before the page's caps, `git archive HEAD src | tar -x -C /tmp/before`) and
asked over HTTP as the page asks it (gradio_client). For each long text (`capped`: the most of a built-in English
paragraph that the page's caps let through, about 300 words; `longest`: as many words in sentences as long as the
caps allow, the slowest text they let through; `big`: `--big-chars` of the paragraph, 100 KB, as one visitor sent),
that text is sent, then, once the server is parsing it, a 3-word sentence. The script prints the seconds each
took to answer, the size of the long text's answer, and the server's peak resident memory so far (VmHWM), beside the
3-word sentence's time alone. The load average is printed with each model: figures only compare when taken close
together on the same machine.

    python benchmarks/demo_latency.py [--models structformer-ptb g2gtr-ewt] [--texts capped big] [--src OLD/src]
    python benchmarks/demo_latency.py --quick   # smoke run (numbers are not measurements)

It asserts nothing: the figures go to docs/benchmark-history.md.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from gradio_client import Client
from gradio_client.utils import Status

from hf_structure.demo import MAX_CHARACTERS, MAX_SENTENCE_WORDS, MAX_SENTENCES, MAX_WORDS
from hf_structure.pipelines.word_tokenization import sentence_offsets, tokenize_with_offsets

SHORT = "The dog barked."
TEXTS = ("capped", "longest", "big")
# Sentences of the length and shape of news text (4 to 46 words), repeated to make a long text.
PARAGRAPH = (
    "Stocks fell sharply on Tuesday after the central bank said that it would keep interest rates higher for longer "
    "than most investors had expected. The old man sat on the bench. Analysts at several large banks, who had "
    "predicted two cuts before the end of the year, revised their forecasts within hours of the announcement, and "
    "some now expect no cut at all until the spring. Prices of government bonds dropped as well. A spokesman for the "
    "bank declined to comment on the reaction of the markets. The company, which makes parts for cars and trucks, "
    "said its profit rose eight percent in the third quarter because demand from its largest customers in Europe "
    "and Asia stayed strong despite the slowing economy. Workers at two of its plants voted to accept a new "
    "contract. It will run for four years. Shares of the company rose in early trading but closed lower. "
)


def capped_text() -> str:
    """The most whole sentences of the paragraph, repeated, that the page's caps let through."""
    repeated = PARAGRAPH * 4
    sentences = [repeated[start:end] for start, end in sentence_offsets(repeated)]
    text, words = "", 0
    for count, sentence in enumerate(sentences, 1):
        length = len(tokenize_with_offsets(sentence)[0])
        longer = f"{text} {sentence}".strip()
        if count > MAX_SENTENCES or words + length > MAX_WORDS or len(longer) > MAX_CHARACTERS:
            break
        assert length <= MAX_SENTENCE_WORDS, sentence
        text, words = longer, words + length
    return text


def longest_text() -> str:
    """The page's slowest text: MAX_WORDS words in sentences of MAX_SENTENCE_WORDS (time per sentence grows faster
    than its length in some models)."""
    words = ("the dog and the cat " * MAX_SENTENCE_WORDS).split()[: MAX_SENTENCE_WORDS - 3]
    sentence = " ".join(["The", *words, "ran", "."])  # the period is a word too
    return " ".join([sentence] * (MAX_WORDS // MAX_SENTENCE_WORDS))


def peak_resident_mib(pid: int) -> float:
    """The process's peak resident memory (Linux's VmHWM), MiB; 0 where /proc cannot tell."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return int(found.group(1)) / 1024 if found else 0.0


def start_demo(model: str, source: str | None) -> tuple[subprocess.Popen, str]:
    """`hf-structure demo --model model --port 0` running, and its URL."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    if source:
        env["PYTHONPATH"] = str(Path(source).resolve())
    command = [sys.executable, "-m", "hf_structure.cli", "demo", "--model", model, "--port", "0"]
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline() if server.stdout else ""
    found = re.match(r"hf-structure demo: serving (\S+) ", line)
    if not found:
        server.kill()
        raise SystemExit(f"demo_latency: {model} did not start: {line!r}")
    return server, found.group(1)


def timed(client: Client, text: str, model: str) -> tuple[float, tuple]:
    started = time.perf_counter()
    answer = client.predict(text, model, api_name="/parse")  # the options: the page's defaults
    return time.perf_counter() - started, answer


def short_behind(client: Client, text: str, model: str) -> tuple[float, float, tuple]:
    """(seconds the long `text` took, seconds SHORT took when sent once the server was parsing `text`, the long
    text's answer)."""
    started = time.perf_counter()
    job = client.submit(text, model, api_name="/parse")
    while job.status().code not in (Status.PROCESSING, Status.FINISHED) and not job.done():
        time.sleep(0.01)
    short, _ = timed(client, SHORT, model)
    answer = job.result(timeout=3600)
    return time.perf_counter() - started, short, answer


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["structformer-ptb", "g2gtr-ewt"])
    parser.add_argument("--texts", nargs="+", choices=TEXTS, default=list(TEXTS))
    parser.add_argument("--big-chars", type=int, default=100_000, help="the big text's characters (default 100 KB)")
    parser.add_argument("--src", help="serve the demo of this checkout's src folder (default: the installed one)")
    parser.add_argument("--quick", action="store_true", help="smoke run: structformer-ptb, a big text of 3,000")
    args = parser.parse_args(argv)
    if args.quick:
        args.models, args.big_chars = ["structformer-ptb"], 3_000
    capped = capped_text()
    texts = {
        "capped": capped,
        "longest": longest_text(),
        "big": (PARAGRAPH * (args.big_chars // len(PARAGRAPH) + 1))[: args.big_chars],
    }
    print(f"code: {args.src or 'installed hf_structure'}; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '-')}")
    print(f"texts: capped {len(capped):,} characters, {len(sentence_offsets(capped))} sentences; short {SHORT!r}")
    print("| model | long text | long: s | short behind it: s | short alone: s | answer, KB | peak RSS, MiB |")
    print("|---|---|---|---|---|---|---|")
    for model in args.models:
        server, url = start_demo(model, args.src)
        try:
            client = Client(url, verbose=False)
            timed(client, SHORT, model)  # the first parse warms the model
            alone = min(timed(client, SHORT, model)[0] for _ in range(3))
            for name in args.texts:
                text = texts[name]
                long_seconds, short_seconds, answer = short_behind(client, text, model)
                size = sum(len(str(part)) for part in answer) / 1024
                label = f"{name} ({len(text):,} chars)"
                print(
                    f"| {model} | {label} | {long_seconds:.2f} | {short_seconds:.2f} | {alone:.2f} | {size:,.0f} | "
                    f"{peak_resident_mib(server.pid):,.0f} |",
                    flush=True,
                )
        finally:
            server.terminate()
            server.wait(timeout=60)
        print(f"load average after {model}: {' '.join(f'{value:.2f}' for value in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    main()
