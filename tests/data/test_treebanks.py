"""Gold treebank readers (`.mrg`, `.dp`, CoNLL-U) on small hand-made files written into tmp_path."""

import pytest

from hf_structure.data.conllu_format import read_conllu, read_conllu_gold
from hf_structure.data.treebanks import TreebankFormatError, content_heads, read_dp, read_mrg, read_treebank

# Four hand-made trees (one per line group, each in the outer empty bracket) and a punctuation-only one.
#  line 1:  A  "The old man , sat on the bench ."     function tags (NP-SBJ, PP-LOC=2), punctuation
#  line 8:  B  "`` Prices rose , '' traders said ."   traces (an SBAR left empty), a topicalised S
#  line 18: C  "The company said it would grow ."     unary chains: NP-SBJ>NP and SBAR>S (after the 0 trace)
#  line 24: D  "$ 10 billion ."                      a two-word sentence: no gold span
#  line 25: E  "-- ."                                 nothing left after cleaning: skipped
MRG = """( (S
    (NP-SBJ (DT The) (JJ old) (NN man) )
    (, ,)
    (VP (VBD sat)
      (PP-LOC=2 (IN on)
        (NP (DT the) (NN bench) )))
    (. .) ))
( (S
    (`` ``)
    (S-TPC-1
      (NP-SBJ (NNS Prices) )
      (VP (VBD rose) ))
    (, ,) ('' '')
    (NP-SBJ (NNS traders) )
    (VP (VBD said)
      (SBAR (-NONE- 0) (S (-NONE- *T*-1) )))
    (. .) ))
( (S
    (NP-SBJ (NP (DT The) (NN company) ))
    (VP (VBD said)
      (SBAR (-NONE- 0)
        (S (NP-SBJ (PRP it) ) (VP (MD would) (VP (VB grow) )))))
    (. .) ))
( (NP ($ $) (CD 10) (CD billion) (. .) ))
( (FRAG (: --) (. .) ))
"""

# The same sentences as dependencies (word TAB POS TAB head over all tokens, punctuation included).
DP = """The\tDT\t3
old\tJJ\t3
man\tNN\t5
,\t,\t3
sat\tVBD\t0
on\tIN\t5
the\tDT\t8
bench\tNN\t6
.\t.\t5

``\t``\t7
Prices\tNNS\t3
rose\tVBD\t4
,\t,\t5
''\t''\t7
traders\tNNS\t7
said\tVBD\t0
.\t.\t7

The\tDT\t2
company\tNN\t3
said\tVBD\t0
it\tPRP\t5
would\tMD\t3
grow\tVB\t5
.\t.\t3

$\t$\t3
10\tCD\t3
billion\tCD\t0
.\t.\t3

--\t:\t0
.\t.\t1
"""

GOLD_WORDS = [
    ["The", "old", "man", "sat", "on", "the", "bench"],
    ["Prices", "rose", "traders", "said"],
    ["The", "company", "said", "it", "would", "grow"],
    ["10", "billion"],
]
GOLD_LABELLED = [
    {(0, 3): {"NP"}, (3, 7): {"VP"}, (4, 7): {"PP"}, (5, 7): {"NP"}},
    {(0, 2): {"S"}},
    {(0, 2): {"NP"}, (2, 6): {"VP"}, (3, 6): {"SBAR", "S"}, (4, 6): {"VP"}},
    {},
]
# "rose" hangs from "," which hangs from "''" which hangs from "said": walked up to "said".
GOLD_HEADS = [[3, 3, 4, 0, 4, 7, 5], [2, 4, 4, 0], [2, 3, 0, 5, 3, 5], [2, 0]]


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def treebank(tmp_path):
    write(tmp_path / "tb" / "mrg" / "wsj_0001.mrg", MRG)
    write(tmp_path / "tb" / "dp" / "wsj_0001.dp", DP)
    return tmp_path / "tb"


# --- .mrg ----------------------------------------------------------------------------------------------------------


