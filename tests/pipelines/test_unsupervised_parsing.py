"""The `unsupervised-parsing` pipeline on a tiny random model: input forms, batching, punctuation, the optional
outputs, and clear errors on bad input. (The parses themselves are those of a random model: only their form and
their consistency are checked.)"""

import json

import pytest

from hf_structure import UnsupportedOptionError  # (importing hf_structure registers the task)
from tests.helpers.tiny_models import save_tiny_model

LIMIT = 16  # the tiny model's max_position_embeddings
TEXT = "The old man sat on the bench."
SENTENCES = ["The old man sat on the bench.", "a dog ran", "The dog, old and tired, sat on the bench.", "Hello"]
WORDS = [["the", "old", "man", "sat"], ["a", "dog", "ran", "on", "the", "bench"], ["dog"]]


def make_model(folder, limit=LIMIT):
    save_tiny_model(folder, max_position_embeddings=limit)
    return folder


@pytest.fixture(scope="module")
def parser(tmp_path_factory):
    from transformers import pipeline

    folder = make_model(tmp_path_factory.mktemp("pipeline") / "tiny")
    return pipeline("unsupervised-parsing", model=str(folder))  # type: ignore[call-overload]  # transformers' overloads name only its own tasks


def ptb_tokens(text):
    """The words of `text` as the pipeline splits raw text: nltk's PTB split, each word as the text writes it, inner
    periods and addresses as `tokenize_with_offsets` documents."""
    from hf_structure.pipelines.word_tokenization import tokenize_with_offsets

    return tokenize_with_offsets(text)[0]


def check_result(result, words=None):
    """The documented form of one result."""
    assert set(result) >= {"words", "tree", "spans", "heads"}
    n = len(result["words"])
    if words is not None:
        assert result["words"] == words
    assert len(result["heads"]) == n and result["heads"].count(0) == 1
    assert all(0 <= head <= n and head != i + 1 for i, head in enumerate(result["heads"]))
    assert result["spans"][0] == [0, n]
    assert all(0 <= start < end <= n and (end - start > 1 or n == 1) for start, end in result["spans"])
    assert len({tuple(span) for span in result["spans"]}) == len(result["spans"])
    assert result["tree"].startswith("(") and result["tree"].endswith(")")


# ---------------------------------------------------------------------------------------------------------------
# Input forms


def test_single_string(parser):
    results = parser(TEXT)
    assert isinstance(results, list) and len(results) == 1  # one sentence
    check_result(results[0], ptb_tokens(TEXT))


def test_batches_equal_one_by_one(parser):
    one_by_one = [parser(sentence) for sentence in SENTENCES]
    for batch_size in (1, 3):  # 3: a full batch of 3, then a batch of 1
        results = parser(SENTENCES, batch_size=batch_size)
        assert isinstance(results, list) and results == one_by_one
    for (result,), sentence in zip(one_by_one, SENTENCES):
        check_result(result, ptb_tokens(sentence))


def test_a_batched_call_parses_in_batches_of_similar_length_and_answers_in_input_order(parser, monkeypatch):
    calls = []
    parse = parser.model.parse

    def recording_parse(sentences, tokenizer, **options):
        calls.append([len(words) for words in sentences])
        return parse(sentences, tokenizer, **options)

    monkeypatch.setattr(parser.model, "parse", recording_parse)
    results = parser(SENTENCES, batch_size=2)
    lengths = [length for call in calls for length in call]
    assert lengths == sorted(lengths) and len(calls) == 2
    monkeypatch.undo()
    assert results == [parser(sentence) for sentence in SENTENCES]


def test_structures_option_returns_only_what_is_asked_and_skips_the_rest(parser, monkeypatch):
    import sys

    full = [result for (result,) in parser(SENTENCES, batch_size=2)]
    trees = [result for (result,) in parser(SENTENCES, batch_size=2, structures="constituency")]
    heads = [result for (result,) in parser(SENTENCES, batch_size=2, structures=["dependency"])]
    assert all("heads" not in r and "deprels" not in r for r in trees)
    assert [(r["words"], r["tree"], r["spans"]) for r in trees] == [(r["words"], r["tree"], r["spans"]) for r in full]
    assert all("tree" not in r and "spans" not in r for r in heads)
    assert [(r["words"], r["heads"]) for r in heads] == [(r["words"], r["heads"]) for r in full]
    assert parser(SENTENCES, structures=("dependency", "constituency"), batch_size=2) == [[r] for r in full]

    # Without dependencies the model never computes p_D, nor decodes heads.
    modeling = sys.modules[type(parser.model).__module__]

    def fail(*args, **kwargs):
        raise AssertionError("p_D computed for a constituency-only request")

    monkeypatch.setattr(modeling, "dependency_distribution", fail)
    assert parser(SENTENCES, batch_size=2, structures="constituency") == [[r] for r in trees]


