"""Word taggers on the dependency models (`tag_labels`): a model with them parses exactly as the same weights
without them and tags every word; a config without them loads as before; the taggers bundled as a second shard
(`scripts/train_taggers.py`) load beside the parser's untouched file; the pipeline, CoNLL-U and spaCy carry the
tags."""

import json

import pytest
import spacy
import torch

from hf_structure.bundled import check_model_folder, load_model_and_tokenizer
from hf_structure.evaluation.scoring import tag_accuracies
from hf_structure.pipelines.parser import Parser
from tests.helpers.scripts import load_script
from tests.helpers.tiny_models import new_declared_tiny_model

TAG_LABELS = {"upos": ["NOUN", "VERB", "PUNCT"], "xpos": ["NN", "VBD", "."], "feats": ["_", "Number=Sing"]}
SENTENCES = [["the", "old", "man", "sat"], ["a", "dog", "ran", "and", "tired", "."]]
DEPENDENCY_MODELS = ["arc_hybrid", "g2gtr"]


def tagged_twin(name: str):
    """The declared tiny model `name` (no taggers), the same weights with random taggers, and the tokenizer."""
    plain, tokenizer = new_declared_tiny_model(name)
    tagged, _ = new_declared_tiny_model(name, tag_labels=TAG_LABELS, tagger_size=8)
    missing, unexpected = tagged.load_state_dict(plain.state_dict(), strict=False)
    assert not unexpected and missing and all(key.startswith("taggers.") for key in missing)
    return plain, tagged, tokenizer


@pytest.mark.parametrize("name", DEPENDENCY_MODELS)
def test_a_model_with_taggers_parses_as_without_them_and_tags_every_word(name):
    plain, tagged, tokenizer = tagged_twin(name)
    parses, tagged_parses = plain.parse(SENTENCES, tokenizer), tagged.parse(SENTENCES, tokenizer)
    for parse, tagged_parse, words in zip(parses, tagged_parses, SENTENCES):
        assert {key: tagged_parse[key] for key in parse} == parse
        for tag_set, tags in TAG_LABELS.items():
            assert len(tagged_parse[tag_set]) == len(words) and set(tagged_parse[tag_set]) <= set(tags)
    # The instance declares its tags; the class (every model of the type) and a model without taggers do not.
    assert tagged.parse_outputs == (*type(tagged).parse_outputs, "upos", "xpos", "feats")
    assert plain.parse_outputs == type(plain).parse_outputs == ("heads", "deprels")


@pytest.mark.parametrize("name", DEPENDENCY_MODELS)
def test_a_config_saved_without_taggers_loads_a_model_without_them(name, tmp_path):
    plain, tokenizer = new_declared_tiny_model(name)
    plain.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config.pop("tag_labels", None), config.pop("tagger_size", None)  # a config written before taggers existed
    (tmp_path / "config.json").write_text(json.dumps(config))
    model, _ = load_model_and_tokenizer(str(tmp_path))
    assert not hasattr(model, "taggers") and model.parse_outputs == ("heads", "deprels")
    assert model.parse(SENTENCES, tokenizer) == plain.parse(SENTENCES, tokenizer)


@pytest.mark.parametrize("name", DEPENDENCY_MODELS)
def test_taggers_bundled_as_a_second_shard_load_beside_the_parsers_file(name, tmp_path):
    plain, tagged, tokenizer = tagged_twin(name)
    plain.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    parser_weights = (tmp_path / "model.safetensors").read_bytes()
    load_script("train_taggers").bundle(tmp_path, dict(tagged.taggers.items()), TAG_LABELS, 8)
    assert (tmp_path / "model-00001-of-00002.safetensors").read_bytes() == parser_weights  # renamed, not rewritten
    assert not (tmp_path / "model.safetensors").exists()
    check_model_folder(tmp_path, auto_class=None)
    model, _ = load_model_and_tokenizer(str(tmp_path))
    for key, value in tagged.state_dict().items():
        assert torch.equal(model.state_dict()[key], value), key
    assert model.parse(SENTENCES, tokenizer) == tagged.parse(SENTENCES, tokenizer)


@pytest.fixture
def tagged_folder(tmp_path):
    """A tiny arc-hybrid model with taggers, saved."""
    _, tagged, tokenizer = tagged_twin("arc_hybrid")
    tagged.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    return tmp_path


def test_the_pipeline_and_spacy_carry_the_tags_of_every_word(tagged_folder):
    model, tokenizer = load_model_and_tokenizer(str(tagged_folder))
    (expected,) = model.parse(SENTENCES[1:], tokenizer)
    (result,) = map(dict, Parser(model, tokenizer).parse_words(SENTENCES[1:]))
    assert {tag_set: result[tag_set] for tag_set in TAG_LABELS} == {
        tag_set: expected[tag_set] for tag_set in TAG_LABELS
    }
    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": str(tagged_folder)})
    doc = nlp(" ".join(SENTENCES[1]))
    assert [token.pos_ for token in doc] == expected["upos"]
    assert [token.tag_ for token in doc] == expected["xpos"]
    assert [str(token.morph) or "_" for token in doc] == expected["feats"]


def test_evaluation_scores_each_tag_set_every_parse_holds_over_the_words_gold_tags():
    gold = [{"upos": ["NOUN", "VERB", "PUNCT"], "xpos": ["NN", None, "."]}]
    parses = [{"upos": ["NOUN", "NOUN", "PUNCT"], "xpos": ["NN", "VBD", ","]}]
    # xpos: the word without a gold tag is not scored; feats: no parse holds it.
    assert tag_accuracies(gold, parses) == {"upos": 66.67, "xpos": 50.0}
    assert tag_accuracies(gold, [{"heads": [0, 1, 1]}]) == {}
