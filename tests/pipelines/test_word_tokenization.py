"""`word_tokenize`: the re-only PTB tokenizer must give exactly nltk's `TreebankWordTokenizer` tokens.

Checked on hand-made cases (pinned expected tokens, and nltk's output when nltk is installed), on every sentence of the
UD English-EWT dev file (read-only shared data; skipped when absent), on seeded random strings made of the characters
the rules care about, and by inspecting the module's imports: it must run where only torch + transformers exist.
"""

import ast
import importlib.util
import random

import pytest

from tests.helpers.paths import DATA_DIR, ROOT

# Loaded from its file rather than through `hf_structure.pipelines` (whose __init__ imports transformers): this also
# shows that the module stands alone.
MODULE_PATH = ROOT / "src" / "hf_structure" / "pipelines" / "word_tokenization.py"
_spec = importlib.util.spec_from_file_location("word_tokenization", MODULE_PATH)
word_tokenization = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(word_tokenization)
word_tokenize = word_tokenization.word_tokenize

EWT_DIR = DATA_DIR / "ud-english-ewt"


@pytest.fixture(scope="module")
def nltk_tokenize():
    """nltk's reference tokenizer (a dev-only dependency); skips the test when nltk is not installed."""
    treebank = pytest.importorskip("nltk.tokenize.treebank")
    return treebank.TreebankWordTokenizer().tokenize


# (text, tokens) — the tokens are nltk's; they also document its quirks (see the comments).
CASES = [
    # Double quotes open as `` and close as ''.
    ('"Hello," she said. "Goodbye."', ["``", "Hello", ",", "''", "she", "said.", "``", "Goodbye", ".", "''"]),
    ("He said ''hi'' and left.", ["He", "said", "``", "hi", "''", "and", "left", "."]),
    ('He said "stop."', ["He", "said", "``", "stop", ".", "''"]),
    # A '"' after a tab does not count as opening (only a space or a bracket does).
    ('Tab then quote:\t"odd" case', ["Tab", "then", "quote", ":", "''", "odd", "''", "case"]),
    # Single quotes: only a quote followed by a space (or the end) splits off; an opening one stays attached.
    ("`Single' and 'plain' quotes.", ["`Single", "'", "and", "'plain", "'", "quotes", "."]),
    # Possessives and clitics, either case.
    ("John's dog and the boys' toys", ["John", "'s", "dog", "and", "the", "boys", "'", "toys"]),
    ("JOHN'S CAT", ["JOHN", "'S", "CAT"]),
    (
        "I don't know; they can't, won't, DON'T.",
        ["I", "do", "n't", "know", ";", "they", "ca", "n't", ",", "wo", "n't", ",", "DO", "N'T", "."],
    ),
    (
        "I'm sure you're right, we'll see, I'd go, they've gone.",
        ["I", "'m", "sure", "you", "'re", "right", ",", "we", "'ll", "see", ",", "I", "'d", "go", ",", "they", "'ve"]
        + ["gone", "."],
    ),
    # Fused forms.
    (
        "I cannot go, I'm gonna stay, wanna come? Gimme that, lemme see, gotta run.",
        ["I", "can", "not", "go", ",", "I", "'m", "gon", "na", "stay", ",", "wan", "na", "come", "?", "Gim", "me"]
        + ["that", ",", "lem", "me", "see", ",", "got", "ta", "run", "."],
    ),
    (
        "'Tis true 'twas so, d'ye see, more'n that.",
        ["'T", "is", "true", "'t", "was", "so", ",", "d", "'ye", "see", ",", "more", "'n", "that", "."],
    ),
    ("She wanna-be star.", ["She", "wanna-be", "star", "."]),  # "wanna" splits only before whitespace
    # Numbers: , and : stay inside when a digit follows; decimals stay whole; $ and % split off.
    (
        "It costs 1,000,000 or 3.14 units, ratio 3:2 at 10:30.",
        ["It", "costs", "1,000,000", "or", "3.14", "units", ",", "ratio", "3:2", "at", "10:30", "."],
    ),
    (
        "Pay $5.99, or $1,200.50 (about 20% off) & save!",
        ["Pay", "$", "5.99", ",", "or", "$", "1,200.50", "(", "about", "20", "%", "off", ")", "&", "save", "!"],
    ),
    ("items: a, b, c,", ["items", ":", "a", ",", "b", ",", "c", ","]),  # a final , or : splits off too
    # Ellipsis is one token; ?! split one by one.
    ("Wait... what?! Really...", ["Wait", "...", "what", "?", "!", "Really", "..."]),
    # Brackets are kept as they are (no -LRB-), each its own token.
    (
        "Prices (in USD) [see table] {approx.} <b>bold</b>",
        ["Prices", "(", "in", "USD", ")", "[", "see", "table", "]", "{", "approx.", "}", "<", "b", ">", "bold", "<"]
        + ["/b", ">"],
    ),
    ("(He left.)", ["(", "He", "left", ".", ")"]),
    # Emoticons fall apart.
    ("Nice :) and :-) and :( too", ["Nice", ":", ")", "and", ":", "-", ")", "and", ":", "(", "too"]),
    # URLs and e-mail addresses fall apart at : ? & @ #.
    (
        "See https://example.com/path?q=1&x=2 or www.example.org.",
        ["See", "https", ":", "//example.com/path", "?", "q=1", "&", "x=2", "or", "www.example.org", "."],
    ),
    ("Email me at someone@example.com #tag", ["Email", "me", "at", "someone", "@", "example.com", "#", "tag"]),
    # Hyphens stay inside words; a double dash is a token.
    (
        "A well-known state-of-the-art model -- really -- works.",
        ["A", "well-known", "state-of-the-art", "model", "--", "really", "--", "works", "."],
    ),
    ("a--b and c--", ["a", "--", "b", "and", "c", "--"]),
    # Several sentences: only the LAST period of the text splits off (nltk expects one sentence at a time).
    (
        "Mr. Smith went to Washington. He arrived at 5 p.m. It was late.",
        ["Mr.", "Smith", "went", "to", "Washington.", "He", "arrived", "at", "5", "p.m.", "It", "was", "late", "."],
    ),
    ("The U.S. economy grew. Dr. Jones agreed!", ["The", "U.S.", "economy", "grew.", "Dr.", "Jones", "agreed", "!"]),
    (
        '"Don\'t," he said.\n"Fine."',
        ["``", "Do", "n't", ",", "''", "he", "said.", "''", "Fine", ".", "''"],  # '"' after a newline closes
    ),
    # Whitespace of any kind only separates.
    ("   leading and trailing spaces   ", ["leading", "and", "trailing", "spaces"]),
    ("tabs\tand\nnewlines\r\nmixed \t here.", ["tabs", "and", "newlines", "mixed", "here", "."]),
    ("Last line ends with a period.\n", ["Last", "line", "ends", "with", "a", "period", "."]),
    ("", []),
    (" \t\n ", []),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[repr(text)[:40] for text, _ in CASES])
