"""Penn-Treebank-style word tokenization with nothing but the standard library's `re`.

The parsing pipeline must run on the Hugging Face Hub where only torch and transformers are installed, so it cannot
use nltk. `word_tokenize` reproduces the default output of `nltk.tokenize.TreebankWordTokenizer().tokenize(text)`
(itself a port of Robert MacIntyre's PTB `tokenizer.sed`): double quotes become `` and '', punctuation is split off,
clitics (n't 's 're 'll 'd 've 'm) and fused forms (cannot, gonna, wanna, ...) are split, a sentence-final period is
split while inner abbreviation periods stay attached, and brackets are kept as `(`, `)` (not -LRB-/-RRB-).

It works by rewriting the string with a fixed sequence of substitutions that pad tokens with spaces, then splitting
on whitespace. The ORDER of the rules matters: later rules look at spaces and characters that earlier ones produced
or left alone, so the sequence below mirrors nltk's exactly (tests/pipelines/test_word_tokenization.py checks it).

For raw text the pipeline uses two functions built on it: `sentence_offsets` (a rule-based English sentence
splitter) and `tokenize_with_offsets` (the same split, each word as the text writes it with its character offsets,
typographic punctuation split as its ASCII form, web and e-mail addresses whole). The words follow one of two
conventions (`WORD_CONVENTIONS`), that of the text a model was trained on: "ptb" (the split above, as the Penn
Treebank writes words: hyphenated words, "and/or", "1-2" whole) or "ud" (as UD English-EWT writes them: hyphens and
slashes between words split off, runs of punctuation and emoticons whole, ...: `ud_offsets`).
"""

import re

# Each rule is (pattern, replacement). Replacements only add spaces or turn '"' into `` / ''.
_RULES = (
    # -- Opening double quotes ------------------------------------------------------------------------------------
    # A '"' at the very start of the text can only open a quotation.
    (re.compile(r'^"'), "``"),
    # `` already in the text (or just made) is a token of its own.
    (re.compile(r"``"), " `` "),
    # '"' or '' after a space or an opening bracket opens a quotation (only a literal space counts, as in nltk).
    (re.compile(r"([ (\[{<])(\"|'')"), r"\1 `` "),
    # -- Punctuation ----------------------------------------------------------------------------------------------
    # ':' and ',' split off unless a digit follows, which keeps 3,000 and 10:30 whole.
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (re.compile(r"([:,])$"), r" \1 "),
    # An ellipsis is one token.
    (re.compile(r"\.\.\."), " ... "),
    # Symbols that are always tokens by themselves ($ before amounts, % after them, ...).
    (re.compile(r"[;@#$%&]"), r" \g<0> "),
    # Only the LAST period of the text splits off (abbreviations such as "U.S." or "Mr." elsewhere keep theirs);
    # closing brackets and quotes may follow it, and a period after another period (an ellipsis) is left alone.
    (re.compile(r"([^.])(\.)([\])}>\"']*)\s*$"), r"\1 \2\3 "),
    (re.compile(r"[?!]"), r" \g<0> "),
    # A single quote followed by a space closes a quotation (or ends a plural possessive): split it off.
    (re.compile(r"([^'])' "), r"\1 ' "),
    # -- Brackets and dashes --------------------------------------------------------------------------------------
    (re.compile(r"[\]\[(){}<>]"), r" \g<0> "),
    (re.compile(r"--"), " -- "),
)

# Applied to " " + text + " ", so that every token is now followed by a space that the patterns can anchor on.
_CLOSING_RULES = (
    # Remaining double quotes ('' or ") close a quotation.
    (re.compile(r"''|\""), " '' "),
    # Clitics at the end of a word: 's 'm 'd (any case) and a bare closing ', then 'll 're 've n't.
    # Two passes, as in nltk: the first can free up a word end that the second then splits ("xn't's" -> x n't 's).
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
)

