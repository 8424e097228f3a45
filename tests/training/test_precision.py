"""Training precision: bf16 autocast where the CPU computes bf16 natively, float32 elsewhere."""

import pytest
from transformers import TrainingArguments

from hf_structure.training import precision


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu sse2 avx512f avx512_bf16\n\n")
    flags = precision.cpu_flags(cpuinfo)
    assert {"avx512f", "avx512_bf16"} <= flags
    assert precision.cpu_has_native_bf16(flags)
    assert not precision.cpu_has_native_bf16({"avx2", "avx512f"})
    assert precision.cpu_has_native_bf16({"amx_bf16"})
    assert precision.cpu_flags(tmp_path / "missing") == set()


@pytest.mark.parametrize("native", [True, False])
def test_auto_precision_switches_to_bf16_only_on_native_cpus(tmp_path, monkeypatch, native):
    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: native)
    args = TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to="none")
    chosen = precision.with_chosen_precision(args, "auto")
    assert chosen.bf16 is native
    assert precision.with_chosen_precision(args, "fp32").bf16 is False


def test_explicit_precision_wins(tmp_path, monkeypatch):
    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: False)
    args = TrainingArguments(output_dir=str(tmp_path), use_cpu=True, bf16=True, report_to="none")
    assert precision.with_chosen_precision(args, "auto").bf16 is True
    assert precision.with_chosen_precision(args, "fp32").bf16 is True
    with pytest.raises(ValueError, match="precision"):
        precision.with_chosen_precision(args, "fp16")


def test_auto_precision_on_a_machine_without_a_gpu_needs_no_use_cpu_flag(tmp_path, monkeypatch):
    # transformers refuses bf16 without a GPU unless use_cpu is set: a plain `train-lm` on such a CPU failed so.
    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: True)
    monkeypatch.setattr(precision.torch.cuda, "is_available", lambda: False)
    args = TrainingArguments(output_dir=str(tmp_path), report_to="none")
    chosen = precision.with_chosen_precision(args, "auto")
    assert chosen.bf16 is True and chosen.use_cpu is True
