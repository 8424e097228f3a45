"""R2D2's training options from the authors' later code (issue #37): the 2022 merge rule and its noise, the parser's
target, a decoder of its own, PyTorch's initialisation, the parser's late start and the split entropy."""

import math

import pytest
import torch
from transformers import AutoModelForMaskedLM

from hf_structure.models.r2d2 import R2D2Config
from hf_structure.structs.merge_orders import merge_order_from_split_scores
from hf_structure.structs.pruned_chart import encode_pruned_chart
from tests.models.r2d2.test_r2d2 import TINY_PARSER, batch_of, tiny_model

# Bigram probabilities of a 4-word sentence, (w0 w1), (w1 w2), (w2 w3), where the rules disagree. The 2021 rule:
# p(bigram) (1 - p(left bigram)) (1 - p(right bigram)) = .225, .1375, .225: the first (the leftmost of equals). The
# 2022 rule at window 1: p(bigram) min(1 - p(left), 1 - p(right)) = .225, .275, .225: the middle one.
BIGRAM_P = (0.5, 0.55, 0.5)


def bigram_compose(left, right):
    """States are word indicators; log p of composing is BIGRAM_P of two single words, 0.5 otherwise."""
    last_of_left = left.size(-1) - 1 - left.flip(-1).argmax(-1)
    first_of_right = right.argmax(-1)
    single = (left.sum(-1) == 1) & (right.sum(-1) == 1) & (first_of_right == last_of_left + 1)
    p = torch.tensor(BIGRAM_P)[last_of_left.clamp(max=2)]
    return left + right, torch.where(single, p, torch.tensor(0.5)).log()


def argmax(scores):
    return torch.nn.functional.one_hot(scores.argmax(-1), scores.size(-1)).float()


def chart_of(rule, noise=False):
    """The window-1 chart of the 4-word sentence under a merge rule."""
    return encode_pruned_chart(
        torch.eye(4)[None], torch.tensor([4]), bigram_compose, argmax, window=1, merge_rule=rule, merge_noise=noise
    )


def test_the_2021_and_2022_merge_rules_choose_as_their_formulas_say():
    # Node ids: 4 leaves, 3 bigrams, then the cells over the first merge.
    chart_2022 = chart_of("2022")  # merged (w1 w2): both cells over it are built, w0 + (w1 w2), (w1 w2) + w3
    assert [tuple(span) for span in chart_2022.node_span[7:9].tolist()] == [(0, 2), (1, 3)]
    chart_2021 = chart_of("2021")  # merged (w0 w1): one cell over it, (w0 w1) + w2
    assert [tuple(span) for span in chart_2021.node_span[7:8].tolist()] == [(0, 2)]
    assert chart_2021.node_of_span[0, 1, 3] == -1  # (w1 .. w3) needs w1 apart from w0: never built
    with pytest.raises(ValueError, match="merge_rule"):
        chart_of("2023")


def test_the_2022_rules_noise_draws_merges_with_the_gumbel_max_probabilities():
    # Gumbel-max: P(merge t) = softmax(score_t), scores log .225, log .275, log .225.
    torch.manual_seed(0)
    second_cells = []
    for _ in range(600):
        chart = chart_of("2022", noise=True)
        second_cells.append(tuple(chart.node_span[7].tolist()) == (0, 2) and chart.node_of_span[0, 1, 3] >= 0)
    # Both (w0 .. w2) and (w1 .. w3) are built only when (w1 w2) merged first.
    share = sum(second_cells) / len(second_cells)
    assert abs(share - 0.275 / 0.725) < 0.06


def test_the_merge_noise_follows_the_config_and_training_mode():
    assert not R2D2Config().noisy_merges  # the 2021 rule has none
    assert R2D2Config(merge_rule="2022").noisy_merges and R2D2Config(pruning="parser").noisy_merges
    overridden = R2D2Config()
    overridden.update_from_string("merge_rule=2022")  # --config_overrides: the default follows the rule
    assert overridden.noisy_merges and not R2D2Config(merge_rule="2022", merge_noise=False).noisy_merges
    with pytest.raises(ValueError, match="merge_noise"):
        R2D2Config(merge_noise=True)
    model = tiny_model(pruning="parser", merge_noise=False, **TINY_PARSER).train()
    scores, lengths = torch.randn(3, 8), torch.tensor([9, 5, 2])
    expected = merge_order_from_split_scores(scores, lengths)
    assert torch.equal(model.r2d2.parser_merge_order(scores, lengths), expected)  # training, no noise
    noisy = tiny_model(pruning="parser", **TINY_PARSER).train()
    torch.manual_seed(0)
    assert not all(torch.equal(noisy.r2d2.parser_merge_order(scores, lengths), expected) for _ in range(5))


