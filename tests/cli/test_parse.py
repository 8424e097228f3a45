"""`hf-structure parse` on a tiny random model: JSON lines, pre-tokenized and raw input, `--draw`, `--svg`, and
clean errors."""

import io
import json
import os
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hf_structure.cli import main
from tests.helpers.paths import FIXTURES, ROOT
from tests.helpers.tiny_models import new_declared_tiny_model, save_tiny_r2d2

TINY_CONLLU = FIXTURES / "tiny.conllu"
LINES = ["the old man sat on the bench", "a dog ran", "the dog , old , ran"]
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def spans_only_model(tmp_path_factory) -> str:
    return str(save_tiny_r2d2(tmp_path_factory.mktemp("cli") / "tiny-r2d2", LINES))


def tree_leaves(tree: str) -> list[str]:
    return tree.replace("(", " ").replace(")", " ").split()


def tree_spans(tree: str) -> set[tuple[int, int]]:
    """The constituents (two or more words) of an unlabelled bracketed tree, whole sentence included."""
    spans, stack, position = set(), [], 0
    for token in tree.replace("(", " ( ").replace(")", " ) ").split():
        if token == "(":
            stack.append(position)
        elif token == ")":
            start = stack.pop()
            if position - start > 1:
                spans.add((start, position))
        else:
            position += 1
    return spans


def check_line(result: dict, words: list[str]) -> None:
    assert result["words"] == words
    n = len(words)
    assert tree_leaves(result["tree"]) == words
    assert tree_spans(result["tree"]) == {tuple(span) for span in result["spans"]}
    assert result["spans"][0] == [0, n]
    assert all(isinstance(s, int) and isinstance(e, int) and 0 <= s < e <= n for s, e in result["spans"])
    assert len(result["heads"]) == n and result["heads"].count(0) == 1
    assert all(isinstance(h, int) and 0 <= h <= n and h != i + 1 for i, h in enumerate(result["heads"]))


def test_pretokenized_file_to_json_lines(model, tmp_path):
    source, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
    source.write_text("\n".join(LINES[:2]) + "\n\n" + LINES[2] + "  \n", encoding="utf-8")
    main(["parse", "--model", model, "--input", str(source), "--pretokenized", "--output", str(out)])
    results = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(results) == len(LINES) + 1 and results[2] == {"words": []}  # the blank line keeps its place
    for result, line in zip(results[:2] + results[3:], LINES):
        check_line(result, line.split())


def test_pretokenized_words_kept_exactly(model, tmp_path):
    source, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
    words = ["Mr.", "Smith's", "dog", "(", "old", ")", "ran", "--", "fast", "."]
    source.write_text("  ".join(words) + "\n", encoding="utf-8")  # several spaces between words are one separator
    main(["parse", "--model", model, "--input", str(source), "--pretokenized", "--output", str(out)])
    (result,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert result["words"] == words
    assert tree_leaves(result["tree"]) == [{"(": "-LRB-", ")": "-RRB-"}.get(w, w) for w in words]


def test_raw_text_is_ptb_tokenized(model, tmp_path, capsys):
    main(["parse", "--model", model, "The old man's dog didn't sit on the bench."])
    (line,) = capsys.readouterr().out.splitlines()
    result = json.loads(line)
    expected = ["The", "old", "man", "'s", "dog", "did", "n't", "sit", "on", "the", "bench", "."]
    check_line(result, expected)


def test_draw(model, tmp_path, capsys):
    main(["parse", "--model", model, "--draw", "a dog ran on the bench"])
    out = capsys.readouterr().out
    for word in "a dog ran on the bench".split():
        assert word in out
    assert out.count("►") == 5 and "root" in out and "─" in out
    assert "{" not in out  # not JSON


def test_svg_one_sentence(model, tmp_path, capsys):
    svg = tmp_path / "parse.svg"
    main(["parse", "--model", model, "--svg", str(svg), "a dog ran"])
    assert json.loads(capsys.readouterr().out)["words"] == ["a", "dog", "ran"]  # JSON still printed
    root = ET.fromstring(svg.read_text(encoding="utf-8"))
    assert root.tag == SVG + "svg"
    assert [t.text for t in root.iter(SVG + "text") if t.get("class") == "word"] == ["a", "dog", "ran"]


def test_svg_several_sentences(model, tmp_path):
    source, svg = tmp_path / "in.txt", tmp_path / "parse.svg"
    source.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    main(["parse", "--model", model, "--input", str(source), "--svg", str(svg), "--output", str(tmp_path / "o")])
    assert not svg.exists()
    for number, line in enumerate(LINES, start=1):
        root = ET.fromstring((tmp_path / f"parse-{number}.svg").read_text(encoding="utf-8"))
        assert [t.text for t in root.iter(SVG + "text") if t.get("class") == "word"] == line.split()


def test_missing_input_file(model, tmp_path, capsys):
    missing = tmp_path / "nowhere.txt"
    with pytest.raises(SystemExit) as exit_info:
        main(["parse", "--model", model, "--input", str(missing)])
    assert exit_info.value.code not in (0, None)
    assert str(missing) in str(exit_info.value.code) and "cannot read input file" in str(exit_info.value.code)


def test_a_fifo_is_read_once_and_loses_no_line(model, tmp_path):
    # A FIFO (as /dev/stdin and a shell's <(...) are) cannot be read twice: it was counted, then found empty.
    fifo, out = tmp_path / "lines", tmp_path / "out.jsonl"
    os.mkfifo(fifo)
    lines = ["a dog ran", "the old man sat", "the man sat on the bench"]
    writer = threading.Thread(target=lambda: fifo.write_text("\n".join(lines) + "\n", encoding="utf-8"))
    writer.start()
    main(["parse", "--model", model, "--pretokenized", "--input", str(fifo), "--output", str(out)])
    writer.join()
    assert [json.loads(line)["words"] for line in out.read_text(encoding="utf-8").splitlines()] == [
        line.split() for line in lines
    ]


def test_a_bad_line_gets_an_error_and_the_others_are_parsed(model, tmp_path, capsys):
    source, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
    source.write_text("a dog ran\n. , !\nthe old\x00man\n\nthe man sat\n", encoding="utf-8")
    main(["parse", "--model", model, "--input", str(source), "--output", str(out)])
    results = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["words"] for r in results] == [
        ["a", "dog", "ran"],
        [".", ",", "!"],
        ["the", "old\x00man"],
        [],
        ["the", "man", "sat"],
    ]
    # Punctuation alone is a sentence, parsed as punctuation is re-attached: the first mark heads the others.
    assert (results[1]["heads"], results[1]["spans"]) == ([0, 1, 1], [[0, 3]]) and "error" not in results[1]
    assert results[2]["error"].startswith("line 3") and "control character" in results[2]["error"]
    assert "heads" not in results[2]
    check_line(results[0], ["a", "dog", "ran"])
    check_line(results[4], ["the", "man", "sat"])
    assert "1 of 5 lines could not be parsed" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["parse", "--model", model, "--input", str(source), "--output", str(out), "--strict"])
    assert exit_info.value.code == 1


