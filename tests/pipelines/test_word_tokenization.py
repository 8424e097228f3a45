"""`word_tokenize`: the re-only PTB tokenizer must give exactly nltk's `TreebankWordTokenizer` tokens.

Checked on hand-made cases (pinned expected tokens, and nltk's output when nltk is installed), on every sentence of the
UD English-EWT dev file (read-only shared data; skipped when absent), on seeded random strings made of the characters
the rules care about, and by inspecting the module's imports: it must run where only torch + transformers exist.
Then `tokenize_with_offsets` (the same words for ASCII text, each with its character offsets; typographic punctuation
split as its ASCII form), its word conventions ("ptb", that split; "ud", re-cut as UD English-EWT writes words) and
`sentence_offsets` (the rule-based sentence splitter), and that a long run of text without spaces is split in linear
time.
"""

import importlib.util
import random
import signal
import time

import pytest

from tests.helpers.imports import called_names, imported_modules
from tests.helpers.paths import DATA_DIR, ROOT

# Loaded from its file rather than through `hf_structure.pipelines` (whose __init__ imports transformers): this also
# shows that the module stands alone.
MODULE_PATH = ROOT / "src" / "hf_structure" / "pipelines" / "word_tokenization.py"
_spec = importlib.util.spec_from_file_location("word_tokenization", MODULE_PATH)
assert _spec is not None and _spec.loader is not None  # a .py file gets the source file loader
word_tokenization = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(word_tokenization)
word_tokenize = word_tokenization.word_tokenize
tokenize_with_offsets = word_tokenization.tokenize_with_offsets
sentence_offsets = word_tokenization.sentence_offsets
split_inner_periods = word_tokenization.split_inner_periods
WEB_OR_EMAIL = word_tokenization.WEB_OR_EMAIL
WORD_CONVENTIONS = word_tokenization.WORD_CONVENTIONS

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
    assert imported_modules(MODULE_PATH) == {"re"}
    # No back doors either: dynamic imports would defeat the point.
    assert not called_names(MODULE_PATH) & {"__import__", "exec", "eval"}


# ---------------------------------------------------------------------------------------------------------------
# Word offsets


def random_texts(count, seed, pieces):
    rng = random.Random(seed)
    for _ in range(count):
        yield "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))


ASCII_PIECES = (
    ["a", "x", "n", "t", "s", "is", "can", "not", "gon", "na", "wan", "got", "ta", "more", "'ye", "'n", "n't", "'s"]
    + ["'ll", "'", "''", '"', "`", "``", " ", "  ", "\t", "\n", ",", ":", ".", "...", "-", "--", "?", "!", ";", "$"]
    + ["%", "&", "@", "#", "(", ")", "[", "]", "{", "}", "<", ">", "1", "2", "Mr.", "U.S.", "J."]
)
TYPOGRAPHIC_PIECES = ["\u201c", "\u201d", "\u2018", "\u2019", "\u201e", "\u00ab", "\u00bb", "\u2039", "\u203a"] + [
    "\u2026",
    "\u2013",
    "\u2014",
    "\uff1f",
    "\uff01",
    "\u00a0",
    "\u00e9",
    "\u02bc",
    "\u2015",
]


def assert_offsets_point_at_the_words(text, words, offsets):
    assert len(words) == len(offsets)
    previous_end = 0
    for word, (start, end) in zip(words, offsets):
        assert previous_end <= start < end <= len(text), (text, words, offsets)
        assert not text[previous_end:start].strip(), (text, words, offsets)  # only whitespace before each word
        assert text[start:end] == word, (text, word, text[start:end])  # the word as the text writes it
        previous_end = end
    assert not text[previous_end:].strip()  # nothing but whitespace between and after the words


def as_written(text: str, words: list[str]) -> tuple[list[str], list[tuple[int, int]]]:
    """`word_tokenize`'s words with each `` and '' as the text writes it, and their offsets."""
    written, offsets, position = [], [], 0
    for word in words:
        while text[position].isspace():
            position += 1
        if not text.startswith(word, position):  # `` or '' for a '"'
            word = '"' if text[position] == '"' else text[position : position + 2]
        written.append(word)
        offsets.append((position, position + len(word)))
        position += len(word)
    return written, offsets


