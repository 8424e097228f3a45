"""Drawing a parse (a pipeline result: `words`, `spans`, `heads`) in the terminal or as one SVG picture.

- `draw_text(result)`: the constituency tree drawn with nltk's tree pretty-printer, then the dependency arcs drawn
  beside the words, one word a line (an arrow `►` points at each dependent; the root word is marked `root`), each
  dependent's relation label (`deprels`) in a column of its own before its head.
- `render_svg(result)` / `save_svg(result, path)`: one standalone SVG with the constituency tree above the words
  and the dependency arcs (curved, head -> dependent, arrowhead on the dependent, labelled at their lowest point as
  displaCy labels its arcs) below the same words.

Spans are 0-based `[start, end)` (constituents of two or more words; the whole sentence included), heads 1-based
with 0 for the root, as the `unsupervised-parsing` pipeline returns them. Only what a parse holds is drawn: spans
and no heads give the tree alone, heads and no spans the arcs alone.
"""

from pathlib import Path
from xml.sax.saxutils import escape

from .file_modes import written_whole

# ---------------------------------------------------------------------------------------------------------------
# Shared structure


def _constituents(result) -> list[tuple[int, int]]:
    """The distinct spans of the result, outermost first (sorted by start, longer first)."""
    n = len(result["words"])
    spans = {tuple(span) for span in result.get("spans", ()) if 0 <= span[0] < span[1] <= n}
    return sorted(spans, key=lambda span: (span[0], -span[1]))


def _tree_children(n: int, spans: list[tuple[int, int]]) -> dict:
    """`children[node]`: the ordered children of each span, each a span (a constituent) or an int (a word)."""
    children: dict[tuple[int, int], list[tuple[int, int] | int]] = {span: [] for span in spans}
    parent_of_span: dict[tuple[int, int], tuple[int, int]] = {}
    stack: list[tuple[int, int]] = []
    for span in spans:  # outermost first: the innermost open span that contains it is its parent
        while stack and not (stack[-1][0] <= span[0] and span[1] <= stack[-1][1]):
            stack.pop()
        if stack:
            parent_of_span[span] = stack[-1]
        stack.append(span)
    for span, parent in parent_of_span.items():
        children[parent].append(span)
    for word in range(n):
        containing = [span for span in spans if span[0] <= word < span[1]]
        if containing:
            children[min(containing, key=lambda span: span[1] - span[0])].append(word)
    for span in spans:
        children[span].sort(key=lambda child: child if isinstance(child, int) else child[0])
    return children


def _arcs(heads) -> list[tuple[int, int]]:
    """(head, dependent) pairs, 0-based, of every non-root word."""
    return [(head - 1, dependent) for dependent, head in enumerate(heads) if head > 0]


# ---------------------------------------------------------------------------------------------------------------
# Terminal drawing

_BOX: dict[tuple[int, ...], str] = {  # (up, down, left, right) -> box-drawing character
    (1, 1, 0, 0): "│", (1, 0, 0, 0): "│", (0, 1, 0, 0): "│",
    (0, 0, 1, 1): "─", (0, 0, 1, 0): "─", (0, 0, 0, 1): "─",
    (0, 1, 0, 1): "┌", (1, 0, 0, 1): "└", (0, 1, 1, 0): "┐", (1, 0, 1, 0): "┘",
    (1, 1, 0, 1): "├", (1, 1, 1, 0): "┤", (0, 1, 1, 1): "┬", (1, 0, 1, 1): "┴",
    (1, 1, 1, 1): "┼",
}  # fmt: skip


def _arc_levels(arcs) -> list[int]:
    """A column (0 = next to the words) for each arc: shorter arcs inside, and two arcs share a column only where
    they do not overlap (touching at one row only when that row is the head of both)."""
    levels = [0] * len(arcs)
    taken: list[list[tuple[int, int, int]]] = []  # per level: (top, bottom, head)
    for index in sorted(range(len(arcs)), key=lambda k: (abs(arcs[k][0] - arcs[k][1]), min(arcs[k]))):
        head, dependent = arcs[index]
        top, bottom = min(head, dependent), max(head, dependent)
        for level, occupied in enumerate(taken + [[]]):
            clash = False
            for t, b, h in occupied:
                if top < b and t < bottom:  # overlap on more than one row
                    clash = True
                elif top == b or bottom == t:  # touching at one row: fine only where both arcs leave from it
                    row = top if top == b else bottom
                    clash = clash or not (head == h == row)
            if not clash:
                if level == len(taken):
                    taken.append([])
                taken[level].append((top, bottom, head))
                levels[index] = level
                break
    return levels


