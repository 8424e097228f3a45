"""The spaCy component: found through its entry point, it parses spaCy's tokens with an hf_structure model and sets
what the model gives (heads and labels, constituents, or both) where spaCy's own tools read it (doc.sents, displaCy,
the scorer, span groups); a pipeline saved with `nlp.to_disk` parses the same after `spacy.load`. On every tiny model
that the registered model types declare (`ModelSpec.tiny_models`), each checked for what its parses hold (its type's
`parse_outputs`: heads and labels, constituents, or both)."""

import functools
import re
import shutil

import pytest

spacy = pytest.importorskip("spacy", reason="the spaCy component needs the spacy extra")

import srsly  # noqa: E402  (spaCy's)
import torch  # noqa: E402
from transformers import pipeline  # noqa: E402

from hf_structure.pipelines.batched_parsing import is_punctuation  # noqa: E402
from tests.helpers.tiny_models import declared_tiny_models, save_declared_tiny_model  # noqa: E402

TEXT = "The old man sat on the bench.  A dog ran and tired. The man sat"
TEXTS = [TEXT, "A dog ran. The man sat", "the old man sat on the bench", "?", ""]
TINY_MODELS = declared_tiny_models()


def gives(name: str) -> set[str]:
    """What the tiny model `name`'s parses hold that the component sets on a doc: its type's `parse_outputs`, scores
    aside."""
    spec, _ = TINY_MODELS[name]
    return set(spec.parse_outputs) & {"heads", "deprels", "spans"}


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    """name -> the folder of the declared tiny model `name`, saved when first asked for."""

    @functools.cache
    def folder(name: str) -> str:
        return str(save_declared_tiny_model(name, tmp_path_factory.mktemp(name) / "model"))

    return folder


def parsed(doc):
    """What the component set on `doc`: each token's head, label and sentence start, and the constituents (None
    where it set no span group)."""
    tokens = [(token.head.i, token.dep_, token.is_sent_start) for token in doc]
    if "constituents" not in doc.spans:
        return tokens, None
    return tokens, [(span.start, span.end, span.label_) for span in doc.spans["constituents"]]


@pytest.mark.parametrize("name", TINY_MODELS)
def test_each_kind_of_model_sets_what_its_parses_give(name, tiny_folder):
    nlp = spacy.blank("en")  # nothing downloaded; the factory comes from hf_structure's entry point
    nlp.add_pipe("hf_structure", config={"model": tiny_folder(name)})
    doc = nlp(TEXT)
    assert [sentence.text.strip() for sentence in doc.sents] == [
        "The old man sat on the bench.",
        "A dog ran and tired.",
        "The man sat",
    ]
    parser = pipeline("unsupervised-parsing", model=tiny_folder(name))  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    for sentence in doc.sents:
        words = [token for token in sentence if not token.is_space]
        expected = parser([token.text for token in words], is_split_into_words=True)
        assert set(expected) & {"heads", "deprels", "spans"} == gives(name)
        if "heads" in expected:
            assert [token.head.i - sentence.start if token.head != token else -1 for token in words] == [
                head - 1 for head in expected["heads"]
            ]
            # A model without labels: `dep`, but `punct` for the punctuation it never saw (attached by rule).
            unseen = parser.model.config.punctuation_policy == "reattach"
            labels = expected.get("deprels") or [
                "punct" if unseen and is_punctuation(word) else "dep" for word in expected["words"]
            ]
            assert [token.dep_ for token in words] == [
                "ROOT" if head == 0 else label for head, label in zip(expected["heads"], labels)
            ]
        if "spans" in expected:
            assert {
                (span.start - sentence.start, span.end - sentence.start)
                for span in doc.spans["constituents"]
                if sentence.start <= span.start < sentence.end
            } == {tuple(span) for span in expected["spans"]}
    if "heads" in gives(name):
        space = next(token for token in doc if token.is_space)
        assert space.head.i == space.i - 1 and space.dep_ == "dep"  # whitespace hangs on the word before it
    else:  # spaCy's defaults: no heads, no labels
        assert not doc.has_annotation("DEP") and not doc.has_annotation("HEAD")
    if "spans" in gives(name):
        assert all(span.label_ == "X" for span in doc.spans["constituents"])
    else:
        assert "constituents" not in doc.spans  # no span group is made up for a model of heads


