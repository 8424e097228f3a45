"""Trees and the conversions between them (StructFormer Algorithms 1-3, yields of dependency trees, bracketed
strings, nltk trees), and the check that heads form a tree. CoNLL-U is `hf_structure.data.conllu_format`'s.

Conventions used throughout the package:
- a constituency tree is a list of spans `(start, end)`, 0-based, end exclusive;
- dependency heads are 1-based with 0 for the root (the CoNLL convention): `heads[i]` is the parent of word i+1;
- syntactic distances of an n-word sentence are n-1 numbers, `distances[k]` for the split between words k and k+1.
"""

from collections.abc import Sequence

Span = tuple[int, int]


def distances_to_spans(distances: Sequence[float]) -> list[tuple[int, int]]:
    """Algorithm 1: split top-down at the largest distance. Returns the binary tree's constituents as 0-based
    `(start, end)` spans, end exclusive, root first (then each left subtree before its right), words (length-1 spans)
    included. Ties go to the leftmost split, as `argmax` does.

    The tree is the splits' Cartesian tree, built left to right with a stack in O(n) (searching each span for its
    largest split is O(n^2) on skewed trees): a split's left child is the last split it pops, and it becomes the
    right child of the split left on the stack; a split pops only strictly smaller ones, so of equal splits the
    leftmost ends on top."""
    left, right = [-1] * len(distances), [-1] * len(distances)
    stack: list[int] = []
    for split, distance in enumerate(distances):
        while stack and distances[stack[-1]] < distance:
            left[split] = stack.pop()
        if stack:
            right[stack[-1]] = split
        stack.append(split)
    spans = []
    pending = [(stack[0] if stack else -1, 0, len(distances) + 1)]  # (split at the top of the span or -1, span)
    while pending:
        split, start, end = pending.pop()
        spans.append((start, end))
        if split >= 0:
            pending.append((right[split], split + 1, end))
            pending.append((left[split], start, split + 1))
    return spans


def spans_to_distances(spans: Sequence[Span], length: int) -> list[int]:
    """The inverse of `distances_to_spans` for a binary tree over `length` words, given by its spans of two or more
    words (the whole sentence's may be left out): `distances[k]` is the width of the node that splits between words
    k and k + 1, the smallest span holding both. A parent is wider than its children, so the distances split
    top-down into the same tree. Raises ValueError if the spans are not one binary tree over the words."""
    nodes = {(start, end) for start, end in spans if end - start > 1} | ({(0, length)} if length > 1 else set())
    distances = [length] * max(length - 1, 0)
    for start, end in nodes:
        if not 0 <= start < end <= length:
            raise ValueError(f"span {(start, end)} is outside a sentence of {length} words")
        for split in range(start, end - 1):
            distances[split] = min(distances[split], end - start)
    words = {(i, i + 1) for i in range(length)}
    if set(distances_to_spans(distances)) != nodes | words:
        raise ValueError(f"the spans {sorted(nodes)} are not one binary tree over {length} words")
    return distances


def binary_children(spans: Sequence[Span]) -> dict[Span, tuple[Span, Span]]:
    """The two children of every internal node of a binary tree given by all its spans (words included)."""
    span_set = set(spans)
    children = {}
    for start, end in span_set:
        if end - start < 2:
            continue
        splits = [k for k in range(start + 1, end) if (start, k) in span_set and (k, end) in span_set]
        if len(splits) != 1:
            raise ValueError(f"span {(start, end)} is not split into exactly two constituents of the tree")
        children[(start, end)] = ((start, splits[0]), (splits[0], end))
    return children