def test_ascii_words_are_word_tokenize_s_as_written_with_inner_periods_split():
    # The only differences from nltk's tokenizer: the words as written, a period ending a word other than the last
    # split off where it ends no abbreviation (`split_inner_periods`), and web and e-mail addresses whole.
    for text in [text for text, _ in CASES] + list(random_texts(20_000, 5678, ASCII_PIECES)):
        words, offsets = tokenize_with_offsets(text)
        assert_offsets_point_at_the_words(text, words, offsets)
        if not WEB_OR_EMAIL.search(text):
            assert (words, offsets) == split_inner_periods(*as_written(text, word_tokenize(text))), repr(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "See http://www.example.com/a?b=1. Then mail kent.shoemaker@ae.ge.com!",
            ["See", "http://www.example.com/a?b=1", ".", "Then", "mail", "kent.shoemaker@ae.ge.com", "!"],
        ),
        ("(www.x.org/a_b) and https://t.co/xyz, ok", ["(", "www.x.org/a_b", ")", "and", "https://t.co/xyz", ",", "ok"]),
        ('She said, "I love it here!"', ["She", "said", ",", '"', "I", "love", "it", "here", "!", '"']),
        ("Yes. ?", ["Yes", ".", "?"]),
        (
            "Mr. Smith met J. Doe in the U.S. at No. 1. Costs: 3,000.50 at 10:30, 1/2 off, 555-1234.",
            [
                "Mr.",
                "Smith",
                "met",
                "J.",
                "Doe",
                "in",
                "the",
                "U.S.",
                "at",
                "No.",
                "1.",
                "Costs",
                ":",
                "3,000.50",
                "at",
                "10:30",
                ",",
                "1/2",
                "off",
                ",",
                "555-1234",
                ".",
            ],
        ),
    ],
    ids=["addresses", "addresses-in-brackets", "quotes-as-written", "inner-period", "abbreviations-and-numbers"],
)
def test_words_as_the_text_writes_them(text, expected):
    words, offsets = tokenize_with_offsets(text)
    assert words == expected and [text[start:end] for start, end in offsets] == expected


def test_offsets_point_at_the_words_with_typographic_punctuation_too():
    for text in random_texts(20_000, 91011, ASCII_PIECES + TYPOGRAPHIC_PIECES):
        words, offsets = tokenize_with_offsets(text)
        assert_offsets_point_at_the_words(text, words, offsets)


@pytest.mark.parametrize("convention", ["ptb", "ud"])
def test_offsets_of_every_ewt_dev_sentence(convention):
    dev_files = sorted(EWT_DIR.glob("*-ud-dev.conllu"))
    if not dev_files:
        pytest.skip(f"UD English-EWT dev file not found in {EWT_DIR}")
    with dev_files[0].open(encoding="utf-8") as lines:
        texts = [line[len("# text = ") :].rstrip("\n") for line in lines if line.startswith("# text = ")]
    for text in texts:
        assert_offsets_point_at_the_words(text, *tokenize_with_offsets(text, convention))


def test_quoted_word_offsets():
    text = "He said \"no,\" then ''yes''."
    words, offsets = tokenize_with_offsets(text)
    assert words == ["He", "said", '"', "no", ",", '"', "then", "''", "yes", "''", "."]  # as written: FORM is the text
    assert [text[start:end] for start, end in offsets] == words


