"""`hf-structure parse` on a tiny random model: JSON lines, pre-tokenized and raw input, `--draw`, `--svg`, and
clean errors."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hf_structure.cli import main

from tests.helpers.paths import FIXTURES, ROOT
from tests.helpers.tiny_models import save_tiny_model

TINY_CONLLU = FIXTURES / "tiny.conllu"
LINES = ["the old man sat on the bench", "a dog ran", "the dog , old , ran"]
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("cli") / "tiny"
    save_tiny_model(folder, max_position_embeddings=16)
    return str(folder)


def save_tiny_r2d2(folder: Path) -> Path:
    """A tiny random R2D2 with a word tokenizer: a model whose parses give spans and no heads, and whose `parse`
    takes no `head_decoding`."""
    import torch

    from hf_structure import R2D2Config, R2D2ForLanguageModeling
    from hf_structure.data.tokenization import build_word_tokenizer

    tokenizer = build_word_tokenizer(LINES)
    torch.manual_seed(0)
    config = R2D2Config(vocab_size=len(tokenizer), hidden_size=16, num_attention_heads=2, intermediate_size=32,
                        num_composition_layers=1, window_size=2, parse_window_size=3)
    R2D2ForLanguageModeling(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def spans_only_model(tmp_path_factory) -> str:
    return str(save_tiny_r2d2(tmp_path_factory.mktemp("cli") / "tiny-r2d2"))


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


def test_a_bad_line_gets_an_error_and_the_others_are_parsed(model, tmp_path, capsys):
    source, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
    source.write_text("a dog ran\n. , !\nthe old\x00man\n\nthe man sat\n", encoding="utf-8")
    main(["parse", "--model", model, "--input", str(source), "--output", str(out)])
    results = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["words"] for r in results] == [["a", "dog", "ran"], [".", ",", "!"], ["the", "old\x00man"], [],
                                            ["the", "man", "sat"]]
    assert results[1]["error"] == "line 2: no word besides punctuation: '. , !'"
    assert "control character" in results[2]["error"] and "heads" not in results[2]
    check_line(results[0], ["a", "dog", "ran"])
    check_line(results[4], ["the", "man", "sat"])
    assert "2 of 5 lines could not be parsed" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["parse", "--model", model, "--input", str(source), "--output", str(out), "--strict"])
    assert exit_info.value.code == 1


def test_io_problems_are_reported_before_parsing(model, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("a dog ran\n", encoding="utf-8")
    missing = tmp_path / "nowhere" / "out.jsonl"
    with pytest.raises(SystemExit, match=f"cannot write {missing}: folder .* does not exist"):
        main(["parse", "--model", "no-such-model", "--input", str(source), "--output",
              str(tmp_path / "nowhere" / "out.jsonl")])
    (tmp_path / "binary").write_bytes(b"a dog\n\xff\xfe\x00\x01")
    with pytest.raises(SystemExit, match=f"{tmp_path / 'binary'}:2: not UTF-8 text"):
        main(["parse", "--model", "no-such-model", "--input", str(tmp_path / "binary")])
    with pytest.raises(SystemExit, match="cannot read input file"):
        main(["parse", "--model", "no-such-model", "--input", str(tmp_path / "missing.txt")])


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
    assert [len(block) for block in blocks] == [3, 0, 0, 4]
    assert [block.metadata["sent_id"] for block in blocks] == ["1", "2", "3", "4"]  # the input line's number
    assert [blocks[i].metadata.get("text") for i in (0, 2, 3)] == ["a dog ran", ". , !", "the old man sat"]
    assert "no word besides punctuation" in blocks[2].metadata["error"]
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
    import torch

    from hf_structure.data.tokenization import build_word_tokenizer
    from hf_structure.models.r2d2 import R2D2Config, R2D2ForLanguageModeling

    folder = tmp_path / "fast"
    tokenizer = build_word_tokenizer(["the old man sat on the bench"])
    torch.manual_seed(0)
    config = R2D2Config(vocab_size=len(tokenizer), hidden_size=16, num_attention_heads=2, intermediate_size=32,
                        num_composition_layers=1, window_size=2, pruning="parser", parser_embedding_size=8,
                        parser_hidden_size=8, parser_num_layers=1)
    model = R2D2ForLanguageModeling(config)
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
    arguments = {"parse": ["--model", model, "a dog ran"],
                 "evaluate": ["--treebank", str(TINY_CONLLU), "--baseline", "left-branching"]}[command]
    with pytest.raises(SystemExit) as exit_info:
        main([command, *arguments, "--batch-size", value])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"hf-structure {command}: error: argument --batch-size: expected a whole number of at least 1, got '{value}'"
    )


def test_input_lines_end_at_line_feeds_only(model, tmp_path):
    # Each of these characters ends a line for `str.splitlines`; here each sits inside one line of the file.
    lines = ["The man sat\x0cDogs bark .", "a dog\x1cran", "the\x85old man", "a dog\u2028ran", "\x0c", "the man sat"]
    results = {}
    for ending in ("\n", "\r\n"):
        source, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
        source.write_text(ending.join(lines) + ending, encoding="utf-8", newline="")
        main(["parse", "--model", model, "--input", str(source), "--output", str(out)])
        results[ending] = [json.loads(line) for line in out.read_text(encoding="utf-8").split("\n")[:-1]]
    assert results["\n"] == results["\r\n"] and len(results["\n"]) == len(lines)
    parsed = results["\n"]
    for result in parsed[:4]:  # parsed, or refused with the line's own error
        assert ("heads" in result) != ("error" in result)
    assert parsed[4] == {"words": []}
    check_line(parsed[5], ["the", "man", "sat"])


@pytest.mark.parametrize("name, closest", [("structformer_ptb", "structformer-ptb"), ("does-not-exist", None)])
@pytest.mark.parametrize("command", [["parse", "a dog ran"], ["evaluate", "--treebank", str(TINY_CONLLU)]],
                         ids=["parse", "evaluate"])
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