def _dependency_text(words, heads, deprels=None) -> list[str]:
    arcs = _arcs(heads)
    levels = _arc_levels(arcs)
    depth = max(levels, default=-1) + 1
    width = 2 * depth + 1  # columns 0 .. 2*depth - 2 hold vertical lines; the last column the arrows
    cells = [[[0, 0, 0, 0] for _ in range(width)] for _ in words]  # up, down, left, right
    for (head, dependent), level in zip(arcs, levels):
        column = 2 * (depth - 1 - level)
        top, bottom = min(head, dependent), max(head, dependent)
        cells[top][column][1] = cells[bottom][column][0] = 1
        for row in range(top + 1, bottom):
            cells[row][column][0] = cells[row][column][1] = 1
        for row in (top, bottom):
            cells[row][column][3] = 1
            for x in range(column + 1, width):
                cells[row][x][2] = cells[row][x][3] = 1
    dependents = {dependent for _, dependent in arcs}
    number_width, word_width = len(str(len(words))), max(map(len, words))
    # Labels get a column of their own, as wide as the longest: a long label (`nmod:poss`) shifts no other column.
    label_width = max(map(len, deprels), default=0) if deprels else 0
    lines = []
    for i, (word, head) in enumerate(zip(words, heads)):
        gutter = "".join(_BOX.get(tuple(cell), " ") for cell in cells[i][:-1])
        end = "►" if i in dependents else "─" if any(cells[i][-1]) else " "
        if deprels and head == 0:
            relation = "root" if deprels[i] == "root" else f"{deprels[i]:<{label_width}}  root"
        elif deprels:
            relation = f"{deprels[i]:<{label_width}}  ← {head} {words[head - 1]}"
        else:
            relation = "root" if head == 0 else f"← {head} {words[head - 1]}"
        lines.append(f"{gutter}{end} {i + 1:>{number_width}} {word:<{word_width}}  {relation}".rstrip())
    return lines


def _check_drawable(result) -> None:
    if "spans" not in result and "heads" not in result:
        raise ValueError("nothing to draw: the parse has neither `spans` nor `heads`")


def _tree_text(words, result) -> list[str]:
    """The constituency tree drawn by nltk's pretty-printer (unicode lines), words on the last line."""
    import nltk
    from nltk.tree import TreePrettyPrinter

    spans = _constituents(result)
    children = _tree_children(len(words), spans)

    def build(span):
        # Integer leaves (indices into `words`): the printer keeps them in sentence order.
        return nltk.Tree("X", [child if isinstance(child, int) else build(child) for child in children[span]])

    roots = [span for span in spans if not any(p[0] <= span[0] and span[1] <= p[1] and p != span for p in spans)]
    if roots == [(0, len(words))]:
        tree = build(roots[0])
    else:  # no whole-sentence span: draw a top node over what is there
        covered = {word for root in roots for word in range(*root)}
        top = [build(root) for root in roots] + [word for word in range(len(words)) if word not in covered]
        tree = nltk.Tree("X", sorted(top, key=lambda c: c if isinstance(c, int) else min(c.leaves())))
    drawing = TreePrettyPrinter(tree, sentence=words).text(unicodelines=True, maxwidth=max(map(len, words)) + 1)
    return [line.rstrip() for line in drawing.splitlines() if line.strip()]


def draw_text(result) -> str:
    """The constituency tree (nltk's pretty-printer, unicode lines) followed, after a blank line, by the dependency
    arcs, one word a line: a `►` points at each dependent from its head, and every line ends with `← HEAD WORD` or
    `root`; with `deprels`, each line shows its word's label first (`nsubj  ← 4 sat`). A parse without `heads` gives
    the tree alone, one without `spans` the arcs alone."""
    _check_drawable(result)
    words = [str(word) for word in result["words"]]
    if not words:
        return ""
    parts = []
    if "spans" in result:
        parts.append("\n".join(_tree_text(words, result)))
    if "heads" in result:
        parts.append("\n".join(_dependency_text(words, list(result["heads"]), result.get("deprels"))))
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------------------------------------------
# SVG