def test_read_mrg_cleans_the_trees(tmp_path):
    path = write(tmp_path / "a.mrg", MRG)
    sentences = read_mrg(path)
    assert [s.words for s in sentences] == GOLD_WORDS  # traces and punctuation gone, E skipped
    assert [s.labelled_spans for s in sentences] == GOLD_LABELLED  # function tags stripped, unary chains merged
    assert [s.spans for s in sentences] == [set(labelled) for labelled in GOLD_LABELLED]
    assert sentences[0].tags == ["DT", "JJ", "NN", "VBD", "IN", "DT", "NN"]
    assert sentences[3].tags == ["CD", "CD"]
    assert [s.source for s in sentences] == [f"{path}:1", f"{path}:8", f"{path}:18", f"{path}:24"]
    assert all(s.heads is None for s in sentences)


def test_read_mrg_drops_single_words_and_the_whole_sentence(tmp_path):
    path = write(tmp_path / "b.mrg", "( (S (NP (NNP John)) (VP (VBZ sleeps) (ADVP (RB very) (RB well)))) )\n")
    (sentence,) = read_mrg(path)
    assert sentence.words == ["John", "sleeps", "very", "well"]
    assert sentence.spans == {(1, 4), (2, 4)}  # not (0, 1) "John", not (0, 4) the sentence
    assert sentence.labelled_spans == {(1, 4): {"VP"}, (2, 4): {"ADVP"}}


def test_read_mrg_one_word_sentence(tmp_path):
    (sentence,) = read_mrg(write(tmp_path / "c.mrg", "( (S (INTJ (UH Yes)) (. .)) )"))
    assert sentence.words == ["Yes"] and sentence.spans == set() and sentence.labelled_spans == {}


def test_read_mrg_unary_chain_over_several_words_keeps_every_label(tmp_path):
    text = "( (S (NP-SBJ (NN it)) (VP (VBD was) (ADJP-PRD (ADVP (RB very) (RB very)))) (. .)) )"
    (sentence,) = read_mrg(write(tmp_path / "d.mrg", text))
    assert sentence.labelled_spans == {(1, 4): {"VP"}, (2, 4): {"ADJP", "ADVP"}}


def test_read_mrg_marks_a_unary_chain_over_the_whole_sentence(tmp_path):
    text = "( (S (NP-SBJ (-NONE- *)) (VP (VB Go) (ADVP (RB home))) (. .)) )\n( (S (NP (NN it)) (VP (VBD rained))) )\n"
    imperative, plain = read_mrg(write(tmp_path / "e.mrg", text))
    assert imperative.words == ["Go", "home"] and imperative.spans == set() and imperative.repeated_whole_span
    assert not plain.repeated_whole_span
    (one_word,) = read_mrg(write(tmp_path / "f.mrg", "( (S (VP (VB Go))) )"))
    assert not one_word.repeated_whole_span  # a one-word span is never scored


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("( (S (NN a) (NN b)) )\n\n( (S (NN c)\n (NN d))) )\n", 4, r"'\)' with no matching '\('"),
        ("( (S (NN a) (NN b)) )\n( (S (NN c)\n (NN d) )\n", 2, "never closed"),
        ("( (S (NN a) (NN b)) )\nstray ( (S (NN c)) )\n", 2, "text outside any bracketed tree"),
        ("( (S (NN a) (NN b)) )\n(  )\n", 2, "empty tree"),
        ("( (S (NN a)) )\n( (S (NP (NN a) b) (VB c)) )\n", 2, "malformed tree"),
        ("( (S (NN a)) )\n( (S (NP ) (VB c)) )\n", 2, "malformed tree"),
    ],
    ids=["extra-close", "never-closed", "stray-text", "empty", "word-beside-subtree", "empty-constituent"],
)
def test_read_mrg_malformed(tmp_path, text, line, message):
    path = write(tmp_path / "bad.mrg", text)
    with pytest.raises(TreebankFormatError, match=message) as error:
        read_mrg(path)
    assert str(error.value).startswith(f"{path}:{line}:")


def test_read_mrg_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothere.mrg"):
        read_mrg(tmp_path / "nothere.mrg")


# --- .dp -----------------------------------------------------------------------------------------------------------