@pytest.mark.parametrize("target", ["sampled", "best"])
def test_the_parser_learns_from_the_target_its_config_names(monkeypatch, target):
    import hf_structure.models.r2d2.modeling_r2d2 as modeling

    calls = []
    original = modeling.sample_chart_trees

    def sample_and_note(chart, samples, temperature):
        calls.append((samples, temperature))
        return original(chart, samples, temperature)

    monkeypatch.setattr(modeling, "sample_chart_trees", sample_and_note)
    model = tiny_model(pruning="parser", parser_target=target, parser_target_temperature=2.0, **TINY_PARSER).train()
    ids, mask = batch_of([4, 9])
    output = model(ids, mask, labels=ids.masked_fill(mask == 0, -100))
    assert calls == ([(4, 2.0)] if target == "sampled" else [(1, 0.0)])
    assert torch.isfinite(output.parser_loss)
    with pytest.raises(ValueError, match="parser_target"):
        R2D2Config(parser_target="argmax")


def test_a_model_whose_parser_has_not_started_leaves_it_untrained():
    model = tiny_model(pruning="parser", **TINY_PARSER).train()
    model.train_parser = False
    ids, mask = batch_of([4, 9])
    output = model(ids, mask, labels=ids.masked_fill(mask == 0, -100))
    assert output.parser_loss is None and torch.equal(output.loss, output.lm_loss)
    output.loss.backward()
    assert all(p.grad is None for name, p in model.named_parameters() if ".split_parser." in name)


def test_the_split_entropy_is_reported_in_training_only():
    model = tiny_model().train()
    ids, mask = batch_of([4, 9])
    labels = ids.masked_fill(mask == 0, -100)
    assert 0 < model(ids, mask, labels=labels).split_entropy <= 1
    assert model.eval()(ids, mask, labels=labels).split_entropy is None


def test_a_separate_decoder_has_weights_of_its_own_trained_by_the_language_model_and_saved(tmp_path):
    shared, separate = tiny_model(), tiny_model(tie_decoder=False)
    assert shared.decoder_layers is None and separate.decoder_layers is not None and len(separate.decoder_layers) == 2
    assert not any("decoder_layers" in name for name, _ in shared.named_parameters())
    ids, mask = batch_of([4, 9])
    separate.train()(ids, mask, labels=ids.masked_fill(mask == 0, -100)).loss.backward()
    for name in ("decoder_layers.0.query.weight", "r2d2.composition_layers.0.query.weight"):
        grad = separate.get_parameter(name).grad
        assert grad is not None and grad.abs().sum() > 0, name
    separate.save_pretrained(tmp_path)
    loaded = AutoModelForMaskedLM.from_pretrained(tmp_path).eval()
    separate.eval()
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids, mask).logits, separate(ids, mask).logits)


def test_pytorch_initialisation_keeps_nn_linears_default_and_embeddings_normal():
    normal, pytorch = tiny_model(), tiny_model(initialization="pytorch")
    fan_in = 16
    weight = pytorch.get_parameter("r2d2.composition_layers.0.query.weight")
    bias = pytorch.get_parameter("r2d2.composition_layers.0.query.bias")
    assert weight.abs().max() <= 1 / math.sqrt(fan_in) and weight.std() > 0.5 / math.sqrt(3 * fan_in)
    assert bias.abs().max() <= 1 / math.sqrt(fan_in) and bias.abs().sum() > 0
    assert abs(normal.get_parameter("r2d2.composition_layers.0.query.weight").std() - 0.02) < 0.005
    for model in (normal, pytorch):
        assert abs(model.get_parameter("r2d2.embed_tokens.weight").std() - 0.02) < 0.005
    with pytest.raises(ValueError, match="initialization"):
        R2D2Config(initialization="xavier")