# Fused forms split into two words, any case: cannot -> can not, gonna -> gon na, 'tis -> 't is, ...
# ("wanna" must be followed by whitespace, so that e.g. "wanna-be" is left alone, as nltk does.)
_FUSED_WORDS = tuple(
    re.compile(pattern)
    for pattern in (
        r"(?i)\b(can)(not)\b",
        r"(?i)\b(d)('ye)\b",
        r"(?i)\b(gim)(me)\b",
        r"(?i)\b(gon)(na)\b",
        r"(?i)\b(got)(ta)\b",
        r"(?i)\b(lem)(me)\b",
        r"(?i)\b(more)('n)\b",
        r"(?i)\b(wan)(na)(?=\s)",
        r"(?i) ('t)(is)\b",
        r"(?i) ('t)(was)\b",
    )
)


def word_tokenize(text: str) -> list[str]:
    """Split `text` into Penn Treebank tokens, exactly as nltk's `TreebankWordTokenizer().tokenize(text)` does.

    >>> word_tokenize('"They can\\'t pay $3.88," she said.')
    ['``', 'They', 'ca', "n't", 'pay', '$', '3.88', ',', "''", 'she', 'said', '.']
    """
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    text = f" {text} "
    for pattern, replacement in _CLOSING_RULES:
        text = pattern.sub(replacement, text)
    for pattern in _FUSED_WORDS:
        text = pattern.sub(r" \1 \2 ", text)
    return text.split()


# -- Typographic punctuation ----------------------------------------------------------------------------------------
# What the rules above see in place of each typographic character, so that it splits as its ASCII form does; the
# words keep the original characters. A form longer than one character is padded with spaces, so that it is always a
# token of its own and no token holds part of it.
_ASCII_FORMS = {
    **dict.fromkeys("\u201c\u201d\u201e\u201f\u00ab\u00bb\u2039\u203a", '"'),  # “ ” „ ‟ « » ‹ ›: always split off
    **dict.fromkeys("\u2019\u201b\u02bc", "'"),  # ’ ‛ ʼ: apostrophes (don’t, John’s) and closing single quotes
    "\u2018": " ` ",  # ‘ opens a quotation (ASCII ` would stay attached to the next word)
    "\u2026": " ... ",  # …
    "\u2014": " -- ",  # — (em dash)
    "\u2015": " -- ",  # ― (horizontal bar)
    "\u2013": "-",  # – (en dash): inside a word as a hyphen (1990–95), a token of its own between spaces
    "\ufeff": " ",  # a byte-order mark (zero-width no-break space) left at the start of a file's text: a space
    # Fullwidth ASCII (！ ？ ， ．...: U+FF01-U+FF5E) is its ASCII form.
    **{chr(code): chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)},
}
_TYPOGRAPHIC = re.compile(f"[{re.escape(''.join(_ASCII_FORMS))}]")


# A web address (with its scheme or www.) or an e-mail address, without the punctuation that may end a sentence
# after it.
WEB_OR_EMAIL = re.compile(
    r"(?:[a-zA-Z][a-zA-Z0-9+.-]*://|www\.)[^\s<>\"]*[^\s<>\".,;:!?'()\[\]{}]"
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[a-zA-Z]{2,}"
)
# Searching for `WEB_OR_EMAIL` tries it at each character, and each try reads on to the end of the run of letters it
# starts in: quadratic in a long word. A match starts only at "www.", at the first letter (after where the search
# stands) of a run of scheme characters followed by "://" (`_SCHEME_RUN`), or in a run of local-part characters
# followed by "@" (`_LOCAL_PART_RUN`); and whether it matches in such a run depends on what follows the run, not on
# where in it the try starts. So `address_spans` tries it once per such place. The look-behinds find each run from
# its start only, so that finding the runs is linear too.
_SCHEME_RUN = re.compile(r"(?<![a-zA-Z0-9+.-])[a-zA-Z0-9+.-]+(?=://)")
_WWW = re.compile(r"www\.")
_LOCAL_PART_RUN = re.compile(r"(?<![\w.+-])[\w.+-]+(?=@)")
_SCHEME_LETTER = re.compile(r"[a-zA-Z]")