CHAR_WIDTH, FONT_SIZE, WORD_GAP = 8.4, 14, 18  # monospace estimate of a word's width
LABEL_CHAR_WIDTH, LABEL_FONT_SIZE = 6.6, 11  # arc labels
LEVEL_HEIGHT, ARC_STEP, MARGIN = 42, 26, 20


def _word_centres(words, label_width: float = 0) -> tuple[list[float], float]:
    """The x of each word's centre, and the picture's width. Each word's room is at least `label_width`, so that
    the label of an arc between neighbours fits between their centres."""
    centres: list[float] = []
    x: float = MARGIN
    for word in words:
        width = max(len(word) * CHAR_WIDTH, 2 * CHAR_WIDTH, label_width) + WORD_GAP
        centres.append(x + width / 2)
        x += width
    return centres, x + MARGIN


def _arc_heights(arcs) -> list[int]:
    """displaCy-style: an arc's level is one more than the highest arc strictly inside it."""
    order = sorted(range(len(arcs)), key=lambda k: abs(arcs[k][0] - arcs[k][1]))
    levels = [1] * len(arcs)
    for rank, k in enumerate(order):
        low, high = sorted(arcs[k])
        inner = [levels[j] for j in order[:rank] if low <= min(arcs[j]) and max(arcs[j]) <= high]
        levels[k] = 1 + max(inner, default=0)
    return levels


def _svg_arcs(words, heads, deprels, centres, word_y) -> tuple[list[str], float]:
    """The dependency arcs below the words (from head to dependent, bulging downwards by nesting level), each with
    its label (`deprels`) on its lowest point, and the root arrows, with the picture's height below them."""
    parts = []
    arcs = _arcs(heads)
    arc_levels = _arc_heights(arcs)
    arc_top = word_y + 8
    for (head, dependent), level in zip(arcs, arc_levels):
        offset = 4 if dependent > head else -4  # start beside the head's centre, so arcs to both sides part
        x1, x2 = centres[head] + offset, centres[dependent]
        bottom = arc_top + level * ARC_STEP
        label = f" {escape(deprels[dependent])}" if deprels else ""
        parts.append(
            f'<path class="arc" d="M{x1:.1f},{arc_top:.1f} C{x1:.1f},{bottom:.1f} {x2:.1f},{bottom:.1f} '
            f'{x2:.1f},{arc_top + 2:.1f}" marker-end="url(#arrow)">'
            f"<title>{escape(words[head])} →{label} → {escape(words[dependent])}</title></path>"
        )
        if deprels:  # on the curve's lowest point (a cubic with equal control heights: 3/4 of the way down)
            x, y = (x1 + x2) / 2, arc_top + (bottom - arc_top) * 0.75
            box = len(deprels[dependent]) * LABEL_CHAR_WIDTH + 4
            parts.append(  # a white box behind the label breaks the arc around it
                f'<rect class="arc-label-box" x="{x - box / 2:.1f}" y="{y - LABEL_FONT_SIZE / 2 - 1:.1f}" '
                f'width="{box:.1f}" height="{LABEL_FONT_SIZE + 2}"/>'
                f'<text class="arc-label" x="{x:.1f}" y="{y + LABEL_FONT_SIZE * 0.35:.1f}" '
                f'text-anchor="middle">{escape(deprels[dependent])}</text>'
            )
    lowest = arc_top + max(arc_levels, default=0) * ARC_STEP * 0.75 + 24
    for i, head in enumerate(heads):
        if head == 0:
            parts.append(
                f'<line class="root" x1="{centres[i]:.1f}" y1="{lowest:.1f}" x2="{centres[i]:.1f}" '
                f'y2="{arc_top + 2:.1f}" marker-end="url(#arrow)"/>'
                f'<text class="root-label" x="{centres[i]:.1f}" y="{lowest + FONT_SIZE:.1f}" '
                f'text-anchor="middle">{escape(deprels[i]) if deprels else "root"}</text>'
            )
    return parts, lowest + FONT_SIZE + MARGIN