@pytest.mark.parametrize("name", TINY_MODELS)
def test_pipe_equals_one_doc_at_a_time_and_earlier_sentences_are_kept(name, tiny_folder):
    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": tiny_folder(name), "batch_size": 2})
    piped = [parsed(doc) for doc in nlp.pipe(TEXTS)]
    assert piped == [parsed(nlp(text)) for text in TEXTS]
    constituents: list | None = [] if "spans" in gives(name) else None
    assert piped[-2] == ([(0, "ROOT" if "heads" in gives(name) else "", True)], constituents)  # "?"
    assert piped[-1] == ([], constituents)  # ""
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer", config={"punct_chars": [";"]})
    nlp.add_pipe("hf_structure", config={"model": tiny_folder(name)})
    assert len(list(nlp("A dog ran. The man sat; the old man").sents)) == 2  # the sentencizer's, not ours


def test_the_factory_declares_what_the_component_assigns():
    """A later component that needs heads, labels, sentences or a span group finds them assigned (spaCy's pipeline
    analysis reads the factory's `assigns`); without the component it is told what is missing."""
    from spacy.language import Language

    needs = ["token.head", "token.dep", "token.is_sent_start", "doc.sents", "doc.spans"]
    Language.component("needs_a_parse", requires=needs, func=lambda doc: doc)
    nlp = spacy.blank("en")
    nlp.add_pipe("needs_a_parse")
    assert nlp.analyze_pipes()["problems"]["needs_a_parse"] == needs
    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure")  # the model is not loaded: nothing has been parsed
    nlp.add_pipe("needs_a_parse")
    assert nlp.analyze_pipes()["problems"] == {"hf_structure": [], "needs_a_parse": []}


@pytest.mark.parametrize("save_model", [False, True], ids=["folder-named", "model-saved"])
@pytest.mark.parametrize("name", TINY_MODELS)
def test_a_saved_pipeline_parses_the_same_after_spacy_load(name, save_model, tiny_folder, tmp_path, monkeypatch):
    shutil.copytree(tiny_folder(name), tmp_path / "model")
    monkeypatch.chdir(tmp_path)
    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": "model", "save_model": save_model})  # a folder relative to here
    before = [parsed(doc) for doc in nlp.pipe(TEXTS)]
    nlp.to_disk(tmp_path / "pipeline")
    assert len(list((tmp_path / "pipeline").rglob("*.safetensors"))) == save_model  # the weights, only when asked
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # where "model" is no folder
    if save_model:
        shutil.rmtree(tmp_path / "model")  # the saved pipeline needs nothing else
    loaded = spacy.load(tmp_path / "pipeline")
    assert [parsed(doc) for doc in loaded.pipe(TEXTS)] == before
    if save_model:
        loaded.to_disk(tmp_path / "pipeline")  # over the folder its model was loaded from
        reloaded = spacy.load(tmp_path / "pipeline")
        shutil.rmtree(tmp_path / "pipeline")  # spacy.load loaded the model: the folder is no longer read
        assert [parsed(doc) for doc in reloaded.pipe(TEXTS)] == before


