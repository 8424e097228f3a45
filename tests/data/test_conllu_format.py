"""CoNLL-U written and read by its one owner, `hf_structure.data.conllu_format` (the `conllu` library's serializer
and parser): `# sent_id` and `# text`, labels, comment-only blocks, and round trips; a CoNLL-U file read to be
parsed again and written back with its parse. (Errors of the treebank reader on bad files:
tests/data/test_treebanks.py.)"""

import io

import conllu
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_structure.data.conllu_format import (
    comment_block,
    conllu_with_parse,
    parse_conllu,
    parse_to_conllu,
    parses_to_conllu,
    read_conllu_sentences,
)
from hf_structure.data.treebanks import TreebankFormatError
from hf_structure.structs.trees import distances_heights_to_tree
from tests.helpers.paths import FIXTURES


def test_a_parse_is_one_block_with_its_sent_id_and_text():
    text = parse_to_conllu({"words": ["John", "sleeps", "."], "heads": [2, 0, 2]}, sent_id=7, text="John sleeps.")
    assert text.startswith("# sent_id = 7\n# text = John sleeps.\n") and text.endswith("\t_\t_\n\n")
    rows = [line.split("\t") for line in text.strip("\n").split("\n")[2:]]
    assert rows[0] == ["1", "John", "_", "_", "_", "_", "2", "dep", "_", "_"]  # unlabelled: `dep`, the root `root`
    assert rows[1] == ["2", "sleeps", "_", "_", "_", "_", "0", "root", "_", "_"]
    labelled = parse_to_conllu({"words": ["a", "b"], "heads": [0, 1], "deprels": ["root", "obj"], "upos": ["X", "Y"]})
    (sentence,) = conllu.parse(labelled)
    assert [(t["upos"], t["deprel"]) for t in sentence] == [("X", "root"), ("Y", "obj")] and not sentence.metadata


def test_a_parse_without_heads_or_with_a_head_per_word_missing_is_refused():
    with pytest.raises(ValueError, match="CoNLL-U holds dependency heads, and this parse has none"):
        parse_to_conllu({"words": ["a", "b"], "spans": [[0, 2]]})
    with pytest.raises(ValueError, match="2 words but 3 heads"):
        parse_to_conllu({"words": ["a", "b"], "heads": [0, 1, 1]})


def test_comment_blocks_keep_the_place_of_inputs_without_a_parse():
    assert comment_block({"empty line": None}, 2) == "# sent_id = 2\n# empty line\n\n"
    text = comment_block({"text": "a b", "error": "too long"}, 3) + parse_to_conllu({"words": ["x"], "heads": [0]}, 4)
    assert [dict(block.metadata) for block in conllu.parse(text)] == [
        {"sent_id": "3", "text": "a b", "error": "too long"},
        {"sent_id": "4"},
    ]
    assert [sentence["id"] for sentence in parse_conllu(text)] == ["4"]  # read back: the parses alone


def test_the_pipelines_results_as_conllu(tmp_path):
    from transformers import pipeline

    from tests.helpers.tiny_models import save_tiny_model

    parser = pipeline("unsupervised-parsing", model=str(save_tiny_model(tmp_path / "tiny")))  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    texts = parser(["The old man sat on the bench.", "a dog ran"], batch_size=2)  # a text gives a list of sentences
    results = [sentence for sentences in texts for sentence in sentences]
    sentences = parse_conllu(parses_to_conllu(results, texts=["The old man sat on the bench.", "a dog ran"]))
    assert [(s["id"], s["words"], s["heads"]) for s in sentences] == [
        (str(number), r["words"], r["heads"]) for number, r in enumerate(results, 1)
    ]
    texts_written = [block.metadata["text"] for block in conllu.parse(parses_to_conllu(results))]
    assert texts_written == ["The old man sat on the bench.", "a dog ran"]  # default: each sentence's own text
    words_only = [{key: r[key] for key in ("words", "heads")} for r in results]
    assert conllu.parse(parses_to_conllu(words_only))[0].metadata["text"] == "The old man sat on the bench ."
    with pytest.raises(ValueError, match="1 texts for 2 parses"):
        parses_to_conllu(results, texts=["one"])


@settings(derandomize=True, max_examples=200, deadline=None, database=None)
@given(st.lists(st.integers(1, 10), min_size=1, max_size=3), st.data())
def test_round_trip(lengths, data):
    parses = []
    for n in lengths:
        number = st.integers(0, 3).map(float)
        distances = data.draw(st.lists(number, min_size=n - 1, max_size=n - 1))
        _, heads = distances_heights_to_tree(distances, data.draw(st.lists(number, min_size=n, max_size=n)))
        words = data.draw(st.lists(st.text("abcxyzABC.,'", min_size=1, max_size=5), min_size=n, max_size=n))
        labels = data.draw(st.lists(st.sampled_from(["nsubj", "obj", "acl:relcl"]), min_size=n, max_size=n))
        parses.append(
            {
                "words": words,
                "heads": heads,
                "deprels": ["root" if h == 0 else label for h, label in zip(heads, labels)],
            }
        )
    read = parse_conllu(parses_to_conllu(parses))
    assert [{key: s[key] for key in ("words", "heads", "deprels")} for s in read] == parses


