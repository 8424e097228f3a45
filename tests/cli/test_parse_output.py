"""Where `hf-structure parse` writes, when writing fails for real: a second writer of the same file, a full disk, a
read-only folder, /dev/full, a run in which nothing parses; and the output format that the `--output` suffix names.

Each failure is caused, not mocked: a subprocess meets the kernel's own error, and the test reads what it left."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hf_structure.cli import main
from tests.helpers.filesystems import small_tmpfs
from tests.helpers.paths import ROOT

LINE = "the old man sat on the bench"


def command_env() -> dict:
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env.update(PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    return env


def parse_command(model: str, *arguments: str) -> list[str]:
    return [sys.executable, "-m", "hf_structure.cli", "parse", "--model", model, *arguments]


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, env=command_env(), capture_output=True, text=True, timeout=300, **kwargs)


def complete_json_lines(path: Path) -> list[dict]:
    """Every line of `path`, each a whole JSON object ending in a line feed (a torn line fails here)."""
    text = path.read_text(encoding="utf-8")
    assert text == "" or text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def test_a_second_writer_of_the_same_output_is_refused_and_the_first_completes(model, tmp_path):
    out = tmp_path / "out.jsonl"
    first = subprocess.Popen(
        parse_command(model, "--pretokenized", "--batch-size", "1", "--input", "-", "--output", str(out)),
        env=command_env(),
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert first.stdin is not None and first.stderr is not None  # both piped
    try:
        first.stdin.write(f"{LINE}\n" * 4)  # one window of batches: written, so the file is claimed
        first.stdin.flush()
        deadline = time.monotonic() + 120
        while not out.exists() or not out.read_text(encoding="utf-8"):
            assert time.monotonic() < deadline and first.poll() is None, "the first run wrote nothing"
            time.sleep(0.2)
        second = run(parse_command(model, "--pretokenized", "a dog ran", "--output", str(out)))
        assert second.returncode == 1
        assert second.stderr.strip().splitlines()[-1] == (
            f"hf-structure parse: cannot write {out}: another process is writing it; wait for it to end or choose "
            "another file"
        )
        first.stdin.write(f"{LINE}\n" * 6)
        first.stdin.close()
        assert first.wait(timeout=120) == 0, first.stderr.read()
    finally:
        first.kill()
        first.stderr.close()
    results = complete_json_lines(out)
    assert [result["words"] for result in results] == [LINE.split()] * 10


def test_a_full_disk_leaves_only_complete_results_named_by_their_lines(model, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text(f"{LINE}\n" * 400, encoding="utf-8")
    with small_tmpfs(tmp_path / "small", "48k") as small:
        out = small / "out.jsonl"
        done = run(
            parse_command(model, "--pretokenized", "--batch-size", "8", "--input", str(source), "--output", str(out))
        )
        assert done.returncode == 1
        results = complete_json_lines(out)
        assert 0 < len(results) < 400 and len(results) % 8 == 0  # whole batches
        assert done.stderr.strip().splitlines()[-1] == (
            f"hf-structure parse: cannot write {out}: No space left on device; it holds the results of lines "
            f"1-{len(results)}, each complete"
        )


def test_a_full_disk_under_torchrun_names_the_part_its_lines_and_the_output_not_written(model, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text(f"{LINE}\n" * 400, encoding="utf-8")
    launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--standalone"]
    with small_tmpfs(tmp_path / "small", "48k") as small:
        out = small / "out.jsonl"
        arguments = ["--pretokenized", "--batch-size", "8", "--input", str(source), "--output", str(out)]
        done = run([*launcher, *parse_command(model, *arguments)[1:]])
        assert done.returncode != 0
        messages = [line for line in done.stderr.splitlines() if line.startswith("hf-structure parse: cannot write")]
        assert messages, done.stderr[-3000:]
        for message in messages:  # each process that met the full disk: its part, its share's lines, the output
            part = message.split("cannot write ")[1].split(":")[0]
            rank = int(part.rsplit("-", 1)[1])
            held = complete_json_lines(Path(part))
            first = rank * 200 + 1
            lines = f"lines {first}-{first + len(held) - 1}, each complete" if held else None
            assert message == (
                f"hf-structure parse: cannot write {part}: No space left on device; "
                + (f"it holds the results of {lines}" if held else "it holds no result")
                + f"; {out} was not written"
            )
        assert not out.exists() or out.read_bytes() == b""


def test_svg_into_a_read_only_folder_is_refused_before_parsing(model, tmp_path):
    with small_tmpfs(tmp_path / "read-only", "64k", read_only=True) as folder:
        done = run(parse_command(model, LINE, "--svg", str(folder / "tree.svg")))
        assert (done.returncode, done.stdout) == (1, "")
        assert (
            done.stderr.strip()
            == f"hf-structure parse: cannot write {folder / 'tree.svg'}: folder {folder} is not writable"
        )


def test_svg_onto_a_full_disk_is_one_line_and_leaves_no_partial_picture(model, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text(f"{LINE}\n" * 200, encoding="utf-8")
    with small_tmpfs(tmp_path / "small", "40k") as small:
        done = run(parse_command(model, "--pretokenized", "--input", str(source), "--svg", str(small / "tree.svg")))
        assert done.returncode == 1
        pictures = sorted(small.iterdir())
        assert pictures and all(path.name.startswith("tree-") and path.suffix == ".svg" for path in pictures)
        assert all(path.read_text(encoding="utf-8").rstrip().endswith("</svg>") for path in pictures)
        failed = small / f"tree-{len(pictures) + 1}.svg"
        assert (
            done.stderr.strip().splitlines()[-1]
            == f"hf-structure parse: cannot write {failed}: No space left on device"
        )


@pytest.mark.parametrize("arguments", [[], ["--output", "/dev/full"]], ids=["standard output", "--output"])
def test_dev_full_is_one_line_and_status_1(model, arguments):
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            parse_command(model, LINE, *arguments), env=command_env(), stdout=full, stderr=subprocess.PIPE, text=True
        )
    target = "/dev/full" if arguments else "standard output"
    assert (done.returncode, done.stderr.strip()) == (
        1,
        f"hf-structure parse: cannot write {target}: No space left on device",
    )


def test_a_device_is_not_locked_so_two_commands_may_write_it_at_once(model):
    """A device is shared by design: another command writing /dev/full or /dev/null (a test run beside this one) does
    not make this one refuse it. The other writer is this test, holding the lock that a file would have."""
    import fcntl

    with open("/dev/full", "w") as held_full, open("/dev/null", "w") as held_null:
        fcntl.flock(held_full, fcntl.LOCK_EX)
        fcntl.flock(held_null, fcntl.LOCK_EX)
        full = run(parse_command(model, LINE, "--output", "/dev/full"))
        null = run(parse_command(model, LINE, "--output", "/dev/null"))
    assert (full.returncode, full.stderr.strip()) == (
        1,
        "hf-structure parse: cannot write /dev/full: No space left on device",
    )
    assert (null.returncode, null.stderr) == (0, "")


def test_models_listing_to_dev_full_is_one_line():
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "hf_structure.cli", "models"],
            env=command_env(),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert (done.returncode, done.stderr.strip()) == (
        1,
        "hf-structure models: cannot write standard output: No space left on device",
    )


def test_an_empty_input_file_gives_an_empty_output_and_exit_0_unless_strict(model, tmp_path, capsys):
    source, out = tmp_path / "empty.txt", tmp_path / "out.jsonl"
    source.write_bytes(b"")
    out.write_text("stale\n", encoding="utf-8")
    main(["parse", "--model", model, "--input", str(source), "--output", str(out)])
    assert out.read_bytes() == b""
    assert capsys.readouterr().err.strip() == f"hf-structure parse: no line in {source}"
    with pytest.raises(SystemExit) as ended:
        main(["parse", "--model", model, "--input", str(source), "--output", str(out), "--strict"])
    assert ended.value.code == 1


def test_a_run_in_which_every_line_fails_exits_1_naming_the_first_error(model, tmp_path, capsys):
    source, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
    too_long = " ".join(["word"] * 40)  # the tiny model takes 16 positions
    source.write_text(f"{too_long}\n\n{too_long}\n", encoding="utf-8")
    with pytest.raises(SystemExit) as ended:
        main(["parse", "--model", model, "--pretokenized", "--input", str(source), "--output", str(out)])
    results = complete_json_lines(out)
    assert [("error" in result, bool(result["words"])) for result in results] == [
        (True, True),
        (False, False),
        (True, True),
    ]
    assert ended.value.code == (
        f"hf-structure parse: every line failed (2 of 3; see their `error`); the first: {results[0]['error']}"
    )


@pytest.mark.parametrize(
    "suffix, flags, first_line",
    [
        (".conllu", [], "# sent_id = 1"),
        (".jsonl", [], "{"),
        (".json", [], "{"),
        (".txt", [], "{"),  # a suffix that names no format: JSON lines, the default
        (".conllu", ["--conllu"], "# sent_id = 1"),
    ],
)
def test_the_output_format_follows_the_output_suffix(model, tmp_path, suffix, flags, first_line):
    out = tmp_path / f"out{suffix}"
    main(["parse", "--model", model, "--no-split-sentences", LINE, *flags, "--output", str(out)])
    assert out.read_text(encoding="utf-8").splitlines()[0].startswith(first_line)


@pytest.mark.parametrize(
    "suffix, flag, message",
    [
        (".conllu", "--json", "--json writes JSON lines, but --output {out} names CoNLL-U; change one of them"),
        (".jsonl", "--conllu", "--conllu writes CoNLL-U, but --output {out} names JSON lines; change one of them"),
        (".json", "--draw", "--draw writes drawings, but --output {out} names JSON lines; change one of them"),
    ],
)
def test_a_flag_that_contradicts_the_output_suffix_is_refused_before_writing(model, tmp_path, suffix, flag, message):
    out = tmp_path / f"out{suffix}"
    with pytest.raises(SystemExit) as ended:
        main(["parse", "--model", model, LINE, flag, "--output", str(out)])
    assert ended.value.code == "hf-structure parse: " + message.format(out=out)
    assert not out.exists()
