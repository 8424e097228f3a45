"""The arc-hybrid parser (Le Roux et al.): its training targets, the loss reaching every scorer, exact decoding into
single-rooted projective trees that do not depend on the batch, both encoders, and an exported folder that parses the
same without hf_structure."""

import pytest
import torch

from hf_structure.models.arc_hybrid import ArcHybridConfig, ArcHybridForParsing
from hf_structure.models.arc_hybrid.training_arc_hybrid import (
    ArcHybridCollator,
    ArcHybridTrainingArguments,
    arc_hybrid_examples,
)
from hf_structure.structs import arc_hybrid
from hf_structure.structs.trees import heads_are_tree, is_projective, projectivize
from hf_structure.training.parser import new_parser
from tests.helpers.remote_code import parse_without_hf_structure
from tests.helpers.tiny_treebank import DEPRELS, SENTENCES


def new_arc_hybrid(bert_folder, config_overrides=None):
    return new_parser(
        "arc_hybrid", ArcHybridTrainingArguments(encoder=str(bert_folder)), SENTENCES, DEPRELS, config_overrides
    )


@pytest.fixture(scope="module")
def parser(bert_folder):
    torch.manual_seed(1)
    model, tokenizer = new_arc_hybrid(bert_folder)
    with torch.no_grad():  # the biaffine weights start at zero: random ones, so that scores differ between trees
        for name, parameter in model.named_parameters():
            if name.endswith("scorer.weight"):
                parameter.normal_(0, 0.5)
    return model.eval(), tokenizer


def batch_of(tokenizer, sentences, buckets=11):
    examples = arc_hybrid_examples(sentences, tokenizer, DEPRELS, buckets)
    return ArcHybridCollator(tokenizer.pad_token_id)([examples[i] for i in range(len(examples))])


def test_the_transition_ids_are_the_structs_ones():
    from hf_structure.models.arc_hybrid import modeling_arc_hybrid

    assert (modeling_arc_hybrid.SHIFT, modeling_arc_hybrid.LEFT, modeling_arc_hybrid.RIGHT) == (
        arc_hybrid.SHIFT,
        arc_hybrid.LEFT,
        arc_hybrid.RIGHT,
    )


def test_training_targets_are_the_projectivised_tree_and_its_oracle_derivation(parser):
    _, tokenizer = parser
    assert not is_projective(SENTENCES[1]["heads"])  # "hearing ... issue" crosses "scheduled"
    batch = batch_of(tokenizer, SENTENCES)
    for b, sentence in enumerate(SENTENCES):
        n = len(sentence["words"])
        heads = projectivize(sentence["heads"])
        assert batch["heads"][b, 1 : n + 1].tolist() == heads
        assert batch["heads"][b, 0] == -100 and batch["heads"][b, n + 1 :].eq(-100).all()
        assert batch["labels"][b, 1 : n + 1].tolist() == [DEPRELS.index(d) for d in sentence["deprels"]]
        steps, matchings = arc_hybrid.stack_size_events(arc_hybrid.static_oracle(heads), n, 11)
        assert batch["steps"][b, : 2 * n].tolist() == [list(s) for s in steps]
        assert batch["matchings"][b, :n].tolist() == [list(m) for m in matchings]
        assert batch["steps"][b, 2 * n :].eq(-100).all() and batch["lengths"][b] == n
    first = batch["first_pieces"][1]  # ROOT is [CLS]; word i's first piece holds its id
    assert first[0] == 0 and batch["input_ids"][1, first[1:9]].ne(tokenizer.pad_token_id).all()


def test_training_moves_every_parameter_and_learns_the_tree(bert_folder):
    torch.manual_seed(0)
    model, tokenizer = new_arc_hybrid(bert_folder)
    batch = batch_of(tokenizer, SENTENCES)
    initial = {name: p.detach().clone() for name, p in model.named_parameters()}
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(60):
        optimizer.zero_grad()
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
    assert torch.isfinite(loss)
    # (the biaffine weights start at zero, as Dozat & Manning's, so the projections feeding them move from step 2 on)
    unchanged = [name for name, p in model.named_parameters() if torch.equal(p, initial[name])]
    assert unchanged == []
    model.eval()
    for sentence, parse in zip(SENTENCES, model.parse([s["words"] for s in SENTENCES], tokenizer)):
        assert parse["heads"] == projectivize(sentence["heads"]) and parse["deprels"] == sentence["deprels"]


