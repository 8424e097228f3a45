"""CoNLL-U written and read by its one owner, `hf_structure.data.conllu_format` (the `conllu` library's serializer
and parser): `# sent_id` and `# text`, labels, comment-only blocks, and round trips. (Errors of the reader on bad
files: tests/data/test_treebanks.py.)"""

import conllu
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_structure.data.conllu_format import comment_block, parse_conllu, parse_to_conllu, parses_to_conllu
from hf_structure.structs.trees import distances_heights_to_tree


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
        {"sent_id": "3", "text": "a b", "error": "too long"}, {"sent_id": "4"}]
    assert [sentence["id"] for sentence in parse_conllu(text)] == ["4"]  # read back: the parses alone


def test_the_pipelines_results_as_conllu(tmp_path):
    from tests.helpers.tiny_models import save_tiny_model
    from transformers import pipeline

    parser = pipeline("unsupervised-parsing", model=str(save_tiny_model(tmp_path / "tiny")))
    results = parser(["The old man sat on the bench.", "a dog ran"], batch_size=2)
    sentences = parse_conllu(parses_to_conllu(results, texts=["The old man sat on the bench.", "a dog ran"]))
    assert [(s["id"], s["words"], s["heads"]) for s in sentences] == [
        (str(number), r["words"], r["heads"]) for number, r in enumerate(results, 1)]
    assert conllu.parse(parses_to_conllu(results))[1].metadata["text"] == "a dog ran"  # default: the words
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
        parses.append({"words": words, "heads": heads, "deprels": ["root" if h == 0 else label
                                                                   for h, label in zip(heads, labels)]})
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
    assert parse_conllu(text) == [{"id": "a", "words": ["do", "n't", "go"], "upos": ["AUX", "PART", "VERB"],
                                   "heads": [3, 3, 0], "deprels": ["aux", "advmod", "root"]}]
