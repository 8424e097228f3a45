"""The Graph-to-Graph Transformer parser: its encoder is BERT's, sharing the lower layers changes no score, decoding
gives trees and does not depend on the batch, and an exported folder parses the same without hf_structure."""

import pytest
import torch

from hf_structure.data.tokenization import encode_word_pieces
from hf_structure.models.g2gtr import G2GTrConfig, G2GTrForParsing
from hf_structure.models.g2gtr.modeling_g2gtr import TO_DEPENDENT, TO_HEAD, initial_piece_relations
from hf_structure.models.g2gtr.training_g2gtr import (
    G2GTrTrainingArguments,
    OracleCollator,
    load_bert_encoder,
    oracle_examples,
)
from hf_structure.structs.trees import heads_are_tree
from hf_structure.training.parser import new_parser, with_known_labels
from tests.helpers.remote_code import parse_without_hf_structure
from tests.helpers.tiny_treebank import DEPRELS, SENTENCES


def new_g2gtr(bert_folder, graph_layers: int):
    return new_parser(
        "g2gtr", G2GTrTrainingArguments(encoder=str(bert_folder), graph_layers=graph_layers), SENTENCES, DEPRELS
    )


@pytest.fixture(scope="module")
def parser(bert_folder):
    torch.manual_seed(1)
    model, tokenizer = new_g2gtr(bert_folder, graph_layers=2)
    with torch.no_grad():  # random graph and label embeddings, so that the graph input changes the scores
        for name, parameter in model.named_parameters():
            if "relation_" in name or "label_embeddings" in name:
                parameter.normal_(0, 0.5)
    return model.eval(), tokenizer


def test_the_encoder_is_bert_until_a_graph_enters(bert_folder):
    from transformers import AutoTokenizer, BertModel

    model, _ = new_g2gtr(bert_folder, graph_layers=3)
    tokenizer = AutoTokenizer.from_pretrained(bert_folder)
    batch = tokenizer(["the dogs ran", "a hearing is scheduled today"], padding=True, return_tensors="pt")
    assert tokenizer.unk_token_id not in batch["input_ids"].tolist()[1]  # real pieces, "dogs" as "dog ##s"
    bert = BertModel.from_pretrained(bert_folder).eval()
    model.eval()
    relations = torch.zeros(2, *batch["input_ids"].shape[1:2] * 2, dtype=torch.long)
    with torch.no_grad():
        ours = model.encode_configurations(
            model.encode_sentences(batch["input_ids"], batch["attention_mask"]),
            batch["attention_mask"],
            relations,
            torch.zeros_like(batch["input_ids"]),
        )
        theirs = bert(**batch).last_hidden_state
    real = batch["attention_mask"].bool()
    assert torch.allclose(ours[real], theirs[real], atol=1e-5)  # zero-initialised graph input: BERT exactly


def test_load_bert_encoder_refuses_a_checkpoint_that_lacks_weights(bert_folder, tmp_path):
    from safetensors.torch import load_file, save_file

    weights = load_file(bert_folder / "model.safetensors")
    save_file({k: v for k, v in weights.items() if "layer.1." not in k}, tmp_path / "model.safetensors")
    vocab_size = weights["embeddings.word_embeddings.weight"].shape[0]
    model = G2GTrForParsing(
        G2GTrConfig(
            vocab_size=vocab_size,
            hidden_size=32,
            num_hidden_layers=3,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=64,
        )
    )
    with pytest.raises(ValueError, match="encoder weights missing"):
        load_bert_encoder(model, tmp_path)


def test_shared_lower_layers_give_the_scores_of_one_configuration_at_a_time(parser):
    model, tokenizer = parser
    examples = oracle_examples(SENTENCES, tokenizer, DEPRELS, per_example=4)
    batch = OracleCollator(tokenizer.pad_token_id)([examples[i] for i in range(len(examples))])
    with torch.no_grad():
        together = model(**batch)
        for c in range(len(batch["actions"])):
            s = int(batch["sentence_index"][c])
            alone = model(
                input_ids=batch["input_ids"][s : s + 1],
                attention_mask=batch["attention_mask"][s : s + 1],
                relations=batch["relations"][c : c + 1],
                token_labels=batch["token_labels"][c : c + 1],
                slot_positions=batch["slot_positions"][c : c + 1],
            )
            assert torch.allclose(alone.action_logits[0], together.action_logits[c], atol=1e-5)
            assert torch.allclose(alone.label_logits[0], together.label_logits[c], atol=1e-5)
    # every oracle configuration of both sentences appears once
    assert len(batch["actions"]) == sum(len(e["steps"]) for e in examples)
    assert batch["relations"].amax() == 2 and batch["token_labels"].amax() > 0  # partial graphs are in the batch


