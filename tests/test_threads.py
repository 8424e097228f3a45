"""hf_structure.threads: the default thread count from the machine's cores and load, and the block that sets
torch's count and gives the caller's back."""

import pytest
import torch

from hf_structure import threads


@pytest.fixture
def caller_threads():
    """torch's thread count set to 3 for the test (no count the tests ask for), the previous one restored after."""
    previous = torch.get_num_threads()
    torch.set_num_threads(3)
    yield 3
    torch.set_num_threads(previous)


@pytest.fixture
def machine(monkeypatch):
    """A machine whose usable cores and other processes' load the test sets: `machine(cores, busy)`; counts how
    often the load is measured."""

    def set_machine(cores, busy):
        measured = []

        def busy_cores_of_others():
            measured.append(busy)
            return busy

        monkeypatch.setattr(threads, "usable_cores", lambda: cores)
        monkeypatch.setattr(threads, "busy_cores_of_others", busy_cores_of_others)
        return measured

    return set_machine


@pytest.mark.parametrize(
    "cores, busy, current, expected",
    [
        (2, 0.0, 2, 2),  # idle: torch's default
        (2, 0.2, 2, 2),  # background noise under a quarter of a core leaves the core free
        (2, 0.3, 2, 1),  # more than a quarter of a core taken: the core is not counted
        (2, 1.0, 2, 1),  # one busy process: one thread
        (2, 3.0, 2, 1),  # over-full: still one
        (16, 1.1, 16, 15),
        (16, 1.3, 16, 14),
        (16, 0.0, 4, 4),  # never more than the caller's count
        (1, 0.0, 8, 1),
    ],
)
def test_default_num_threads_follows_free_cores_and_the_callers_count(cores, busy, current, expected):
    assert threads.default_num_threads(cores, busy, current) == expected
    assert threads.default_num_threads(cores, busy, current) == expected  # the same inputs, the same answer


@pytest.mark.parametrize("value", [0, -1, 1.5, "2", True, None])
def test_a_thread_count_must_be_a_whole_number_of_at_least_one(value):
    with pytest.raises(ValueError, match="num_threads must be a whole number of at least 1"):
        threads.check_num_threads(value)


def test_parsing_threads_sets_the_count_inside_and_restores_the_callers(caller_threads):
    with threads.parsing_threads(1, threads.LoadMeasurement()) as used:
        assert used == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == caller_threads


def test_parsing_threads_restores_the_callers_count_after_an_error(caller_threads):
    with pytest.raises(RuntimeError), threads.parsing_threads(2, threads.LoadMeasurement()):
        raise RuntimeError("the parse failed")
    assert torch.get_num_threads() == caller_threads


def test_without_a_count_the_default_for_the_measured_load_is_used(caller_threads, machine):
    measured = machine(2, 1.0)
    with threads.parsing_threads(None, threads.LoadMeasurement()) as used:
        assert used == 1 and torch.get_num_threads() == 1
    assert measured == [1.0]
    measured = machine(4, 0.0)
    with threads.parsing_threads(None, threads.LoadMeasurement()) as used:
        assert used == caller_threads  # all four cores free, but never more than the caller's 3
    assert torch.get_num_threads() == caller_threads and measured == [0.0]


def test_the_load_is_measured_again_only_after_a_while(caller_threads, machine, monkeypatch):
    measured = machine(2, 1.0)
    clock = [1000.0]
    monkeypatch.setattr(threads.time, "monotonic", lambda: clock[0])
    load, other = threads.LoadMeasurement(), threads.LoadMeasurement()
    for _ in range(3):
        load.num_threads()
    assert measured == [1.0]
    clock[0] += threads.LOAD_MEASUREMENT_SECONDS + 1
    load.num_threads()
    assert measured == [1.0, 1.0]
    other.num_threads()  # each owner measures for itself: no state is shared through the module
    assert measured == [1.0, 1.0, 1.0]


def test_busy_cores_of_others_leaves_out_this_process(monkeypatch):
    # 2 CPUs over 1 s: 200 ticks, 40 idle -> 1.6 cores busy, 0.5 of them this process's own
    ticks = iter([(1000, 500), (1200, 540)])
    monkeypatch.setattr(threads, "_cpu_ticks", lambda: next(ticks))
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)
    clock, cpu = iter([0.0, 1.0]), iter([10.0, 10.5])
    monkeypatch.setattr(threads.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(threads.time, "process_time", lambda: next(cpu))
    monkeypatch.setattr(threads.time, "sleep", lambda seconds: None)
    assert threads.busy_cores_of_others() == pytest.approx(1.1)


def test_busy_cores_of_others_falls_back_to_the_load_average_without_proc_stat(monkeypatch):
    def no_proc_stat():
        raise FileNotFoundError("/proc/stat")

    monkeypatch.setattr(threads, "_cpu_ticks", no_proc_stat)
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (1.5, 1.0, 0.5), raising=False)
    assert threads.busy_cores_of_others() == 1.5