def pipeline_over_half_precision_weights(tiny_folder, folder):
    """A pipeline whose component (`save_model=True`) parses with a copy, at `folder`, of the tiny arc-hybrid model
    with its weights stored in half precision."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(tiny_folder("arc_hybrid"), folder)
    weights = folder / "model.safetensors"
    save_file({name: tensor.half() for name, tensor in load_file(weights).items()}, weights, metadata={"format": "pt"})
    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": str(folder), "save_model": True})
    return nlp


def test_a_model_stored_in_half_precision_is_saved_in_half_precision(tiny_folder, tmp_path):
    """As the bundled parsers are: their weights load in float32, and the pipeline stores them as they came."""
    from safetensors.torch import load_file

    nlp = pipeline_over_half_precision_weights(tiny_folder, tmp_path / "model")
    before = [parsed(doc) for doc in nlp.pipe(TEXTS)]
    nlp.to_disk(tmp_path / "pipeline")
    saved = load_file(tmp_path / "pipeline" / "hf_structure" / "model" / "model.safetensors")
    assert {tensor.dtype for tensor in saved.values()} == {torch.float16}
    assert [parsed(doc) for doc in spacy.load(tmp_path / "pipeline").pipe(TEXTS)] == before


def files(folder):
    """Each file under `folder` (its path within it) and its size."""
    return {str(file.relative_to(folder)): file.stat().st_size for file in folder.rglob("*") if file.is_file()}


def test_a_loaded_pipeline_saved_into_its_own_folder_is_saved_as_it_was(tiny_folder, tmp_path):
    """Its model was loaded from the folder's weights (half precision here, as the bundled parsers are): saved again
    they keep their size (they were saved as float32, twice it, when their precision was read from the file just
    overwritten), and the loaded model's memory-mapped weights are not written over: a new file replaces them."""
    nlp = pipeline_over_half_precision_weights(tiny_folder, tmp_path / "model")
    before = [parsed(doc) for doc in nlp.pipe(TEXTS)]
    folder = tmp_path / "pipeline" / "hf_structure"
    nlp.to_disk(tmp_path / "pipeline")
    saved, inode = files(folder), (folder / "model" / "model.safetensors").stat().st_ino
    loaded = spacy.load(tmp_path / "pipeline")
    loaded.to_disk(tmp_path / "pipeline")
    # The same files, the weights the same size (source.json now names this folder; the tokenizer's config may gain
    # the padding settings that parsing left in tokenizer.json).
    assert files(folder).keys() == saved.keys()
    assert files(folder)["model/model.safetensors"] == saved["model/model.safetensors"]
    assert (folder / "model" / "model.safetensors").stat().st_ino != inode
    assert [parsed(doc) for doc in loaded.pipe(TEXTS)] == before
    assert [parsed(doc) for doc in spacy.load(tmp_path / "pipeline").pipe(TEXTS)] == before


@pytest.mark.parametrize("old", ["arc_hybrid", "g2gtr"])
def test_saving_over_another_models_pipeline_leaves_only_the_new_models_files(old, tiny_folder, tmp_path):
    """The component's `model/` is replaced whole (no other model's code or weights left in it); a file of the
    user's beside it stays. Saved without the model, the earlier one goes."""
    for name, folder in (("structformer", "fresh"), (old, "pipeline")):
        nlp = spacy.blank("en")
        nlp.add_pipe("hf_structure", config={"model": tiny_folder(name), "save_model": True})
        nlp.to_disk(tmp_path / folder)
    (tmp_path / "pipeline" / "hf_structure" / "notes.txt").write_text("the user's")
    nlp = spacy.load(tmp_path / "fresh")
    before = [parsed(doc) for doc in nlp.pipe(TEXTS)]
    nlp.to_disk(tmp_path / "pipeline")
    assert files(tmp_path / "pipeline" / "hf_structure" / "model") == files(
        tmp_path / "fresh" / "hf_structure" / "model"
    )
    assert (tmp_path / "pipeline" / "hf_structure" / "notes.txt").read_text() == "the user's"
    assert [parsed(doc) for doc in spacy.load(tmp_path / "pipeline").pipe(TEXTS)] == before
    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": tiny_folder(old)})
    nlp.to_disk(tmp_path / "pipeline")
    assert sorted(path.name for path in (tmp_path / "pipeline" / "hf_structure").iterdir()) == [
        "notes.txt",
        "source.json",
    ]