def test_before_any_arc_each_word_s_pieces_depend_on_its_first_piece_in_decoding_and_training(bert_folder):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(bert_folder)
    sentences = [["the", "dogs", "sating"], ["hearings", "ran", "on", "dogs"], ["man"]]
    inputs = encode_word_pieces(sentences, tokenizer, 64)
    relations = initial_piece_relations(
        inputs["first_pieces"].tolist(), inputs["lengths"].tolist(), inputs["attention_mask"]
    )
    # The definition, from the tokenizer's word ids: a non-first piece and its word's first piece are related.
    expected = torch.zeros_like(relations)
    for b in range(len(sentences)):
        word_ids = tokenizer(sentences[b], is_split_into_words=True).word_ids()
        for position, word in enumerate(word_ids):
            first = word_ids.index(word)
            if word is not None and first != position:
                expected[b, first, position], expected[b, position, first] = TO_DEPENDENT, TO_HEAD
    assert expected.count_nonzero() == 2 * 4  # dog|s, sat|ing, hearing|s, dog|s
    assert torch.equal(relations, expected)
    # The oracle collator starts each sentence's graph from the same relations.
    treebank = [
        {"id": "c", "words": sentences[0], "heads": [2, 0, 2], "deprels": ["det", "root", "nsubj"]},
        {"id": "d", "words": sentences[1], "heads": [2, 0, 4, 2], "deprels": ["nsubj", "root", "case", "nmod"]},
    ]
    batch = OracleCollator(tokenizer.pad_token_id)(oracle_examples(treebank, tokenizer, DEPRELS, per_example=100))
    firsts = [0, int(batch["sentence_index"].tolist().index(1))]  # each sentence's configuration before any arc
    length = batch["input_ids"].size(1)
    assert torch.equal(batch["relations"][firsts], expected[:2, :length, :length])


def test_training_loss_reaches_the_graph_embeddings(parser):
    model, tokenizer = parser
    model.train()
    examples = oracle_examples(SENTENCES, tokenizer, DEPRELS, per_example=8)
    batch = OracleCollator(tokenizer.pad_token_id)([examples[i] for i in range(len(examples))])
    loss = model(**batch).loss
    loss.backward()
    model.eval()
    assert torch.isfinite(loss)
    top = model.layers[-1].attention
    assert top.relation_keys.weight.grad.abs().sum() > 0 and top.relation_values.weight.grad.abs().sum() > 0
    assert model.layers[0].attention.relation_keys is None  # below the graph layers: no graph input
    model.zero_grad()


def test_decoding_gives_trees_and_does_not_depend_on_the_batch(parser):
    model, tokenizer = parser
    words = [s["words"] for s in SENTENCES] + [["the", "old", "man", "sat"], ["sat"]]
    together = model.parse(words, tokenizer)
    for sentence, parse in zip(words, together):
        assert parse["words"] == sentence and heads_are_tree(parse["heads"])
        assert len(parse["deprels"]) == len(sentence) and set(parse["deprels"]) <= set(DEPRELS)
        assert parse == model.parse([sentence], tokenizer)[0]


@pytest.mark.parametrize("graph_layers", [0, 1, 2, 3])
def test_decoding_runs_the_graph_layers_only_after_arcs_and_scores_as_recomputing_everything(
    bert_folder, graph_layers, monkeypatch
):
    from hf_structure.models.g2gtr.modeling_g2gtr import G2GTrDecodingCache
    from tests.helpers.reference_g2gtr import recompute_every_step_parse

    torch.manual_seed(3)
    model, tokenizer = new_g2gtr(bert_folder, graph_layers)
    with torch.no_grad():  # random graph and label embeddings, so that every arc changes the scores
        for name, parameter in model.named_parameters():
            if "relation_" in name or "label_embeddings" in name:
                parameter.normal_(0, 0.5)
    model.eval()
    # pieces beyond words (dog|s, sat|ing, hearing|s), a one-word sentence, and pads in every batch
    words = [
        ["the", "dogs", "sating", "on", "the", "bench"],
        ["man"],
        ["hearings", "ran", "on", "dogs", "today"],
        ["the", "old", "man", "sat", "on", "the", "bench", "."],
    ]
    expected, expected_scores = recompute_every_step_parse(model, tokenizer, words)
    scores, encoded_rows = [], []
    classify_slots, encode = model.classify_slots, G2GTrDecodingCache.encode

    def recording_classify_slots(*args):
        scores.append(classify_slots(*args))
        return scores[-1]

    def counting_encode(cache, rows):
        encoded_rows.append(len(rows))
        return encode(cache, rows)

    monkeypatch.setattr(model, "classify_slots", recording_classify_slots)
    monkeypatch.setattr(G2GTrDecodingCache, "encode", counting_encode)
    assert model.parse(words, tokenizer) == expected
    assert len(scores) == len(expected_scores)  # the same transitions, step by step
    for (actions, labels), (expected_actions, expected_labels) in zip(scores, expected_scores):
        assert torch.allclose(actions, expected_actions, atol=1e-5)
        assert torch.allclose(labels, expected_labels, atol=1e-5)
    if graph_layers >= 2:  # once at the start, then after each arc but a sentence's last: one run per word
        assert sum(encoded_rows) == sum(map(len, words)) < sum(len(actions) for actions, _ in scores)