def render_svg(result) -> str:
    """One standalone SVG: the constituency tree above the words, the dependency arcs below them (head ->
    dependent, arrowhead at the dependent; the root word gets a `root` arrow), labelled with `deprels` where the
    parse has them. Constituent nodes are `<circle class="node">`, arcs `<path class="arc">`, their labels `<text
    class="arc-label">`, words `<text class="word">`. A parse without `heads` gives the tree alone, one without
    `spans` the arcs alone."""
    _check_drawable(result)
    words = [str(word) for word in result["words"]]
    n = len(words)
    spans = _constituents(result)
    children = _tree_children(n, spans)
    deprels = [str(label) for label in result["deprels"]] if "heads" in result and result.get("deprels") else None
    centres, width = _word_centres(words, max(map(len, deprels)) * LABEL_CHAR_WIDTH if deprels else 0)

    # Constituency tree: depth-based rows from the top, words on one baseline below.
    depth = {}

    def set_depth(span, d):
        depth[span] = d
        for child in children[span]:
            if not isinstance(child, int):
                set_depth(child, d + 1)

    for span in spans:
        if span not in depth and not any(p[0] <= span[0] and span[1] <= p[1] and p != span for p in spans):
            set_depth(span, 0)
    levels = max(depth.values(), default=-1) + 1
    word_y = MARGIN + levels * LEVEL_HEIGHT + FONT_SIZE
    node_x = {}

    def x_of(node):
        if isinstance(node, int):
            return centres[node]
        if node not in node_x:
            kids = [x_of(child) for child in children[node]]
            node_x[node] = (min(kids) + max(kids)) / 2 if kids else (centres[node[0]] + centres[node[1] - 1]) / 2
        return node_x[node]

    def y_of(node):
        return word_y - FONT_SIZE - 2 if isinstance(node, int) else MARGIN + 6 + depth[node] * LEVEL_HEIGHT

    parts = []
    for span in spans:
        for child in children[span]:
            parts.append(
                f'<line class="edge" x1="{x_of(span):.1f}" y1="{y_of(span):.1f}" x2="{x_of(child):.1f}" '
                f'y2="{y_of(child):.1f}"/>'
            )
    for span in spans:
        parts.append(
            f'<circle class="node" cx="{x_of(span):.1f}" cy="{y_of(span):.1f}" r="5">'
            f"<title>{escape(' '.join(words[span[0] : span[1]]))} [{span[0]}, {span[1]})</title></circle>"
        )
    for i, word in enumerate(words):
        parts.append(
            f'<text class="word" x="{centres[i]:.1f}" y="{word_y:.1f}" text-anchor="middle">{escape(word)}</text>'
        )

    height = word_y + FONT_SIZE / 2 + MARGIN  # room for the words' descenders
    if "heads" in result:
        arc_parts, height = _svg_arcs(words, list(result["heads"]), deprels, centres, word_y)
        parts += arc_parts

    title = escape(" ".join(words))
    return "\n".join(
        [
            '<?xml version="1.0" encoding="UTF-8"?>',
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="monospace" font-size="{FONT_SIZE}">',
            f"<title>{title}</title>",
            "<defs>",
            '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
            'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#c0392b"/></marker>',
            "<style>"
            ".edge{stroke:#555;stroke-width:1.2} .node{fill:#2c3e50} .word{fill:#000}"
            " .arc{fill:none;stroke:#c0392b;stroke-width:1.4}"
            " .root{stroke:#c0392b;stroke-width:1.4;stroke-dasharray:4 3}"
            " .root-label{fill:#c0392b;font-size:12px}"
            f" .arc-label{{fill:#c0392b;font-size:{LABEL_FONT_SIZE}px}} .arc-label-box{{fill:white}}"
            "</style>",
            "</defs>",
            '<rect width="100%" height="100%" fill="white"/>',
            *parts,
            "</svg>",
            "",
        ]
    )


def save_svg(result, path) -> Path:
    """Write `render_svg(result)` to `path` (UTF-8), whole or not at all; returns the path."""
    with written_whole(path) as stream:
        stream.write(render_svg(result))
    return Path(path)


__all__ = ["draw_text", "render_svg", "save_svg"]