def address_spans(text: str) -> list[tuple[int, int]]:
    """The `[start, end)` offsets of the web and e-mail addresses in `text`: those of `WEB_OR_EMAIL.finditer(text)`,
    found in linear time."""
    places = sorted(
        [(match.start(), match.end(), True) for match in _SCHEME_RUN.finditer(text)]
        + [(match.start(), match.start() + 1, False) for match in _WWW.finditer(text)]  # one place wide
        + [(match.start(), match.end(), False) for match in _LOCAL_PART_RUN.finditer(text)]
    )
    spans, position = [], 0
    for start, end, scheme in places:  # in order, so that the first match found is the leftmost
        start = max(start, position)
        if scheme:  # a scheme starts with a letter
            letter = _SCHEME_LETTER.search(text, start, end)
            start = letter.start() if letter else end
        if start < end and (match := WEB_OR_EMAIL.match(text, start)):
            spans.append(match.span())
            position = match.end()
    return spans


def _ascii_copy(text: str) -> tuple[str, list[int]]:
    """`text` with each typographic character in its ASCII form, and for each character of the copy the index of the
    character of `text` it comes from."""
    if not _TYPOGRAPHIC.search(text):
        return text, list(range(len(text)))
    pieces, origin = [], []
    for index, character in enumerate(text):
        form = _ASCII_FORMS.get(character, character)
        pieces.append(form)
        origin.extend([index] * len(form))
    return "".join(pieces), origin


def tokenize_with_offsets(text: str, convention: str = "ptb") -> tuple[list[str], list[tuple[int, int]]]:
    """The words of `text` split as `word_tokenize` splits ASCII text, each as the text writes it (so that the text
    can be rebuilt from them: a '"' stays '"', where `word_tokenize` writes `` or ''), and the `[start, end)`
    character offsets of each in `text`: `text[start:end]` is the word. Typographic punctuation (“ ” ‘ ’ „ « » ‹ › …
    – — and fullwidth ！ ？ ...) splits as its ASCII form does: `“Quotes” don’t` gives `“`, `Quotes`, `”`, `do`,
    `n’t`. A web or e-mail address is one word, as UD English-EWT writes it (`WEB_OR_EMAIL`).

    `convention` (one of `WORD_CONVENTIONS`): "ptb", the split above; "ud", that split re-cut as UD English-EWT
    writes words (`ud_offsets`: `well-known` gives `well`, `-`, `known`; `and/or` gives `and`, `/`, `or`).

    >>> tokenize_with_offsets('He said "no."')
    (['He', 'said', '"', 'no', '.', '"'], [(0, 2), (3, 7), (8, 9), (9, 11), (11, 12), (12, 13)])
    >>> tokenize_with_offsets("A well-known fact!!", convention="ud")[0]
    ['A', 'well', '-', 'known', 'fact', '!!']
    """
    if convention not in WORD_CONVENTIONS:
        raise ValueError(f"convention must be one of {WORD_CONVENTIONS}, got {convention!r}")
    copy, origin = _ascii_copy(text)
    # An address is seen by the rules as one plain word of its length, so that no rule splits it.
    pieces, position = [], 0
    for start, end in address_spans(copy):
        pieces += [copy[position:start], "x" * (end - start)]
        position = end
    copy = "".join(pieces) + copy[position:]
    words, offsets = [], []
    position = 0
    for token in word_tokenize(copy):
        # The rules only add spaces and write '"' (or '' after a space) as `` or '': tokens appear in order.
        while copy[position].isspace():
            position += 1
        if copy.startswith(token, position):
            length = len(token)
        elif token in ("``", "''") and copy[position] == '"':
            length = 1
        elif token in ("``", "''") and copy.startswith(("``", "''"), position):  # '' written as `` after a space
            length = 2
        else:  # the rules above never do this; wrong offsets would be worse than an error
            raise ValueError(f"cannot align the word {token!r} with character {origin[position]} of {text!r}")
        start, end = origin[position], origin[position + length - 1] + 1
        words.append(text[start:end])
        offsets.append((start, end))
        position += length
    words, offsets = split_inner_periods(words, offsets)
    if convention == "ud":
        offsets = ud_offsets(text, offsets)
        words = [text[start:end] for start, end in offsets]
    return words, offsets