def test_read_dp_keeps_every_token(tmp_path):
    blocks = read_dp(write(tmp_path / "a.dp", DP))
    assert len(blocks) == 5
    words, tags, heads, line = blocks[1]
    assert words == ["``", "Prices", "rose", ",", "''", "traders", "said", "."]
    assert tags == ["``", "NNS", "VBD", ",", "''", "NNS", "VBD", "."]
    assert heads == [7, 3, 4, 5, 7, 7, 0, 7]
    assert [block[3] for block in blocks] == [1, 11, 20, 28, 33]  # first line of each block


def test_content_heads_walks_up_through_punctuation():
    # tokens: 1 `` 2 Prices 3 rose 4 , 5 '' 6 traders 7 said 8 .
    tags = ["``", "NNS", "VBD", ",", "''", "NNS", "VBD", "."]
    assert content_heads(tags, [7, 3, 4, 5, 7, 7, 0, 7]) == [2, 4, 4, 0]
    assert content_heads(["NN", "VBZ"], [2, 0]) == [2, 0]  # nothing to remove
    assert content_heads(["DT", "NN", ".", "VBD"], [2, 4, 4, 0]) == [2, 3, 0]  # indices renumbered


@pytest.mark.parametrize(
    ("row", "what"),
    [("sat\tVBD", "two columns"), ("sat VBD 0", "spaces"), ("sat\tVBD\troot", "head not a number")],
)
def test_read_dp_malformed_row(tmp_path, row, what):
    path = write(tmp_path / "bad.dp", f"The\tDT\t2\nman\tNN\t0\n\nJohn\tNNP\t2\n{row}\n")
    with pytest.raises(TreebankFormatError, match="expected 'word<TAB>POS<TAB>head'") as error:
        read_dp(path)
    assert str(error.value).startswith(f"{path}:5:"), what


def test_read_dp_heads_that_are_not_a_tree(tmp_path):
    path = write(tmp_path / "cycle.dp", "a\tDT\t0\n\nb\tNN\t2\nc\tNN\t1\nd\tVB\t0\n")
    with pytest.raises(TreebankFormatError, match="cycle") as error:
        read_dp(path)
    assert str(error.value).startswith(f"{path}:3:")
    path = write(tmp_path / "range.dp", "a\tDT\t0\n\nb\tNN\t3\nc\tNN\t0\n")
    with pytest.raises(TreebankFormatError, match="invalid head 3") as error:
        read_dp(path)
    assert str(error.value).startswith(f"{path}:3:")


def test_read_dp_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothere.dp"):
        read_dp(tmp_path / "nothere.dp")


# --- read_treebank: .mrg joined with .dp ---------------------------------------------------------------------------


def test_read_treebank_joins_trees_and_heads(treebank):
    sentences = read_treebank(treebank)
    assert [s.words for s in sentences] == GOLD_WORDS
    assert [s.heads for s in sentences] == GOLD_HEADS
    assert [s.labelled_spans for s in sentences] == GOLD_LABELLED


def test_read_treebank_several_files_in_name_order(treebank):
    write(treebank / "mrg" / "wsj_0000.mrg", "( (S (NP (NNP John)) (VP (VBZ sleeps)) (. .)) )\n")
    write(treebank / "dp" / "wsj_0000.dp", "John\tNNP\t2\nsleeps\tVBZ\t0\n.\t.\t2\n")
    sentences = read_treebank(treebank)
    assert [s.words for s in sentences] == [["John", "sleeps"]] + GOLD_WORDS
    assert [s.heads for s in sentences] == [[2, 0]] + GOLD_HEADS
    assert sentences[0].source.endswith("wsj_0000.mrg:1")


def test_read_treebank_without_dp(treebank):
    for path in (treebank / "dp").iterdir():
        path.unlink()
    (treebank / "dp").rmdir()
    sentences = read_treebank(treebank)
    assert [s.words for s in sentences] == GOLD_WORDS
    assert all(s.heads is None for s in sentences)