def test_structures_option_errors(parser):
    # A structure the model does not give (R2D2's dependencies ...): tests/pipelines/test_parse_options.py.
    with pytest.raises(UnsupportedOptionError, match="does not take structures='dependencies'"):
        parser(TEXT, structures="dependencies")
    with pytest.raises(UnsupportedOptionError, match=r"does not take structures=\[\]"):
        parser(TEXT, structures=[])


def test_batched_scores_match(parser):
    alone = [parser(sentence, return_scores=True) for sentence in SENTENCES]
    batched = parser(SENTENCES, batch_size=3, return_scores=True)
    for (a,), (b,) in zip(alone, batched):
        assert a["scores"]["distances"] == pytest.approx(b["scores"]["distances"], abs=1e-5)
        assert a["scores"]["heights"] == pytest.approx(b["scores"]["heights"], abs=1e-5)


def test_pretokenized_single_sentence(parser):
    result = parser(WORDS[1], is_split_into_words=True)
    assert isinstance(result, dict)
    check_result(result, WORDS[1])
    (from_text,) = parser(" ".join(WORDS[1]))  # no punctuation: raw text tokenises to the same words
    assert {key: value for key, value in from_text.items() if key not in ("offsets", "text")} == result


def test_list_of_word_lists(parser):
    one_by_one = [parser(words, is_split_into_words=True) for words in WORDS]
    assert parser(WORDS) == one_by_one  # word lists are recognised without the flag
    assert parser(WORDS, is_split_into_words=True, batch_size=2) == one_by_one
    for result, words in zip(one_by_one, WORDS):
        check_result(result, words)


def test_dataset_through_key_dataset(parser):
    from datasets import Dataset
    from transformers.pipelines.pt_utils import KeyDataset

    dataset = Dataset.from_dict({"text": SENTENCES, "id": list(range(len(SENTENCES)))})
    outputs = parser(KeyDataset(dataset, "text"), batch_size=2)
    assert not isinstance(outputs, list)  # an iterator over the results
    assert list(outputs) == [parser(sentence) for sentence in SENTENCES]


def test_generator_is_read_a_window_at_a_time(parser):
    """A generator's items are read as results are taken: a window of STREAM_WINDOW_BATCHES batches of sentences
    at a time (sorted by length within it), never the whole stream first."""
    from hf_structure.pipelines.unsupervised_parsing import STREAM_WINDOW_BATCHES

    texts = SENTENCES * 5
    consumed = []

    def sentences():
        for sentence in texts:
            consumed.append(sentence)
            yield sentence

    outputs = parser(sentences(), batch_size=2)
    assert not isinstance(outputs, list) and not consumed
    first = next(outputs)
    assert first == parser(texts[0])
    assert len(consumed) <= 2 * STREAM_WINDOW_BATCHES + 1 < len(texts)
    assert [first, *outputs] == [parser(sentence) for sentence in texts]


# ---------------------------------------------------------------------------------------------------------------
# Punctuation


def content_positions(words):
    from hf_structure.pipelines.batched_parsing import is_punctuation

    return [i for i, word in enumerate(words) if not is_punctuation(word)]


@pytest.mark.parametrize("text", [TEXT, "The dog, old and tired, sat on the bench.", '" Hello , world ! "'])
def test_punctuation_kept_and_attached_by_the_rule(parser, text):
    (result,) = parser(text)
    words, heads, spans = result["words"], result["heads"], result["spans"]
    assert words == ptb_tokens(text)
    n, content = len(words), content_positions(words)
    punctuation = [i for i in range(n) if i not in content]
    assert punctuation  # the test sentences have some
    root = heads.index(0) + 1
    assert root - 1 in content
    for i in punctuation:
        assert heads[i] == root  # punctuation attaches to the root word
        before = [k for k in content if k < i]
        after = [k for k in content if k > i]
        for start, end in spans:
            covers = start <= i < end
            if before and after:  # inside exactly the constituents that hold both neighbouring words
                assert covers == (start <= before[-1] and after[0] < end)
            else:  # at an edge of the sentence: only the whole sentence
                assert covers == ([start, end] == [0, n])
    assert spans[0] == [0, n]