def split_inner_periods(words: list[str], offsets: list[tuple[int, int]]) -> tuple[list, list]:
    """`word_tokenize` splits off only the text's last period; a period ending any other word is split off too
    (`Yes. ?` gives `Yes`, `.`, `?`; so does an address before a period), unless it belongs to the word: an
    abbreviation, an initial, a dotted abbreviation or a number (`ABBREVIATIONS`, `U.S.`, `J.`, a list's `1.`)."""
    split_words, split_offsets = [], []
    for index, (word, (start, end)) in enumerate(zip(words, offsets)):
        stem = word[:-1]
        inner = index < len(words) - 1 and word.endswith(".") and stem and not stem.endswith(".")
        if inner and not _keeps_period(stem):
            split_words += [stem, "."]
            split_offsets += [(start, end - 1), (end - 1, end)]
        else:
            split_words.append(word)
            split_offsets.append((start, end))
    return split_words, split_offsets


# -- Word conventions -----------------------------------------------------------------------------------------------
# How the words of a model's training text are cut: "ptb" as the Penn Treebank does (`tokenize_with_offsets`'s own
# split), "ud" as UD English-EWT does (`ud_offsets`). The rules of "ud" were chosen on EWT's train part.
WORD_CONVENTIONS = ("ptb", "ud")

# What EWT writes as one word where the shared split makes several (joined only where they begin and end at word
# boundaries): a run of . ! ? (`!!!`, `?!`, `....`); a run of one other punctuation mark (`<<`, `**`, `---`; not
# brackets or quotes); an emoticon standing apart (`:)`, `;-)`, `:D`, `(:`); letters joined by & (`AT&T`, `P&L`) or
# words by @ (`Rice@ENRON`, an address without a domain).
_UD_WHOLE = re.compile(
    r"(?P<run>[.!?]{2,}"
    r"|([^\w\s.!?()\[\]{}\"'`])\2+)"
    r"|(?<!\S)(?:[:;=][-^']?[()\[\]DPpOo/\\|*]|[()][-^']?[:;=])(?=\s|$|[.,!?])"
    r"|(?<![\w&])[^\W\d_]{1,4}&[^\W\d_]{1,4}(?![\w&])"
    r"|(?<![\w@.])\w+@\w+(?![\w@])"
)
# Hyphens (ASCII, Unicode hyphen and non-breaking hyphen, en dash), which EWT splits off between words...
_HYPHENS = "-\u2010\u2011\u2013"
# ...except after a prefix that is no word of its own (e-mail, non-profit, mid-1980s, re-read): those seen on EWT's
# train part, and a few more of their kind.
UD_HYPHEN_PREFIXES = frozenset(
    "anti arch co counter cross e ex extra hyper intra macro mega micro mid mini multi neo non over post pre pro "
    "pseudo psycho quasi re semi socio sub super ultra un".split()
)
# Numbers that EWT keeps whole although they hold a hyphen or slash: three or more groups of digits (dates 10/20/2020
# and 11-20-2000, telephone numbers 713-853-3989 and 713/853-6197), a telephone number or ZIP+4 code (555-1234,
# 77042-2016), a month/day date (9/11, 12/27). Other numbers are cut there: ranges (1-2, 1969-1970), fractions (3/4).
_UD_WHOLE_NUMBER = re.compile(r"\d+(?:[-/]\d+){2,}|(?:\d{3}|\d{5})-\d{4}|(?:0?[1-9]|1[0-2])/(?:0?[1-9]|[12]\d|3[01])")
# Two single letters joined by a slash stay whole (w/o, l/c, I/S); other slashes are cut (and/or, he/she).
_LETTER_PAIR = re.compile(r"[^\W\d_]/[^\W\d_]")
# Where EWT cuts a word in two that the shared split keeps whole (the first part; the match must reach the word's end):
# contractions written without an apostrophe (dont, cant, wont, im, youre, thats), a number and its unit (5pm, 7:30PM,
# 35mm, 65k; ordinals 2nd and decades 1980s stay whole), a number and its period (a list's `1.`).
_UD_CUT = re.compile(
    r"(?i:(?:do|does|did|is|are|was|were|has|have|had|could|would|should|must|need|might|ca|wo|ai)(?=nt\Z)"
    r"|i(?=(?:m|ve)\Z)|(?:you|they)(?=(?:re|ve|ll)\Z)|(?:that|what|there|here|he|she)(?=s\Z)"
    r"|\d+(?:[.,:]\d+)*(?=(?:am|pm|k|m|b|bn|mm|cm|km|kg|mg|ml|oz|lbs?|ft|k?hz|mhz|ghz|kb|mb|gb|tb|mph|kph|mins?|"
    r"hrs?|secs?)\Z))"
    r"|\d+(?=\.\Z)"
)
# A single quote opening a word is cut off (`'degenerate'` gives `'`, `degenerate`, `'`), unless the word is a clitic.
_CLITIC = re.compile(r"(?i)'(?:s|m|d|ll|re|ve|t|em|n|cause|til|tis|twas)")
_BEFORE_OPENING_QUOTE = '([{"\u201c\u2018'


