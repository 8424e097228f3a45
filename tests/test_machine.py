"""This machine's description (`hf_structure.machine`), read from `/proc/cpuinfo` where Linux has it."""

from hf_structure import machine

CPUINFO = (
    "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse2 avx2 avx512f\n\n"
    "processor\t: 1\nmodel name\t: another\nflags\t\t: fpu\n\n"
)


def test_the_cpu_is_read_from_the_first_processor_of_cpuinfo(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    assert machine.cpu_info(path)["vendor_id"] == "AuthenticAMD"
    assert machine.cpu_model(path) == "AMD EPYC 7B13"
    assert machine.cpu_flags(path) == {"fpu", "sse2", "avx2", "avx512f"}
    assert machine.cpu_info(tmp_path / "missing") == {} and machine.cpu_flags(tmp_path / "missing") == set()
    assert machine.cpu_model(tmp_path / "missing")  # other systems: what `platform` knows


def test_the_machine_description_names_threads_cpu_gpu_and_torch(monkeypatch):
    import torch

    monkeypatch.setattr(machine, "cpu_model", lambda: "AMD EPYC 7B13")
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert machine.machine_description() == f"2 CPU threads (AMD EPYC 7B13), no GPU, torch {torch.__version__}"