@pytest.mark.parametrize("text", [TEXT, "The dog, old and tired, sat on the bench.", '" Hello , world ! "'])
def test_without_punctuation_same_parse_over_content_words(parser, text):
    (kept,) = parser(text)
    (dropped,) = parser(text, keep_punctuation=False)
    position = content_positions(kept["words"])
    assert dropped["words"] == [kept["words"][i] for i in position]
    assert content_positions(dropped["words"]) == list(range(len(dropped["words"])))  # no punctuation left
    check_result(dropped)
    # Same heads and constituents, mapped through the content words' positions.
    for k, head in enumerate(dropped["heads"]):
        assert kept["heads"][position[k]] == (0 if head == 0 else position[head - 1] + 1)
    mapped = {(position[s], position[e - 1] + 1) for s, e in dropped["spans"][1:]}
    assert {tuple(span) for span in kept["spans"][1:]} == mapped - {(position[0], position[-1] + 1)}
    # The model saw the same words as when given them pre-tokenized.
    assert parser(dropped["words"], is_split_into_words=True) == {
        key: value for key, value in dropped.items() if key not in ("offsets", "text")
    }


def test_pretokenized_punctuation_is_kept_as_given(parser):
    words = ["a", "dog", "(", "old", ")", "ran", "--"]
    result = parser(words, is_split_into_words=True)
    assert result["words"] == words
    check_result(result)
    assert "-LRB-" in result["tree"] and "-RRB-" in result["tree"]  # brackets that are words, written as in the PTB
    root = result["heads"].index(0) + 1
    assert [result["heads"][i] for i in (2, 4, 6)] == [root] * 3


# ---------------------------------------------------------------------------------------------------------------
# Optional outputs


def test_return_scores_over_content_words(parser):
    for keep in (True, False):
        (result,) = parser("The dog, old and tired, sat on the bench.", return_scores=True, keep_punctuation=keep)
        n = len(content_positions(result["words"])) if keep else len(result["words"])
        assert n == 9
        scores = result["scores"]
        assert len(scores["distances"]) == n - 1 and len(scores["heights"]) == n
        assert all(isinstance(value, float) for value in scores["distances"] + scores["heights"])
    single = parser("Hello", return_scores=True)[0]["scores"]
    assert single["distances"] == [] and len(single["heights"]) == 1


def test_spans_make_an_nltk_tree(parser):
    import nltk

    from hf_structure.structs.trees import spans_to_nltk_tree

    (result,) = parser(TEXT)
    tree = spans_to_nltk_tree(result["words"], result["spans"])
    assert isinstance(tree, nltk.Tree)
    assert tree.leaves() == result["words"]
    # Its constituents are exactly the spans.
    found = set()

    def walk(node, start):
        end = start
        for child in node:
            end = walk(child, end) if isinstance(child, nltk.Tree) else end + 1
        found.add((start, end))
        return end

    walk(tree, 0)
    assert found == {tuple(span) for span in result["spans"]}


def test_results_are_json_serialisable(parser):
    for result in [parser(TEXT, return_scores=True), parser(SENTENCES), parser(WORDS[0], is_split_into_words=True)]:
        assert json.loads(json.dumps(result)) == result


def test_sentence_at_the_length_limit(parser):
    words = ["the"] * LIMIT + ["."]  # punctuation does not count towards the limit
    result = parser(words, is_split_into_words=True)
    check_result(result, words)


# ---------------------------------------------------------------------------------------------------------------
# Bad input: clear messages