# (text, words): typographic punctuation splits where its ASCII form would; each word keeps its characters.
TYPOGRAPHIC_CASES = [
    ("\u201cQuotes\u201d don\u2019t split.", ["\u201c", "Quotes", "\u201d", "do", "n\u2019t", "split", "."]),
    ("John\u2019s dog and the boys\u2019 toys", ["John", "\u2019s", "dog", "and", "the", "boys", "\u2019", "toys"]),
    ("She said \u2018hi\u2019.", ["She", "said", "\u2018", "hi", "\u2019", "."]),
    (
        "\u201eJa\u201c, \u00abnon\u00bb, \u2039oui\u203a",
        ["\u201e", "Ja", "\u201c", ",", "\u00ab", "non", "\u00bb", ","] + ["\u2039", "oui", "\u203a"],
    ),
    ("Wait\u2026 what\u2026", ["Wait", "\u2026", "what", "\u2026"]),
    (
        "A dash\u2014here \u2013 and 1990\u201395.",
        ["A", "dash", "\u2014", "here", "\u2013", "and", "1990\u201395"] + ["."],
    ),
    ("Really\uff1f Yes\uff01", ["Really", "\uff1f", "Yes", "\uff01"]),
    ("I can\u2019t, we\u2019ll", ["I", "ca", "n\u2019t", ",", "we", "\u2019ll"]),
    ("caf\u00e9\u00a0au lait", ["caf\u00e9", "au", "lait"]),  # a no-break space separates, as in nltk
]


@pytest.mark.parametrize(("text", "expected"), TYPOGRAPHIC_CASES, ids=[text[:20] for text, _ in TYPOGRAPHIC_CASES])
def test_typographic_punctuation_splits_as_its_ascii_form(text, expected):
    words, offsets = tokenize_with_offsets(text)
    assert words == expected
    assert [text[start:end] for start, end in offsets] == expected


# ---------------------------------------------------------------------------------------------------------------
# Word conventions: "ptb" (the split above, the default) and "ud" (re-cut as UD English-EWT writes words)

# (text, "ptb" words, "ud" words)
CONVENTION_CASES = [
    # Hyphens between words split off in UD, except after a prefix that is no word of its own; PTB keeps them.
    (
        "A well-known, state-of-the-art model.",
        ["A", "well-known", ",", "state-of-the-art", "model", "."],
        ["A", "well", "-", "known", ",", "state", "-", "of", "-", "the", "-", "art", "model", "."],
    ),
    (
        "My e-mail re non-profit, re-read mid-1980s x-rays",
        ["My", "e-mail", "re", "non-profit", ",", "re-read"] + ["mid-1980s", "x-rays"],
        ["My", "e-mail", "re", "non-profit", ",", "re-read", "mid-1980s", "x", "-", "rays"],
    ),
    # A hyphen ending a word, or starting one before a letter, splits off too; a negative number stays whole.
    (
        "pre- and post-war -more -5",
        ["pre-", "and", "post-war", "-more", "-5"],
        ["pre", "-", "and", "post-war", "-", "more", "-5"],
    ),
    # Slashes between words split off, except between two single letters.
    ("and/or he/she w/o l/c", ["and/or", "he/she", "w/o", "l/c"], ["and", "/", "or", "he", "/", "she", "w/o", "l/c"]),
    # Numbers: dates, telephone numbers and month/day stay whole; ranges and other numbers with / split.
    (
        "On 10/20/2020, 11-20-2000 or 9/11 call 713-853-3989, 555-1234 or 77042-2016.",
        ["On", "10/20/2020", ",", "11-20-2000", "or", "9/11", "call", "713-853-3989", ",", "555-1234", "or"]
        + ["77042-2016", "."],
        ["On", "10/20/2020", ",", "11-20-2000", "or", "9/11", "call", "713-853-3989", ",", "555-1234", "or"]
        + ["77042-2016", "."],
    ),
    (
        "pages 1-2 of 1969-1970, 19/20 and 5:00-8:30",
        ["pages", "1-2", "of", "1969-1970", ",", "19/20", "and"] + ["5:00-8:30"],
        ["pages", "1", "-", "2", "of", "1969", "-", "1970", ",", "19", "/", "20", "and", "5:00", "-"] + ["8:30"],
    ),
    # A number and its unit split (5 pm, 35 mm, 65 k), not an ordinal or a decade; a list's number and its period.
    (
        "1. At 5pm, 7:30PM, 35mm, 65k; the 2nd in the 1980s",
        ["1.", "At", "5pm", ",", "7:30PM", ",", "35mm", ","] + ["65k", ";", "the", "2nd", "in", "the", "1980s"],
        ["1", ".", "At", "5", "pm", ",", "7:30", "PM", ",", "35"]
        + ["mm", ",", "65", "k", ";", "the", "2nd", "in", "the", "1980s"],
    ),
    # Contractions written without an apostrophe split as with one.
    (
        "I dont think Im sure, cant you? thats it",
        ["I", "dont", "think", "Im", "sure", ",", "cant", "you", "?"] + ["thats", "it"],
        ["I", "do", "nt", "think", "I", "m", "sure", ",", "ca", "nt", "you", "?", "that", "s", "it"],
    ),
    # Runs of punctuation and emoticons are one word; so are letters joined by & and words by @.
    (
        "Wow!!! Really?! Wait.... <<ok>> :) ;-) AT&T Rice@ENRON",
        ["Wow", "!", "!", "!", "Really", "?", "!", "Wait"]
        + ["...", ".", "<", "<", "ok", ">", ">", ":", ")", ";", "-", ")", "AT", "&", "T", "Rice", "@", "ENRON"],
        ["Wow", "!!!", "Really", "?!", "Wait", "....", "<<", "ok", ">>", ":)", ";-)", "AT&T", "Rice@ENRON"],
    ),
    # A single quote opening a word splits off, not a clitic's.
    (
        "He said 'degenerate' and 'em",
        ["He", "said", "'degenerate", "'", "and", "'em"],
        ["He", "said", "'", "degenerate", "'", "and", "'em"],
    ),
    # Web and e-mail addresses stay whole in both, hyphens and slashes included.
    (
        "See http://www.x-y.com/a-b/c-d or mail first-last@my-host.co.uk.",
        ["See", "http://www.x-y.com/a-b/c-d"] + ["or", "mail", "first-last@my-host.co.uk", "."],
        ["See", "http://www.x-y.com/a-b/c-d", "or", "mail"] + ["first-last@my-host.co.uk", "."],
    ),
    # Typographic dashes and quotes: an en dash inside a word is a hyphen; the words keep the text's characters.
    (
        "1990\u201395 \u201cwell\u2011known\u201d",
        ["1990\u201395", "\u201c", "well\u2011known", "\u201d"],
        ["1990", "\u2013", "95", "\u201c", "well", "\u2011", "known", "\u201d"],
    ),
]