def test_decoding_is_exact_gives_single_rooted_projective_trees_and_does_not_depend_on_the_batch(parser):
    model, tokenizer = parser
    words = [s["words"] for s in SENTENCES] + [["the", "old", "man", "sat"], ["sat"], ["dog", "ran", "ran"]]
    together = model.parse(words, tokenizer)
    for sentence, parse in zip(words, together):
        assert parse["words"] == sentence and heads_are_tree(parse["heads"]) and is_projective(parse["heads"])
        assert len(parse["deprels"]) == len(sentence) and set(parse["deprels"]) <= set(DEPRELS)
        assert parse == model.parse([sentence], tokenizer)[0]
    # The DP's tree is the best single-rooted derivation: every derivation of a short sentence, scored in full.
    from tests.helpers.arc_hybrid_derivations import all_derivations, stack_size_score

    sentence = ["the", "old", "man", "sat"]
    from hf_structure.data.tokenization import encode_word_pieces

    inputs = encode_word_pieces([sentence], tokenizer, 64)
    with torch.no_grad():
        states = model.encode_words(**inputs)
        lengths = inputs["lengths"]
        scores = (
            model.transition_log_probs(states, lengths)[0],
            model.matching_log_probs(states, lengths)[0],
            model.arc_log_probs(states, lengths)[0],
        )
    best = max(all_derivations(4, single_root=True), key=lambda t: stack_size_score(t, *scores, 4))
    _, best_heads = arc_hybrid.derivation_score(best, torch.zeros(6, 6, 3), torch.zeros(6, 6), 4)
    assert model.parse([sentence], tokenizer)[0]["heads"] == best_heads[1:]