@pytest.mark.parametrize("through", ["file", "stdin"])
def test_a_line_over_the_cap_is_an_error_record_and_the_rest_parses(model, tmp_path, capsys, monkeypatch, through):
    """A regular file is counted first, standard input is read once: both skip the long line unkept."""
    source, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
    source.write_bytes(b"a dog ran\n" + b"x" * 250 + b"\n" + b"the old man sat\n" + b"y" * 101)
    command = ["parse", "--model", model, "--input", str(source) if through == "file" else "-", "--output", str(out)]

    def parse(max_line_bytes: int) -> None:
        if through == "stdin":
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(source.read_bytes())))
        main([*command, "--max-line-bytes", str(max_line_bytes)])

    parse(100)
    results = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [result["line"] for result in results] == [1, 2, 3, 4]
    over = "over the cap of 100 for one line (--max-line-bytes): not read, not parsed"
    assert results[1] == {"line": 2, "words": [], "error": f"line 2: 250 bytes, {over}"}
    assert results[3] == {"line": 4, "words": [], "error": f"line 4: 101 bytes, {over}"}
    check_line(results[0], ["a", "dog", "ran"])
    assert "2 of 4 lines could not be parsed" in capsys.readouterr().err
    parse(250)  # a line of the cap's length, its line feed aside, is read
    assert [len(json.loads(line)["words"]) for line in out.read_text(encoding="utf-8").splitlines()] == [3, 1, 4, 1]


