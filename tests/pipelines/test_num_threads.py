"""The pipeline's `num_threads`: torch's thread count inside the model's parse, given at construction or per call
or chosen by default, and the caller's count restored after."""

import pytest
import torch

import hf_structure  # noqa: F401  (registers the task)
from hf_structure.pipelines import parser as parser_module
from tests.helpers.tiny_models import save_tiny_model

WORDS = [["the", "old", "man", "sat"], ["a", "dog", "ran"]]
CALLER_THREADS = 3  # a count no test asks for


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return str(save_tiny_model(tmp_path_factory.mktemp("threads") / "tiny", max_position_embeddings=16))


@pytest.fixture
def caller_threads():
    previous = torch.get_num_threads()
    torch.set_num_threads(CALLER_THREADS)
    yield CALLER_THREADS
    torch.set_num_threads(previous)


def spied(parser, monkeypatch) -> list[int]:
    """The thread counts the model's parse runs with, one per call."""
    seen, parse = [], parser.model.parse

    def parse_and_note_threads(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return parse(*args, **kwargs)

    monkeypatch.setattr(parser.model, "parse", parse_and_note_threads)
    return seen


def test_num_threads_at_construction_and_per_call(folder, caller_threads, monkeypatch):
    from transformers import pipeline

    parser = pipeline("unsupervised-parsing", model=folder, num_threads=1)  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    seen = spied(parser, monkeypatch)
    first = parser(WORDS, is_split_into_words=True, batch_size=2)
    assert torch.get_num_threads() == caller_threads
    second = parser(WORDS, is_split_into_words=True, batch_size=2, num_threads=2)  # the call's count wins
    assert torch.get_num_threads() == caller_threads
    assert seen == [1, 2] and first == second


def test_without_num_threads_the_default_for_the_load_is_used(folder, caller_threads, monkeypatch):
    from transformers import pipeline

    # The pipeline's own copy of hf_structure.threads (it travels with saved models): one core of two is taken.
    monkeypatch.setattr(parser_module, "usable_cores", lambda: 2)
    monkeypatch.setattr(parser_module, "busy_cores_of_others", lambda: 1.0)
    parser = pipeline("unsupervised-parsing", model=folder)  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    seen = spied(parser, monkeypatch)
    parser(WORDS[0], is_split_into_words=True)
    assert seen == [1] and torch.get_num_threads() == caller_threads


@pytest.mark.parametrize("value", [0, "2", 1.5])
def test_a_bad_num_threads_is_refused_before_parsing(folder, value, monkeypatch):
    from transformers import pipeline

    parser = pipeline("unsupervised-parsing", model=folder)  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    seen = spied(parser, monkeypatch)
    with pytest.raises(ValueError, match="num_threads must be a whole number of at least 1"):
        parser(WORDS[0], is_split_into_words=True, num_threads=value)
    assert seen == []


def test_evaluation_parses_with_num_threads_and_restores_the_callers(folder, caller_threads, monkeypatch):
    from hf_structure.bundled import load_model_and_tokenizer
    from hf_structure.pipelines.parser import Parser

    model, tokenizer = load_model_and_tokenizer(folder)
    seen: list[int] = []
    parse = model.parse

    def counting_parse(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return parse(*args, **kwargs)

    monkeypatch.setattr(model, "parse", counting_parse)
    parses = Parser(model, tokenizer).parse_words(WORDS, batch_size=1, num_threads=2)
    assert seen == [2, 2] and len(parses) == 2 and torch.get_num_threads() == caller_threads
