"""The heads' learning-rate multiplier of the parser entry: 10 for a new parser on a pretrained encoder, 1 when
fine-tuning a saved parser, the given value when one is given (end to end: tests/cli/test_train_publish.py)."""

import logging

import pytest

from hf_structure.training.parser import ParserModelArguments, learning_rates, new_parameters_lr_scale


@pytest.mark.parametrize(
    "arguments, scale",
    [
        (ParserModelArguments(), 10.0),
        (ParserModelArguments(model_name_or_path="runs/g2gtr"), 1.0),
        (ParserModelArguments(model_name_or_path="runs/g2gtr", new_parameters_lr_scale=10.0), 10.0),
        (ParserModelArguments(new_parameters_lr_scale=3.0), 3.0),
    ],
    ids=["new parser", "saved parser", "saved, given", "new, given"],
)
def test_the_multiplier_by_where_the_run_starts_and_what_is_given(arguments, scale, caplog):
    caplog.set_level(logging.INFO, logger="hf_structure.training.parser")
    assert new_parameters_lr_scale(arguments) == scale
    assert len(caplog.records) == 1 and f"{scale:g} x --learning_rate" in caplog.text


def test_fine_tuning_a_saved_parser_trains_its_heads_at_the_given_rate():
    class Parser:
        def is_pretrained_parameter(self, name: str) -> bool:
            return name.startswith("encoder.")

    rate_of = learning_rates(Parser(), 2e-5, ParserModelArguments(model_name_or_path="g2gtr-ewt"))
    assert (rate_of("encoder.layer.0.weight"), rate_of("arc_head.0.weight")) == (2e-5, 2e-5)
    assert learning_rates(object(), 2e-5, ParserModelArguments()) is None  # a parser that does not say
