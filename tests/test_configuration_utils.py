"""The supervised parsers' pretrained encoder as a nested config (`configuration_utils.nested_encoder_config`): a
folder saved with the encoder's settings flat at the top level of its config.json (the format before the nesting, the
bundled g2gtr-ewt and arc-hybrid-ewt included) loads into the same encoder and the same weight names, and saves
nested."""

from typing import Any

import pytest
from transformers import BertConfig

from hf_structure.configuration_utils import FLAT_ENCODER_KEYS
from tests.helpers.tiny_models import declared_tiny_models

# A tiny encoder's settings as a config.json of the flat format holds them.
FLAT_ENCODER: dict[str, Any] = {
    "vocab_size": 40,
    "hidden_size": 24,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 32,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 64,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "initializer_range": 0.02,
    "pad_token_id": 0,
}
# The declared tiny models whose config nests a pretrained encoder's (the supervised parsers'): their model type's
# spec and their own settings beside the encoder's.
PARSERS = {
    name: (spec, {key: value for key, value in tiny.config.items() if key != "encoder_config"})
    for name, (spec, tiny) in declared_tiny_models().items()
    if "encoder_config" in tiny.config
}


def test_the_flat_keys_are_every_setting_the_encoder_is_built_from_but_the_padding_id_the_parser_keeps_too():
    assert set(FLAT_ENCODER) == {*FLAT_ENCODER_KEYS, "pad_token_id"}


@pytest.mark.parametrize("name", PARSERS)
def test_a_flat_config_loads_into_the_same_encoder_and_weight_names(name, tmp_path):
    spec, own = PARSERS[name]
    config_class, model_class = spec.config_class, spec.auto_classes[spec.parsing_class]
    flat = config_class.from_dict({**FLAT_ENCODER, **own, "model_type": config_class.model_type})
    nested = config_class(encoder_config=BertConfig(**FLAT_ENCODER), **own)  # type: ignore[call-arg]  # transformers types PreTrainedConfig's __init__ as its fields alone
    assert {key: getattr(flat.encoder_config, key) for key in FLAT_ENCODER} == FLAT_ENCODER
    assert flat.pad_token_id == FLAT_ENCODER["pad_token_id"]  # the model's too, as transformers' Trainer sets it
    assert flat.encoder_config.to_dict() == nested.encoder_config.to_dict()
    assert not any(hasattr(flat, key) for key in ("hidden_size", "num_hidden_layers", "vocab_size"))
    assert model_class(flat).state_dict().keys() == model_class(nested).state_dict().keys()
    flat.save_pretrained(tmp_path)
    reloaded = config_class.from_pretrained(tmp_path)
    assert reloaded.encoder_config.to_dict() == nested.encoder_config.to_dict()
    assert reloaded.to_dict() == flat.to_dict()


@pytest.mark.parametrize("name", PARSERS)
def test_the_encoder_is_given_one_way_and_is_a_bert(name):
    config_class = PARSERS[name][0].config_class
    with pytest.raises(ValueError, match="hidden_size given beside encoder_config"):
        config_class(encoder_config=FLAT_ENCODER, hidden_size=48)  # type: ignore[call-arg]  # transformers types PreTrainedConfig's __init__ as its fields alone
    with pytest.raises(ValueError, match="must be a BERT's, got model_type 'roberta'"):
        config_class(encoder_config={**FLAT_ENCODER, "model_type": "roberta"})  # type: ignore[call-arg]  # transformers types PreTrainedConfig's __init__ as its fields alone
    # Beside a nested encoder, the model's own padding id (the Trainer's alignment with the tokenizer) is no conflict.
    assert config_class(encoder_config=FLAT_ENCODER, pad_token_id=0).encoder_config.pad_token_id == 0  # type: ignore[call-arg]  # transformers types PreTrainedConfig's __init__ as its fields alone


@pytest.mark.parametrize("name", PARSERS)
def test_without_an_encoder_a_parser_has_all_minilm_l6_v2_s_sizes(name):
    encoder = PARSERS[name][0].config_class().encoder_config
    assert (
        encoder.hidden_size,
        encoder.num_hidden_layers,
        encoder.num_attention_heads,
        encoder.intermediate_size,
        encoder.vocab_size,
    ) == (384, 6, 12, 1536, 30522)