def tree_to_heads(spans: Sequence[Span], heights: Sequence[float]) -> list[int]:
    """Algorithm 2: dependency heads of a binary tree. In each node, the lexical parent of the child whose parent
    has the larger height becomes the parent of the other child's parent (ties: the right child's parent wins, as
    in the paper's `>` test)."""
    n = len(heights)
    if n == 0:
        return []
    children = binary_children(spans)
    heads = [0] * n

    def parent_of(span: Span) -> int:
        if span[1] - span[0] == 1:
            return span[0]
        left, right = children[span]
        left_parent, right_parent = parent_of(left), parent_of(right)
        if heights[left_parent] > heights[right_parent]:
            heads[right_parent] = left_parent + 1
            return left_parent
        heads[left_parent] = right_parent + 1
        return right_parent

    heads[parent_of((0, n))] = 0
    return heads


def distances_heights_to_tree(distances: Sequence[float], heights: Sequence[float]) -> tuple[list[Span], list[int]]:
    """Algorithm 3: the binary constituency tree (spans, words included) and the dependency heads at once."""
    if len(distances) != max(len(heights) - 1, 0):
        raise ValueError(f"{len(heights)} heights need {max(len(heights) - 1, 0)} distances, got {len(distances)}")
    spans = distances_to_spans(distances) if heights else []
    return spans, tree_to_heads(spans, heights)


def check_heads(heads: Sequence[int]) -> None:
    """Raise ValueError unless `heads` (1-based, 0 = root) is a tree: one root, heads in range, no cycle."""
    n = len(heads)
    roots = [i + 1 for i, h in enumerate(heads) if h == 0]
    if len(roots) != 1:
        raise ValueError(f"a dependency tree has exactly one root, found {len(roots)} (words {roots})")
    for i, h in enumerate(heads):
        if not 0 <= h <= n or h == i + 1:
            raise ValueError(f"word {i + 1} has an invalid head {h}")
    for i in range(n):
        seen, node = set(), i + 1
        while node != 0:
            if node in seen:
                raise ValueError(f"the heads contain a cycle through word {node}")
            seen.add(node)
            node = heads[node - 1]


def heads_are_tree(heads: Sequence[int]) -> bool:
    """Whether `heads` form a tree (see `check_heads`)."""
    try:
        check_heads(heads)
    except ValueError:
        return False
    return True


def is_projective(heads: Sequence[int]) -> bool:
    """True when no two arcs cross (the root attaches to an artificial word 0 on the left)."""
    arcs = [(min(i + 1, h), max(i + 1, h)) for i, h in enumerate(heads)]
    for a_left, a_right in arcs:
        for b_left, b_right in arcs:
            if a_left < b_left < a_right < b_right:
                return False
    return True


def escape_brackets(word: str) -> str:
    """A word as it appears in a bracketed tree: round brackets become `-LRB-` / `-RRB-` (the PTB escapes), so
    that the tree reads back with the same words (`unescape_brackets`)."""
    return word.replace("(", "-LRB-").replace(")", "-RRB-")


def unescape_brackets(word: str) -> str:
    """The inverse of `escape_brackets` (a word that was literally `-LRB-` reads back as `(`, as in the PTB)."""
    return word.replace("-LRB-", "(").replace("-RRB-", ")")


def heads_to_spans(heads: Sequence[int]) -> list[Span]:
    """The yields of a projective dependency tree: for every word, the span of the words it dominates (itself
    included), as 0-based `(start, end)` spans, sorted outermost first. Raises ValueError for a non-projective tree,
    whose yields are not contiguous."""
    check_heads(heads)
    n = len(heads)
    lowest, highest = list(range(n)), list(range(n))
    size = [1] * n
    for word in range(n):  # every word extends the yields of all its ancestors
        node = heads[word]
        while node != 0:
            lowest[node - 1] = min(lowest[node - 1], word)
            highest[node - 1] = max(highest[node - 1], word)
            size[node - 1] += 1
            node = heads[node - 1]
    spans = {(lowest[i], highest[i] + 1) for i in range(n)}
    if any(highest[i] + 1 - lowest[i] != size[i] for i in range(n)):
        raise ValueError("the dependency tree is not projective: a word's yield has a gap")
    return sorted(spans, key=lambda span: (span[0], -span[1]))