@pytest.mark.parametrize(("text", "ptb", "ud"), CONVENTION_CASES, ids=[text[:24] for text, _, _ in CONVENTION_CASES])
def test_each_convention_cuts_words_as_its_treebank_does(text, ptb, ud):
    for convention, expected in (("ptb", ptb), ("ud", ud)):
        words, offsets = tokenize_with_offsets(text, convention)
        assert words == expected, convention
        assert_offsets_point_at_the_words(text, words, offsets)


def test_ptb_is_the_default_convention_and_an_unknown_one_is_an_error():
    assert WORD_CONVENTIONS == ("ptb", "ud")
    for text, _, _ in CONVENTION_CASES:
        assert tokenize_with_offsets(text) == tokenize_with_offsets(text, "ptb")
    with pytest.raises(ValueError, match=r"convention must be one of \('ptb', 'ud'\), got 'spacy'"):
        tokenize_with_offsets("a b", "spacy")


UD_PIECES = ["/", "-", "\u2013", "e", "non", "dont", "Im", "5", "12", "pm", "2020", ":)", ";-)", "&", "@", "!!"] + [
    "....",
    "'",
    "x@y.com",
    "http://a.b/c-d",
    "713-853-3989",
    "10/20/2020",
]


def test_ud_offsets_point_at_the_words_of_any_text():
    for text in random_texts(20_000, 1415, ASCII_PIECES + TYPOGRAPHIC_PIECES + UD_PIECES):
        assert_offsets_point_at_the_words(text, *tokenize_with_offsets(text, "ud"))