def test_hand_cases(text, expected):
    assert word_tokenize(text) == expected


@pytest.mark.parametrize("text", [text for text, _ in CASES], ids=[repr(text)[:40] for text, _ in CASES])
def test_hand_cases_match_nltk(text, nltk_tokenize):
    assert word_tokenize(text) == nltk_tokenize(text)


def test_agrees_with_nltk_on_every_ewt_dev_sentence(nltk_tokenize):
    dev_files = sorted(EWT_DIR.glob("*-ud-dev.conllu"))
    if not dev_files:
        pytest.skip(f"UD English-EWT dev file not found in {EWT_DIR} (set HF_STRUCTURE_DATA to the shared data folder)")
    with dev_files[0].open(encoding="utf-8") as lines:
        texts = [line[len("# text = ") :].rstrip("\n") for line in lines if line.startswith("# text = ")]
    assert len(texts) > 1000, f"{dev_files[0]} has only {len(texts)} '# text = ' lines"

    differences = [(text, word_tokenize(text), nltk_tokenize(text)) for text in texts]
    differences = [diff for diff in differences if diff[1] != diff[2]]
    shown = "\n".join(f"{text!r}\n  ours: {ours}\n  nltk: {theirs}" for text, ours, theirs in differences[:10])
    assert not differences, f"{len(differences)} of {len(texts)} sentences differ from nltk:\n{shown}"


def test_agrees_with_nltk_on_random_strings(nltk_tokenize):
    """Seeded random strings of the pieces the rules look at, in every order: the rules interact, so test them so."""
    pieces = (
        ["a", "x", "n", "t", "s", "is", "can", "not", "gon", "na", "wan", "got", "ta", "gim", "lem", "me", "more"]
        + ["d", "'ye", "'n", "n't", "N'T", "'s", "'S", "'ll", "'re", "'ve", "'m", "'D", "'", "''", '"', "`", "``"]
        + [" ", "  ", "\t", "\n", ",", ":", ".", "...", "-", "--", "?", "!", ";", "$", "%", "&", "@", "#"]
        + ["(", ")", "[", "]", "{", "}", "<", ">", "1", "2", ":)", ":-)", "é", "\u00a0", "\u2019", "\u201c"]
    )
    rng = random.Random(1234)
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        assert word_tokenize(text) == nltk_tokenize(text), repr(text)


def test_module_imports_only_re():
    tree = ast.parse(MODULE_PATH.read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add("." * node.level + (node.module or ""))
    assert imported == {"re"}
    # No back doors either: dynamic imports would defeat the point.
    called = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert not called & {"__import__", "exec", "eval"}
