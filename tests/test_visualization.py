"""Drawing parses: the terminal drawing (`draw_text`) and the SVG picture (`render_svg`, `save_svg`)."""

import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from hf_structure.visualization import LABEL_CHAR_WIDTH, LABEL_FONT_SIZE, draw_text, render_svg, save_svg

SVG = "{http://www.w3.org/2000/svg}"
# A hand-made parse (a pipeline result): "The old <b>& sat on the bench ."
RESULT: dict[str, Any] = {
    "words": ["The", "old", "<b>&", "sat", "on", "the", "bench", "."],
    "tree": "((The (old <b>&)) (sat (on (the bench))) .)",
    "spans": [[0, 8], [0, 3], [1, 3], [3, 7], [4, 7], [5, 7]],
    "heads": [3, 3, 4, 0, 4, 7, 5, 4],
}
# Left-branching with words hanging beside subtrees: nltk's printer reorders such leaves unless told the order.
LEFT = {"words": ["a", "b", "c", "d"], "spans": [[0, 4], [0, 3], [0, 2]], "heads": [2, 3, 4, 0]}
SINGLE = {"words": ["Hello"], "spans": [[0, 1]], "heads": [0]}
CASES = [RESULT, LEFT, SINGLE]


def tree_part(drawing: str) -> list[str]:
    return drawing.split("\n\n")[0].splitlines()


def dependency_part(drawing: str) -> list[str]:
    return drawing.split("\n\n")[1].splitlines()


@pytest.mark.parametrize("result", CASES, ids=["sentence", "left-branching", "one-word"])
def test_draw_text(result):
    drawing = draw_text(result)
    words, heads = result["words"], result["heads"]
    for word in words:
        assert word in drawing
    # Constituency tree: one X per constituent, the words in sentence order on the last line.
    tree = tree_part(drawing)
    assert sum(line.split().count("X") for line in tree) == len(result["spans"])
    bottom, position = tree[-1], -1
    for word in words:
        position = bottom.index(word, position + 1)
    # Dependencies: one line per word, one arrow per non-root word, its head named at the end.
    lines = dependency_part(drawing)
    assert len(lines) == len(words)
    assert drawing.count("►") == sum(head != 0 for head in heads)
    for i, (line, word, head) in enumerate(zip(lines, words, heads)):
        assert f" {i + 1} {word}" in line
        if head == 0:
            assert line.endswith("root") and "►" not in line
        else:
            assert line.endswith(f"← {head} {words[head - 1]}") and "►" in line


def test_draw_text_arcs_join_head_and_dependent():
    """Follow each arrow back along the box lines: it must reach its head's row."""
    lines = dependency_part(draw_text(RESULT))
    grid = [line[: line.index(f" {i + 1} {word}")] for i, (line, word) in enumerate(zip(lines, RESULT["words"]))]
    width = len(grid[0])
    assert all(len(row) == width for row in grid)
    for dependent, head in enumerate(RESULT["heads"]):
        if head == 0:
            continue
        rows_with_lines = [r for r in range(len(grid)) if grid[r].strip()]
        assert dependent in rows_with_lines and head - 1 in rows_with_lines
        low, high = sorted((dependent, head - 1))
        # some column holds an unbroken vertical line between the two rows
        assert any(
            grid[low][c] in "┌┬├┼"
            and grid[high][c] in "└┴├┼"
            and all(grid[r][c] in "│├┤┼" for r in range(low + 1, high))
            for c in range(width)
        )


def word_centres(root) -> list[float]:
    return [float(t.attrib["x"]) for t in root.iter(SVG + "text") if t.get("class") == "word"]


