"""The bundled supervised parsers (`g2gtr-ewt`, `arc-hybrid-ewt`, `arc-hybrid-ewt-small`: packages installed by
`make setup`), each guarded: its card is what its records render, the short name reproduces pinned scores on a slice
of EWT dev, its folder fits the size limit, and its Hub export parses identically where hf_structure cannot be
imported."""

import pytest
import torch

from hf_structure.bundled import bundled_checkpoints
from tests.helpers.remote_code import parse_without_hf_structure

# Per parser: its package, a weight stored in half precision, and its scores on the first 200 sentences of EWT dev
# (all words, universal labels), measured when it was bundled (2026-11-25) and pinned here.
PARSERS = {
    "g2gtr-ewt": {
        "package": "hf_structure_g2gtr_ewt",
        "half": "embeddings.word_embeddings.weight",
        "slice_scores": {"uas": 91.14, "las": 89.24, "valid_trees": 100.0},
    },
    "arc-hybrid-ewt": {
        "package": "hf_structure_arc_hybrid_ewt",
        "half": "encoder.embeddings.word_embeddings.weight",
        "slice_scores": {"uas": 91.32, "las": 88.92, "valid_trees": 100.0},
    },
    "arc-hybrid-ewt-small": {  # bundled 2026-11-29
        "package": "hf_structure_arc_hybrid_ewt_small",
        "half": "encoder.embeddings.word_embeddings.weight",
        "slice_scores": {"uas": 91.34, "las": 88.87, "valid_trees": 100.0},
    },
}
SLICE = 200
SENTENCES = ["The old man sat on the bench.", "I wouldn't go there again, it was terrible!"]


@pytest.fixture(params=sorted(PARSERS))
def name(request):
    if bundled_checkpoints().get(request.param) is None:
        pytest.skip(f"{request.param}'s package is not installed (make setup does)")
    return request.param


def test_the_card_is_what_its_records_render(name):
    from hf_structure.hub import render_model_card

    folder = bundled_checkpoints()[name]
    committed = (folder / "README.md").read_text(encoding="utf-8")
    assert f"\n# {name}\n" in committed
    assert str(render_model_card(folder)).rstrip() == committed.rstrip()


def test_the_folder_is_at_most_60_mb_and_loads_in_float32(name):
    from safetensors import safe_open

    from hf_structure.bundled import load_model_and_tokenizer

    folder = bundled_checkpoints()[name]
    assert sum(path.stat().st_size for path in folder.iterdir()) <= 60 * 2**20
    with safe_open(folder / "model.safetensors", "pt") as weights:
        assert str(weights.get_tensor(PARSERS[name]["half"]).dtype) == "torch.float16"
    model, _ = load_model_and_tokenizer(name)
    assert {parameter.dtype for parameter in model.parameters()} == {torch.float32}


def test_the_short_name_reproduces_the_pinned_dev_slice(name, data_dir):
    from hf_structure.bundled import load_model_and_tokenizer
    from hf_structure.data.conllu_format import read_conllu
    from hf_structure.evaluation.scoring import score_all_words
    from hf_structure.pipelines.parser import Parser

    gold = read_conllu(data_dir / "ud-english-ewt" / "en_ewt-ud-dev.conllu")[:SLICE]
    model, tokenizer = load_model_and_tokenizer(name)
    scores = score_all_words(gold, Parser(model, tokenizer).parse_words([g["words"] for g in gold]))
    expected = PARSERS[name]["slice_scores"]
    assert {key: scores[key] for key in expected} == expected


def test_the_export_parses_the_same_without_hf_structure(name, tmp_path):
    from transformers import pipeline

    from hf_structure.hub import push_model

    out = push_model(name, f"org/{name}", dry_run_dir=str(tmp_path / "export"))
    parser = pipeline("unsupervised-parsing", model=name)  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    expected = [[[s["heads"], s["deprels"]] for s in text] for text in parser(SENTENCES)]  # a text: its sentences
    results = parse_without_hf_structure(out, SENTENCES, tmp_path, blocked=(PARSERS[name]["package"],))
    assert [[[s["heads"], s["deprels"]] for s in text] for text in results] == expected


def test_the_spacy_component_parses_with_the_short_name(name):
    """`nlp.add_pipe("hf_structure", config={"model": name})` gives the pipeline's heads and labels."""
    spacy = pytest.importorskip("spacy", reason="the spacy extra is not installed")
    from transformers import pipeline

    nlp = spacy.blank("en")
    nlp.add_pipe("hf_structure", config={"model": name})
    doc = nlp(SENTENCES[0])
    (expected,) = pipeline("unsupervised-parsing", model=name)(SENTENCES[0])  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    assert [token.text for token in doc] == expected["words"]
    assert [token.head.i + 1 if token.head.i != token.i else 0 for token in doc] == expected["heads"]
    assert [token.dep_.lower() if token.dep_ != "ROOT" else "root" for token in doc] == expected["deprels"]