def test_decoding_under_bf16_autocast_gives_trees(parser):
    model, tokenizer = parser
    words = [["the", "dogs", "sating", "on", "the", "bench"], ["man"]]
    with torch.autocast("cpu", dtype=torch.bfloat16):  # the decoding cache keeps its numbers as the states
        parses = model.parse(words, tokenizer)
    assert [len(parse["heads"]) for parse in parses] == [6, 1] and all(heads_are_tree(p["heads"]) for p in parses)


def test_an_exported_parser_parses_the_same_without_hf_structure(parser, tmp_path):
    from hf_structure.hub import export_model_folder
    from hf_structure.hub.records import EVAL_RECORD, TRAINING_RECORD, write_json

    model, tokenizer = parser
    folder = tmp_path / "g2gtr-test"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    write_json(folder / EVAL_RECORD, {"dataset": "two sentences", "uas": 50.0, "las": 25.0})
    write_json(folder / TRAINING_RECORD, {"command": "x", "wall_time_s": 1, "machine": "x", "steps": 1, "epochs": 1})
    out = export_model_folder(folder, tmp_path / "export", repo_id="org/g2gtr-test")
    assert "# g2gtr-test" in (out / "README.md").read_text()
    from transformers import pipeline

    text = "the old man sat on the bench ."
    expected = pipeline("unsupervised-parsing", model=str(out))(text.split(), is_split_into_words=True)  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    assert parse_without_hf_structure(out, text.split(), tmp_path, is_split_into_words=True) == expected
    assert (out / "modeling_g2gtr.py").is_file() and (out / "configuration_g2gtr.py").is_file()


def test_the_pipeline_parses_text_and_words_into_labelled_conllu(parser, tmp_path):
    import conllu
    from transformers import pipeline

    from hf_structure.data.conllu_format import parses_to_conllu

    model, tokenizer = parser
    folder = tmp_path / "parser"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    parse = pipeline("unsupervised-parsing", model=str(folder))  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    (result,) = parse("The dog ran.")  # raw text, split PTB-style; punctuation reaches the parser
    assert result["words"] == ["The", "dog", "ran", "."] and heads_are_tree(result["heads"])
    assert set(result) == {"words", "offsets", "text", "heads", "deprels"} and len(result["deprels"]) == 4
    text = parses_to_conllu(parse([["the", "dog", "ran"], ["a", "hearing", "is", "scheduled"]], batch_size=2))
    blocks = conllu.parse(text)
    assert [[t["form"] for t in b] for b in blocks] == [["the", "dog", "ran"], ["a", "hearing", "is", "scheduled"]]
    assert all(t["deprel"] in DEPRELS for b in blocks for t in b)
    assert [[t["head"] for t in b] for b in blocks] == [
        r["heads"] for r in parse([["the", "dog", "ran"], ["a", "hearing", "is", "scheduled"]])
    ]


def test_without_graph_layers_the_configuration_does_not_change_the_encoding(bert_folder):
    model, tokenizer = new_g2gtr(bert_folder, graph_layers=0)
    model.eval()
    examples = oracle_examples(SENTENCES[:1], tokenizer, DEPRELS, per_example=100)
    batch = OracleCollator(tokenizer.pad_token_id)([examples[0]])
    with torch.no_grad():
        states = model.encode_sentences(batch["input_ids"], batch["attention_mask"])[batch["sentence_index"]]
        encoded = model.encode_configurations(
            states, batch["attention_mask"][batch["sentence_index"]], batch["relations"], batch["token_labels"]
        )
    assert torch.equal(encoded, states)  # only the stack and buffer slots tell configurations apart


def test_a_label_the_parser_lacks_is_named():
    odd = {**SENTENCES[0], "id": "odd", "deprels": ["det", "nsubj", "root", "punct:odd"]}
    with pytest.raises(ValueError, match=r"sentence odd: labels \['punct:odd'\] are not among the parser's"):
        with_known_labels([odd], DEPRELS)
    assert with_known_labels([odd, SENTENCES[0]], DEPRELS, skip_unknown_labels=True) == [SENTENCES[0]]