@pytest.mark.parametrize("result", CASES, ids=["sentence", "left-branching", "one-word"])
def test_svg(result):
    svg = render_svg(result)
    root = ET.fromstring(svg)  # valid XML
    assert root.tag == SVG + "svg" and float(root.attrib["width"]) > 0 and float(root.attrib["height"]) > 0
    words = [t.text for t in root.iter(SVG + "text") if t.get("class") == "word"]
    assert words == result["words"]
    nodes = [c for c in root.iter(SVG + "circle") if c.get("class") == "node"]
    assert len(nodes) == len(result["spans"])
    arcs = [p for p in root.iter(SVG + "path") if p.get("class") == "arc"]
    assert len(arcs) == sum(head != 0 for head in result["heads"])
    assert all(arc.get("marker-end") == "url(#arrow)" for arc in arcs)
    assert root.find(f"{SVG}defs/{SVG}marker[@id='arrow']") is not None
    roots = [line for line in root.iter(SVG + "line") if line.get("class") == "root"]
    assert len(roots) == result["heads"].count(0)
    # Each arc runs from (beside) its head's centre to its dependent's centre.
    centres = word_centres(root)
    arcs_by_end = []
    for arc in arcs:
        numbers = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", arc.attrib["d"])]
        arcs_by_end.append((numbers[0], numbers[-2]))
    expected = [(centres[h - 1], centres[d]) for d, h in enumerate(result["heads"]) if h]
    assert len(arcs_by_end) == len(expected)
    for (start, end), (head_x, dependent_x) in zip(arcs_by_end, expected):
        assert abs(start - head_x) <= 5 and abs(end - dependent_x) < 0.1
    # Tree edges: every node reaches its children, the words hang from the tree.
    edges = [line for line in root.iter(SVG + "line") if line.get("class") == "edge"]
    assert len(edges) == len(result["spans"]) - 1 + len(result["words"])
    # Words sit left to right, the tree above them and the arcs below.
    assert centres == sorted(centres)
    word_y = float(next(t for t in root.iter(SVG + "text") if t.get("class") == "word").attrib["y"])
    assert all(float(node.attrib["cy"]) < word_y for node in nodes)
    assert all(float(arc.attrib["d"].split(",")[1].split()[0]) > word_y for arc in arcs)


def test_svg_escapes_words():
    svg = render_svg(RESULT)
    assert "&lt;b&gt;&amp;" in svg and "<b>&" not in svg
    quoted = dict(RESULT, words=['"q"', "it's", "<", ">", "&amp;", "b", "c", "d"])
    root = ET.fromstring(render_svg(quoted))
    assert [t.text for t in root.iter(SVG + "text") if t.get("class") == "word"] == quoted["words"]


def test_save_svg(tmp_path):
    path = save_svg(RESULT, tmp_path / "parse.svg")
    assert path.read_text(encoding="utf-8") == render_svg(RESULT)
    ET.parse(path)


def test_accepts_a_pipeline_result_with_extras():
    import nltk

    extras = dict(RESULT, distances=[0.1] * 6, heights=[0.2] * 7, nltk_tree=nltk.Tree("X", RESULT["words"]))
    assert draw_text(extras) == draw_text(RESULT)
    assert render_svg(extras) == render_svg(RESULT)


# A constituency-only parse (as R2D2 gives) and a dependency-only one (as the supervised parsers give).
SPANS_ONLY = {key: value for key, value in RESULT.items() if key != "heads"}
HEADS_ONLY = {"words": RESULT["words"], "heads": RESULT["heads"], "deprels": ["det"] * 8}


def test_draw_text_of_a_parse_without_heads_is_the_tree_alone():
    drawing = draw_text(SPANS_ONLY)
    assert drawing.splitlines() == tree_part(draw_text(RESULT))
    assert sum(line.split().count("X") for line in drawing.splitlines()) == len(RESULT["spans"])
    assert "►" not in drawing and "root" not in drawing


def test_draw_text_of_a_parse_without_spans_is_the_arcs_alone():
    unlabelled = {key: value for key, value in HEADS_ONLY.items() if key != "deprels"}
    assert draw_text(unlabelled).splitlines() == dependency_part(draw_text(RESULT))
    drawing = draw_text(HEADS_ONLY)  # a dependency parser's parse: its labelled arcs, no tree at all
    assert "X" not in drawing and "\n\n" not in drawing and drawing.count("►") == 7
    assert [line.split("  ")[-2:] for line in drawing.splitlines() if "←" in line][0] == ["det", "← 3 <b>&"]


LABELLED = dict(RESULT, deprels=["det", "amod", "nsubj", "root", "case", "det", "obl:npmod", "punct"])


