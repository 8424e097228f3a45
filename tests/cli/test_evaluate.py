"""Baselines scored end to end (`evaluate_baseline`, `hf-structure evaluate`): on a hand-made treebank whose scores
are worked out below, and on the gold PTB sample against the reference numbers of the data README."""

import json
import os
import subprocess
import sys

import pytest

from hf_structure.cli import main
from hf_structure.data.treebanks import read_treebank
from hf_structure.evaluation.baselines import baseline_parses, left_branching, right_branching
from hf_structure.evaluation.scoring import evaluate_baseline
from hf_structure.evaluation.scoring import score_parses as score_pairs
from hf_structure.structs.trees import check_heads
from tests.helpers.hand_treebank import write_hand_treebank
from tests.helpers.paths import ROOT


def score_parses(gold, pairs):
    """`score_parses` over (spans, heads) pairs, as the baselines give them."""
    return score_pairs(gold, [{"spans": spans, "heads": heads} for spans, heads in pairs])


# The hand treebank (its gold spans and heads: tests/helpers/hand_treebank.py), sentences A and C.
# Right-branching: predicted spans (k, n) for k = 1..n-2; heads [0, 1, 2, ...].
#   A: predicted (1,7)..(5,7), 3 of 5 in gold (3,7)(4,7)(5,7), 3 of 4 gold found -> F1 2/3
#      UAS: only w5 (on <- sat) -> 1/7; UUAS: w3, w4, w5, w7 -> 4/7
#   C: predicted (1,6)..(4,6), 3 of 4 right ((2,6) (3,6) (4,6)), 3 of 4 found -> F1 3/4
#      UAS: only w6 -> 1/6; UUAS: w2, w3, w5, w6 -> 4/6
#   sentence F1 (2/3 + 3/4) / 2 = 70.83; corpus P 6/9, R 6/8 -> 70.59; UAS 2/13 = 15.38; UUAS 8/13 = 61.54
#   recall: NP 1/3 (only (5,7)); VP 3/3; PP 1/1; SBAR 1/1; no ADJP/ADVP in the gold (so no such key).
HAND_RIGHT_BRANCHING = {
    "parser": "right-branching",
    "sentences": 2,
    "sentence_f1": 70.83,
    "corpus_f1": 70.59,
    "sentence_f1_cpcfg": 70.83,  # no tree of the hand treebank has a unary chain at the top
    "corpus_f1_cpcfg": 70.59,
    "recall_NP": 33.33,
    "recall_VP": 100.0,
    "recall_PP": 100.0,
    "recall_SBAR": 100.0,
    "uas": 15.38,
    "uuas": 61.54,
    "valid_trees": 100.0,
}

# The data README's reference numbers for ptb-sample/dev (1,921 sentences).
REFERENCE = {
    "right-branching": {"sentence_f1": 39.94, "corpus_f1": 35.61, "uas": 20.29, "uuas": 50.34},
    "left-branching": {"sentence_f1": 8.66, "corpus_f1": 6.37, "uas": 30.37, "uuas": 50.58},
}
KEYS = {
    "parser",
    "sentences",
    "sentence_f1",
    "corpus_f1",
    "sentence_f1_cpcfg",
    "corpus_f1_cpcfg",
    "uas",
    "uuas",
    "valid_trees",
} | {f"recall_{label}" for label in ("NP", "VP", "PP", "SBAR", "ADJP", "ADVP")}


@pytest.fixture
def hand_treebank(tmp_path):
    return write_hand_treebank(tmp_path)


def run_cli(*args):
    path = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "hf_structure.cli", *args], capture_output=True, text=True, env=env, timeout=300
    )


# --- baselines themselves ------------------------------------------------------------------------------------------


def test_baseline_trees():
    assert right_branching(4) == ([(0, 4), (1, 4), (2, 4)], [0, 1, 2, 3])
    assert left_branching(4) == ([(0, 2), (0, 3), (0, 4)], [2, 3, 4, 0])
    assert right_branching(1) == ([], [0]) and left_branching(1) == ([], [0])
    assert left_branching(0) == ([], [])
    for n in range(1, 8):
        check_heads(right_branching(n)[1])
        check_heads(left_branching(n)[1])


def test_random_baseline_is_seeded():
    lengths = [1, 2, 5, 9, 14]
    first = baseline_parses("random", lengths, seed=3)
    assert first == baseline_parses("random", lengths, seed=3)
    assert first != baseline_parses("random", lengths, seed=4)
    for (spans, heads), n in zip(first, lengths):
        assert len(heads) == n and len(spans) == max(n - 1, 0)  # binary: n-1 spans of two or more words
        check_heads(heads)
    with pytest.raises(ValueError, match="unknown baseline"):
        baseline_parses("middle-branching", lengths)