def test_reading_skips_multiword_tokens_and_empty_nodes():
    text = (
        "# sent_id = a\n"
        "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "1\tdo\tdo\tAUX\t_\t_\t3\taux\t_\t_\n"
        "2\tn't\tnot\tPART\t_\t_\t3\tadvmod\t_\t_\n"
        "3\tgo\tgo\tVERB\t_\t_\t0\troot\t_\t_\n"
        "3.1\tgo\tgo\tVERB\t_\t_\t_\t_\t3:conj\t_\n"
        "\n"
    )
    assert parse_conllu(text) == [
        {
            "id": "a",
            "words": ["do", "n't", "go"],
            "upos": ["AUX", "PART", "VERB"],
            "xpos": [None, None, None],
            "feats": ["_", "_", "_"],
            "heads": [3, 3, 0],
            "deprels": ["aux", "advmod", "root"],
            "line": 1,
        }
    ]
    assert [sentence["line"] for sentence in parse_conllu("\n\n" + text + "\n" + text)] == [3, 11]


# ---------------------------------------------------------------------------------- a CoNLL-U file parsed again

FILE_TO_PARSE = (
    "# newdoc id = d1\n"
    "# sent_id = 1\n"
    "#no value\n"
    "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tdo\tdo\tAUX\tVBP\tMood=Ind\t_\t_\t_\t_\n"
    "2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t_\t_\n"
    "3\tgo\tgo\tVERB\tVB\t_\t_\t_\t_\tSpaceAfter=No\n"
    "3.1\tgone\tgo\tVERB\t_\t_\t_\t_\t3:conj\t_\n"
    "\r\n"
    "\n"
    "# only a comment\n"
    "\n"
    "1\tHi\t_\t_\t_\t_\t_\t_\t_\t_"  # no line end at the end of the file
)


def test_a_conllu_file_is_read_for_parsing_sentence_by_sentence_with_its_lines_as_they_are():
    sentences = list(read_conllu_sentences(io.StringIO(FILE_TO_PARSE), "in.conllu"))
    assert [(s.line, s.words) for s in sentences] == [(1, ["do", "n't", "go"]), (11, []), (13, ["Hi"])]
    assert sentences[0].lines == FILE_TO_PARSE.split("\n")[:8]
    assert sentences[0].metadata == {"newdoc id": "d1", "sent_id": "1"}
    parsed = conllu_with_parse(
        sentences[0], {"words": ["do", "n't", "go"], "heads": [3, 3, 0], "deprels": ["aux", "advmod", "root"]}
    )
    expected = FILE_TO_PARSE.split("\n")[:7]  # without the empty node 3.1, a node of the input's enhanced graph
    expected[4] = "1\tdo\tdo\tAUX\tVBP\tMood=Ind\t3\taux\t_\t_"
    expected[6] = "3\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\tSpaceAfter=No"
    assert parsed == "\n".join(expected) + "\n\n"  # only HEAD and DEPREL of the word lines changed
    unlabelled = conllu_with_parse(sentences[2], {"words": ["Hi"], "heads": [0]})
    assert unlabelled == "1\tHi\t_\t_\t_\t_\t0\troot\t_\t_\n\n"
    assert conllu_with_parse(sentences[1]) == "# only a comment\n\n"


def test_a_parse_with_word_tags_fills_upos_xpos_and_feats():
    parse = {"words": ["do", "n't", "go"], "heads": [3, 3, 0], "deprels": ["aux", "advmod", "root"]}
    parse |= {"upos": ["AUX", "PART", "VERB"], "xpos": ["VBP", "RB", "VB"], "feats": ["Mood=Ind", "_", "_"]}
    (sentence,) = conllu.parse(parse_to_conllu(parse))
    assert [(t["upos"], t["xpos"], t["feats"]) for t in sentence] == [
        ("AUX", "VBP", {"Mood": "Ind"}),
        ("PART", "RB", None),
        ("VERB", "VB", None),
    ]
    tagged = {**parse, "upos": ["X", "Y", "Z"], "xpos": ["x", "y", "z"], "feats": ["_", "_", "A=B"]}
    read = next(read_conllu_sentences(io.StringIO(FILE_TO_PARSE)))
    (sentence,) = conllu.parse(conllu_with_parse(read, tagged))
    words = [t for t in sentence if isinstance(t["id"], int)]
    # The input's tags (AUX VBP Mood=Ind ...) replaced by the parse's, the other columns as they were read.
    assert [(t["upos"], t["xpos"], t["feats"], t["lemma"]) for t in words] == [
        ("X", "x", None, "do"),
        ("Y", "y", None, "not"),
        ("Z", "z", {"A": "B"}, "go"),
    ]