def test_a_line_over_the_cap_ends_a_conllu_input_naming_it(model, tmp_path):
    source = tmp_path / "in.conllu"
    source.write_text("1\tA\t_\t_\t_\t_\t0\troot\t_\t_\n\n# text = " + "x" * 200 + "\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["parse", "--model", model, "--input", str(source), "--max-line-bytes", "100"])
    assert str(exit_info.value.code) == (
        f"hf-structure parse: {source}:3: 209 bytes, over the cap of 100 for one line (--max-line-bytes): "
        "not read, not parsed"
    )


def test_memory_stays_flat_on_a_stream_without_a_line_feed(model):
    """A stream of 40 MB without a line feed, through a pipe (read once), under the default cap: parsing held about
    100 bytes per byte of a line (4 GB here) before the cap; now the peak is that of a one-line input, give or take
    what Python's allocator keeps. The peak is the kernel's (`wait4`'s maximum resident set)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
    command = [sys.executable, "-m", "hf_structure.cli", "parse", "--model", model, "--input", "-"]

    def peak_mb(stream: bytes, status: int) -> tuple[float, str]:
        child = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        stdin = child.stdin
        assert stdin and child.stdout

        def write():
            stdin.write(stream)
            stdin.close()

        writer = threading.Thread(target=write)
        writer.start()
        output = child.stdout.read()
        writer.join()
        _, wait_status, usage = os.wait4(child.pid, 0)  # Popen's own wait gives no resource usage
        child.returncode = os.waitstatus_to_exitcode(wait_status)
        assert child.returncode == status
        return usage.ru_maxrss / 1024, output.decode()

    one_line, _ = peak_mb(b"a dog ran\n", 0)
    no_line_feed, output = peak_mb(b"a" * 40_000_000, 1)  # 1: every line failed
    assert json.loads(output)["error"].startswith("line 1: 40,000,000 bytes, over the cap of 1,000,000")
    assert no_line_feed < one_line + 60, (one_line, no_line_feed)


def test_io_problems_are_reported_before_parsing(model, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("a dog ran\n", encoding="utf-8")
    missing = tmp_path / "nowhere" / "out.jsonl"
    with pytest.raises(SystemExit, match=f"cannot write {missing}: folder .* does not exist"):
        main(
            [
                "parse",
                "--model",
                "no-such-model",
                "--input",
                str(source),
                "--output",
                str(tmp_path / "nowhere" / "out.jsonl"),
            ]
        )
    (tmp_path / "binary").write_bytes(b"a dog\n\xff\xfe\x00\x01")
    with pytest.raises(SystemExit, match=f"{tmp_path / 'binary'}:2: not UTF-8 text"):
        main(["parse", "--model", "no-such-model", "--input", str(tmp_path / "binary")])
    with pytest.raises(SystemExit, match="cannot read input file"):
        main(["parse", "--model", "no-such-model", "--input", str(tmp_path / "missing.txt")])
    with pytest.raises(SystemExit, match=f"cannot write {tmp_path}: it is a folder; --output names a file"):
        main(["parse", "--model", "no-such-model", "--input", str(source), "--output", str(tmp_path)])
    # The input as the output, also through another spelling of its path: refused, the input left whole.
    for output in (source, tmp_path / "." / "in.txt"):
        with pytest.raises(SystemExit, match="is the input file: it would be emptied before it is read"):
            main(["parse", "--model", "no-such-model", "--input", str(source), "--output", str(output)])
        assert source.read_text(encoding="utf-8") == "a dog ran\n"


def test_module_subprocess(model, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("a dog ran\nthe old man sat\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
    command = [sys.executable, "-m", "hf_structure.cli", "parse", "--model", model, "--pretokenized"]
    done = subprocess.run(command + ["--input", str(source)], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [r["words"] for r in results] == [["a", "dog", "ran"], ["the", "old", "man", "sat"]]
    for result in results:
        check_line(result, result["words"])


def test_ctrl_c_ends_parse_with_one_line_status_130_and_complete_results(model, tmp_path):
    import signal
    import time

    output = tmp_path / "out.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    command = [
        sys.executable,
        "-m",
        "hf_structure.cli",
        "parse",
        "--model",
        model,
        "--input",
        "-",
        "--output",
        str(output),
    ]
    # A shell that starts a job in the background has it ignore SIGINT, and a child inherits that: as a terminal
    # would, the child gets SIGINT's default, so that Python turns it into KeyboardInterrupt.
    child = subprocess.Popen(
        command,
        env=env,
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert child.stdin is not None and child.stderr is not None  # both piped
    child.stdin.write("the old man sat on the bench .\n" * 2000)  # more than a window: results are written
    child.stdin.flush()  # standard input stays open: the command waits for more when the signal comes
    deadline = time.monotonic() + 120
    while not (output.exists() and output.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    try:
        child.wait(timeout=60)  # standard input still open: the signal alone ends the command
    finally:
        child.kill()
    stderr = child.stderr.read()
    assert child.returncode == 130
    assert stderr.splitlines() == ["hf-structure parse: interrupted; every result written is complete"]
    text = output.read_text(encoding="utf-8")
    assert text.endswith("\n") and all(json.loads(line)["words"] for line in text.splitlines())


@pytest.mark.parametrize("argv", [["train-lm"], ["evaluate", "--treebank", "gold"], ["models"]])
def test_ctrl_c_ends_any_command_with_one_line_and_status_130(argv, monkeypatch, capsys):
    from hf_structure import cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "train", interrupted)
    monkeypatch.setattr(cli.evaluate, "run", interrupted)
    monkeypatch.setattr(cli.models, "run", interrupted)
    with pytest.raises(SystemExit) as ended:
        main(argv)
    assert ended.value.code == 130
    assert capsys.readouterr().err == f"hf-structure {argv[0]}: interrupted{cli.INTERRUPTED.get(argv[0], '')}\n"


def test_loading_the_model_draws_no_progress_bar_of_its_own(model, capsys):
    main(["parse", "--model", model, "--pretokenized", "a dog ran"])
    assert "Loading weights" not in capsys.readouterr().err  # transformers' bar, among the command's own output


def test_each_positional_argument_is_one_sentence(model, capsys):
    main(["parse", "--model", model, "The old man sat on the bench.", "A dog ran."])
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = [["The", "old", "man", "sat", "on", "the", "bench", "."], ["A", "dog", "ran", "."]]
    assert [r["words"] for r in results] == expected


def test_conllu_output_keeps_one_sentence_block_per_input_line(model, tmp_path):
    import conllu

    source, out = tmp_path / "in.txt", tmp_path / "out.conllu"
    source.write_text("a dog ran\n\n. , !\nthe old man sat\n", encoding="utf-8")
    main(["parse", "--model", model, "--pretokenized", "--conllu", "--input", str(source), "--output", str(out)])
    blocks = conllu.parse(out.read_text(encoding="utf-8"))
    assert [len(block) for block in blocks] == [3, 0, 3, 4]
    assert [block.metadata["sent_id"] for block in blocks] == ["1", "2", "3", "4"]  # the input line's number
    assert [blocks[i].metadata.get("text") for i in (0, 2, 3)] == ["a dog ran", ". , !", "the old man sat"]
    assert [token["head"] for token in blocks[2]] == [0, 1, 1]  # the first mark heads the others
    assert [token["form"] for token in blocks[3]] == ["the", "old", "man", "sat"]


def test_draw_and_svg_of_a_model_without_heads_show_the_tree_alone(spans_only_model, tmp_path, capsys):
    from hf_structure.visualization import draw_text

    sentences = ["a dog ran on the bench", "the old man"]
    main(["parse", "--model", spans_only_model, "--pretokenized", *sentences])
    parses = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert all("heads" not in parse and len(parse["spans"]) == len(parse["words"]) - 1 for parse in parses)
    main(["parse", "--model", spans_only_model, "--pretokenized", "--draw", *sentences])
    drawings = capsys.readouterr().out.split("\n\n")  # a blank line after each sentence's drawing
    assert drawings[2:] == [""] and drawings[:2] == [draw_text(parse) for parse in parses]
    for drawing, parse in zip(drawings, parses):
        lines = drawing.splitlines()
        assert lines[-1].split() == parse["words"]  # the words, in order, under the tree
        assert sum(line.split().count("X") for line in lines) == len(parse["spans"])
        assert "►" not in drawing and "root" not in drawing

    svg = tmp_path / "parse.svg"
    main(["parse", "--model", spans_only_model, "--pretokenized", "--svg", str(svg), sentences[0]])
    root = ET.fromstring(svg.read_text(encoding="utf-8"))
    assert [t.text for t in root.iter(SVG + "text") if t.get("class") == "word"] == parses[0]["words"]
    assert len([c for c in root.iter(SVG + "circle") if c.get("class") == "node"]) == len(parses[0]["spans"])
    assert not [p for p in root.iter(SVG + "path") if p.get("class") == "arc"]


def test_tree_decoding_chooses_the_tree_and_one_a_model_lacks_is_one_clear_error(tmp_path, capsys):
    folder = tmp_path / "fast"
    model, tokenizer = new_declared_tiny_model("fast_r2d2")  # Fast-R2D2: its parser's trees, or the pruned chart's
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    words = ["the", "old", "man", "sat", "on", "the", "bench"]
    for method in ("parser", "chart"):
        main(["parse", "--model", str(folder), "--pretokenized", "--tree-decoding", method, " ".join(words)])
        spans = [tuple(span) for span in json.loads(capsys.readouterr().out)["spans"]]
        assert sorted(spans) == sorted(model.parse([words], tokenizer, tree_decoding=method)[0]["spans"])
    with pytest.raises(SystemExit, match="--tree-decoding chart: .* does not take the option tree_decoding"):
        main(["parse", "--model", "structformer-ptb", "--tree-decoding", "chart", "A dog barked."])


def test_a_parser_without_options_refuses_one_before_parsing():
    pytest.importorskip("hf_structure_g2gtr_ewt", reason="the g2gtr-ewt package is not installed")
    with pytest.raises(SystemExit, match="--head-decoding eisner: .* does not take the option head_decoding"):
        main(["parse", "--model", "g2gtr-ewt", "--head-decoding", "eisner", "A dog barked."])


@pytest.mark.parametrize("value", ["0", "-1"])
@pytest.mark.parametrize("command", ["parse", "evaluate"])
def test_a_batch_size_below_one_is_a_usage_error(model, command, value, capsys):
    arguments = {
        "parse": ["--model", model, "a dog ran"],
        "evaluate": ["--treebank", str(TINY_CONLLU), "--baseline", "left-branching"],
    }[command]
    with pytest.raises(SystemExit) as exit_info:
        main([command, *arguments, "--batch-size", value])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"hf-structure {command}: error: argument --batch-size: expected a whole number of at least 1, got '{value}'"
    )


@pytest.mark.parametrize("pretokenized", [[], ["--pretokenized"]], ids=["raw", "pretokenized"])
def test_input_lines_end_at_line_feeds_only(model, tmp_path, pretokenized):
    # Each of these characters ends a line for `str.splitlines`; here each sits inside one line of the file.
    lines = ["The man sat\x0cDogs bark .", "a dog\x1cran", "the\x85old man", "a dog\u2028ran", "\x0c", "the man sat"]
    results = {}
    for ending in ("\n", "\r\n"):
        source, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
        source.write_text(ending.join(lines) + ending, encoding="utf-8", newline="")
        main(["parse", "--model", model, "--input", str(source), "--output", str(out), *pretokenized])
        results[ending] = [json.loads(line) for line in out.read_text(encoding="utf-8").split("\n")[:-1]]
    assert results["\n"] == results["\r\n"] and len(results["\n"]) == len(lines)
    parsed = results["\n"]
    if not pretokenized:  # raw text: each sentence names its line (here each line is one sentence)
        assert [result.pop("line") for result in parsed] == [1, 2, 3, 4, 5, 6]
    for result in parsed[:4]:  # parsed, or refused with the line's own error
        assert ("heads" in result) != ("error" in result)
    assert parsed[4] == {"words": []}
    check_line(parsed[5], ["the", "man", "sat"])


@pytest.mark.parametrize("name, closest", [("structformer_ptb", "structformer-ptb"), ("does-not-exist", None)])
@pytest.mark.parametrize(
    "command", [["parse", "a dog ran"], ["evaluate", "--treebank", str(TINY_CONLLU)]], ids=["parse", "evaluate"]
)
def test_an_unknown_bare_model_name_is_one_line_without_a_hub_lookup(name, closest, command, monkeypatch, capsys):
    import socket

    from hf_structure.bundled import bundled_checkpoints

    def no_network(*args):
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--model", name])
    assert exit_info.value.code == 2
    hint = f" (did you mean {closest!r}?)" if closest else ""
    assert capsys.readouterr().err == (
        f"hf-structure {command[0]}: unknown model {name!r}{hint}: not a folder, not a bundled model "
        f"({', '.join(sorted(bundled_checkpoints()))}), not a Hub id (org/name)\n"
    )


# ---------------------------------------------------------------------------------------------- streaming, stdin


class LineFeeder:
    """Standard input whose lines are read one at a time, noting how many JSON lines the output file holds when each
    line is asked for: what a streaming command wrote before it had read its whole input."""

    def __init__(self, lines: list[str], output: Path):
        self.lines, self.output = iter(lines), output
        self.written_when_read: list[int] = []
        self.buffer = self

    def readline(self, size: int = -1) -> bytes:
        line = next(self.lines, None)
        if line is None:
            return b""
        self.written_when_read.append(len(self.output.read_text().splitlines()) if self.output.exists() else 0)
        return (line + "\n").encode("utf-8")


def test_results_are_written_a_window_at_a_time_while_the_input_is_read(model, tmp_path, monkeypatch):
    from hf_structure.cli.parse import WINDOW_BATCHES

    out = tmp_path / "out.jsonl"
    lines = [LINES[k % 3] for k in range(10)]
    stdin = LineFeeder(lines, out)
    monkeypatch.setattr(sys, "stdin", stdin)
    main(["parse", "--model", model, "--pretokenized", "--input", "-", "--output", str(out), "--batch-size", "1"])
    # A window of WINDOW_BATCHES batches of one line is read, parsed and written before the next line is read.
    assert WINDOW_BATCHES == 4 and stdin.written_when_read == [0, 0, 0, 0, 4, 4, 4, 4, 8, 8]
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [result["words"] for result in results] == [line.split() for line in lines]  # input order
    for result in results:
        check_line(result, result["words"])


def test_a_window_sorted_by_length_is_written_in_input_order_with_bad_lines_in_place(model, tmp_path):
    source, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
    lines = ["the old man sat on the bench a dog ran", "a dog", "", ". , !", "the man sat", "a\x01dog", "dog"] * 3
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    main(
        ["parse", "--model", model, "--pretokenized", "--input", str(source), "--output", str(out), "--batch-size", "2"]
    )
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [result["words"] for result in results] == [line.split() for line in lines]
    assert [("error" in result) for result in results] == [line == "a\x01dog" for line in lines]
    assert all("heads" in result for result, line in zip(results, lines) if line.split() and "error" not in result)


def test_standard_input_is_read_with_a_dash(model, monkeypatch, capsys):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a dog ran\n\nthe old man sat\n")))
    main(["parse", "--model", model, "--pretokenized", "--input", "-"])
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [result["words"] for result in results] == [["a", "dog", "ran"], [], ["the", "old", "man", "sat"]]


def test_a_line_of_standard_input_that_is_not_utf8_ends_the_command_after_the_lines_before_it(
    model, monkeypatch, capsys
):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a dog ran\nthe man\nold \xff man\nsat\n")))
    with pytest.raises(SystemExit, match=r"^hf-structure parse: standard input:3: not UTF-8 text"):
        main(["parse", "--model", model, "--pretokenized", "--input", "-"])
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [result["words"] for result in results] == [["a", "dog", "ran"], ["the", "man"]]


@pytest.mark.parametrize("flag, shown", [("--progress", True), ("--no-progress", False), (None, False)])
def test_progress_on_standard_error(model, tmp_path, capsys, flag, shown):
    source = tmp_path / "in.txt"
    source.write_text("a dog ran\n\nthe old man sat\n", encoding="utf-8")
    main(["parse", "--model", model, "--input", str(source), "--output", str(tmp_path / "out"), *filter(None, [flag])])
    err = capsys.readouterr().err
    # Without a flag the bar shows where standard error is a terminal; under pytest it is not.
    assert ("hf-structure parse: 100%" in err and "3/3" in err) == shown
    assert ("hf-structure parse:" in err) == shown


# ------------------------------------------------------------------------------------------------------ --device


def test_the_device_goes_to_the_pipeline_and_an_unusable_one_is_one_line(model, monkeypatch, capsys):
    import hf_structure.pipelines

    devices = []
    load_parser = hf_structure.pipelines.load_parser

    def recording_load_parser(path, **kwargs):
        devices.append(kwargs.get("device"))
        return load_parser(path, **kwargs)

    monkeypatch.setattr(hf_structure.pipelines, "load_parser", recording_load_parser)
    main(["parse", "--model", model, "--device", "cpu", "a dog ran"])
    assert [str(device) for device in devices] == ["cpu"]
    assert json.loads(capsys.readouterr().out)["words"] == ["a", "dog", "ran"]
    for device in ("cuda:99", "tpu-please"):  # no machine has the first; torch knows no device of the second name
        with pytest.raises(SystemExit) as exit_info:
            main(["parse", "--model", model, "--device", device, "a dog ran"])
        message = str(exit_info.value.code)
        assert message.startswith(f"hf-structure parse: --device {device}: torch ") and "devices here: cpu" in message
        assert "\n" not in message
    assert len(devices) == 1  # refused before the model loads


def test_evaluate_runs_the_model_on_the_device(model, capsys):
    main(["evaluate", "--model", model, "--treebank", str(TINY_CONLLU), "--device", "cpu"])
    assert json.loads(capsys.readouterr().out)["sentences"] == 2
    with pytest.raises(SystemExit, match=r"^hf-structure evaluate: --device cuda:99: torch "):
        main(["evaluate", "--model", model, "--treebank", str(TINY_CONLLU), "--device", "cuda:99"])


# ------------------------------------------------------------------------------------------------------ models


def test_models_lists_the_bundled_models_with_folder_size_type_and_scores(capsys):
    from hf_structure.bundled import bundled_checkpoints
    from hf_structure.registry import MODEL_SPECS

    main(["models", "--json"])
    listed = json.loads(capsys.readouterr().out)
    folders = bundled_checkpoints()
    assert [model["name"] for model in listed] == sorted(folders)
    for model in listed:
        folder = folders[model["name"]]
        assert model["folder"] == str(folder)
        assert model["size_bytes"] == sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
        assert model["model_type"] == json.loads((folder / "config.json").read_text())["model_type"]
        record = json.loads((folder / "hf_structure_eval.json").read_text())
        metrics = MODEL_SPECS[model["model_type"]].card_metrics
        keys = [metric.key for metric in metrics if record.get(metric.key) is not None]  # not a null
        assert model["dataset"] == record["dataset"] and model["scores"] == {key: record[key] for key in keys}
        assert keys  # every bundled model reports its card's scores
    main(["models"])
    text = capsys.readouterr().out
    for model in listed:
        assert f"{model['name']}  ({model['model_type']}, {model['size_bytes'] / 1e6:.1f} MB)" in text
        assert model["folder"] in text and str(next(iter(model["scores"].values()))) in text
    assert "None" not in text


# ---------------------------------------------------------------------------- a dependency parser's --draw, --svg


@pytest.fixture(scope="module")
def dependency_model(tmp_path_factory) -> str:
    """The tiny dependency parser of tests/helpers (heads and labels, no constituents), registered as a new model."""
    import torch

    from hf_structure import register_model
    from hf_structure.data.tokenization import build_word_tokenizer
    from tests.helpers.tiny_parser import TinyParserConfig, TinyParserModel
    from tests.helpers.tiny_parser_spec import MODEL_SPEC

    register_model(MODEL_SPEC)
    folder = tmp_path_factory.mktemp("cli") / "tiny-parser"
    tokenizer = build_word_tokenizer(LINES)
    torch.manual_seed(0)
    TinyParserModel(TinyParserConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id)).save_pretrained(
        folder
    )
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_draw_and_svg_of_a_dependency_parser_show_labelled_arcs_and_no_tree(dependency_model, tmp_path, capsys):
    words = "the old man sat on the bench".split()
    main(["parse", "--model", dependency_model, "--pretokenized", " ".join(words)])
    parse = json.loads(capsys.readouterr().out)
    assert parse["deprels"] == ["root"] + ["dep"] * 6 and "spans" not in parse
    svg = tmp_path / "parse.svg"
    main(["parse", "--model", dependency_model, "--pretokenized", "--draw", "--svg", str(svg), " ".join(words)])
    lines = capsys.readouterr().out.rstrip("\n").split("\n")
    assert len(lines) == len(words)  # the arcs alone: no tree above them
    assert lines[0].split()[-2:] == ["the", "root"]
    for line, head in zip(lines[1:], parse["heads"][1:]):
        assert line.split()[-4:] == ["dep", "←", str(head), words[head - 1]]
    root = ET.fromstring(svg.read_text(encoding="utf-8"))
    assert [t.text for t in root.iter(SVG + "text") if t.get("class") == "arc-label"] == ["dep"] * 6
    assert not [c for c in root.iter(SVG + "circle") if c.get("class") == "node"]


# -------------------------------------------------------------------------------------------------- CoNLL-U in

CONLLU_IN = (
    "# newdoc id = d1\n"
    "# sent_id = d1-1\n"
    "# text = The old man didn't sit.\n"
    "#a comment without a value\n"
    "1\tThe\tthe\tDET\tDT\tDefinite=Def\t3\tdet\t_\t_\n"
    "2\told\told\tADJ\tJJ\t_\t_\t_\t_\t_\n"
    "3\tman\tman\tNOUN\tNN\t_\t_\t_\t_\t_\n"
    "4-5\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "4\tdid\tdo\tAUX\tVBD\t_\t_\t_\t_\t_\n"
    "5\tn't\tnot\tPART\tRB\t_\t_\t_\t_\t_\n"
    "6\tsit\tsit\tVERB\tVB\t_\t_\t_\t_\tSpaceAfter=No\n"
    "6.1\tsat\tsit\tVERB\t_\t_\t_\t_\t6:conj\t_\n"
    "7\t.\t.\tPUNCT\t.\t_\t_\t_\t_\t_\n"
    "\n"
    "# sent_id = d1-2\n"
    "1\ta dog\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "2\tran\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "\n"
    "# sent_id = d1-3\n"
    "1\tA\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "2\tdog\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "3\tran\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "\n"
)


@pytest.mark.parametrize("suffix, flags", [(".conllu", []), (".txt", ["--input-format", "conllu"])])
def test_a_conllu_file_is_parsed_with_its_own_words_into_a_conllu_file(model, tmp_path, capsys, suffix, flags):
    source, out = tmp_path / f"in{suffix}", tmp_path / "out.conllu"
    source.write_text(CONLLU_IN, encoding="utf-8")
    main(["parse", "--model", model, "--input", str(source), "--output", str(out), *flags])
    written = out.read_text(encoding="utf-8")
    assert "1 of 3 sentences could not be parsed" in capsys.readouterr().err
    main(["parse", "--model", model, "--pretokenized", "The old man did n't sit .", "A dog ran"])
    expected = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # Every line as it was but HEAD and DEPREL, taken from the parse of the sentence's own words, DEPS `_`, and the
    # empty node 6.1, a node of the input's enhanced graph, which the new tree replaces.
    rows = [line.split("\t") for line in written.split("\n") if not line.startswith("# error = ")]
    given = [line.split("\t") for line in CONLLU_IN.split("\n") if not line.startswith("6.1\t")]
    assert len(rows) == len(given)
    words = {
        0: iter(zip(expected[0]["heads"], ["root" if h == 0 else "dep" for h in expected[0]["heads"]])),
        2: iter(zip(expected[1]["heads"], ["root" if h == 0 else "dep" for h in expected[1]["heads"]])),
    }
    sentence = 0
    for row, before in zip(rows, given):
        if before == [""]:
            sentence += 1
        if len(before) == 10 and before[0].isdigit() and sentence in words:
            head, deprel = next(words[sentence])
            assert row == before[:6] + [str(head), deprel, "_"] + before[9:]
        elif len(before) == 10 and before[0].isdigit():  # the sentence that could not be parsed: no stale value
            assert row == before[:6] + ["_", "_", "_"] + before[9:]
        else:
            assert row == before
    error = "sentence 2 (line 15): word 1 ('a dog') is empty or contains whitespace"
    assert f"# sent_id = d1-2\n# error = {error}\n" in written


def test_a_treebank_with_enhanced_graphs_is_written_back_without_them(model, tmp_path, capsys):
    """EWT dev sentences whose DEPS hold enhanced edges (and an empty node): the parse replaces HEAD and DEPREL, so
    the input's enhanced graph, which no longer matches, is not written."""
    import conllu

    out = tmp_path / "out.conllu"
    main(["parse", "--model", model, "--input", str(FIXTURES / "ewt_dev_enhanced.conllu"), "--output", str(out)])
    capsys.readouterr()
    written = conllu.parse(out.read_text(encoding="utf-8"))
    words = [token for sentence in written for token in sentence if isinstance(token["id"], int)]
    assert len(words) == 5 + 4 + 23 and all(token["deps"] is None for token in words)
    assert all("." not in str(token["id"]) for sentence in written for token in sentence)  # no empty node 11.1
    main(["parse", "--model", model, "--pretokenized", "He will come and eat"])
    assert [token["head"] for token in written[0]] == json.loads(capsys.readouterr().out)["heads"]


def test_a_conllu_file_to_json_and_drawings(model, tmp_path, capsys):
    source = tmp_path / "in.conllu"
    source.write_text(CONLLU_IN, encoding="utf-8")
    main(["parse", "--model", model, "--input", str(source), "--json"])
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [result["sent_id"] for result in results] == ["d1-1", "d1-2", "d1-3"]
    assert results[0]["words"] == ["The", "old", "man", "did", "n't", "sit", "."] and "error" in results[1]
    check_line(results[2], ["A", "dog", "ran"])
    main(["parse", "--model", model, "--input", str(source), "--draw"])
    drawings = capsys.readouterr().out
    assert drawings.count("root") == 2 and "# error = sentence 2 (line 15): " in drawings
    assert drawings.index(" 5 n't ") < drawings.index("# error") < drawings.index(" 3 ran ")


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("1\tA\t_\t_\t_\t_\t0\troot\t_\n", 1, "expected 10 tab-separated columns, got 9"),
        (
            "# sent_id = 1\n1\tA\t_\t_\t_\t_\t0\troot\t_\t_\n\n\n1\tA\t_\t_\t_\t_\t0\troot\t_\t_\n"
            "x\tB\t_\t_\t_\t_\t1\tdep\t_\t_\n",
            6,
            "'x' is not a valid ID",
        ),
        ("1\tA\t_\t_\t_\t_\t0\troot\t_\t_\n3\tB\t_\t_\t_\t_\t1\tdep\t_\t_\n", 2, "word ID 3 where 2 was expected"),
    ],
)
def test_bad_conllu_input_is_one_line_naming_file_and_line_before_the_model_loads(tmp_path, text, line, message):
    source = tmp_path / "bad.conllu"
    source.write_text(text, encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["parse", "--model", "no-such-model", "--input", str(source)])
    assert str(exit_info.value.code).startswith(f"hf-structure parse: {source}:{line}: ")
    assert message in str(exit_info.value.code) and "\n" not in str(exit_info.value.code)


