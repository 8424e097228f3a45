"""`hf-structure parse --threads N` and `hf-structure evaluate --threads N` reach the model's parse."""

from collections.abc import Iterator

import pytest
import torch

from hf_structure.cli import main
from hf_structure.models.structformer import StructFormerForMaskedLM, StructFormerModel
from tests.helpers.hand_treebank import write_hand_treebank


@pytest.fixture
def seen_threads(monkeypatch) -> Iterator[list[int]]:
    """The thread counts the tiny model's parse runs with, one per call (the pipeline loads it as StructFormerModel,
    evaluation as StructFormerForMaskedLM); torch's count is 3 around it."""
    seen = []
    for model_class in (StructFormerModel, StructFormerForMaskedLM):

        def parse_and_note_threads(self, *args, parse=model_class.parse, **kwargs):
            seen.append(torch.get_num_threads())
            return parse(self, *args, **kwargs)

        monkeypatch.setattr(model_class, "parse", parse_and_note_threads)
    previous = torch.get_num_threads()
    torch.set_num_threads(3)
    yield seen
    assert torch.get_num_threads() == 3  # the command restored the caller's count
    torch.set_num_threads(previous)


def test_parse_threads(model, seen_threads, capsys):
    main(["parse", "--model", model, "--pretokenized", "--threads", "2", "a dog ran"])
    assert seen_threads == [2] and '"words": ["a", "dog", "ran"]' in capsys.readouterr().out


def test_evaluate_threads(model, seen_threads, tmp_path, capsys):
    main(["evaluate", "--model", model, "--treebank", str(write_hand_treebank(tmp_path)), "--threads", "1"])
    assert seen_threads and set(seen_threads) == {1} and '"sentences": 2' in capsys.readouterr().out


@pytest.mark.parametrize("command", [["parse", "a dog"], ["evaluate", "--treebank", "x"]])
def test_threads_below_one_is_a_usage_error(model, command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--model", model, "--threads", "0"])
    assert exit_info.value.code == 2 and "--threads" in capsys.readouterr().err