@pytest.mark.parametrize(
    "inputs, kwargs, error, message",
    [
        (5, {}, TypeError, "expected a string, a list of words or a batch of them, got int"),
        (None, {}, TypeError, "expected a string, a list of words or a batch of them, got NoneType"),
        (["a", ""], {"is_split_into_words": True}, ValueError, r"^the sentence: word 2 \(''\) is empty"),
        (["a", "old man"], {"is_split_into_words": True}, ValueError, r"word 2 \('old man'\) .*contains whitespace"),
        (["a", 3], {"is_split_into_words": True}, TypeError, "^the sentence: word 2 is a int, not a string"),
        ([], {"is_split_into_words": True}, ValueError, "^empty word list"),
        ("a dog ran", {"is_split_into_words": True}, TypeError, "expected a list of words, got str"),
        (" ".join(["the"] * (LIMIT + 1)), {}, ValueError, f"{LIMIT + 1} words; this model parses at most {LIMIT}"),
        ([], {}, ValueError, "no sentence to parse: the input list is empty"),
        (
            [["A", "dog"], "Cats"],
            {},
            TypeError,
            "sentence 2: a batch must be all strings or all word lists; item 1 makes",
        ),
        (["Cats", ["A", "dog"]], {}, TypeError, "item 2: a batch must be all strings or all word lists"),
        ("the old\x00man", {}, ValueError, "control character"),
        (["the", "old\x00man"], {"is_split_into_words": True}, ValueError, "word 2 .* contains a control character"),
    ],
    ids=[
        "int",
        "none",
        "empty-word",
        "word-with-space",
        "non-string-word",
        "no-words",
        "string-as-words",
        "too-long",
        "empty-batch",
        "mixed-batch",
        "mixed-batch-text-first",
        "nul-in-text",
        "nul-in-word",
    ],
)
def test_bad_input(parser, inputs, kwargs, error, message):
    with pytest.raises(error, match=message):
        parser(inputs, **kwargs)


def test_the_one_scan_check_rejects_exactly_what_the_word_loop_rejects():
    # check_words clears a sentence with one regular-expression scan and names problems with a per-word loop: both
    # must reject the same characters (str.isspace, or Unicode category Cc or Cs), over all of Unicode.
    import sys
    import unicodedata

    from hf_structure.pipelines.batched_parsing import NOT_IN_A_WORD

    disagree = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if bool(NOT_IN_A_WORD.match(chr(code)))
        != (chr(code).isspace() or unicodedata.category(chr(code)) in ("Cc", "Cs"))
    ]
    assert disagree == []


def test_a_lone_surrogate_is_the_error_of_its_own_item_only(parser):
    # The tokenizers fail on a lone surrogate with a TypeError of their own, which lost every item of the call.
    texts = ["Good text.", "bad \ud800 text", "Another good one."]
    results = parser(texts, on_error="record")
    assert results[0] == parser(texts[0]) and results[2] == parser(texts[2])
    error = "item 2: character 5 is a lone surrogate (U+D800), not text"
    assert results[1] == [{"words": ["bad", "\ud800", "text"], "error": error}]
    streamed = list(parser((text for text in texts), on_error="record"))  # a generator, item by item
    assert [streamed[0], streamed[2]] == [results[0], results[2]] and "lone surrogate" in streamed[1][0]["error"]
    words = [["Good", "text"], ["bad", "\ud800", "text"], ["Another"]]
    recorded = parser(words, on_error="record")
    assert [recorded[0], recorded[2]] == [
        parser(words[0], is_split_into_words=True),
        parser(words[2], is_split_into_words=True),
    ]
    error = "sentence 2: word 2 ('\\ud800'): character 1 is a lone surrogate (U+D800), not text"
    assert recorded[1] == {"words": words[1], "error": error}
    with pytest.raises(ValueError, match=r"^the text: character 5 is a lone surrogate \(U\+D800\), not text$"):
        parser(texts[1])
    # Python reads each byte of a command-line argument that is not UTF-8 as a surrogate of its own (U+DC80-U+DCFF).
    with pytest.raises(ValueError, match=r"^the sentence: word 1 .*\(U\+DCE9, which stands for the byte 0xE9 of input"):
        parser(["caf\udce9"], is_split_into_words=True)


@pytest.mark.parametrize(
    "batch, message",
    [
        (["a dog ran", " ".join(["dog"] * (LIMIT + 1))], f"^item 2, sentence 1: .*at most {LIMIT}"),
        (["a dog ran", None], "^item 2: expected a string, got NoneType"),
        ([["a", "dog"], ["a", ""]], r"sentence 2: word 2 \(''\)"),
    ],
    ids=["too-long", "none", "empty-word"],
)
def test_bad_sentence_in_a_batch_names_its_index(parser, batch, message):
    with pytest.raises((TypeError, ValueError), match=message):
        parser(batch, batch_size=2)


def test_an_empty_text_has_no_sentence_and_punctuation_alone_is_one(parser):
    assert parser("") == [] and parser("  \t\n ") == []
    assert parser(["a dog ran", "", "?"], batch_size=2)[1:] == [
        [],
        [{"words": ["?"], "offsets": [[0, 1]], "text": "?", "tree": "(?)", "spans": [[0, 1]], "heads": [0]}],
    ]
    # A model trained without punctuation never sees it: the first mark heads the others, as re-attached punctuation
    # is headed by the root word.
    alone = parser([".", ",", "!"], is_split_into_words=True)
    assert (alone["heads"], alone["spans"], alone["tree"]) == ([0, 1, 1], [[0, 3]], "(. , !)")
    assert parser([".", ","], is_split_into_words=True, keep_punctuation=False) == {"words": []}
    assert parser(["a dog ran", ". ,"])[1] == parser(". ,")


