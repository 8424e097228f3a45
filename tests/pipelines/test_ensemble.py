"""Ensembles of constituency parsers (issue #56): each member's spans carried onto the first member's words by
character offsets, the averaged tree, trees files as members, and `hf-structure parse` / `evaluate` with several
members."""

import json

import pytest

from hf_structure.cli import main
from hf_structure.data.treebanks import read_treebank
from hf_structure.evaluation.scoring import evaluate_baseline
from hf_structure.pipelines import load_parser
from hf_structure.pipelines.batched_parsing import SentenceError
from hf_structure.pipelines.ensemble import EnsembleParser, spans_across_words
from hf_structure.pipelines.parser import UnsupportedOptionError
from hf_structure.structs.decoding import average_trees
from hf_structure.training.teachers import write_trees
from tests.helpers.hand_treebank import write_hand_treebank
from tests.helpers.paths import FIXTURES
from tests.helpers.tiny_models import save_tiny_model, save_tiny_r2d2


def offsets_of(words, text):
    """Each word's `[start, end]` in `text`, found left to right."""
    offsets, position = [], 0
    for word in words:
        start = text.index(word, position)
        offsets.append([start, start + len(word)])
        position = start + len(word)
    return offsets


def test_spans_are_carried_by_characters_onto_other_words():
    # the member cut "didn't" into two words, the reference did not
    reference = ["he", "didn't", "go"]
    reference_offsets = [[10, 12], [13, 19], [20, 22]]  # the same sentence, 10 characters later in its input
    member = ["he", "did", "n't", "go"]
    member_offsets = [[0, 2], [3, 6], [6, 9], [10, 12]]
    # (1, 3) "did n't" is the reference's word 1 alone: fewer than two words, no vote; (1, 4) is (1, 3) there;
    # (0, 2) "he did" ends inside "didn't": no vote; (0, 4) is the whole sentence.
    carried = spans_across_words([(0, 4), (1, 4), (1, 3), (0, 2)], member, member_offsets, reference, reference_offsets)
    assert carried == [(0, 3), (1, 3)]
    # the same words: the spans as they are (words included are dropped), offsets or not
    assert spans_across_words([(0, 3), (1, 2), (1, 3)], reference, None, reference, None) == [(0, 3), (1, 3)]
    with pytest.raises(SentenceError, match="carry no character offsets"):
        spans_across_words([(0, 4)], member, None, reference, reference_offsets)