def test_ud_words_are_the_ptb_words_re_cut_where_no_join_applies():
    # Without a join (`_UD_WHOLE`), every "ud" word lies inside one "ptb" word: the conventions differ only by cuts.
    for text in random_texts(5_000, 1617, ASCII_PIECES + ["/", "-", "e", "non", "dont", "5", "pm"]):
        if word_tokenization._UD_WHOLE.search(text):
            continue
        ptb = tokenize_with_offsets(text, "ptb")[1]
        for start, end in tokenize_with_offsets(text, "ud")[1]:
            assert any(first <= start and end <= last for first, last in ptb), (text, start, end)


# ---------------------------------------------------------------------------------------------------------------
# Sentences

SENTENCE_CASES = [
    ("Dogs bark. Cats meow loudly.", ["Dogs bark.", "Cats meow loudly."]),
    ("Hello world", ["Hello world"]),
    ("Really?! Yes... I think so!", ["Really?!", "Yes...", "I think so!"]),
    # Informal text starts sentences in lower case: after ? or ! (not a quotation's), or a plain word's period.
    ("thanks. i will come. really? no way! ok", ["thanks.", "i will come.", "really?", "no way!", "ok"]),
    (
        '"Why?" she asked. The list, etc. and more. Wait... and then 3.5 cm. it grows',
        ['"Why?" she asked.', "The list, etc. and more.", "Wait... and then 3.5 cm. it grows"],
    ),
    # Abbreviations, dotted abbreviations and initials do not end a sentence before a capitalised word.
    ("Mr. Smith met Dr. Jones. They talked.", ["Mr. Smith met Dr. Jones.", "They talked."]),
    ("J. R. Smith left at 5 p.m. Monday. He ran.", ["J. R. Smith left at 5 p.m. Monday.", "He ran."]),
    (
        "The U.S. economy grew, e.g. Jobs rose. Apple Inc. Chairman spoke.",
        ["The U.S. economy grew, e.g. Jobs rose.", "Apple Inc. Chairman spoke."],
    ),
    ("So did I. Then we left.", ["So did I.", "Then we left."]),  # "I" is no initial
    # ... except that a dotted one before a word that mostly starts sentences (they, the, it ...) ends one.
    (
        "Washington, D.C. They liked it. The U.S. Army came to the U.S. In May.",
        ["Washington, D.C.", "They liked it.", "The U.S. Army came to the U.S.", "In May."],
    ),
    # A lowercase word or a digit after a period does not start a sentence; a lowercase one after ? or ! neither.
    ("See p. 5 and fig. 3. It is 3.5 cm. it grows.", ["See p. 5 and fig. 3.", "It is 3.5 cm. it grows."]),
    ("\u201cWhy?\u201d she asked. \u201cBecause.\u201d", ["\u201cWhy?\u201d she asked.", "\u201cBecause.\u201d"]),
    # Closing quotes and brackets after the terminator belong to the sentence; opening ones to the next.
    ('He said "Stop." (Then he left.) "Go!" OK.', ['He said "Stop."', "(Then he left.)", '"Go!"', "OK."]),
    ("Wait\u2026 what\uff1f Okay\uff01 Done.", ["Wait\u2026 what\uff1f", "Okay\uff01", "Done."]),
    # A newline is a space; a blank line ends a sentence, with or without a terminator.
    ("one line\nanother line. Next", ["one line\nanother line.", "Next"]),
    ("Title\n\nFirst one. Second one.\n \t\n\n Last", ["Title", "First one.", "Second one.", "Last"]),
    ("A heading\u2029the text", ["A heading", "the text"]),  # a paragraph separator is a blank line
    # No space after the terminator: no end (URLs, file names, decimals).
    ("Visit example.com.Now or read a.txt", ["Visit example.com.Now or read a.txt"]),
    # A piece without a letter or digit joins its neighbour.
    ("Hi. ... Bye. --", ["Hi. ...", "Bye. --"]),
    ("... Hello. Bye.", ["... Hello.", "Bye."]),
    ("", []),
    (" \n\n ", []),
]


@pytest.mark.parametrize(("text", "expected"), SENTENCE_CASES, ids=[repr(text)[:30] for text, _ in SENTENCE_CASES])
def test_sentence_cases(text, expected):
    assert [text[start:end] for start, end in sentence_offsets(text)] == expected