def test_parsing_encodes_sentences_of_similar_piece_counts_together_with_the_scores_of_the_whole_batch(
    parser, monkeypatch
):
    from hf_structure.data.tokenization import encode_word_pieces

    model, tokenizer = parser
    # piece counts 9, 3 (one word), 5, 8, 4: groups of two, padded to 4, 8 and 9 pieces, not all to 9
    words = [
        ["the", "dogs", "sating", "on", "man"],
        ["man"],
        ["dog", "ran", "ran"],
        ["hearings", "is", "scheduled", "today", "."],
        ["sat", "sat"],
    ]
    inputs = encode_word_pieces(words, tokenizer, 64)
    with torch.no_grad():
        whole = model.encoder(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
    lengths = []
    encoder = model.encoder.forward

    def encode_and_note_shape(**kwargs):
        lengths.append(kwargs["input_ids"].shape)
        return encoder(**kwargs)

    monkeypatch.setattr(model.encoder, "forward", encode_and_note_shape)
    monkeypatch.setattr(model, "parse_group_size", 2)
    with torch.no_grad():
        grouped = model.encode_pieces(inputs["input_ids"], inputs["attention_mask"])
    assert inputs["attention_mask"].sum(-1).tolist() == [9, 3, 5, 8, 4]
    assert lengths == [(2, 4), (2, 8), (1, 9)]
    real = inputs["attention_mask"].bool()
    assert torch.allclose(grouped[real], whole.last_hidden_state[real], atol=1e-5)
    assert model.parse(words, tokenizer) == [model.parse([sentence], tokenizer)[0] for sentence in words]


def test_eisner_decoding_and_clear_errors(parser):
    model, tokenizer = parser
    words = [s["words"] for s in SENTENCES]
    for parse in model.parse(words, tokenizer, head_decoding="eisner"):
        assert heads_are_tree(parse["heads"]) and is_projective(parse["heads"])
    with pytest.raises(ValueError, match="head_decoding must be one of"):
        model.parse(words, tokenizer, head_decoding="argmax")
    with pytest.raises(ValueError, match="sentence 1: no word"):
        model.parse([["dog"], []], tokenizer)
    with pytest.raises(ValueError, match="sentence 0: .* word pieces; this model reads at most 64"):
        model.parse([["dog"] * 70], tokenizer)
    assert model.parse([["dog", "\x00", "ran"]], tokenizer)[0]["words"] == ["dog", "\x00", "ran"]  # no piece: [UNK]


def test_the_bilstm_encoder_trains_and_parses(bert_folder):
    torch.manual_seed(0)
    model, tokenizer = new_arc_hybrid(bert_folder, "encoder_type=bilstm,lstm_hidden_size=16,lstm_layers=1")
    assert model.config.encoder_type == "bilstm" and not hasattr(model, "encoder")
    from safetensors.torch import load_file

    bert_embeddings = load_file(bert_folder / "model.safetensors")["embeddings.word_embeddings.weight"]
    assert torch.equal(model.embeddings.weight, bert_embeddings)  # word-piece embeddings start from the BERT's
    loss = model(**batch_of(tokenizer, SENTENCES)).loss
    loss.backward()
    assert torch.isfinite(loss) and model.lstm.weight_hh_l0.grad.abs().sum() > 0
    model.eval()
    assert all(heads_are_tree(p["heads"]) for p in model.parse([s["words"] for s in SENTENCES], tokenizer))


def test_config_rejects_what_the_parser_cannot_do():
    with pytest.raises(ValueError, match="encoder_type"):
        ArcHybridConfig(encoder_type="gru")
    with pytest.raises(ValueError, match="stack_buckets must be at least 4"):
        ArcHybridConfig(stack_buckets=3)
    with pytest.raises(ValueError, match="head_decoding"):
        ArcHybridConfig(head_decoding="mst")
    assert (
        ArcHybridForParsing(
            ArcHybridConfig(
                num_hidden_layers=1, hidden_size=24, num_attention_heads=2, intermediate_size=32, vocab_size=50
            )
        ).config.model_type
        == "arc_hybrid"
    )


def test_an_exported_parser_parses_the_same_without_hf_structure(parser, tmp_path):
    from transformers import pipeline

    from hf_structure.hub import export_model_folder
    from hf_structure.hub.records import EVAL_RECORD, TRAINING_RECORD, write_json

    model, tokenizer = parser
    folder = tmp_path / "arc-hybrid-test"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    write_json(folder / EVAL_RECORD, {"dataset": "two sentences", "uas": 50.0, "las": 25.0, "uas_eisner": 40.0})
    write_json(folder / TRAINING_RECORD, {"command": "x", "wall_time_s": 1, "machine": "x", "steps": 1, "epochs": 1})
    out = export_model_folder(folder, tmp_path / "export", repo_id="org/arc-hybrid-test")
    card = (out / "README.md").read_text()
    assert "# arc-hybrid-test" in card and "stack-size DP" in card
    sentences = [["the", "old", "man", "sat", "on", "the", "bench", "."], ["a", "dog", "ran"]]
    expected = pipeline("unsupervised-parsing", model=str(out))(sentences, is_split_into_words=True)  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    assert parse_without_hf_structure(out, sentences, tmp_path, is_split_into_words=True) == expected
    assert all(heads_are_tree(parse["heads"]) for parse in expected)


def test_a_too_long_sentence_gets_our_error_alone(bert_folder, caplog):
    model, tokenizer = new_arc_hybrid(bert_folder)  # a fresh tokenizer: transformers warns once per tokenizer
    tokenizer.model_max_length = 64  # as a real encoder's tokenizer says: transformers would warn of "indexing errors"
    with pytest.raises(ValueError, match="sentence 0: 65 word pieces; this model reads at most 64"):
        model.parse([["dog"] * 63], tokenizer)
    assert model.parse_length_error(["dog"] * 63, tokenizer) == "65 word pieces; this model reads at most 64"
    # More words than pieces allowed: refused before the words are cut into pieces (a 2 MB line in a second).
    assert model.parse_length_error(["dog"] * 70, tokenizer) == "70 words; this model reads at most 64 word pieces"
    assert not [record.getMessage() for record in caplog.records if "indexing errors" in record.getMessage()]


def test_consecutive_chunks_keep_each_charts_size_within_the_budget():
    from hf_structure.models.arc_hybrid.modeling_arc_hybrid import consecutive_chunks

    assert consecutive_chunks([], 100) == []
    assert consecutive_chunks([2, 2, 2, 2], 64) == [range(0, 4)]  # 4 x (2 + 2)^2 = 64
    assert consecutive_chunks([2, 2, 2, 2, 2], 64) == [range(0, 4), range(4, 5)]
    assert consecutive_chunks([1, 1, 9, 1], 64) == [range(0, 2), range(2, 3), range(3, 4)]  # 9 alone: 121 > 64


def test_a_batch_parsed_in_chunks_parses_as_whole(parser, monkeypatch):
    from hf_structure.models.arc_hybrid import modeling_arc_hybrid

    model, tokenizer = parser
    words = sorted([s["words"] for s in SENTENCES] * 3, key=len)  # 4, 4, 4, 8, 8, 8 words
    whole = model.parse(words, tokenizer)
    monkeypatch.setattr(modeling_arc_hybrid, "PARSE_CHART_POSITIONS", 2 * 6 * 6)  # 4-word ones by two, 8 alone
    assert len(modeling_arc_hybrid.consecutive_chunks([len(w) for w in words], 2 * 6 * 6)) == 5
    assert model.parse(words, tokenizer) == whole
    assert model.parse(words, tokenizer, head_decoding="eisner") == [
        model.parse([w], tokenizer, "eisner")[0] for w in words
    ]