@pytest.fixture(scope="module")
def members(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ensemble")
    corpus = ["the old man sat on the well known bench", "a dog ran and tired", "well - known"]
    return (
        load_parser(str(save_tiny_model(folder / "structformer", max_position_embeddings=16))),
        load_parser(str(save_tiny_r2d2(folder / "r2d2", corpus, word_convention="ud"))),
    )


def test_an_ensemble_averages_its_members_trees_on_the_first_members_words(members):
    first, second = members
    text = "The old man sat on the well-known bench. A dog ran."
    ensemble = EnsembleParser([first, second])
    results = ensemble(text)
    own, others = first(text), second(text)
    assert [r["words"] for r in results] == [r["words"] for r in own]  # the first member's sentences and words
    assert others[0]["words"][6:9] == ["well", "-", "known"] and own[0]["words"][6] == "well-known"
    for result, mine, theirs in zip(results, own, others):
        carried = spans_across_words(
            map(tuple, theirs["spans"]), theirs["words"], theirs["offsets"], mine["words"], mine["offsets"]
        )
        [expected] = average_trees([[mine["spans"]], [carried]], [len(mine["words"])], "right")
        assert result["spans"] == [list(span) for span in expected]
        assert result["offsets"] == mine["offsets"] and result["text"] == mine["text"]
    # across the hyphen the words differ, and a span is carried by its characters, never by its word indices
    assert any(len(t["words"]) != len(m["words"]) for t, m in zip(others, own))


def test_an_ensemble_takes_trees_files_and_names_the_member_that_fails(members, tmp_path):
    first, _ = members
    words = [["the", "old", "man", "sat"], ["a", "dog", "ran"]]
    right = tmp_path / "right.jsonl"
    write_trees(right, words[:1], [[(0, 4), (1, 4), (2, 4)]])
    ensemble = EnsembleParser([first], trees=[right], tie_break="right")
    results = ensemble(words, on_error="record")
    [own] = [first(words[0], is_split_into_words=True)]
    [expected] = average_trees([[own["spans"]], [[(0, 4), (1, 4), (2, 4)]]], [4], "right")
    assert results[0]["spans"] == [list(span) for span in expected]
    assert results[1] == {"words": words[1], "error": f"{right}: no tree of these words"}  # the first kept
    with pytest.raises(SentenceError, match="no tree of these words"):
        ensemble(words[1], is_split_into_words=True)


def test_an_ensemble_refuses_what_it_cannot_give(members):
    first, second = members
    with pytest.raises(ValueError, match="two or more members"):
        EnsembleParser([first])
    with pytest.raises(ValueError, match="tie_break must be one of"):
        EnsembleParser([first, second], tie_break="cky")
    with pytest.raises(UnsupportedOptionError, match="does not take head_decoding"):
        EnsembleParser([first, second])("a dog ran", head_decoding="argmax")


def test_evaluate_scores_an_ensemble_with_its_tie_break_and_ties_at_random(tmp_path, capsys):
    treebank = write_hand_treebank(tmp_path / "hand")
    gold = read_treebank(treebank)
    right, left = tmp_path / "right.jsonl", tmp_path / "left.jsonl"
    write_trees(right, [g.words for g in gold], [[(k, len(g.words)) for k in range(len(g.words) - 1)] for g in gold])
    write_trees(left, [g.words for g in gold], [[(0, k) for k in range(len(g.words), 1, -1)] for g in gold])
    scores = {}
    for tie_break in ("right", "left"):
        main(
            [
                "evaluate",
                "--treebank",
                str(treebank),
                "--trees",
                str(right),
                "--trees",
                str(left),
                "--tie-break",
                tie_break,
            ]
        )
        scores[tie_break] = json.loads(capsys.readouterr().out)
    # two teachers that share only the whole sentence: the tie-break alone decides, toward its own baseline
    for tie_break in ("right", "left"):
        baseline = evaluate_baseline(str(treebank), f"{tie_break}-branching")
        assert scores[tie_break]["sentence_f1"] == baseline["sentence_f1"]
        assert scores[tie_break]["tie_break"] == tie_break and "sentence_f1_random" in scores[tie_break]
    assert [member["parser"] for member in scores["right"]["members"]] == [str(right), str(left)]
    assert (
        scores["right"]["members"][1]["sentence_f1"]
        == evaluate_baseline(str(treebank), "left-branching")["sentence_f1"]
    )
    # one trees file alone is scored as it is
    main(["evaluate", "--treebank", str(treebank), "--trees", str(right)])
    alone = json.loads(capsys.readouterr().out)
    assert alone["sentence_f1"] == scores["right"]["sentence_f1"] and "members" not in alone
    with pytest.raises(SystemExit, match="no gold constituents to score an ensemble"):
        main(["evaluate", "--treebank", str(FIXTURES / "tiny.conllu"), "--trees", str(right), "--trees", str(left)])
    with pytest.raises(SystemExit, match="--record is for one model"):
        main(["evaluate", "--treebank", str(treebank), "--trees", str(right), "--trees", str(left), "--record"])


def test_parse_writes_an_ensembles_tree_and_refuses_conllu(members, tmp_path, capsys):
    first, second = members
    folders = [first.model.name_or_path, second.model.name_or_path]
    main(["parse", "--model", folders[0], "--model", folders[1], "The old man sat. A dog ran."])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = EnsembleParser([first, second])("The old man sat. A dog ran.")
    assert [{k: v for k, v in line.items() if k != "line"} for line in lines] == expected
    with pytest.raises(SystemExit, match="an ensemble gives no dependency heads"):
        main(["parse", "--model", folders[0], "--model", folders[1], "--conllu", "a dog ran"])