def test_on_error_record_keeps_the_others_of_a_batch(parser):
    too_long = " ".join(["dog"] * (LIMIT + 1))
    with pytest.raises(ValueError, match=f"item 2, sentence 1: {LIMIT + 1} words"):
        parser(["a dog ran", too_long, "the man sat"], batch_size=2)
    results = parser(["a dog ran", too_long, "the man sat", "a\x00b"], batch_size=2, on_error="record")
    assert results[0] == parser("a dog ran") and results[2] == parser("the man sat")
    assert results[1] == [
        {
            "words": too_long.split(),
            "offsets": results[1][0]["offsets"],
            "text": too_long,
            "error": f"item 2, sentence 1: {LIMIT + 1} words; this model parses at most {LIMIT}",
        }
    ]
    assert results[3] == [{"words": ["a\x00b"], "error": "item 4: the text contains the control character '\\x00'"}]
    words = [["a", "dog"], ["a", ""], ["dog"] * (LIMIT + 1)]
    recorded = parser(words, on_error="record")
    assert recorded[0] == parser(words[0], is_split_into_words=True)
    assert recorded[1] == {"words": ["a", ""], "error": "sentence 2: word 2 ('') is empty or contains whitespace"}
    assert recorded[2]["error"] == f"sentence 3: {LIMIT + 1} words; this model parses at most {LIMIT}"
    streamed = list(parser((text for text in ["a dog", "b\x00"]), on_error="record"))  # a generator, item by item
    assert streamed[0] == parser("a dog") and "control character" in streamed[1][0]["error"]
    with pytest.raises(ValueError, match=r"on_error must be one of \('raise', 'record'\), got 'skip'"):
        parser("a dog ran", on_error="skip")


def test_heads_are_a_tree_unless_the_argmax_rule_is_asked_for(parser):
    from hf_structure.structs.trees import check_heads, is_projective

    sentences = [f"the old man sat on the bench {'and ran ' * k}." for k in range(5)]
    for method in (None, "eisner", "chu-liu-edmonds"):
        options = {"head_decoding": method} if method else {}
        for (result,) in parser(sentences, batch_size=3, **options):
            check_heads(result["heads"])
            if method == "eisner":
                assert is_projective(result["heads"])
    per_word = parser(sentences, batch_size=3, head_decoding="argmax")
    assert all(result["heads"].count(0) == 1 for (result,) in per_word)  # the highest word is the root in every rule
    with pytest.raises(UnsupportedOptionError, match="does not take head_decoding='greedy'"):
        parser(TEXT, head_decoding="greedy")


def test_any_option_the_model_takes_goes_to_its_parse(parser, monkeypatch):
    calls, parse = [], parser.model.parse

    def parse_with_a_flavour(sentences, tokenizer, flavour=None):
        calls.append(flavour)
        return parse(sentences, tokenizer)

    monkeypatch.setattr(parser.model, "parse", parse_with_a_flavour)
    monkeypatch.setattr(parser.model, "parse_options", {"flavour": ("sweet", "sour")})  # what it declares
    assert parser(TEXT, flavour="sweet") == parser(TEXT, flavour=None)
    assert calls == ["sweet", None]


# ---------------------------------------------------------------------------------------------------------------
# Raw text: one parse per sentence, words with their character offsets

PARAGRAPH = "The old man sat. A dog ran on the bench!\nIt rained (a lot)."
PARAGRAPH_SENTENCES = ["The old man sat.", "A dog ran on the bench!", "It rained (a lot)."]


def check_offsets(result, text):
    """Each word's offsets point at it in `text`, and `text` holds the sentence's own text."""
    assert len(result["offsets"]) == len(result["words"])
    for word, (start, end) in zip(result["words"], result["offsets"]):
        assert text[start:end] == word
    assert result["text"] in text


