"""Every model treats the same bad input the same way through the pipeline: a word that tokenises to no piece
(zero-width space, soft hyphen, a lone combining mark) is parsed as the tokenizer's unknown token, never shifting
the other words; a sentence too long for the model is refused naming the caller's item, whatever the batch size.
On every tiny model that the registered model types declare (`ModelSpec.tiny_models`), and on each bundled model
with one short sentence."""

import pytest

from hf_structure.bundled import bundled_checkpoints
from hf_structure.pipelines import TASK
from hf_structure.pipelines.batched_parsing import parse_length_error
from tests.helpers.tiny_models import declared_tiny_models, save_declared_tiny_model

PIECELESS = ["\u200b", "\u00ad", "\u0301"]  # zero-width space, soft hyphen, combining acute accent
OUTPUTS = ("heads", "deprels", "spans")


@pytest.fixture(scope="module", params=declared_tiny_models())
def parser(request, tmp_path_factory):
    from transformers import pipeline

    folder = save_declared_tiny_model(request.param, tmp_path_factory.mktemp(request.param) / "model")
    return pipeline(TASK, model=str(folder))  # type: ignore[call-overload]  # transformers' overloads name only its own tasks


def too_long_for(parser) -> list[str]:
    """The shortest sentence of 1, 2, 4, ... words that the parser's model refuses for its length: more words than
    its `max_parse_words`, or too long by its own `parse_length_error` (more word pieces than its positions, say)."""
    words = ["dog"]
    while parse_length_error(parser.model, parser.tokenizer, words) is None:
        if len(words) == 4096:
            pytest.skip("the model parses a sentence of any length")
        words *= 2
    return words


def check_pieceless_words_read_as_unknown(parser):
    """A word with no piece parses as the unknown token would: the same parse, the word itself kept."""
    for odd in PIECELESS:
        words = ["the", odd, "dog", "ran"]
        result = parser(words, is_split_into_words=True)
        as_unknown = parser(["the", parser.tokenizer.unk_token, "dog", "ran"], is_split_into_words=True)
        assert result["words"] == words
        assert {key: result[key] for key in OUTPUTS if key in result} == {
            key: as_unknown[key] for key in OUTPUTS if key in as_unknown
        }, repr(odd)
        if "heads" in result:
            assert result["heads"].count(0) == 1, (repr(odd), result["heads"])


def check_a_long_item_is_named(parser, too_long):
    batch = [["a", "dog"], ["the", "man", "ran"], too_long, ["dog"]]
    for batch_size in (1, 4):
        with pytest.raises(ValueError, match=r"^sentence 3: "):
            parser(batch, batch_size=batch_size, is_split_into_words=True)


def test_a_word_with_no_piece_is_read_as_the_unknown_token(parser):
    check_pieceless_words_read_as_unknown(parser)


def test_a_sentence_too_long_for_the_model_names_its_item_in_any_batch(parser):
    check_a_long_item_is_named(parser, too_long_for(parser))


@pytest.mark.parametrize("name", ["structformer-ptb", "g2gtr-ewt", "arc-hybrid-ewt"])
def test_each_bundled_model_reads_a_word_with_no_piece_and_names_a_long_item(name):
    from hf_structure.pipelines import load_parser

    if name not in bundled_checkpoints():
        pytest.skip(f"{name}'s package is not installed (make setup does)")
    parser = load_parser(name)
    check_pieceless_words_read_as_unknown(parser)
    check_a_long_item_is_named(parser, ["word"] * 600)
