"""A sentence the model cannot parse (a word holding a space, too long) costs its own score only: `parse_word_lists`
names it as the parse command does, and the evaluation leaves it out, names it and counts it."""

import json
import subprocess
import sys

import pytest

from hf_structure.bundled import load_model_and_tokenizer
from hf_structure.data.conllu_format import read_conllu
from hf_structure.evaluation.scoring import GoldTreebank, evaluate
from hf_structure.pipelines.parser import Parser
from tests.helpers.tiny_models import save_tiny_model

GOOD = [["the", "old", "man", "sat"], ["a", "dog", "ran"]]
SPACED = ["the", "old man", "sat"]
LONG = ["the"] * 9  # the tiny model below reads at most 8 words


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model", max_position_embeddings=8)


def conllu(sentences) -> str:
    blocks = []
    for number, words in enumerate(sentences, 1):
        rows = [f"# sent_id = s{number}"]
        rows += [
            f"{i}\t{w}\t_\tNOUN\t_\t_\t{0 if i == 1 else 1}\t{'root' if i == 1 else 'dep'}\t_\t_"
            for i, w in enumerate(words, 1)
        ]
        blocks.append("\n".join(rows) + "\n")
    return "\n".join(blocks) + "\n"


def test_unparsable_sentences_are_named_and_the_others_parsed_as_alone(tiny):
    model, tokenizer = load_model_and_tokenizer(str(tiny))
    sentences = [GOOD[0], SPACED, GOOD[1], LONG]
    with pytest.raises(ValueError, match=r"^sentence 2: word 2 \('old man'\) is empty or contains whitespace$"):
        Parser(model, tokenizer).parse_words(sentences)
    results = Parser(model, tokenizer).parse_words(sentences, names=["a", "b", "c", "d"], on_error="record")
    assert results[1] == {"words": SPACED, "error": "b: word 2 ('old man') is empty or contains whitespace"}
    assert results[3] == {"words": LONG, "error": "d: 9 words; this model parses at most 8"}
    assert [results[0], results[2]] == Parser(model, tokenizer).parse_words(GOOD)


def every_word(path) -> GoldTreebank:
    """The CoNLL-U file scored over every word (the CoNLL 2018 convention), whatever the model's punctuation policy."""
    return GoldTreebank(str(path), True, read_conllu(path))


def test_the_evaluation_scores_the_rest_and_names_the_skipped_by_file_and_line(tiny, tmp_path):
    model, tokenizer = load_model_and_tokenizer(str(tiny))
    path = tmp_path / "odd.conllu"
    path.write_text(conllu([GOOD[0], SPACED, GOOD[1], LONG]), encoding="utf-8")
    clean = tmp_path / "clean.conllu"
    clean.write_text(conllu(GOOD), encoding="utf-8")
    scores = evaluate(Parser(model, tokenizer), every_word(path))[0]
    assert scores.pop("skipped") == [
        f"sentence 2 ({path}:7): word 2 ('old man') is empty or contains whitespace",
        f"sentence 4 ({path}:17): 9 words; this model parses at most 8",
    ]
    expected = evaluate(Parser(model, tokenizer), every_word(clean))[0]
    for key in ("sentences_per_second",):
        scores.pop(key), expected.pop(key)
    assert scores == expected
    path.write_text(conllu([SPACED]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"no sentence could be parsed \(1 tried; the first: sentence 1 "):
        evaluate(Parser(model, tokenizer), every_word(path))[0]


def test_cli_evaluate_counts_the_skipped_and_names_each_on_its_own_line(tiny, tmp_path):
    path = tmp_path / "odd.conllu"
    path.write_text(conllu([GOOD[0], SPACED, GOOD[1], LONG]), encoding="utf-8")
    command = [sys.executable, "-m", "hf_structure.cli", "evaluate", "--model", str(tiny), "--treebank", str(path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    scores = json.loads(result.stdout)
    assert (scores["sentences"], scores["skipped"]) == (2, 2)
    assert result.stderr.splitlines() == [
        f"hf-structure evaluate: not scored: sentence 2 ({path}:7): word 2 ('old man') is empty or contains whitespace",
        f"hf-structure evaluate: not scored: sentence 4 ({path}:17): 9 words; this model parses at most 8",
    ]
