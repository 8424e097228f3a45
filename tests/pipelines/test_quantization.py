"""`quantize="int8"` (`pipelines/quantization.py`): the int8 linear layer against float32 and plain dynamic
quantization, the outlier channels found by parsing the calibration sentences, every declared tiny model through
the pipeline (int8 where its class names `int8_modules`, refused in one line where it does not), the refusals
(another device, an unknown value, saving), the CLI and the weights on disk left as they are."""

import copy
import hashlib
import json
import re
from pathlib import Path

import pytest
import torch
from torch import nn

from hf_structure.cli import main
from hf_structure.cli.common import QUANTIZATIONS as CLI_QUANTIZATIONS
from hf_structure.pipelines import load_parser
from hf_structure.pipelines.quantization import (
    INT8_MODEL_TYPES,
    QUANTIZATIONS,
    Int8Linear,
    QuantizationError,
    quantized,
)
from tests.helpers.tiny_models import declared_tiny_models, new_declared_tiny_model, save_declared_tiny_model

TINY_MODEL_SPECS = declared_tiny_models()
TINY_MODELS = sorted(TINY_MODEL_SPECS)
# The one refusal of a model without int8 modules, wherever `quantize` is given: it says which models take int8.
REFUSAL = (
    r"refused for \w+ \(model type '\w+'\): int8 is for the models whose int8 accuracy is "
    r"measured, of model type arc_hybrid or g2gtr; parse this one without quantize"
)
SENTENCES = [["the", "old", "man", "sat", "on", "the", "bench"], ["a", "dog", "ran"]]


def int8_modules(name: str) -> tuple[str, ...]:
    model, _ = new_declared_tiny_model(name)
    return tuple(getattr(model, "int8_modules", ()))


def test_the_command_line_offers_what_the_pipeline_takes():
    assert CLI_QUANTIZATIONS == QUANTIZATIONS


def test_the_refusal_names_every_model_type_that_takes_int8():
    takes = {TINY_MODEL_SPECS[name][0].model_type for name in TINY_MODELS if int8_modules(name)}
    assert set(INT8_MODEL_TYPES) == takes


def test_int8_linear_keeps_an_outlier_channel_in_float32():
    # A BERT-like input: 64 channels within about 2, one at 30. Quantized with the rest, the outlier sets the scale
    # of every channel; kept apart, the error is int8 rounding alone.
    torch.manual_seed(0)
    linear = nn.Linear(64, 32)
    inputs = torch.randn(40, 64)
    inputs[:, 7] *= 15
    expected = linear(inputs).detach()
    plain = torch.ao.quantization.quantize_dynamic(copy.deepcopy(nn.Sequential(linear)), dtype=torch.qint8)[0]
    plain_error = (plain(inputs) - expected).abs().max().item()
    int8_error = (Int8Linear(linear, torch.tensor([7]))(inputs) - expected).abs().max().item()
    assert int8_error < plain_error / 3
    assert int8_error < 0.05 * expected.abs().max().item()


def test_int8_linear_without_outliers_is_the_dynamic_int8_layer():
    torch.manual_seed(0)
    linear = nn.Linear(16, 8)
    inputs = torch.rand(5, 16)
    layer = Int8Linear(linear, torch.tensor([], dtype=torch.long))
    assert torch.equal(layer(inputs), layer.quantized(inputs))
    assert not torch.equal(layer(inputs), linear(inputs))  # int8, not float32


@pytest.mark.parametrize("name", TINY_MODELS)
def test_every_tiny_model_parses_in_int8_or_refuses_in_one_line(name, tmp_path):
    folder = save_declared_tiny_model(name, tmp_path / name)
    weights = (folder / "model.safetensors").read_bytes()
    modules = int8_modules(name)
    if not modules:
        with pytest.raises(QuantizationError, match=f"^quantize='int8': {REFUSAL}$"):
            load_parser(str(folder), quantize="int8")
        return
    float_parser = load_parser(str(folder))
    parser = load_parser(str(folder), quantize="int8")
    int8_layers = [module for module in parser.model.modules() if isinstance(module, Int8Linear)]
    assert int8_layers and all(
        isinstance(module, Int8Linear)
        for prefix in modules
        for module in parser.model.get_submodule(prefix).modules()
        if isinstance(module, nn.Linear | Int8Linear) and not isinstance(module, torch.ao.nn.quantized.dynamic.Linear)
    )
    assert not any(isinstance(module, Int8Linear) for module in float_parser.model.modules())
    parses = parser(SENTENCES, is_split_into_words=True)
    for words, parse in zip(SENTENCES, parses):
        assert parse["words"] == words
        assert len(parse["heads"]) == len(words) and parse["heads"].count(0) == 1
    assert (folder / "model.safetensors").read_bytes() == weights  # applied at load, never saved
    with pytest.raises(ValueError, match="quantized"):
        parser.save_pretrained(tmp_path / "saved")


