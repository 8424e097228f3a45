"""Penn-Treebank-style word tokenization with nothing but the standard library's `re`.

The parsing pipeline must run on the Hugging Face Hub where only torch and transformers are installed, so it cannot
use nltk. `word_tokenize` reproduces the default output of `nltk.tokenize.TreebankWordTokenizer().tokenize(text)`
(itself a port of Robert MacIntyre's PTB `tokenizer.sed`): double quotes become `` and '', punctuation is split off,
clitics (n't 's 're 'll 'd 've 'm) and fused forms (cannot, gonna, wanna, ...) are split, a sentence-final period is
split while inner abbreviation periods stay attached, and brackets are kept as `(`, `)` (not -LRB-/-RRB-).

It works by rewriting the string with a fixed sequence of substitutions that pad tokens with spaces, then splitting
on whitespace. The ORDER of the rules matters: later rules look at spaces and characters that earlier ones produced
or left alone, so the sequence below mirrors nltk's exactly (tests/pipelines/test_word_tokenization.py checks it).
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