# --- hand-made treebank (no shared data needed) ----------------------------------------------------------------------


def test_evaluate_baseline_hand_treebank(hand_treebank):
    assert evaluate_baseline(str(hand_treebank), "right-branching") == HAND_RIGHT_BRANCHING


def test_score_parses_without_heads(hand_treebank):
    gold = read_treebank(hand_treebank)
    for sentence in gold:
        sentence.heads = None
    scores = score_parses(gold, baseline_parses("right-branching", [len(g.words) for g in gold]))
    assert "uas" not in scores and "uuas" not in scores
    assert scores["sentence_f1"] == 70.83
    # A perfect parser scores 100 everywhere.
    gold = read_treebank(hand_treebank)
    perfect = score_parses(gold, [(sorted(g.spans), g.heads) for g in gold])
    assert all(value == 100.0 for key, value in perfect.items() if key != "sentences")


def test_cli_evaluate_hand_treebank(hand_treebank, capsys):
    main(["evaluate", "--treebank", str(hand_treebank), "--baseline", "right-branching"])
    out = capsys.readouterr().out
    assert out.endswith("\n") and out.count("\n") == 1
    assert json.loads(out) == HAND_RIGHT_BRANCHING


def test_cli_evaluate_conllu_scores_dependencies_only(tmp_path, capsys):
    # "the dog barks ." : the <- dog <- barks (root), punctuation left out of the scoring.
    rows = ["1\tthe\t_\tDET", "2\tdog\t_\tNOUN", "3\tbarks\t_\tVERB", "4\t.\t_\tPUNCT"]
    heads = ["2\tdet", "3\tnsubj", "0\troot", "3\tpunct"]
    text = "".join(f"{row}\t_\t_\t{head}\t_\t_\n" for row, head in zip(rows, heads)) + "\n"
    path = tmp_path / "tiny.conllu"
    path.write_text(text, encoding="utf-8")
    main(["evaluate", "--treebank", str(path), "--baseline", "left-branching"])  # word i headed by word i+1
    scores = json.loads(capsys.readouterr().out)
    assert scores == {"parser": "left-branching", "sentences": 1, "uas": 100.0, "uuas": 100.0, "valid_trees": 100.0}
    main(["evaluate", "--treebank", str(path), "--baseline", "right-branching"])  # word i headed by word i-1
    scores = json.loads(capsys.readouterr().out)
    assert scores == {"parser": "right-branching", "sentences": 1, "uas": 0.0, "uuas": 66.67, "valid_trees": 100.0}