def test_sentences_are_ordered_stripped_and_cover_every_character():
    pieces = ASCII_PIECES + TYPOGRAPHIC_PIECES + [" A", " The", "\n\n", ". ", "? ", "! ", "\u2019 "]
    for text in random_texts(20_000, 1213, pieces):
        spans = sentence_offsets(text)
        covered = 0
        for start, end in spans:
            assert covered <= start < end <= len(text), (text, spans)
            assert not text[covered:start].strip(), (text, spans)  # only whitespace between sentences
            assert text[start:end] == text[start:end].strip()
            covered = end
        assert not text[covered:].strip(), (text, spans)


def test_a_byte_order_mark_is_neither_a_word_nor_part_of_one_and_offsets_still_point_into_the_text():
    text = "\ufeffThe dog barked. It ran."
    words, offsets = tokenize_with_offsets(text)
    assert words == ["The", "dog", "barked", ".", "It", "ran", "."] and offsets[0] == (1, 4)
    assert [text[start:end] for start, end in offsets] == words
    assert sentence_offsets(text) == [(1, 16), (17, 24)]


# ---------------------------------------------------------------------------------------------------------------
# Long runs: linear time


def cpu_seconds(function, argument, limit: float | None = None) -> float | None:
    """The CPU time of `function(argument)` (not the wall clock, which other processes slow down), or None where it
    was stopped after `limit` seconds of it."""

    class TooSlow(Exception):
        pass

    def stop(signum, frame):
        raise TooSlow

    previous = signal.signal(signal.SIGPROF, stop)
    try:
        if limit is not None:
            signal.setitimer(signal.ITIMER_PROF, limit)
        start = time.process_time()
        function(argument)
        return time.process_time() - start
    except TooSlow:
        return None
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def split_raw_text(text: str, convention: str) -> list:
    """What the pipeline does with raw text: sentences, then the words of each."""
    return [tokenize_with_offsets(text[start:end], convention) for start, end in sentence_offsets(text)]


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer to stop a slow run")
@pytest.mark.parametrize(
    ("make", "longest", "convention"),
    [
        (lambda length: "a" * length, 1_000_000, "ptb"),  # the address pattern read on from each letter
        (lambda length: "1" * length, 1_000_000, "ud"),
        (lambda length: "http://example.com/" + "a" * length, 1_000_000, "ud"),
        # Runs of one-character words: a tenth of the length takes as long.
        (lambda length: "!" * length + "x", 100_000, "ud"),  # the sentence end read on from each "!"
        (lambda length: "," * length + "1", 100_000, "ud"),  # a punctuation run read on from each word in it
        (lambda length: "-" * length, 100_000, "ud"),
    ],
    ids=["letters", "digits", "url", "exclamation-marks", "commas", "hyphens"],
)
def test_a_long_run_without_spaces_is_split_in_linear_time(make, longest, convention):
    # Each tenfold longer text may take at most 30 times as long (linear: about 10 times, quadratic: 100); a run that
    # takes longer is stopped there, so that a quadratic split fails in seconds rather than hours.
    length = longest // 100
    first = [cpu_seconds(lambda text: split_raw_text(text, convention), make(length)) for _ in range(3)]
    taken: float = min(seconds for seconds in first if seconds is not None)  # no limit: each run ends
    while length < longest:
        length *= 10
        limit = 30 * taken
        seconds = cpu_seconds(lambda text: split_raw_text(text, convention), make(length), limit)
        assert seconds is not None, (
            f"{length:,} characters took over 30 times as long as a tenth ({limit:.3f} s of CPU)"
        )
        taken = seconds


ADDRESS_PIECES = list("aw.:/@1+-_ ,;!?'()\"<>x\u00e9") + ["www.", "://", "http://", "a@b.com", ".co"]


def test_address_spans_are_those_of_the_address_pattern():
    for text in random_texts(20_000, 1819, ADDRESS_PIECES):
        assert word_tokenization.address_spans(text) == [match.span() for match in WEB_OR_EMAIL.finditer(text)], text