def test_the_outlier_channels_are_those_the_calibration_sentences_push_beyond_the_threshold():
    # An outlier channel made in a tiny arc-hybrid encoder: every word's vector at channel 3 reaches 10 after the
    # embeddings' LayerNorm, which every first-layer projection reads.
    model, tokenizer = new_declared_tiny_model("arc_hybrid")
    with torch.no_grad():
        model.encoder.embeddings.LayerNorm.bias[3] = 10.0
    query = quantized(model, tokenizer, "int8").encoder.encoder.layer[0].attention.self.query
    width = model.encoder.config.hidden_size
    assert 3 in query.outliers.tolist() and len(query.outliers) < width // 4
    assert torch.equal(
        query.outlier_weight, model.encoder.encoder.layer[0].attention.self.query.weight[:, query.outliers]
    )
    untouched = quantized(new_declared_tiny_model("arc_hybrid")[0], tokenizer, "int8")
    assert 3 not in untouched.encoder.encoder.layer[0].attention.self.query.outliers.tolist()


def test_quantized_copies_the_model_and_refuses_other_devices_and_values():
    name = next(name for name in TINY_MODELS if int8_modules(name))
    model, tokenizer = new_declared_tiny_model(name)
    before = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
    int8_model = quantized(model, tokenizer, "int8")
    assert int8_model is not model and int8_model.quantization == "int8"
    assert not any(isinstance(module, Int8Linear) for module in model.modules())
    assert hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest() == before
    assert quantized(model, tokenizer, None) is model
    with pytest.raises(QuantizationError, match=r"quantize='int8': runs on the CPU only .* cuda:0"):
        quantized(model, tokenizer, "int8", "cuda:0")
    with pytest.raises(QuantizationError, match=r"quantize='int4': not one of \('int8',\)"):
        quantized(model, tokenizer, "int4")


def test_parse_and_evaluate_take_quantize_and_refuse_it_in_one_line(tmp_path, capsys):
    names = {bool(int8_modules(name)): name for name in TINY_MODELS}
    takes = str(save_declared_tiny_model(names[True], tmp_path / "takes"))
    refuses = str(save_declared_tiny_model(names[False], tmp_path / "refuses"))
    main(["parse", "--model", takes, "--quantize", "int8", "--pretokenized", " ".join(SENTENCES[0])])
    assert json.loads(capsys.readouterr().out)["words"] == SENTENCES[0]
    with pytest.raises(SystemExit) as refused:
        main(["parse", "--model", refuses, "--quantize", "int8", "a dog ran"])
    message = str(refused.value)  # `fail`: printed as one line, status 1
    assert re.fullmatch(f"hf-structure parse: --quantize int8: {REFUSAL}", message)  # one line
    with pytest.raises(SystemExit, match="^hf-structure parse: --quantize is for one model: parse an ensemble"):
        main(["parse", "--model", takes, "--model", takes, "--quantize", "int8", "a dog ran"])
    treebank = str(Path(__file__).parents[1] / "fixtures" / "tiny.conllu")
    main(["evaluate", "--model", takes, "--quantize", "int8", "--treebank", treebank])
    scores = json.loads(capsys.readouterr().out)
    assert scores["quantize"] == "int8" and 0 <= scores["uas"] <= 100
    with pytest.raises(SystemExit) as refused:
        main(["evaluate", "--model", refuses, "--quantize", "int8", "--treebank", treebank])
    assert re.fullmatch(f"hf-structure evaluate: --quantize int8: {REFUSAL}", str(refused.value))
    with pytest.raises(SystemExit, match="--record writes the model's own scores"):
        main(["evaluate", "--model", takes, "--quantize", "int8", "--record", "--treebank", str(tmp_path)])