def test_cli_evaluate_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate", "--treebank", str(tmp_path), "--baseline", "middle-branching"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="no mrg/ folder"):
        main(["evaluate", "--treebank", str(tmp_path), "--baseline", "left-branching"])
    with pytest.raises(SystemExit, match=f"treebank not found: {tmp_path / 'missing.conllu'}"):
        main(["evaluate", "--treebank", str(tmp_path / "missing.conllu"), "--baseline", "left-branching"])
    (tmp_path / "bad.conllu").write_text("1\tthe\t_\tDET\n1 dog\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"bad.conllu:1: expected 10 tab-separated columns, got 4"):
        main(["evaluate", "--treebank", str(tmp_path / "bad.conllu"), "--baseline", "left-branching"])


@pytest.mark.parametrize("source", ["--baseline=left-branching", "--model=structformer-ptb"])
def test_cli_evaluate_names_an_empty_treebank_and_a_bad_row_by_its_line(tmp_path, source):
    empty = tmp_path / "empty.conllu"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(SystemExit, match=f"^hf-structure evaluate: {empty}: no sentence with a word to score"):
        main(["evaluate", "--treebank", str(empty), source])
    bad = tmp_path / "bad.conllu"  # the HEAD of the sentence's third row (line 4) is no number
    bad.write_text(
        "# text = a dog ran\n1\ta\t_\tDET\t_\t_\t2\tdet\t_\t_\n2\tdog\t_\tNOUN\t_\t_\t3\tnsubj\t_\t_\n"
        "3\tran\t_\tVERB\t_\t_\tX\troot\t_\t_\n\n",
        encoding="utf-8",
    )
    with pytest.raises(SystemExit, match=f"^hf-structure evaluate: {bad}:4: malformed CoNLL-U: .*'head'"):
        main(["evaluate", "--treebank", str(bad), source])


# --- the gold PTB sample (skipped without ../shared/data) -------------------------------------------------------------


@pytest.mark.parametrize("name", ["right-branching", "left-branching"])
def test_evaluate_baseline_reference_numbers(ptb_dev, name):
    scores = evaluate_baseline(str(ptb_dev), name)
    assert scores["parser"] == name
    assert scores["sentences"] == 1921
    assert set(scores) == KEYS
    for key, expected in REFERENCE[name].items():
        assert scores[key] == pytest.approx(expected, abs=0.05), key


def test_gold_sample_is_well_formed(ptb_gold):
    gold = ptb_gold
    assert len(gold) == 1921
    for sentence in gold:
        n = len(sentence.words)
        assert n >= 1 and len(sentence.heads) == n and len(sentence.tags) == n
        assert all(e - s > 1 and (s, e) != (0, n) and 0 <= s < e <= n for s, e in sentence.spans)
        # Heads in range and acyclic. (Three sentences of wsj_0075 have a `$` root, which is punctuation under the
        # scoring convention, so their content words form a forest with several roots; not asserted here.)
        assert all(0 <= h <= n and h != i + 1 for i, h in enumerate(sentence.heads))
        for start in range(1, n + 1):
            node, steps = start, 0
            while node:
                node, steps = sentence.heads[node - 1], steps + 1
                assert steps <= n, f"cycle in {sentence.source}"


def test_evaluate_baseline_random_uses_the_seed(hand_treebank):
    runs = [evaluate_baseline(str(hand_treebank), "random", seed=seed) for seed in (0, 0, 1, 2, 3, 4, 5)]
    assert runs[0] == runs[1]
    assert len({json.dumps(run, sort_keys=True) for run in runs}) > 1


@pytest.fixture(scope="module")
def ptb_gold(ptb_dev):
    return read_treebank(ptb_dev)


def test_random_baseline_on_the_gold_sample(ptb_dev, ptb_gold):
    first = evaluate_baseline(str(ptb_dev), "random", seed=0)
    lengths = [len(g.words) for g in ptb_gold]
    assert first == {"parser": "random", **score_parses(ptb_gold, baseline_parses("random", lengths, seed=0))}
    other = score_parses(ptb_gold, baseline_parses("random", lengths, seed=1))
    assert {"parser": "random", **other} != first
    assert first["sentences"] == other["sentences"] == 1921
    # Random trees fall between the two branching baselines on F1 (about 17.7 for seed 0).
    low, high = REFERENCE["left-branching"]["sentence_f1"], REFERENCE["right-branching"]["sentence_f1"]
    assert low < first["sentence_f1"] < high


def test_cli_evaluate_prints_one_json_line(ptb_dev, capsys):
    main(["evaluate", "--treebank", str(ptb_dev), "--baseline", "right-branching"])
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 1 and captured.out == lines[0] + "\n"
    scores = json.loads(lines[0])
    assert set(scores) == KEYS
    assert scores["parser"] == "right-branching" and scores["sentences"] == 1921
    for key, expected in REFERENCE["right-branching"].items():
        assert scores[key] == pytest.approx(expected, abs=0.05), key


def test_cli_module_in_a_subprocess(hand_treebank):
    # Runs everywhere (hand-made treebank), so the console entry is exercised even without the shared data.
    result = run_cli("evaluate", "--treebank", str(hand_treebank), "--baseline", "right-branching")
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and result.stdout == lines[0] + "\n", result.stdout
    assert json.loads(lines[0]) == HAND_RIGHT_BRANCHING


def test_cli_evaluate_refuses_an_unreadable_lm_text_before_parsing(tmp_path, monkeypatch):
    from hf_structure.evaluation import scoring
    from tests.helpers.tiny_models import save_tiny_model

    folder = save_tiny_model(tmp_path / "tiny")
    gold = write_hand_treebank(tmp_path / "gold")
    monkeypatch.setattr(scoring, "evaluate", lambda *args: pytest.fail("the treebank was parsed"))
    (tmp_path / "latin1.txt").write_bytes("the caf\xe9 sat\n".encode("latin-1"))
    (tmp_path / "blank.txt").write_text("\n  \n", encoding="utf-8")
    expected = {
        "missing.txt": f"text file not found: {tmp_path / 'missing.txt'}$",
        "latin1.txt": f"{tmp_path / 'latin1.txt'}: not UTF-8 \\(byte 7\\)$",
        "blank.txt": f"{tmp_path / 'blank.txt'} holds no non-empty line$",
    }
    for name, message in expected.items():
        with pytest.raises(SystemExit, match=f"^hf-structure evaluate: --lm-text: {message}"):
            main(["evaluate", "--model", str(folder), "--treebank", str(gold), "--lm-text", str(tmp_path / name)])


def test_cli_evaluate_reports_both_perplexity_protocols(tmp_path, capsys):
    from tests.helpers.tiny_models import save_tiny_model

    folder = save_tiny_model(tmp_path / "tiny")
    gold = write_hand_treebank(tmp_path / "gold")
    text = tmp_path / "text.txt"
    text.write_text("the old man sat on the bench\na dog ran and tired\nthe dog sat\n", encoding="utf-8")
    main(
        ["evaluate", "--model", str(folder), "--treebank", str(gold), "--lm-text", str(text), "--paper-mask-seeds", "2"]
    )
    scores = json.loads(capsys.readouterr().out)
    assert {"mlm_ppl", "mlm_ppl_paper", "mlm_ppl_paper_sd"} <= scores.keys() and scores["mlm_ppl_paper_seeds"] == 2
    main(
        ["evaluate", "--model", str(folder), "--treebank", str(gold), "--lm-text", str(text), "--paper-mask-seeds", "0"]
    )
    scores = json.loads(capsys.readouterr().out)
    assert "mlm_ppl" in scores and "mlm_ppl_paper" not in scores
    (tmp_path / "unknown.txt").write_text("zebra yak\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=f"^hf-structure evaluate: --lm-text: {tmp_path / 'unknown.txt'}: no word"):
        main(["evaluate", "--model", str(folder), "--treebank", str(gold), "--lm-text", str(tmp_path / "unknown.txt")])


def test_cli_evaluate_says_how_many_sentences_of_punctuation_alone_it_leaves_out(tmp_path, capsys):
    from tests.helpers.tiny_models import save_tiny_model

    folder = save_tiny_model(tmp_path / "tiny")  # trained without punctuation: scored without it
    rows = [
        "1\tthe\t_\tDET\t_\t_\t2\tdet\t_\t_",
        "2\tdog\t_\tNOUN\t_\t_\t0\troot\t_\t_",
        "3\t.\t_\tPUNCT\t_\t_\t2\tpunct\t_\t_",
    ]
    path = tmp_path / "gold.conllu"
    path.write_text("\n".join(rows) + "\n\n1\t!\t_\tPUNCT\t_\t_\t0\troot\t_\t_\n\n", encoding="utf-8")
    capsys.readouterr()  # what saving the tiny model printed
    main(["evaluate", "--model", str(folder), "--treebank", str(path)])
    captured = capsys.readouterr()
    assert json.loads(captured.out)["sentences"] == 1
    assert captured.err == (
        "hf-structure evaluate: 1 sentences of punctuation alone are not scored (scoring without "
        "punctuation leaves them no word)\n"
    )


def test_cli_evaluate_progress_counts_every_parse_pass(hand_treebank, tmp_path, capsys):
    from tests.helpers.tiny_models import save_tiny_model

    folder = save_tiny_model(tmp_path / "tiny")
    capsys.readouterr()
    main(["evaluate", "--model", str(folder), "--treebank", str(hand_treebank), "--progress"])
    bar = capsys.readouterr().err.split("\r")[-1]
    assert bar.startswith("hf-structure evaluate: 100%") and "4/4" in bar  # 2 sentences, default and argmax heads
    main(["evaluate", "--model", str(folder), "--treebank", str(hand_treebank), "--no-progress"])
    assert capsys.readouterr().err == ""


def test_cli_evaluate_scores_a_treebank_of_punctuation_alone_with_a_parser_that_attaches_punctuation(tmp_path, capsys):
    path = tmp_path / "punctuation.conllu"
    path.write_text(
        "1\t!\t_\tPUNCT\t_\t_\t0\troot\t_\t_\n2\t?\t_\tPUNCT\t_\t_\t1\tpunct\t_\t_\n\n1\t.\t_\tPUNCT\t_\t_\t0\troot\t_\t_\n\n",
        encoding="utf-8",
    )
    main(["evaluate", "--model", "arc-hybrid-ewt", "--treebank", str(path)])  # it scores every word
    scores = json.loads(capsys.readouterr().out)
    assert scores["sentences"] == 2 and "uas" in scores and "uas_no_punct" not in scores
    with pytest.raises(SystemExit, match=f"^hf-structure evaluate: {path}: no sentence with a word to score"):
        main(["evaluate", "--model", "structformer-ptb", "--treebank", str(path)])  # it never saw punctuation