def test_a_paragraph_gives_one_parse_per_sentence_with_offsets(parser):
    results = parser(PARAGRAPH)
    assert [result["text"] for result in results] == PARAGRAPH_SENTENCES
    for result, sentence in zip(results, PARAGRAPH_SENTENCES):
        check_result(result, ptb_tokens(sentence))
        check_offsets(result, PARAGRAPH)
        assert result["text"] == PARAGRAPH[result["offsets"][0][0] : result["offsets"][-1][1]]
        # Each sentence is parsed on its own: the parse of its words.
        parse = parser(result["words"], is_split_into_words=True)
        assert {key: value for key, value in result.items() if key not in ("offsets", "text")} == parse


def test_typographic_punctuation_is_split_and_reattached(parser):
    text = "\u201cQuotes\u201d don\u2019t split\u2026"
    (result,) = parser(text)
    assert result["words"] == ["\u201c", "Quotes", "\u201d", "do", "n\u2019t", "split", "\u2026"]
    check_offsets(result, text)
    (dropped,) = parser(text, keep_punctuation=False)  # punctuation to the StructFormer model: typographic too
    assert dropped["words"] == ["Quotes", "do", "n\u2019t", "split"]
    check_offsets(dropped, text)
    assert dropped["text"] == text  # the sentence's text, punctuation included


def test_split_sentences_false_parses_each_string_as_one_sentence(parser):
    (result,) = parser(PARAGRAPH, split_sentences=False)
    assert result["words"] == ptb_tokens(PARAGRAPH)  # the whole text as one sentence: "sat" "." split all the same
    assert "sat." not in result["words"]
    assert result["text"] == PARAGRAPH
    check_offsets(result, PARAGRAPH)
    assert parser([PARAGRAPH, "a dog ran"], split_sentences=False, batch_size=2) == [[result], parser("a dog ran")]
    with pytest.raises(TypeError, match="split_sentences must be True or False, got 'no'"):
        parser(PARAGRAPH, split_sentences="no")
    from transformers import pipeline

    unsplit = pipeline("unsupervised-parsing", model=parser.model, tokenizer=parser.tokenizer, split_sentences=False)  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    assert unsplit(PARAGRAPH) == [result]  # the option given at construction
    assert unsplit(PARAGRAPH, split_sentences=True) == parser(PARAGRAPH)
    assert unsplit(PARAGRAPH, split_sentences=None) == [result]  # None: the pipeline's setting
    assert parser(PARAGRAPH, split_sentences=None) == parser(PARAGRAPH)


def test_a_batch_of_texts_is_one_batch_of_all_their_sentences(parser, monkeypatch):
    texts = [PARAGRAPH, "Hello. Bye now.", "a dog ran"]
    alone = [parser(text) for text in texts]
    calls, parse = [], parser.model.parse

    def recording_parse(sentences, tokenizer, **options):
        calls.append(len(sentences))
        return parse(sentences, tokenizer, **options)

    monkeypatch.setattr(parser.model, "parse", recording_parse)
    assert parser(texts, batch_size=8) == alone  # offsets into each item's own string
    assert calls == [6]
    assert [len(results) for results in alone] == [3, 2, 1]


def test_texts_of_a_dataset_or_generator_give_a_list_per_item(parser):
    from datasets import Dataset
    from transformers.pipelines.pt_utils import KeyDataset

    texts = [PARAGRAPH, "Hello. Bye now.", "a dog ran"]
    alone = [parser(text) for text in texts]
    assert list(parser(text for text in texts)) == alone
    dataset = Dataset.from_dict({"text": texts})
    assert list(parser(KeyDataset(dataset, "text"), batch_size=2)) == alone


LONG = " ".join(["Dogs"] + ["bark"] * LIMIT)  # a sentence of LIMIT + 1 words


@pytest.mark.parametrize(
    "inputs, kwargs, message",
    [
        ("Fine. " + LONG + ".", {}, f"^sentence 2: {LIMIT + 1} words"),
        ("Fine. Dogs " + " ".join(["bark"] * (LIMIT - 1)), {"split_sentences": False}, f"^the text: {LIMIT + 1} words"),
        (["Fine.", "Good. Very good. " + LONG], {}, f"^item 2, sentence 3: {LIMIT + 1}"),
        (["Fine.", "Good. Very good. " + LONG], {"batch_size": 3}, "^item 2, sentence 3"),
        (["Fine.", "Good. \x00"], {}, "^item 2: the text contains the control character"),
    ],
    ids=["single-text", "unsplit-text", "batch", "batched", "control-character"],
)
def test_a_bad_sentence_of_a_text_names_the_item_and_the_sentence(parser, inputs, kwargs, message):
    with pytest.raises(ValueError, match=message):
        parser(inputs, **kwargs)