def test_draw_text_shows_each_words_label_in_a_column_before_its_head():
    lines = dependency_part(draw_text(LABELLED))
    assert len(lines) == len(LABELLED["words"])
    label_column = {line.index(label) for line, label in zip(lines, LABELLED["deprels"])}
    head_column = {line.index("←") for line in lines if "←" in line}
    assert len(label_column) == 1 and len(head_column) == 1  # a long label (obl:npmod) shifts no column
    assert head_column.pop() == label_column.pop() + len("obl:npmod") + 2
    for line, word, label, head in zip(lines, LABELLED["words"], LABELLED["deprels"], LABELLED["heads"]):
        if head == 0:
            assert line.split()[-2:] == [word, "root"] and "►" not in line  # `root` once, not `root  root`
        else:
            assert line.endswith(f"{label}{' ' * (11 - len(label))}← {head} {LABELLED['words'][head - 1]}")
    other_root = dict(LABELLED, deprels=["det", "amod", "nsubj", "ccomp", "case", "det", "obl", "punct"])
    assert dependency_part(draw_text(other_root))[3].endswith("sat    ccomp  root")


def test_svg_labels_each_arc_at_its_lowest_point_and_the_root_with_its_label():
    root = ET.fromstring(render_svg(LABELLED))
    arcs = [p for p in root.iter(SVG + "path") if p.get("class") == "arc"]
    labels = [t for t in root.iter(SVG + "text") if t.get("class") == "arc-label"]
    expected = [label for label, head in zip(LABELLED["deprels"], LABELLED["heads"]) if head]
    assert [label.text for label in labels] == expected
    for arc, label in zip(arcs, labels):  # the label sits on the middle of its own arc, below the words
        numbers = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", arc.attrib["d"])]
        start_x, start_y, bottom = numbers[0], numbers[1], numbers[3]
        assert abs(float(label.attrib["x"]) - (start_x + numbers[-2]) / 2) < 0.1
        assert start_y < float(label.attrib["y"]) < bottom + LABEL_FONT_SIZE
    boxes = [r for r in root.iter(SVG + "rect") if r.get("class") == "arc-label-box"]
    assert len(boxes) == len(labels)
    assert [t.text for t in root.iter(SVG + "text") if t.get("class") == "root-label"] == ["root"]
    # Neighbours are far enough apart for the longest label to fit between their centres.
    centres = word_centres(root)
    assert min(b - a for a, b in zip(centres, centres[1:])) >= len("obl:npmod") * LABEL_CHAR_WIDTH
    unlabelled = ET.fromstring(render_svg(RESULT))
    assert not [t for t in unlabelled.iter(SVG + "text") if t.get("class") == "arc-label"]


def test_svg_of_a_parse_without_heads_or_spans_draws_what_is_there():
    for result, has_tree in ((SPANS_ONLY, True), (HEADS_ONLY, False)):
        root = ET.fromstring(render_svg(result))
        assert [t.text for t in root.iter(SVG + "text") if t.get("class") == "word"] == result["words"]
        nodes = [c for c in root.iter(SVG + "circle") if c.get("class") == "node"]
        edges = [line for line in root.iter(SVG + "line") if line.get("class") == "edge"]
        arcs = [p for p in root.iter(SVG + "path") if p.get("class") == "arc"]
        roots = [line for line in root.iter(SVG + "line") if line.get("class") == "root"]
        if has_tree:
            assert len(nodes) == len(RESULT["spans"]) and len(edges) == len(RESULT["spans"]) - 1 + 8
            assert not arcs and not roots
            # no room is left below the words for arcs that are not there
            word_y = float(next(t for t in root.iter(SVG + "text") if t.get("class") == "word").attrib["y"])
            assert float(root.attrib["height"]) < word_y + 40
        else:
            assert not nodes and not edges
            assert len(arcs) == 7 and len(roots) == 1


def test_a_parse_with_nothing_to_draw_is_a_clear_error():
    for draw in (draw_text, render_svg):
        with pytest.raises(ValueError, match="nothing to draw: the parse has neither `spans` nor `heads`"):
            draw({"words": ["a", "dog"]})