def test_a_model_without_heads_cannot_write_conllu_for_a_conllu_file(spans_only_model, tmp_path, capsys):
    source = tmp_path / "in.conllu"
    source.write_text(CONLLU_IN, encoding="utf-8")
    with pytest.raises(SystemExit, match="CoNLL-U output .* gives no dependency heads"):
        main(["parse", "--model", spans_only_model, "--input", str(source)])
    main(["parse", "--model", spans_only_model, "--input", str(source), "--json"])
    assert len(capsys.readouterr().out.splitlines()) == 3


# ------------------------------------------------------------------------------------------- sentence splitting


def test_raw_text_lines_are_split_into_sentences_each_naming_its_line(model, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("The old man sat. A dog ran!\n\n. , !\nIt rained.\n", encoding="utf-8")
    main(["parse", "--model", model, "--input", str(source)])
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [result["line"] for result in results] == [1, 1, 2, 3, 4]
    assert [result["words"] for result in results] == [
        ["The", "old", "man", "sat", "."],
        ["A", "dog", "ran", "!"],
        [],
        [".", ",", "!"],
        ["It", "rained", "."],
    ]
    assert [result.get("text") for result in results] == ["The old man sat.", "A dog ran!", None, ". , !", "It rained."]
    assert results[1]["offsets"] == [[17, 18], [19, 22], [23, 26], [26, 27]] and results[3]["heads"] == [0, 1, 1]
    main(["parse", "--model", model, "--input", str(source), "--no-split-sentences"])
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [result["words"] for result in results] == [
        ["The", "old", "man", "sat", ".", "A", "dog", "ran", "!"],
        [],
        [".", ",", "!"],
        ["It", "rained", "."],
    ]
    assert not any("line" in result for result in results)


def test_split_sentences_as_conllu_drawings_and_svg(model, tmp_path, capsys):
    import conllu

    main(["parse", "--model", model, "--conllu", "The old man sat. A dog ran!", "", "It rained."])
    blocks = conllu.parse(capsys.readouterr().out)
    assert [block.metadata.get("sent_id") for block in blocks] == ["1", "2", None, "3"]
    assert ["newpar" in block.metadata for block in blocks] == [True, False, True, True]
    assert [block.metadata.get("text") for block in blocks] == ["The old man sat.", "A dog ran!", None, "It rained."]
    assert [token["misc"] for token in blocks[1]] == [None, None, {"SpaceAfter": "No"}, None]
    svg = tmp_path / "parse.svg"
    main(["parse", "--model", model, "--draw", "--svg", str(svg), "The old man sat. A dog ran!", "It rained."])
    assert capsys.readouterr().out.count("root") == 3
    for name, words in (
        ("parse-1-1", ["The", "old", "man", "sat", "."]),
        ("parse-1-2", ["A", "dog", "ran", "!"]),
        ("parse-2", ["It", "rained", "."]),
    ):
        root = ET.fromstring((tmp_path / f"{name}.svg").read_text(encoding="utf-8"))
        assert [t.text for t in root.iter(SVG + "text") if t.get("class") == "word"] == words
    assert not svg.exists()


def test_a_file_saved_with_a_byte_order_mark_parses_as_without_it(model, tmp_path, capsys):
    plain, marked = tmp_path / "plain.txt", tmp_path / "marked.txt"
    plain.write_text("the dog ran\na cat sat\n", encoding="utf-8")
    marked.write_text("the dog ran\na cat sat\n", encoding="utf-8-sig")
    outputs = []
    for source in (plain, marked):
        main(["parse", "--model", model, "--pretokenized", "--input", str(source)])
        outputs.append([json.loads(line) for line in capsys.readouterr().out.splitlines()])
    assert outputs[1] == outputs[0] and outputs[1][0]["words"][0] == "the"
    conllu_file = tmp_path / "marked.conllu"
    conllu_file.write_text(TINY_CONLLU.read_text(encoding="utf-8"), encoding="utf-8-sig")
    main(["parse", "--model", model, "--input", str(conllu_file)])
    assert capsys.readouterr().out.strip()


@pytest.mark.parametrize("output_format", [[], ["--conllu"]])
def test_two_processes_under_torchrun_write_what_one_process_writes(model, tmp_path, output_format):
    # Lines of one and two sentences and blank ones: in CoNLL-U, the sentences of raw text are numbered across parts.
    lines = [("The dog ran. " * (k % 3)).strip() or "" for k in range(41)]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    arguments = ["-m", "hf_structure.cli", "parse", "--model", model, "--input", str(source), *output_format]
    one = subprocess.run(
        [sys.executable, *arguments, "--output", str(tmp_path / "one")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert one.returncode == 0, one.stderr[-3000:]
    launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--standalone"]
    two = subprocess.run(
        [*launcher, *arguments, "--output", str(tmp_path / "two")], env=env, capture_output=True, text=True, timeout=300
    )
    assert two.returncode == 0, two.stderr[-3000:]
    assert (tmp_path / "two").read_bytes() == (tmp_path / "one").read_bytes()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.txt", "one", "two"]  # no part left behind


def test_several_processes_need_an_input_file_and_an_output_file(model, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(SystemExit, match=r"^hf-structure parse: in 2 processes, give --input FILE .* --output FILE"):
        main(["parse", "--model", model, "a dog ran"])


def test_word_convention_flag_cuts_raw_text_as_asked(dependency_model, capsys):
    """The tiny parser states no convention (the Penn Treebank's words); --word-convention ud cuts as EWT does."""
    text = "The well-known and/or odd one."
    main(["parse", "--model", dependency_model, text])
    assert json.loads(capsys.readouterr().out)["words"] == ["The", "well-known", "and/or", "odd", "one", "."]
    main(["parse", "--model", dependency_model, "--word-convention", "ud", text])
    assert json.loads(capsys.readouterr().out)["words"] == [
        "The",
        "well",
        "-",
        "known",
        "and",
        "/",
        "or",
        "odd",
        "one",
        ".",
    ]
    with pytest.raises(SystemExit):
        main(["parse", "--model", dependency_model, "--word-convention", "spacy", text])
