"""Weights of lower precision for parsing on a CPU, applied when a model is loaded and never saved.

`quantize="int8"`: the linear layers of the modules a model class names in `int8_modules` (its encoder's) become
`Int8Linear`s: torch's dynamic int8 quantization (each weight row in int8 with its own scale, each input quantized
per call, the products on int8: fbgemm on x86, qnnpack on Arm), except for a few input channels, multiplied in
float32 (LLM.int8(), Dettmers et al. 2022). BERT-type encoders have such outlier channels: the same few of 384 reach
15-30 where the others stay within about 2, and quantized with the rest they cost arc-hybrid-ewt 0.7 UAS on EWT dev.
Which channels is measured once, when the model is quantized: the model parses `CALIBRATION_SENTENCES` in float32
and each layer keeps in float32 the input channels that exceed `CALIBRATION_THRESHOLD` there (finding them in every
call instead cost as much time as int8 saves on two threads). The rest of the model, its scorers and decoders, stays
in float32. Only a class that names its modules takes the option, once its int8 accuracy is measured (hf_structure's
docs/benchmarks.md has the figures).

This file travels with the pipeline to a pushed model folder: it imports torch alone.
"""

import copy
import warnings

import torch
import torch.nn.functional as F
from torch import nn

QUANTIZATIONS = ("int8",)
# The model types whose parsing class names `int8_modules`, for the refusal of the others (this file cannot read
# hf_structure's registry in a pushed folder; a test checks the list against the registered models).
INT8_MODEL_TYPES = ("arc_hybrid", "g2gtr")
# Input channels beyond this in CALIBRATION_SENTENCES stay in float32: chosen on EWT dev among 2.5, 3, 3.5 and 4
# (docs/benchmark-history.md); most of the channels that reach 4 in some dev sentence are among them.
CALIBRATION_THRESHOLD = 3.0
# Plain, varied English: clauses, a question, numbers, an address, runs of punctuation; words as the parsers take them.
CALIBRATION_SENTENCES = [
    sentence.split()
    for sentence in (
        "The old man sat on the bench .",
        "Stocks fell sharply after the report was released .",
        "Can you send me the file by Friday ?",
        "I 've been waiting 3 hours - this is ridiculous !!!",
        "She said that he would n't come , but he did .",
        "http://www.example.com is down again ; call 555-1234 .",
    )
]


class QuantizationError(ValueError):
    """`quantize` refused: a value not in QUANTIZATIONS, a device other than the CPU, a model class that names no
    `int8_modules`, or a torch without quantized CPU kernels; raised before anything is parsed. `reason`: the message
    without the option's name."""

    def __init__(self, quantize, reason: str):
        super().__init__(f"quantize={quantize!r}: {reason}")
        self.reason = reason


class Int8Linear(nn.Module):
    """A linear layer on int8, but for the input channels `outliers`, multiplied in float32 (see the module's
    docstring): the float layer's outputs to within int8's rounding while its other inputs stay small."""

    quantized: nn.Module
    outliers: torch.Tensor
    outlier_weight: torch.Tensor

    def __init__(self, linear: nn.Linear, outliers: torch.Tensor):
        super().__init__()
        linear = copy.deepcopy(linear).float()
        per_row = {nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig}
        with warnings.catch_warnings():
            # torch announces that this API moves to torchao; it is the one torch itself ships, in every supported
            # release.
            warnings.filterwarnings("ignore", r"torch\.ao\.quantization is deprecated", DeprecationWarning)
            warnings.filterwarnings("ignore", message=r"torch\.quantize_per_(tensor|channel)", category=UserWarning)
            sequential = torch.ao.quantization.quantize_dynamic(nn.Sequential(linear), per_row, dtype=torch.qint8)
        self.quantized = sequential[0]
        self.register_buffer("outliers", outliers.long())
        self.register_buffer("outlier_weight", linear.weight.detach()[:, self.outliers].contiguous())

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        if not len(self.outliers):
            return self.quantized(inputs)
        return self.quantized(inputs.index_fill(-1, self.outliers, 0.0)) + F.linear(
            inputs.index_select(-1, self.outliers), self.outlier_weight
        )


def input_maxima(model, linears: dict[str, nn.Linear], tokenizer) -> dict[str, torch.Tensor]:
    """The largest magnitude each input channel of each of `linears` (by name) reaches while `model` parses
    CALIBRATION_SENTENCES."""
    maxima: dict[str, torch.Tensor] = {}

    def record(name):
        def hook(module, inputs, output):
            largest = inputs[0].detach().abs().flatten(0, -2).amax(0)
            maxima[name] = torch.maximum(maxima[name], largest) if name in maxima else largest

        return hook

    hooks = [linear.register_forward_hook(record(name)) for name, linear in linears.items()]
    try:
        with torch.inference_mode():
            model.parse(CALIBRATION_SENTENCES, tokenizer)
    finally:
        for hook in hooks:
            hook.remove()
    return maxima


def quantized(model, tokenizer, quantize: str | None, device: torch.device | str = "cpu"):
    """`model` itself for `quantize=None`, else a copy on the CPU with the linear layers of its `int8_modules` as
    `Int8Linear`s, their outlier channels measured by parsing CALIBRATION_SENTENCES with `tokenizer` (the model
    given, and its saved weights, are left as they are). `device`: where the model is to run."""
    if quantize is None:
        return model
    if quantize not in QUANTIZATIONS:
        raise QuantizationError(quantize, f"not one of {QUANTIZATIONS} or None")
    device = torch.device(device)
    if device.type != "cpu":
        raise QuantizationError(
            quantize, f"runs on the CPU only (torch's dynamic int8 kernels); the model is to run on {device}"
        )
    modules = getattr(model, "int8_modules", ())
    if not modules:
        raise QuantizationError(
            quantize,
            f"refused for {type(model).__name__} (model type {model.config.model_type!r}): int8 is for the "
            f"models whose int8 accuracy is measured, of model type {' or '.join(INT8_MODEL_TYPES)}; "
            "parse this one without quantize",
        )
    engines = [engine for engine in torch.backends.quantized.supported_engines if engine != "none"]
    if not engines:
        raise QuantizationError(quantize, "this torch build has no quantized CPU kernels")
    if torch.backends.quantized.engine not in engines:
        torch.backends.quantized.engine = engines[0]
    model = copy.deepcopy(model).to("cpu", torch.float32).eval()
    linears = {
        f"{prefix}.{name}": linear
        for prefix in modules
        for name, linear in model.get_submodule(prefix).named_modules()
        if isinstance(linear, nn.Linear)
    }
    maxima = input_maxima(model, linears, tokenizer)
    for name, linear in linears.items():
        parent, _, attribute = name.rpartition(".")
        largest = maxima.get(name, torch.zeros(linear.in_features))  # a layer the parse never calls
        outliers = (largest > CALIBRATION_THRESHOLD).nonzero().squeeze(1)
        setattr(model.get_submodule(parent), attribute, Int8Linear(linear, outliers))
    model.quantization = quantize  # read by the pipeline, which refuses to save such a model
    return model