def spans_to_bracketed(words, spans) -> str:
    """Unlabelled bracketed string, e.g. `((the (old man)) sat)`, with brackets in words escaped. Spans need not be
    binary but must nest; length-1 spans and the whole sentence are implied."""
    opens: dict[int, int] = {}
    closes: dict[int, int] = {}
    for start, end in set(map(tuple, spans)):
        if end - start > 1 and (start, end) != (0, len(words)):
            opens[start] = opens.get(start, 0) + 1
            closes[end - 1] = closes.get(end - 1, 0) + 1
    tokens = ["(" * opens.get(i, 0) + escape_brackets(word) + ")" * closes.get(i, 0) for i, word in enumerate(words)]
    return "(" + " ".join(tokens) + ")"


def bracketed_to_spans(text: str) -> tuple[list[str], list[Span]]:
    """Words (brackets unescaped) and spans (of two or more words, whole sentence included) of an unlabelled
    bracketed string."""
    words: list[str] = []
    spans: list[Span] = []
    starts: list[int] = []
    for token in text.replace("(", " ( ").replace(")", " ) ").split():
        if token == "(":
            starts.append(len(words))
        elif token == ")":
            if not starts:
                raise ValueError(f"unbalanced brackets: extra ')' after word {len(words)} in {text!r}")
            start = starts.pop()
            if len(words) - start > 1:
                spans.append((start, len(words)))
        else:
            words.append(unescape_brackets(token))
    if starts:
        raise ValueError(f"unbalanced brackets: {len(starts)} '(' never closed in {text!r}")
    return words, sorted(set(spans), key=lambda s: (s[0], -s[1]))


def spans_to_nltk_tree(words: Sequence[str], spans: Sequence[Span], label: str = "X"):
    """An `nltk.Tree` whose internal nodes (labelled `label`) are the spans of two or more words."""
    import nltk

    _, nested = bracketed_to_spans(spans_to_bracketed(words, spans))
    ordered = sorted(nested, key=lambda s: (s[0], -s[1]))

    def build(start: int, end: int):
        children, k = [], start
        while k < end:
            child = next(((s, e) for s, e in ordered if s == k and e <= end and (s, e) != (start, end)), None)
            if child is None or child[1] - child[0] < 2:
                children.append(words[k])
                k += 1
            else:
                children.append(build(*child))
                k = child[1]
        return nltk.Tree(label, children)

    return build(0, len(words))


def nltk_tree_to_spans(tree) -> tuple[list[str], list[Span]]:
    """Words (leaves) and spans of two or more words (whole sentence included) of an `nltk.Tree`."""
    spans: list[Span] = []

    def walk(node, start: int) -> int:
        if isinstance(node, str):
            return start + 1
        end = start
        for child in node:
            end = walk(child, end)
        if end - start > 1:
            spans.append((start, end))
        return end

    walk(tree, 0)
    return list(tree.leaves()), sorted(set(spans), key=lambda s: (s[0], -s[1]))


def projectivize(heads: Sequence[int]) -> list[int]:
    """A projective tree close to `heads` (1-based, 0 = root): while an arc crosses another, the shortest
    non-projective arc h -> d is lifted to h's head (Nivre & Nilsson's lifting, without encoding the lift in the
    label). A projective tree is returned unchanged; the root word and the single root are kept."""
    heads = list(heads)

    def dominated_by(word: int, ancestor: int) -> bool:
        while word != 0:
            if word == ancestor:
                return True
            word = heads[word - 1]
        return ancestor == 0

    while True:
        crossing = [
            (abs(h - d), d)
            for d, h in enumerate(heads, start=1)
            if any(not dominated_by(w, h) for w in range(min(h, d) + 1, max(h, d)))
        ]
        if not crossing:
            return heads
        _, dependent = min(crossing)
        heads[dependent - 1] = heads[heads[dependent - 1] - 1]