def test_read_treebank_words_disagree(treebank):
    write(treebank / "dp" / "wsj_0001.dp", DP.replace("company\tNN", "firm\tNN"))
    with pytest.raises(TreebankFormatError, match="disagree") as error:
        read_treebank(treebank)
    message = str(error.value)
    assert message.startswith(f"{treebank / 'dp' / 'wsj_0001.dp'}:20:")  # the .dp block's first line
    assert f"{treebank / 'mrg' / 'wsj_0001.mrg'}:18" in message  # and the tree it was matched with
    assert "firm" in message and "company" in message


def test_read_treebank_sentence_count_disagrees(treebank):
    write(treebank / "dp" / "wsj_0001.dp", DP.split("\n\n$")[0] + "\n")  # drop D and E
    with pytest.raises(TreebankFormatError, match="3 sentences with words, but .*wsj_0001.mrg has 4"):
        read_treebank(treebank)


def test_read_treebank_malformed_dp_row(treebank):
    write(treebank / "dp" / "wsj_0001.dp", DP.replace("rose\tVBD\t4", "rose\tVBD"))
    with pytest.raises(TreebankFormatError, match="expected 'word<TAB>POS<TAB>head'") as error:
        read_treebank(treebank)
    assert str(error.value).startswith(f"{treebank / 'dp' / 'wsj_0001.dp'}:13:")


def test_read_treebank_missing_pieces(tmp_path, treebank):
    with pytest.raises(FileNotFoundError, match="treebank not found"):
        read_treebank(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="no mrg/ folder"):
        read_treebank(tmp_path)
    (tmp_path / "empty" / "mrg").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="holds no .mrg file"):
        read_treebank(tmp_path / "empty")
    write(treebank / "mrg" / "wsj_0002.mrg", "( (S (NN a) (NN b)) )\n")  # a tree file with no .dp beside it
    with pytest.raises(FileNotFoundError, match="wsj_0002.dp"):
        read_treebank(treebank)


# --- CoNLL-U ---------------------------------------------------------------------------------------------------------

CONLLU = """# sent_id = s1
# text = I don't know.
1\tI\tI\tPRON\tPRP\t_\t4\tnsubj\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\tknow\tknow\tVERB\tVB\t_\t0\troot\t_\t_
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_

# sent_id = s2
1\tSue\tSue\tPROPN\tNNP\t_\t2\tnsubj\t_\t_
2\tlikes\tlike\tVERB\tVBZ\t_\t0\troot\t_\t_
3\tcoffee\tcoffee\tNOUN\tNN\t_\t2\tobj\t_\t_
4\tand\tand\tCCONJ\tCC\t_\t5\tcc\t_\t_
5\tBill\tBill\tPROPN\tNNP\t_\t2\tconj\t_\t_
5.1\tlikes\tlike\tVERB\tVBZ\t_\t_\t_\t2:conj\tCopyOf=2
6\ttea\ttea\tNOUN\tNN\t_\t5\torphan\t_\t_


1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t_\t_

"""


def test_read_conllu_skips_multiword_tokens_and_empty_nodes(tmp_path):
    sentences = read_conllu(write(tmp_path / "a.conllu", CONLLU))
    assert [s["id"] for s in sentences] == ["s1", "s2", "2"]  # no sent_id: the sentence's index
    assert sentences[0] == {
        "id": "s1",
        "words": ["I", "do", "n't", "know", "."],
        "upos": ["PRON", "AUX", "PART", "VERB", "PUNCT"],
        "xpos": ["PRP", "VBP", "RB", "VB", "."],
        "feats": ["_", "_", "_", "_", "_"],
        "heads": [4, 4, 4, 0, 4],
        "deprels": ["nsubj", "aux", "advmod", "root", "punct"],
        "line": 1,
    }
    assert sentences[1]["words"] == ["Sue", "likes", "coffee", "and", "Bill", "tea"]
    assert sentences[1]["heads"] == [2, 0, 2, 5, 2, 5]
    assert sentences[2]["words"] == ["Yes"] and sentences[2]["heads"] == [0]