def ud_offsets(text: str, offsets: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The words at `offsets` in `text` (those of `tokenize_with_offsets`'s own split) re-cut as UD English-EWT writes
    words. In each word that is no web or e-mail address and no number kept whole (`_UD_WHOLE_NUMBER`): an opening
    single quote cut off; hyphens cut off between words (`well - known`, `1969 - 1970`) except after a prefix
    (`UD_HYPHEN_PREFIXES`: `e-mail`, `non-profit`), and at a word's end (`book -`); slashes cut off (`and / or`,
    `3 / 4`) except between two letters (`w/o`); the cuts of `_UD_CUT` (`do nt`, `5 pm`, `1 .`). Then the words
    that make up a match of `_UD_WHOLE` are joined (`!!!`, `:)`, `AT&T`)."""
    cut = []
    for start, end in offsets:
        if WEB_OR_EMAIL.fullmatch(text, start, end):
            cut.append((start, end))
            continue
        if (
            end - start > 1
            and text[start] == "'"
            and text[start + 1].isalpha()
            and not _CLITIC.fullmatch(text, start, end)
            and (start == 0 or text[start - 1].isspace() or text[start - 1] in _BEFORE_OPENING_QUOTE)
        ):
            cut.append((start, start + 1))
            start += 1
        if _UD_WHOLE_NUMBER.fullmatch(text, start, end):
            cut.append((start, end))
            continue
        piece_start = start
        for position in range(start, end):
            if _cuts_at(text, start, end, position):
                if position > piece_start:
                    cut += _cut_piece(text, piece_start, position)
                cut.append((position, position + 1))
                piece_start = position + 1
        if piece_start < end:
            cut += _cut_piece(text, piece_start, end)
    return _join_whole(text, cut)


def _join_whole(text: str, offsets: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """`offsets` with the words that make up a match of `_UD_WHOLE` (from the start of one to the end of another)
    joined into one."""
    last_word_ending_at = {end: index for index, (_, end) in enumerate(offsets)}
    joined = []
    index = 0
    # The end of the last run of punctuation that joined nothing: from a word inside it, `_UD_WHOLE` matches the same
    # run's end (or nothing) and joins nothing either, so it is not read again from each word (quadratic in ",,,,1").
    unjoined_run_end = 0
    while index < len(offsets):
        start, end = offsets[index]
        match = _UD_WHOLE.match(text, start) if start >= unjoined_run_end else None
        last = last_word_ending_at.get(match.end(), index) if match else index
        if match and last > index:
            end, index = match.end(), last
        elif match and match["run"]:
            unjoined_run_end = match.end()
        joined.append((start, end))
        index += 1
    return joined


def _cuts_at(text: str, start: int, end: int, position: int) -> bool:
    """Whether a hyphen or slash at `position` in the word `text[start:end]` (two characters or more) is cut off as
    a word of its own: a hyphen ending the word (`book- and`) or starting it before a letter (`-more`; a negative
    number stays whole), or one between two characters other than hyphens, except after a prefix; a slash between two
    characters other than slashes, except between two letters."""
    character = text[position]
    if end - start < 2 or character not in _HYPHENS + "/":
        return False
    if position in (start, end - 1):
        if character == "/":
            return False
        neighbour = text[start + 1] if position == start else text[end - 2]
        return neighbour not in _HYPHENS and (position == end - 1 or neighbour.isalpha())
    before, after = text[position - 1], text[position + 1]
    if character == "/":
        return "/" not in (before, after) and not _LETTER_PAIR.fullmatch(text, start, end)
    if before in _HYPHENS or after in _HYPHENS:
        return False
    prefix_start = position
    while prefix_start > start and text[prefix_start - 1].isalnum():
        prefix_start -= 1
    at_word_start = prefix_start == start or text[prefix_start - 1] not in _HYPHENS
    return not (at_word_start and text[prefix_start:position].lower() in UD_HYPHEN_PREFIXES)


def _cut_piece(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """`text[start:end]` (part of a word, between cut hyphens and slashes) as one or two words (`_UD_CUT`)."""
    match = _UD_CUT.match(text, start, end)
    if match and match.end() > start:
        return [(start, match.end()), (match.end(), end)]
    return [(start, end)]


# -- Sentences ------------------------------------------------------------------------------------------------------
# A run of these may end a sentence (. ! ? … ！ ？ ‼ ⁇ ⁈ ⁉ and runs such as ?! or ...), and the closing quotes and
# brackets right after it belong to the sentence it ends.
_TERMINATORS = ".!?\u2026\uff01\uff1f\u203c\u2047\u2048\u2049"
_CLOSERS = "\"')\\]}\u201d\u2019\u00bb\u203a"
# Opening quotes and brackets before the first letter of the next sentence.
_OPENERS = "\"'(\\[{\u201c\u2018\u201e\u00ab\u2039\u00bf\u00a1`"
# A word (from the previous whitespace), the terminators ending it, closers; then whitespace or the end. The run of
# terminators starts after no terminator (as the shortest first group makes it anyway), so that the search does not
# read a long run again from each of its characters (quadratic in "!!!...!x").
_CANDIDATE_END = re.compile(rf"(?<!\S)(\S*?)(?<![{_TERMINATORS}])([{_TERMINATORS}]+)([{_CLOSERS}]*)(?=\s|$)")
# A blank line (two newlines with only other whitespace between) or a paragraph separator always ends a sentence.
_BLANK_LINE = re.compile(r"(?:\n[^\S\n]*\n|\u2029)\s*")
_NEXT_FULL_WORD = re.compile(rf"\s*[{_OPENERS}]*(\w*)")
_NEXT_WORD = re.compile(rf"\s*[{_OPENERS}]*(\S?)")
_HAS_WORD_CHARACTER = re.compile(r"\w")

# Words whose period does not end a sentence (lower case, without the final period): titles and other abbreviations
# usually followed by a capitalised name or word. Dotted abbreviations (U.S., e.g., a.m.) are recognised by their
# form. Single capital letters (initials: J. Smith) count too, except "I".
ABBREVIATIONS = frozenset(
    "mr mrs ms mx dr prof sr jr st mt rev hon gen col capt lt sgt cpl adm gov sen rep pres supt insp "
    "messrs mme mlle inc corp ltd co bros vs etc al approx dept univ assn ave blvd rd ft "
    "no nos vol vols fig figs ch sec pp p ed eds est jan feb mar apr jun jul aug sep sept oct nov dec "
    "esp cf ca et incl misc tel ext yr yrs hr hrs spec rec mm cm km mg kg ml lb lbs oz".split()
)
_DOTTED_ABBREVIATION = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")
# Words that start a sentence far more often than they follow a name's period ("Washington, D.C. They ..."): after
# a dotted abbreviation (D.C., U.S.) such a capitalised word begins a new sentence.
SENTENCE_STARTERS = frozenset(
    "the a an this that these those there they it he she we i you his her its their our my but and so if when "
    "what why how in on at for as after before however also then".split()
)


def _keeps_period(word: str) -> bool:
    """Whether `word` + "." is an abbreviation (a known one, a dotted one, an initial other than "I") or a number."""
    initial = len(word) == 1 and word.isupper() and word != "I"
    return initial or word.isdigit() or word.lower() in ABBREVIATIONS or bool(_DOTTED_ABBREVIATION.fullmatch(word))


def _ends_sentence(text: str, match: re.Match, paragraph_end: int) -> bool:
    """Whether the candidate `match` of `_CANDIDATE_END` ends a sentence (in a paragraph ending at `paragraph_end`)."""
    word, terminators, closers = match.groups()
    following = _word_after(_NEXT_WORD, text, match.end(), paragraph_end)
    if not following:
        return True
    if terminators == "." and following.isdigit():
        return False
    word = word.lstrip(_OPENERS)
    if following.islower():  # informal text starts sentences in lower case too, but not after a quotation
        if closers:  # "Why?" she asked.
            return False
        if terminators == ".":  # after a plain word, not an abbreviation (etc. and) nor a name's period (D.C. is)
            return word.isalpha() and len(word) > 1 and not _keeps_period(word)
        return not any(mark in terminators for mark in ".\u2026")  # ? or !; an ellipsis pauses (wait... and)
    if terminators != ".":
        return True
    if _DOTTED_ABBREVIATION.fullmatch(word):
        return _word_after(_NEXT_FULL_WORD, text, match.end(), paragraph_end).lower() in SENTENCE_STARTERS
    return not (_keeps_period(word) and not word.isdigit())


def _word_after(pattern: re.Pattern[str], text: str, start: int, end: int) -> str:
    """The word (group 1) that `_NEXT_WORD` or `_NEXT_FULL_WORD` reads at `start`, before `end`."""
    match = pattern.match(text, start, end)
    if match is None:  # every part of these patterns is optional: they match everywhere
        raise ValueError(f"{pattern.pattern!r} does not match at {start}: it must match everywhere")
    return match.group(1)


def sentence_offsets(text: str) -> list[tuple[int, int]]:
    """The `[start, end)` character offsets of the sentences of `text`, in order, without surrounding whitespace.

    Rule-based, for English. A sentence ends at a run of . ! ? … (also ?!, ..., !!, fullwidth ！ ？), with the closing
    quotes and brackets right after it, when whitespace and then a word follow, and not after a period ending a known
    abbreviation (Mr. Dr. Inc. etc. vs. ...: `ABBREVIATIONS`), a dotted one (U.S. e.g. a.m.) or an initial (J.
    Smith). Before a digit a period ends nothing (No. 5, p. 12); before a lowercase word (informal text: "thanks. i
    will", "really? no") a ? or ! ends one unless a closing quote follows it ("Why?" she asked), a single period ends
    one after a plain word of two letters or more, and an ellipsis never does. A blank line always ends one; a single
    newline is a space. A piece without a letter or digit (a stray "..." or "--") joins its neighbour.

    Not handled: a sentence that ends with an abbreviation or an initial is not split there before a capitalised word
    (moved to the U.S. He left); a terminator with no space after it (end.Next) ends nothing; a sentence without a
    terminator ends only at a blank line; no list markers, headings or emoticons are recognised.
    """
    ends: list[int] = []
    paragraph_start = 0
    for paragraph_end, next_start in [(m.start(), m.end()) for m in _BLANK_LINE.finditer(text)] + [(len(text),) * 2]:
        ends.extend(
            match.end()
            for match in _CANDIDATE_END.finditer(text, paragraph_start, paragraph_end)
            if _ends_sentence(text, match, paragraph_end)
        )
        ends.append(paragraph_end)
        paragraph_start = next_start
    spans: list[tuple[int, int]] = []
    start = len(text) - len(text.lstrip("\ufeff"))  # a byte-order mark begins no sentence
    for end in ends:
        piece = text[start:end]
        stripped_start = start + len(piece) - len(piece.lstrip())
        stripped_end = start + len(piece.rstrip())
        start = end
        if stripped_start >= stripped_end:
            continue
        has_word = _HAS_WORD_CHARACTER.search(text, stripped_start, stripped_end)
        if spans and not (has_word and _HAS_WORD_CHARACTER.search(text, *spans[-1])):  # a piece joins its neighbour
            spans[-1] = (spans[-1][0], stripped_end)
        else:
            spans.append((stripped_start, stripped_end))
    return spans
