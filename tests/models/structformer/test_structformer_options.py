"""StructFormer's options from the authors' code (issue #38): dropout on the final hidden state instead of the input
embeddings, and Xavier-uniform attention projections."""

import math

import pytest
import torch
from torch import nn

from hf_structure.models.structformer import StructFormerConfig, StructFormerForMaskedLM
from hf_structure.models.structformer.modeling_structformer import StructFormerLayer
from tests.models.structformer.test_structformer import tiny_config


def logits_of(model, ids, seed):
    torch.manual_seed(seed)
    return model(ids).logits


def test_dropout_sits_on_the_embeddings_or_on_the_final_hidden_state_as_configured():
    ids = torch.randint(2, 50, (2, 7))
    torch.manual_seed(0)
    # Only the final hidden state is dropped: two training passes differ, evaluation does not, and the
    # embeddings reach the first layer untouched.
    authors = StructFormerForMaskedLM(
        tiny_config(hidden_dropout_prob=0.0, embedding_dropout_prob=0.0, output_dropout_prob=0.5)
    ).train()
    assert not torch.equal(logits_of(authors, ids, 1), logits_of(authors, ids, 2))
    first_layer_input = authors.structformer(ids, output_hidden_states=True).hidden_states[0]
    positions = authors.structformer.embed_positions(torch.arange(7))[None]
    torch.testing.assert_close(first_layer_input, authors.structformer.embed_tokens(ids) + positions)
    authors.eval()
    assert torch.equal(logits_of(authors, ids, 1), logits_of(authors, ids, 2))
    # Today's default: the embeddings take hidden_dropout_prob, the final hidden state none.
    default = StructFormerForMaskedLM(tiny_config(hidden_dropout_prob=0.5)).train()
    assert default.structformer.embed_dropout.p == 0.5 and default.output_dropout.p == 0.0
    assert not torch.equal(
        default.structformer(ids, output_hidden_states=True).hidden_states[0],
        default.structformer.embed_tokens(ids) + positions,
    )


def test_xavier_attention_initialises_query_key_value_and_output_as_separate_square_layers():
    torch.manual_seed(0)
    xavier = StructFormerForMaskedLM(tiny_config(attention_initialization="xavier"))
    torch.manual_seed(0)
    fan_in = StructFormerForMaskedLM(tiny_config())
    d = 32
    for layer in xavier.structformer.layers:
        assert isinstance(layer, StructFormerLayer)  # (a ModuleList's items are typed as any Module)
        for projection in (layer.attention.qkv, layer.attention.out):
            for block in projection.weight.chunk(projection.blocks):
                bound = math.sqrt(6 / (2 * d))
                assert block.abs().max() <= bound and block.abs().max() > 0.9 * bound
                assert abs(block.var().item() - bound**2 / 3) < 0.25 * bound**2 / 3  # uniform(-bound, bound)
            assert torch.equal(projection.bias, torch.zeros_like(projection.bias))
    first_layer = fan_in.structformer.layers[0]
    assert isinstance(first_layer, StructFormerLayer)
    attention = first_layer.attention
    assert attention.qkv.weight.abs().max() <= 1 / math.sqrt(d) and attention.qkv.bias.abs().sum() > 0
    # Only the attention changes: the feed-forward layers keep the fan-in initialisation.
    feed_forward = xavier.structformer.layers[0].feed_forward
    assert isinstance(feed_forward, nn.Sequential) and isinstance(feed_forward[0], nn.Linear)
    assert feed_forward[0].weight.abs().max() <= 1 / math.sqrt(d)
    with pytest.raises(ValueError, match="attention_initialization"):
        StructFormerConfig(attention_initialization="normal")
