"""R2D2's parser learning from a teacher's trees (issue #46): `parser_target="teacher"`, the teacher's weight against
the chart's best tree, and the parser trained alone."""

import pytest
import torch

from hf_structure.models.r2d2 import R2D2Config
from hf_structure.structs.merge_orders import (
    merge_order_from_split_scores,
    merge_order_targets,
    sample_chart_trees,
    split_cross_entropy,
)
from hf_structure.structs.trees import distances_to_spans
from tests.models.r2d2.test_r2d2 import TINY_PARSER, batch_of, tiny_model

LENGTHS = [4, 9, 6]


def teacher_orders(lengths, seed=3):
    """A random tree per sentence as its merge order (ascending random split scores), padded with -1."""
    generator = torch.Generator().manual_seed(seed)
    scores = torch.rand(len(lengths), max(lengths) - 1, generator=generator)
    return merge_order_from_split_scores(scores, torch.tensor(lengths)), scores


def teacher_model(**overrides):
    overrides = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, **overrides}  # recomputable
    return tiny_model(pruning="parser", parser_target="teacher", **TINY_PARSER, **overrides).train()


def test_the_teachers_tree_is_the_parsers_whole_target_at_weight_one():
    model = teacher_model()
    ids, mask = batch_of(LENGTHS)
    orders, _ = teacher_orders(LENGTHS)
    output = model(ids, mask, labels=ids.masked_fill(mask == 0, -100), teacher_merge_order=orders)
    lengths = torch.tensor(LENGTHS)
    expected = split_cross_entropy(
        model.r2d2.split_scores(ids, lengths), *merge_order_targets(orders, lengths), lengths, 1
    )
    assert torch.allclose(output.parser_loss, expected) and torch.allclose(output.teacher_loss, expected)
    assert torch.allclose(output.loss, output.lm_loss + expected)


@pytest.mark.parametrize("weight", [0.0, 0.25])
def test_below_weight_one_the_rest_of_the_target_is_the_charts_best_tree(weight):
    model = teacher_model()
    model.teacher_weight = weight
    ids, mask = batch_of(LENGTHS)
    orders, _ = teacher_orders(LENGTHS)
    torch.manual_seed(5)  # the chart's merges are drawn (Gumbel noise): the same draws for both
    output = model(ids, mask, labels=ids.masked_fill(mask == 0, -100), teacher_merge_order=orders)
    torch.manual_seed(5)
    chart = model.r2d2(ids, mask)
    lengths = torch.tensor(LENGTHS)
    best = split_cross_entropy(chart.split_scores, *sample_chart_trees(chart.chart, 1, 0.0), lengths, 1)
    assert torch.allclose(output.parser_loss, weight * output.teacher_loss + (1 - weight) * best)
    assert not torch.allclose(output.teacher_loss, best)  # the two targets differ, so the mix is measured


def test_the_parser_trained_alone_learns_the_teachers_trees_and_nothing_else_trains():
    model = teacher_model()
    model.train_language_model = False
    ids, mask = batch_of(LENGTHS)
    orders, scores = teacher_orders(LENGTHS)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    for _ in range(150):
        output = model(ids, mask, labels=ids.masked_fill(mask == 0, -100), teacher_merge_order=orders)
        assert output.lm_loss is None and torch.equal(output.loss, output.teacher_loss)
        optimizer.zero_grad()
        output.loss.backward()
        optimizer.step()
    for name, p in model.named_parameters():
        assert torch.equal(p, before[name]) == (".split_parser." not in name), name
    words = [[f"w{i}" for i in range(n)] for n in LENGTHS]
    with torch.no_grad():
        learned = model.r2d2.split_scores(ids, torch.tensor(LENGTHS))
    for b, n in enumerate(LENGTHS):
        assert distances_to_spans(learned[b, : n - 1].tolist()) == distances_to_spans(scores[b, : n - 1].tolist()), (
            words[b]
        )


def test_a_teacher_target_without_teacher_trees_or_parser_pruning_is_refused():
    model = teacher_model()
    ids, mask = batch_of(LENGTHS)
    with pytest.raises(ValueError, match="teacher_merge_order"):
        model(ids, mask, labels=ids.masked_fill(mask == 0, -100))
    model.train_language_model = False
    with pytest.raises(ValueError, match="training the parser alone needs"):
        model(ids, mask, labels=ids.masked_fill(mask == 0, -100))
    with pytest.raises(ValueError, match="needs pruning='parser'"):
        R2D2Config(parser_target="teacher")


def test_evaluation_ignores_the_teacher_and_gives_the_language_models_loss():
    model = teacher_model().eval()
    ids, mask = batch_of(LENGTHS)
    orders, _ = teacher_orders(LENGTHS)
    labels = ids.masked_fill(mask == 0, -100)
    output = model(ids, mask, labels=labels, teacher_merge_order=orders)
    assert output.parser_loss is None and output.teacher_loss is None
    assert torch.equal(output.loss, model(ids, mask, labels=labels).loss)
