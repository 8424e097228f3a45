"""Weights of lower precision for parsing on a CPU, applied when a model is loaded and never saved.

`quantize="int8"`: the linear layers of the modules a model class names in `int8_modules` (its encoder's) become
`Int8Linear`s: torch's dynamic int8 quantization (each weight row in int8 with its own scale, each input quantized
per call, the products on int8: fbgemm on x86, qnnpack on Arm), except for the few input channels whose values reach
`OUTLIER_THRESHOLD` in that call, which are multiplied in float32 (LLM.int8(), Dettmers et al. 2022). BERT-type
encoders have such channels (one or two of 384 reach 15-30 where the others stay within about 2), and quantizing
them with the rest cost arc-hybrid-ewt 0.5 UAS on EWT dev; kept apart, int8 costs the two dependency parsers less
than 0.1 there. The rest of the model, its scorers and decoders, stays in float32. Only a class that names its
modules takes the option, once its int8 accuracy is measured (hf_structure's docs/benchmarks.md has the figures).

This file travels with the pipeline to a pushed model folder: it imports torch alone.
"""

import copy
import warnings

import torch
import torch.nn.functional as F
from torch import nn

QUANTIZATIONS = ("int8",)
# Inputs beyond this magnitude stay in float32; chosen on EWT dev (4 and 6 tried: 6, LLM.int8's value, kept up to
# 0.12 UAS less for the two dependency parsers, 4 at most 0.07 less).
OUTLIER_THRESHOLD = 4.0


class QuantizationError(ValueError):
    """`quantize` refused: a value not in QUANTIZATIONS, a device other than the CPU, a model class that names no
    `int8_modules`, or a torch without quantized CPU kernels; raised before anything is parsed. `reason`: the message
    without the option's name."""

    def __init__(self, quantize, reason: str):
        super().__init__(f"quantize={quantize!r}: {reason}")
        self.reason = reason


class Int8Linear(nn.Module):
    """A linear layer on int8, but for the input channels that reach `threshold` in a call (see the module's
    docstring): the same outputs as the float layer to within int8's rounding."""

    quantized: nn.Module
    weight: torch.Tensor

    def __init__(self, linear: nn.Linear, threshold: float = OUTLIER_THRESHOLD):
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
        self.register_buffer("weight", linear.weight.detach())  # the float columns of the outlier channels
        self.threshold = threshold

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        outliers = (inputs.abs().flatten(0, -2).amax(0) > self.threshold).nonzero().squeeze(1)
        if not len(outliers):
            return self.quantized(inputs)
        return self.quantized(inputs.index_fill(-1, outliers, 0.0)) + F.linear(
            inputs.index_select(-1, outliers), self.weight.index_select(1, outliers)
        )


def quantized(model, quantize: str | None, device: torch.device | str = "cpu"):
    """`model` itself for `quantize=None`, else a copy on the CPU with the linear layers of its `int8_modules` as
    `Int8Linear`s (the model given, and its saved weights, are left as they are). `device`: where the model is to
    run."""
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
            f"{type(model).__name__} (model type {model.config.model_type!r}) names no "
            "int8_modules, so its accuracy in int8 is not measured; it parses in its own precision",
        )
    engines = [engine for engine in torch.backends.quantized.supported_engines if engine != "none"]
    if not engines:
        raise QuantizationError(quantize, "this torch build has no quantized CPU kernels")
    if torch.backends.quantized.engine not in engines:
        torch.backends.quantized.engine = engines[0]
    model = copy.deepcopy(model).to("cpu", torch.float32)
    for prefix in modules:
        for name, linear in list(model.get_submodule(prefix).named_modules()):
            if isinstance(linear, nn.Linear):
                parent, _, attribute = f"{prefix}.{name}".rpartition(".")
                setattr(model.get_submodule(parent), attribute, Int8Linear(linear))
    model.quantization = quantize  # read by the pipeline, which refuses to save such a model
    return model