def test_a_sentence_that_was_not_parsed_keeps_its_lines_with_an_error_and_no_head():
    (sentence,) = read_conllu_sentences(FILE_TO_PARSE.split("\n")[:8])
    text = conllu_with_parse(sentence, error="sentence 1: too\nlong")
    lines = text.split("\n")
    assert lines[3] == "# error = sentence 1: too long"  # after the comments, on one line
    assert lines[:3] + lines[4:] == [
        line
        if line.startswith(("#", "1-2"))
        else "\t".join(line.split("\t")[:6] + ["_", "_", "_"] + line.split("\t")[9:])
        for line in FILE_TO_PARSE.split("\n")[:7]
    ] + ["", ""]
    with pytest.raises(ValueError, match="3 words but 2 heads"):
        conllu_with_parse(sentence, {"words": ["a", "b"], "heads": [0, 1]})


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("1\tA\t_\t_\t_\t_\t0\troot\t_\n", 1, "expected 10 tab-separated columns, got 9: '1\\tA"),
        (
            "# c\n1\tA\t_\t_\t_\t_\t0\troot\t_\t_\n\n1\tA\t_\t_\t_\t_\t0\troot\t_\t_\n2\tB\t_\t_\t_\t_\tx\tdep\t_\t_\n",
            5,
            "'x' is not a valid value for parse_int_value",
        ),
        ("1\tA\t_\t_\t_\t_\t0\troot\t_\t_\n1\tB\t_\t_\t_\t_\t1\tdep\t_\t_\n", 2, "word ID 1 where 2 was expected"),
        ("2\tA\t_\t_\t_\t_\t0\troot\t_\t_\n", 1, "word ID 2 where 1 was expected"),
    ],
)
def test_bad_lines_of_a_file_to_parse_name_the_file_and_line(text, line, message):
    with pytest.raises(TreebankFormatError) as error:
        list(read_conllu_sentences(text.split("\n"), "in.conllu"))
    assert str(error.value).startswith(f"in.conllu:{line}: ") and message in str(error.value)


def test_a_parse_of_raw_text_marks_words_without_a_space_after_and_can_start_a_paragraph():
    parse = {"words": ["Dogs", "bark", "."], "heads": [2, 0, 2], "offsets": [[0, 4], [5, 9], [9, 10]]}
    (sentence,) = conllu.parse(parse_to_conllu(parse, 1, "Dogs bark.", newpar=True))
    assert list(sentence.metadata.items()) == [("newpar", None), ("sent_id", "1"), ("text", "Dogs bark.")]
    assert [token["misc"] for token in sentence] == [None, {"SpaceAfter": "No"}, None]


def test_a_text_with_line_breaks_is_written_on_one_comment_line():
    import conllu

    parse = {"words": ["a", "dog", "ran"], "heads": [2, 3, 0]}
    for text in ("a dog\nran", "a dog\u2028ran", "a dog\u0085ran", "a dog\r\nran"):
        written = parses_to_conllu([parse], texts=[text])
        assert [line for line in written.splitlines() if line.startswith("# text")] == ["# text = a dog ran"]
        (sentence,) = conllu.parse(written)
        assert sentence.metadata["text"] == "a dog ran" and len(sentence) == 3


def test_a_treebank_with_enhanced_graphs_parsed_again_keeps_no_enhanced_edge_of_the_input():
    """Three sentences of UD English-EWT dev (CC BY-SA 4.0) with enhanced graphs: extra edges in DEPS, a multiword
    token and an empty node (11.1). The new tree's words get DEPS `_`, the empty node goes with the graph it belongs
    to, and the columns a parse does not set stay as read."""
    path = FIXTURES / "ewt_dev_enhanced.conllu"
    with path.open(encoding="utf-8") as lines:
        sentences = list(read_conllu_sentences(lines, str(path)))
    gold = conllu.parse(path.read_text(encoding="utf-8"))
    written = []
    for sentence in sentences[:2]:  # each word headed by the one before it: a tree unlike the input's
        heads = list(range(len(sentence.words)))
        written.append(conllu_with_parse(sentence, {"words": sentence.words, "heads": heads}))
    written.append(conllu_with_parse(sentences[2], error="too long"))
    for block, before, sentence in zip(conllu.parse("".join(written)), gold, sentences):
        # The words and multiword tokens (`conllu` IDs (1, "-", 2)), not the empty node (11, ".", 1).
        assert [token["id"] for token in block] == [token["id"] for token in before if "." not in str(token["id"])]
        parsed = sentence is not sentences[2]
        words_before = [token for token in before if isinstance(token["id"], int)]
        for token, gold_token in zip([token for token in block if isinstance(token["id"], int)], words_before):
            assert token["deps"] is None
            assert token["head"] == (token["id"] - 1 if parsed else None)
            assert {key: token[key] for key in ("form", "lemma", "upos", "xpos", "feats", "misc")} == {
                key: gold_token[key] for key in ("form", "lemma", "upos", "xpos", "feats", "misc")
            }
        assert block.metadata.items() >= before.metadata.items()
