"""Every model treats the same bad input the same way through the pipeline: a word that tokenises to no piece
(zero-width space, soft hyphen, a lone combining mark) is parsed as the tokenizer's unknown token, never shifting
the other words; a sentence too long for the model is refused naming the caller's item, whatever the batch size.
On tiny models of each type, and on each bundled model with one short sentence."""

import pytest
import torch

from hf_structure.bundled import bundled_checkpoints
from hf_structure.pipelines import TASK
from tests.helpers.tiny_models import save_tiny_model, save_tiny_r2d2

PIECELESS = ["\u200b", "\u00ad", "\u0301"]  # zero-width space, soft hyphen, combining acute accent
OUTPUTS = ("heads", "deprels", "spans")
R2D2_CORPUS = ["the old man sat on the bench", "a dog ran"]


def tiny_supervised(model_type, bert_folder):
    """A tiny G2GTr or arc-hybrid parser over the tiny BERT (64 positions), with random scorers."""
    from hf_structure.models.arc_hybrid.training_arc_hybrid import ArcHybridTrainingArguments
    from hf_structure.models.g2gtr.training_g2gtr import G2GTrTrainingArguments
    from hf_structure.training.parser import new_parser
    from tests.helpers.tiny_treebank import DEPRELS, SENTENCES

    torch.manual_seed(1)
    arguments = (
        G2GTrTrainingArguments(encoder=str(bert_folder), graph_layers=1)
        if model_type == "g2gtr"
        else ArcHybridTrainingArguments(encoder=str(bert_folder))
    )
    model, tokenizer = new_parser(model_type, arguments, SENTENCES, DEPRELS)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0, 0.5)
    return model.eval(), tokenizer


@pytest.fixture(scope="module", params=["structformer", "r2d2", "g2gtr", "arc_hybrid"])
def parser(request, tmp_path_factory, bert_folder):
    from transformers import pipeline

    folder = tmp_path_factory.mktemp(request.param) / "model"
    if request.param == "structformer":
        return pipeline(TASK, model=str(save_tiny_model(folder, max_position_embeddings=16)))
    if request.param == "r2d2":
        return pipeline(TASK, model=str(save_tiny_r2d2(folder, R2D2_CORPUS, max_parse_words=16)))
    model, tokenizer = tiny_supervised(request.param, bert_folder)
    return pipeline(TASK, model=model, tokenizer=tokenizer)


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
    # 70 words: past StructFormer's and R2D2's 16 words, and past the tiny BERT's 64 pieces (one piece a word)
    check_a_long_item_is_named(parser, ["dog"] * 70)


@pytest.mark.parametrize("name", ["structformer-ptb", "g2gtr-ewt", "arc-hybrid-ewt"])
def test_each_bundled_model_reads_a_word_with_no_piece_and_names_a_long_item(name):
    from hf_structure.pipelines import load_parser

    if name not in bundled_checkpoints():
        pytest.skip(f"{name}'s package is not installed (make setup does)")
    parser = load_parser(name)
    check_pieceless_words_read_as_unknown(parser)
    check_a_long_item_is_named(parser, ["word"] * 600)