def test_read_conllu_cycle_names_file_and_line(tmp_path):
    bad = (
        "# sent_id = bad\n"
        "1\ta\ta\tX\t_\t_\t2\tdep\t_\t_\n"
        "2\tb\tb\tX\t_\t_\t1\tdep\t_\t_\n"
        "3\tc\tc\tX\t_\t_\t0\troot\t_\t_\n"
    )
    path = write(tmp_path / "cycle.conllu", CONLLU + bad)
    with pytest.raises(TreebankFormatError, match="cycle") as error:
        read_conllu(path)
    assert str(error.value).startswith(f"{path}:22:")  # the bad sentence's first line (its comment)


def test_read_conllu_malformed_rows(tmp_path):
    path = write(tmp_path / "nohead.conllu", CONLLU + "1\ta\ta\tX\t_\t_\t_\tdep\t_\t_\n")
    with pytest.raises(TreebankFormatError, match="no head") as error:
        read_conllu(path)
    assert str(error.value).startswith(f"{path}:22:")
    path = write(tmp_path / "badhead.conllu", "1\ta\ta\tX\t_\t_\tx\tdep\t_\t_\n")
    with pytest.raises(TreebankFormatError, match="malformed CoNLL-U") as error:
        read_conllu(path)
    assert str(error.value).startswith(f"{path}:1:")


def test_read_conllu_names_the_row_of_a_bad_head_or_a_missing_one(tmp_path):
    rows = CONLLU.split("\n")  # line 11: s2's first word row ("Sue"), the sentence's second line
    for head, message in (("x", "malformed CoNLL-U: .*'head'"), ("_", "a word has no head")):
        bad = rows.copy()
        bad[10] = bad[10].replace("\t2\tnsubj", f"\t{head}\tnsubj")
        path = write(tmp_path / "bad.conllu", "\n".join(bad))
        with pytest.raises(TreebankFormatError, match=f"^{path}:11: {message}"):
            read_conllu(path)


@pytest.mark.parametrize("text", ["", "\n\n", "# a comment alone\n\n", "1\t.\t.\tPUNCT\t.\t_\t0\troot\t_\t_\n\n"])
def test_a_conllu_treebank_with_no_sentence_to_score_is_named(tmp_path, text):
    path = write(tmp_path / "empty.conllu", text)
    with pytest.raises(TreebankFormatError, match=f"^{path}: no sentence with a word to score"):
        read_treebank(path)


def test_an_mrg_treebank_with_no_sentence_to_score_is_named(tmp_path):
    (tmp_path / "mrg").mkdir()
    write(tmp_path / "mrg" / "empty.mrg", "")
    with pytest.raises(TreebankFormatError, match=f"^{tmp_path}: no sentence with a word to score"):
        read_treebank(tmp_path)


def test_read_conllu_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothere.conllu"):
        read_conllu(tmp_path / "nothere.conllu")


def test_read_conllu_gold_drops_punctuation_and_renumbers_heads(tmp_path):
    # A punctuation token that heads a word: the word is re-attached to the punctuation's own head.
    punct_head = (
        "1\ta\ta\tNOUN\t_\t_\t2\tdep\t_\t_\n"
        "2\t-\t-\tPUNCT\t_\t_\t3\tpunct\t_\t_\n"
        "3\tb\tb\tVERB\t_\t_\t0\troot\t_\t_\n\n"
    )
    only_punct = "1\t.\t.\tPUNCT\t_\t_\t0\troot\t_\t_\n\n"
    path = write(tmp_path / "a.conllu", CONLLU + punct_head + only_punct)
    sentences = read_conllu_gold(path)
    assert [s.words for s in sentences] == [
        ["I", "do", "n't", "know"],
        ["Sue", "likes", "coffee", "and", "Bill", "tea"],
        ["Yes"],
        ["a", "b"],
    ]
    assert [s.heads for s in sentences] == [[4, 4, 4, 0], [2, 0, 2, 5, 2, 5], [0], [2, 0]]
    assert all(s.spans == set() for s in sentences)
    assert sentences[0].source == f"{path}:1"  # file:line, as for the .mrg files
    assert read_treebank(path) == sentences  # read_treebank takes a .conllu file too
