"""The spaCy component: found through its entry point, it parses spaCy's tokens with an hf_structure model and sets
heads, labels, sentences and constituents that spaCy's own tools (doc.sents, displaCy, the scorer) read."""

import pytest

spacy = pytest.importorskip("spacy", reason="the spaCy component needs the spacy extra")

from transformers import pipeline  # noqa: E402

from tests.helpers.tiny_models import save_tiny_model, save_tiny_r2d2  # noqa: E402

TEXT = "The old man sat on the bench.  A dog ran and tired. The man sat"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return str(save_tiny_model(tmp_path_factory.mktemp("tiny") / "model"))


def test_the_component_sets_what_the_pipeline_parses(tiny):
    nlp = spacy.blank("en")  # nothing downloaded; the factory comes from hf_structure's entry point
    nlp.add_pipe("hf_structure", config={"model": tiny})
    doc = nlp(TEXT)
    assert [sentence.text.strip() for sentence in doc.sents] == [
        "The old man sat on the bench.",
        "A dog ran and tired.",
        "The man sat",
    ]
    parser = pipeline("unsupervised-parsing", model=tiny)
    for sentence in doc.sents:
        words = [token for token in sentence if not token.is_space]
        expected = parser([token.text for token in words], is_split_into_words=True)
        assert [token.head.i - sentence.start if token.head != token else -1 for token in words] == [
            head - 1 for head in expected["heads"]
        ]
        assert [token.dep_ for token in words].count("ROOT") == 1
        assert {
            (span.start - sentence.start, span.end - sentence.start)
            for span in doc.spans["constituents"]
            if sentence.start <= span.start < sentence.end
        } == {tuple(span) for span in expected["spans"]}
    space = next(token for token in doc if token.is_space)
    assert space.head.i == space.i - 1 and space.dep_ == "dep"  # whitespace hangs on the word before it


def test_pipe_equals_one_doc_at_a_time_and_earlier_sentences_are_kept(tiny):
    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": tiny, "batch_size": 2})
    texts = ["A dog ran. The man sat", "the old man sat on the bench", "?", ""]
    piped = [[(t.head.i, t.dep_) for t in doc] for doc in nlp.pipe(texts)]
    assert piped == [[(t.head.i, t.dep_) for t in nlp(text)] for text in texts]
    assert piped[2] == [(0, "ROOT")] and piped[3] == []
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer", config={"punct_chars": [";"]})
    nlp.add_pipe("hf_structure", config={"model": tiny})
    assert len(list(nlp("A dog ran. The man sat; the old man").sents)) == 2  # the sentencizer's, not ours


def test_a_model_of_constituents_only_sets_sentences_and_spans_and_no_heads(tmp_path):
    r2d2 = str(save_tiny_r2d2(tmp_path / "r2d2"))
    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": r2d2})
    docs = list(nlp.pipe([TEXT, "", "?"]))
    doc = docs[0]
    assert [sentence.text.strip() for sentence in doc.sents] == [
        "The old man sat on the bench.",
        "A dog ran and tired.",
        "The man sat",
    ]
    assert not doc.has_annotation("DEP") and not doc.has_annotation("HEAD")
    parser = pipeline("unsupervised-parsing", model=r2d2)
    for sentence in doc.sents:
        words = [token for token in sentence if not token.is_space]
        expected = parser([token.text for token in words], is_split_into_words=True)
        assert "heads" not in expected
        assert {
            (span.start - sentence.start, span.end - sentence.start)
            for span in doc.spans["constituents"]
            if sentence.start <= span.start < sentence.end
        } == {tuple(span) for span in expected["spans"]}
    assert len(docs[1]) == 0 and list(docs[2].spans["constituents"]) == []
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer", config={"punct_chars": [";"]})
    nlp.add_pipe("hf_structure", config={"model": r2d2})
    assert len(list(nlp("A dog ran. The man sat; the old man").sents)) == 2  # the sentencizer's, not ours


def test_displacy_and_the_scorer_read_the_parse():
    from spacy import displacy
    from spacy.scorer import Scorer
    from spacy.tokens import Doc
    from spacy.training import Example

    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": "arc-hybrid-ewt"})
    doc = nlp("The old man sat on the bench. It rained.")
    assert [token.dep_ for token in doc][:4] == ["det", "amod", "nsubj", "ROOT"]
    svg = displacy.render(doc, style="dep")
    assert svg.startswith("<svg") and "bench" in svg and "nsubj" in svg
    gold = Doc(
        nlp.vocab,
        words=[t.text for t in doc],
        spaces=[bool(t.whitespace_) for t in doc],
        heads=[t.head.i for t in doc],
        deps=[t.dep_ for t in doc],
    )
    scores = Scorer.score_deps([Example(doc, gold)], "dep")
    assert scores["dep_uas"] == scores["dep_las"] == 1.0


def test_spacy_pipelines_without_the_component_do_not_import_hf_structure():
    """spaCy imports every factory's entry point when it builds any pipeline: ours must not bring in hf_structure
    (torch's and transformers' model code) for a pipeline that does not use it."""
    import subprocess
    import sys

    code = (
        "import sys, spacy; nlp = spacy.blank('en'); nlp.add_pipe('sentencizer'); nlp('It rained. It did.'); "
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'hf_structure'))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "[]", run.stderr[-2000:]