def test_a_truncated_source_json_is_named(tiny_folder, tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": tiny_folder("structformer")})
    nlp.to_disk(tmp_path / "pipeline")
    source = tmp_path / "pipeline" / "hf_structure" / "source.json"
    source.write_text(source.read_text()[:20])
    message = rf"{re.escape(str(source))} is not valid JSON \(line \d+, column \d+\): .+; save the pipeline again"
    with pytest.raises(ValueError, match=message):
        spacy.load(tmp_path / "pipeline")


def test_a_bundled_model_is_saved_by_its_name(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": "r2d2-ptb"})
    nlp.to_disk(tmp_path / "pipeline")  # the model is not loaded to save its name
    assert srsly.read_json(tmp_path / "pipeline" / "hf_structure" / "source.json")["location"] == "r2d2-ptb"
    assert not list((tmp_path / "pipeline").rglob("*.safetensors"))


def test_spacy_load_parses_with_the_model_its_config_names(tiny_folder, tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": tiny_folder("structformer"), "save_model": True})
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline", config={"components": {"hf_structure": {"model": tiny_folder("r2d2")}}})
    r2d2 = spacy.blank("en")
    r2d2.add_pipe("hf_structure", config={"model": tiny_folder("r2d2")})
    assert [parsed(doc) for doc in loaded.pipe(TEXTS)] == [parsed(doc) for doc in r2d2.pipe(TEXTS)]


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


def test_render_draws_arcs_where_the_doc_has_heads_and_constituents_where_it_has_none(tiny_folder):
    """displaCy's default call draws arcs only: for a constituency model's doc (R2D2's) it warns W005 and draws
    nothing, where `render` draws the constituents."""
    import warnings

    from hf_structure.spacy_component import render

    for name, drawn in (("r2d2", 'class="spans"'), ("arc_hybrid", "<svg")):
        nlp = spacy.blank("en")
        nlp.add_pipe("hf_structure", config={"model": tiny_folder(name)})
        doc = nlp("the old man sat on the bench")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # W005, the warning of a drawing without arcs, fails the test
            html = render(doc)
        assert drawn in html and "bench" in html, name


def test_a_model_without_labels_gives_dep_and_punct_to_the_punctuation_it_never_saw(tiny_folder):
    """StructFormer's induced dependencies are unlabelled (its card): `dep`; the punctuation it never sees, which
    the pipeline attaches by rule, `punct`."""
    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": tiny_folder("structformer")})
    doc = nlp("the old man , a dog , sat on the bench .")
    punctuation = {token.i for token in doc if token.text in {",", "."}}
    assert {token.dep_ for token in doc if token.i in punctuation} == {"punct"}
    assert {token.dep_ for token in doc if token.i not in punctuation} == {"dep", "ROOT"}


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


def test_quantize_int8_parses_in_int8_and_saves_the_model_as_stored(tiny_folder, tmp_path):
    """The component's `quantize` setting is the pipeline's: int8 while parsing, the saved weights those on disk."""
    from safetensors.torch import load_file

    from hf_structure.pipelines.quantization import Int8Linear

    folder = tiny_folder("arc_hybrid")
    nlp = spacy.blank("en")
    component = nlp.add_pipe("hf_structure", config={"model": folder, "save_model": True, "quantize": "int8"})
    before = [parsed(doc) for doc in nlp.pipe(TEXTS)]
    assert any(isinstance(module, Int8Linear) for module in component.parser.model.modules())
    nlp.to_disk(tmp_path / "pipeline")
    saved = load_file(tmp_path / "pipeline" / "hf_structure" / "model" / "model.safetensors")
    assert saved.keys() == load_file(f"{folder}/model.safetensors").keys()
    loaded = spacy.load(tmp_path / "pipeline")
    assert any(isinstance(module, Int8Linear) for module in loaded.get_pipe("hf_structure").parser.model.modules())
    assert [parsed(doc) for doc in loaded.pipe(TEXTS)] == before


def test_quantize_int8_of_a_model_without_int8_modules_is_refused_as_the_pipeline_refuses_it(tiny_folder):
    from hf_structure.pipelines.quantization import QuantizationError
    from tests.pipelines.test_quantization import REFUSAL

    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": tiny_folder("structformer"), "quantize": "int8"})
    with pytest.raises(QuantizationError, match=f"^quantize='int8': {REFUSAL}$"):
        nlp("The old man sat on the bench.")


def test_a_refused_sentence_goes_to_the_error_handler_and_costs_that_sentence_alone(tmp_path_factory):
    """By default the refusal is raised, naming the doc and the sentence; with `nlp.set_error_handler`, the
    handler gets it and the doc comes back with its other sentence parsed and the refused one unparsed."""
    from hf_structure import SentenceError
    from tests.helpers.refusing_parser import REFUSED, save_refusing_parser

    folder = save_refusing_parser(tmp_path_factory.mktemp("refusing"))
    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": str(folder)})
    text = f"the dog ran. the {REFUSED} sat."
    with pytest.raises(SentenceError, match=f"doc 1 of the batch .*, sentence 2: {REFUSED!r} is a word"):
        list(nlp.pipe([text]))
    handled = []
    nlp.set_error_handler(lambda name, component, docs, error: handled.append((name, docs[0].text, str(error))))
    [doc, other] = list(nlp.pipe([text, "a man sat."]))
    assert handled == [
        (
            "hf_structure",
            text,
            f"doc 1 of the batch ({text!r}), sentence 2: {REFUSED!r} is a word this model does not parse",
        )
    ]
    first, refused = doc[:4], doc[4:]
    assert [token.head.i for token in first] == [token.head.i for token in nlp("the dog ran.")]
    assert all(token.dep_ == "" and token.head.i == token.i for token in refused)
    assert other.has_annotation("DEP")
