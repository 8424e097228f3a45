"""R2D2: the batched pruned chart against per-cell references, its composition count, the LM objective, parsing,
evaluation and export."""

import json
import subprocess
import sys

import pytest
import torch
from transformers import AutoModel, AutoModelForMaskedLM

from hf_structure.models.r2d2 import R2D2Config, R2D2ForLanguageModeling, R2D2Model
from hf_structure.structs.pruned_chart import encode_pruned_chart
from tests.helpers.binary_trees import binary_trees
from tests.helpers.reference_r2d2 import (
    chart_tree_spans,
    encode_pruned_chart_by_word_spans,
    plain_cky,
    pruned_chart_loop,
    reference_composition_layer,
    reference_composition_transformer,
    tree_spans,
)
from tests.helpers.tiny_models import declared_tiny_config, save_tiny_r2d2

pytestmark = pytest.mark.usefixtures("one_thread")


TINY_PARSER = {"parser_embedding_size": 8, "parser_hidden_size": 8, "parser_num_layers": 2, "parser_tree_samples": 4}


def tiny_model(window_size=4, **overrides) -> R2D2ForLanguageModeling:
    """R2D2's declared tiny model, two composition layers deep, over 40 word ids."""
    torch.manual_seed(0)
    config = declared_tiny_config("r2d2", vocab_size=40, num_composition_layers=2, window_size=window_size, **overrides)
    return R2D2ForLanguageModeling(config).eval()


def batch_of(lengths, vocab_size=40, seed=1):
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, vocab_size, (len(lengths), max(lengths)), generator=generator)
    mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
    return ids.masked_fill(~mask, 0), mask.long()


def batched_nodes(chart, b):
    """{(start, end): node id} of sentence b."""
    found = (chart.node_of_span[b] >= 0).nonzero().tolist()
    return {(start, end): int(chart.node_of_span[b, start, end]) for start, end in found}


@torch.no_grad()
def test_without_pruning_the_chart_is_plain_cky():
    model = tiny_model(window_size=8).r2d2
    lengths = [1, 2, 5, 7, 9]
    ids, mask = batch_of(lengths)
    chart = model(ids, mask).chart
    for b, n in enumerate(lengths):
        reference, count = plain_cky(model.embed_tokens(ids[b, :n]), model.compose)
        nodes = batched_nodes(chart, b)
        assert set(nodes) == set(reference)
        for span, node in nodes.items():
            torch.testing.assert_close(chart.node_states[node], reference[span].state, atol=1e-5, rtol=1e-4)
            assert chart.node_log_p[node].item() == pytest.approx(reference[span].log_p, abs=1e-4)
        assert chart_tree_spans(chart, b) == tree_spans(reference, n)
        assert int(chart.compositions[b]) == count == (n**3 - n) // 6


@pytest.mark.parametrize("window", [1, 2, 3, 4])
@torch.no_grad()
def test_the_pruned_chart_matches_the_per_cell_loop(window):
    model = tiny_model(window_size=window).r2d2
    lengths = [3, 6, 11, 17, 24]
    ids, mask = batch_of(lengths, seed=window)
    chart = model(ids, mask).chart
    for b, n in enumerate(lengths):
        reference, count = pruned_chart_loop(model.embed_tokens(ids[b, :n]), model.compose, window)
        nodes = batched_nodes(chart, b)
        assert set(nodes) == set(reference), f"sentence {b}"
        for span, node in nodes.items():
            torch.testing.assert_close(chart.node_states[node], reference[span].state, atol=1e-5, rtol=1e-4)
        assert chart_tree_spans(chart, b) == tree_spans(reference, n)
        assert int(chart.compositions[b]) == count


@pytest.mark.parametrize("window", [1, 2, 4, 30])
@pytest.mark.parametrize("training", [False, True])
def test_the_chart_equals_the_chart_before_issue_28(window, training):
    """The same nodes (ids, spans, splits, states, scores), roots and composition counts as the chart it replaced,
    bit for bit, in evaluation and in training (same seed: the same Gumbel and dropout noise), and the same
    gradients up to the order of float additions. Lengths 1-29, with padding beyond the longest sentence."""
    model = tiny_model(window_size=window).r2d2.train(training)
    generator = torch.Generator().manual_seed(window)
    lengths = torch.tensor([1, 2, 29, 5, 17, 12, 24, 3])
    ids = torch.randint(3, 40, (len(lengths), 31), generator=generator)
    charts, gradients = [], []
    for chart in (encode_pruned_chart_by_word_spans, encode_pruned_chart):
        torch.manual_seed(0)
        encoding = chart(model.embed_tokens(ids), lengths, model.compose, model.choose_split, window)
        loss = encoding.node_states[encoding.roots].square().sum() + encoding.node_log_p.sum()
        gradients.append(torch.autograd.grad(loss, [model.embed_tokens.weight, model.composition_score.weight]))
        charts.append(encoding)
    before, now = charts
    for field in (
        "node_states",
        "node_log_p",
        "node_span",
        "node_split",
        "node_of_span",
        "roots",
        "compositions",
        "node_split_candidates",
        "node_split_scores",
    ):
        assert torch.equal(getattr(before, field), getattr(now, field)), field
    for expected, actual in zip(*gradients):
        torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5 * float(expected.detach().abs().max()))


@torch.no_grad()
def test_compositions_grow_linearly_with_length():
    """At window m the CKY rows take at most n m (m + 1) / 2 compositions and every merge fills at most m + 1 new
    top-row cells of m splits, so compositions <= c n with c = 3 m (m + 1) / 2 (30 at m = 4). Full CKY needs
    (n^3 - n) / 6."""
    window = 4
    model = tiny_model(window_size=window).r2d2
    for n in (10, 50, 200):
        ids, mask = batch_of([n, n], seed=n)
        counts = model(ids, mask).chart.compositions.tolist()
        for count in counts:
            assert count <= 3 * window * (window + 1) // 2 * n, (n, count)
        assert max(counts) < (n**3 - n) // 6 or n == 10


def test_training_samples_trees_and_gradients_reach_every_part():
    model = tiny_model(window_size=2).train()
    ids, mask = batch_of([4, 9, 13])
    labels = ids.masked_fill(mask == 0, -100)
    loss = model(ids, mask, labels=labels).loss
    loss.backward()
    assert torch.isfinite(loss)
    for name in (
        "r2d2.composition_score.weight",
        "r2d2.mix_weights.weight",
        "r2d2.embed_tokens.weight",
        "r2d2.composition_layers.0.query.weight",
        "prediction_head.0.weight",
    ):
        assert model.get_parameter(name).grad.abs().sum() > 0, name


def test_merged_nodes_pass_their_scores_on_detached():
    """The scores of cells built over a merged terminal carry no gradient into the merged node's own score."""
    torch.manual_seed(0)
    leaves = torch.randn(1, 6, 4, requires_grad=True)
    weight = torch.randn(4, requires_grad=True)

    def compose(left, right):
        return left + right, torch.nn.functional.logsigmoid((left * right) @ weight)

    def argmax(scores):
        return torch.nn.functional.one_hot(scores.argmax(-1), scores.size(-1)).float()

    chart = encode_pruned_chart(leaves, torch.tensor([6]), compose, argmax, window=1)
    root = chart.node_log_p[chart.roots[0]]
    # With window 1, every cell above the bigram row is built over merged terminals only: the root's score is its
    # own composition's log p, and the children's scores are constants.
    root_split = int(chart.node_split[chart.roots[0]])
    left = chart.node_of_span[0, 0, root_split]
    right = chart.node_of_span[0, root_split + 1, 5]
    expected = root - chart.node_log_p[left].detach() - chart.node_log_p[right].detach()
    (g_root,) = torch.autograd.grad(root, weight, retain_graph=True)
    (g_own,) = torch.autograd.grad(expected, weight, retain_graph=True)
    torch.testing.assert_close(g_root, g_own)


@torch.no_grad()
def test_pseudo_perplexity_cannot_see_the_predicted_word():
    model = tiny_model(window_size=2)
    ids, mask = batch_of([7, 5])
    changed = ids.clone()
    changed[0, 3] = (ids[0, 3] + 1 - 3) % 37 + 3
    before = model.pseudo_log_likelihood(ids, mask)
    after = model.pseudo_log_likelihood(changed, mask)
    # Word 3's context does not contain word 3: its distribution is the same, so only the target's score moves.
    logits_before = torch.log_softmax(model.predict_words(*_contexts(model, ids, 0, 3)), -1)
    logits_after = torch.log_softmax(model.predict_words(*_contexts(model, changed, 0, 3)), -1)
    torch.testing.assert_close(logits_before, logits_after)
    assert before[0, 3] == pytest.approx(float(logits_before[0, ids[0, 3]]), abs=1e-5)
    assert after[0, 3] == pytest.approx(float(logits_after[0, changed[0, 3]]), abs=1e-5)
    assert before[1].ne(0).sum() == 5 and before[1, 5:].eq(0).all()


def _contexts(model, ids, b, i):
    """The roots of the prefix and suffix around word i, as separate one-sentence batches."""
    prefix, suffix = ids[b : b + 1, :i], ids[b : b + 1, i + 1 : 7]
    left = model.r2d2(prefix, torch.ones_like(prefix)).root_states
    right = model.r2d2(suffix, torch.ones_like(suffix)).root_states
    return left, right


def test_parse_gives_binary_trees_over_words(tmp_path):
    from hf_structure.data.tokenization import build_word_tokenizer

    tokenizer = build_word_tokenizer(["the old man sat on the bench", "a dog barked"])
    model = R2D2ForLanguageModeling(declared_tiny_config("r2d2", vocab_size=len(tokenizer), parse_window_size=3))
    model.save_pretrained(tmp_path)
    assert type(AutoModelForMaskedLM.from_pretrained(tmp_path)) is R2D2ForLanguageModeling
    assert type(AutoModel.from_pretrained(tmp_path)) is R2D2Model
    sentences = [["The", "old", "man", "sat", "on", "the", "bench"], ["barked"], ["A", "dog", "barked"]]
    parses = model.parse(sentences, tokenizer)
    assert [p["words"] for p in parses] == sentences
    for words, parse in zip(sentences, parses):
        spans = parse["spans"]
        assert len(spans) == len(words) - 1  # a binary tree over n words has n - 1 constituents of 2+ words
        if spans:
            assert spans[0] == (0, len(words))
        for a in spans:
            for b in spans:
                disjoint = a[1] <= b[0] or b[1] <= a[0]
                assert disjoint or (a[0] <= b[0] and b[1] <= a[1]) or (b[0] <= a[0] and a[1] <= b[1])
    # one parse at a time gives the same trees as the batch
    assert [model.parse([s], tokenizer)[0] for s in sentences] == parses
    with pytest.raises(ValueError, match="sentence 1: no word"):
        model.parse([["a"], []], tokenizer)


@pytest.fixture(scope="module", params=["heuristic", "parser"])
def tiny_r2d2_folder(tmp_path_factory, request):
    """A small untrained R2D2 (each pruning) with a word tokenizer over the PTB-sample's words, saved as a folder."""
    folder = tmp_path_factory.mktemp(f"r2d2-{request.param}")
    corpus = ["the old man sat on the bench", "a dog barked at the man"]
    return save_tiny_r2d2(folder, corpus, pruning=request.param, **TINY_PARSER)


def test_cli_evaluate_reports_f1_and_pseudo_perplexity(tiny_r2d2_folder, tmp_path, capsys):
    from hf_structure import cli
    from tests.helpers.paths import require_data

    dev = require_data("ptb-sample", "dev")
    (tmp_path / "lm.txt").write_text("the old man sat on the bench\na dog barked\n")
    cli.main(
        [
            "evaluate",
            "--model",
            str(tiny_r2d2_folder),
            "--treebank",
            str(dev),
            "--lm-text",
            str(tmp_path / "lm.txt"),
            "--record",
            "--dataset-name",
            "ptb-sample/dev",
        ]
    )
    scores = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert scores["sentences"] == 1921 and 0 < scores["sentence_f1"] < 100 and 0 < scores["corpus_f1"] < 100
    assert "uas" not in scores and scores["pppl"] > 1
    # Fast-R2D2 reports the chart's tree beside its parser's (the default); the 2021 model has only the chart's.
    pruning = json.loads((tiny_r2d2_folder / "config.json").read_text())["pruning"]
    assert ("sentence_f1_chart" in scores) == (pruning == "parser")
    record = json.loads((tiny_r2d2_folder / "hf_structure_eval.json").read_text())
    assert record["sentence_f1"] == scores["sentence_f1"] and record["pppl"] == scores["pppl"]


def test_an_exported_r2d2_parses_the_same_as_remote_code(tiny_r2d2_folder, tmp_path):
    from hf_structure.hub import EVAL_RECORD, TRAINING_RECORD, export_model_folder
    from hf_structure.hub.records import write_json

    fast = json.loads((tiny_r2d2_folder / "config.json").read_text())["pruning"] == "parser"
    write_json(
        tiny_r2d2_folder / EVAL_RECORD,
        {
            "dataset": "ptb-sample/dev",
            "sentence_f1": 40.0,
            "corpus_f1": 35.0,
            "sentence_f1_cpcfg": 39.9,
            "pppl_test": 900.0,
            **({"sentence_f1_chart": 38.25} if fast else {}),
        },
    )
    write_json(
        tiny_r2d2_folder / TRAINING_RECORD,
        {
            "command": "python scripts/run_mlm.py --model_type r2d2",
            "wall_time_s": 60,
            "machine": "x",
            "steps": 1,
            "epochs": 1,
        },
    )
    out = export_model_folder(tiny_r2d2_folder, tmp_path / "export", repo_id="org/r2d2-tiny")
    card = (out / "README.md").read_text()
    assert "# r2d2-tiny" in card and "| pruning window (training / parsing) | 2 / 3 |" in card
    assert ("This is the **Fast-R2D2** variant" in card) == fast and ("hu-etal-2022-fast-r2d2" in card) == fast
    assert ("The other tree decoding on the same sentences: sentence-level F1 38.25" in card) == fast
    assert "R2D2 48.11" in card and "Fast-R2D2 57.22" in card
    assert (out / "modeling_r2d2.py").is_file() and (out / "configuration_r2d2.py").is_file()
    sentence = "The old man sat on the bench ."
    from transformers import pipeline

    [expected] = pipeline("unsupervised-parsing", model=str(tiny_r2d2_folder))(sentence)  # type: ignore[call-overload]  # transformers' overloads name only its own tasks; one sentence
    code = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('hf_structure', 'nltk'):
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
from transformers import pipeline
result = pipeline(model={str(out)!r}, trust_remote_code=True)({sentence!r})
print(result[0]['tree'])
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == expected["tree"]


# Fast-R2D2: parser pruning (issue #28).


def chart_tree(chart, b=0):
    """The spans of two or more words of the tree read from sentence b's root along the chosen splits."""
    spans, stack = set(), [int(chart.roots[b])]
    while stack:
        node = stack.pop()
        first, last = chart.node_span[node].tolist()
        if first < last:
            spans.add((first, last + 1))
            split = int(chart.node_split[node])
            stack += [int(chart.node_of_span[b, first, split]), int(chart.node_of_span[b, split + 1, last])]
    return spans


def merge_order_of(spans, n):
    """A merge order that builds the tree of `spans`: its splits, smaller nodes first."""
    order = sorted((end - start, split) for start, end in spans for split in [_split_of(spans, start, end)])
    return torch.tensor([[split for _, split in order] + [-1] * (n - 1 - len(order))], dtype=torch.long)


def _split_of(spans, start, end):
    inner = [s for s in spans if start <= s[0] and s[1] <= end and s != (start, end)]
    left_end = max([e for s, e in inner if s == start], default=start + 1)
    return left_end - 1


@torch.no_grad()
@pytest.mark.parametrize("n", range(2, 9))
def test_with_the_reversed_split_order_of_a_tree_the_chart_merges_along_it(n):
    """Every binary tree up to 8 words: a chart of window 1 given the reverse of the tree's top-down split order
    builds exactly that tree (with window 1 each cell has one split, so its tree is its merges)."""
    model = tiny_model(window_size=1).r2d2
    ids, mask = batch_of([n])
    leaves = model.embed_tokens(ids)
    for spans, top_down in binary_trees(0, n):
        order = torch.tensor([top_down[::-1]], dtype=torch.long)
        chart = encode_pruned_chart(leaves, torch.tensor([n]), model.compose, model.choose_split, 1, merge_order=order)
        assert chart_tree(chart) == set(spans)


@torch.no_grad()
def test_a_parser_that_proposes_a_tree_makes_the_model_merge_along_it(monkeypatch):
    model = tiny_model(window_size=1, pruning="parser", **TINY_PARSER).r2d2
    ids, mask = batch_of([7])
    spans = {(0, 7), (0, 3), (1, 3), (3, 7), (3, 5), (5, 7)}
    # Split scores whose top-down tree is `spans`: a node's split scores its span length.
    scores = torch.tensor([[float(e - s) for k in range(6) for s, e in spans if _split_of(spans, s, e) == k]])
    monkeypatch.setattr(model.split_parser, "forward", lambda input_ids, lengths: scores)
    assert chart_tree(model(ids, mask).chart) == spans


@torch.no_grad()
@pytest.mark.parametrize("pruning", ["heuristic", "parser"])
def test_forced_encoding_of_the_chart_tree_gives_the_chart_root(pruning):
    """Composing along the chart's best tree alone gives the chart's root representation and score."""
    model = tiny_model(window_size=2, pruning=pruning, **TINY_PARSER).r2d2
    lengths = [9, 1, 5, 12, 2]
    ids, mask = batch_of(lengths)
    chart = model(ids, mask).chart
    orders = [merge_order_of(chart_tree(chart, b), max(lengths)) for b in range(len(lengths))]
    forced = model.encode_tree(ids, mask, merge_order=torch.cat(orders))
    assert forced.chart is not None and forced.root_states is not None  # what encoding a tree gives
    for b in range(len(lengths)):
        assert chart_tree(forced.chart, b) == chart_tree(chart, b)
    assert torch.allclose(forced.root_states, chart.node_states[chart.roots], atol=1e-6)
    assert forced.chart.compositions.tolist() == [n - 1 for n in lengths]


@torch.no_grad()
def test_forced_encoding_without_a_tree_follows_the_parser():
    model = tiny_model(window_size=2, pruning="parser", **TINY_PARSER).r2d2
    from hf_structure.data.tokenization import build_word_tokenizer

    tokenizer = build_word_tokenizer(["the old man sat on the bench", "a dog barked"])
    sentences = [["the", "old", "man", "sat", "on", "the", "bench"], ["a", "dog", "barked"]]
    encoded = tokenizer(
        sentences, is_split_into_words=True, padding=True, return_tensors="pt", return_token_type_ids=False
    )
    forced = model.encode_tree(encoded["input_ids"], encoded["attention_mask"])
    parses = model.parse(sentences, tokenizer)
    assert [chart_tree(forced.chart, b) for b in range(2)] == [set(p["spans"]) for p in parses]


def test_parser_pruning_trains_the_parser_by_its_own_loss_and_the_rest_by_the_language_model():
    model = tiny_model(window_size=2, pruning="parser", **TINY_PARSER).train()
    ids, mask = batch_of([4, 9, 13])
    labels = ids.masked_fill(mask == 0, -100)
    output = model(ids, mask, labels=labels)
    assert torch.isclose(output.loss, output.lm_loss + output.parser_loss)
    output.lm_loss.backward(retain_graph=True)
    parser = [name for name, _ in model.named_parameters() if ".split_parser." in name]
    assert parser and all(model.get_parameter(name).grad is None for name in parser)
    assert model.get_parameter("r2d2.composition_score.weight").grad.abs().sum() > 0
    model.zero_grad()
    output.parser_loss.backward()
    for name, parameter in model.named_parameters():
        assert (parameter.grad is not None) == (name in parser), name
    for name in (
        "r2d2.split_parser.score.3.weight",
        "r2d2.split_parser.lstm.weight_ih_l0",
        "r2d2.split_parser.lstm.weight_ih_l0_reverse",
        "r2d2.split_parser.embed_tokens.weight",
    ):
        assert model.get_parameter(name).grad.abs().sum() > 0, name
    # Evaluation reports the language model's loss alone (its exp is the perplexity).
    model.eval()
    evaluated = model(ids, mask, labels=labels)
    assert evaluated.parser_loss is None and torch.equal(evaluated.loss, evaluated.lm_loss)


def test_tree_decodings_are_offered_by_pruning_with_one_clear_error():
    from hf_structure.data.tokenization import build_word_tokenizer

    tokenizer = build_word_tokenizer(["the old man sat on the bench"])
    sentences = [["the", "old", "man", "sat", "on", "the", "bench"]]
    fast = tiny_model(window_size=2, pruning="parser", **TINY_PARSER)
    assert fast.config.tree_decoding == "parser"
    parser_tree, chart_tree_ = (fast.parse(sentences, tokenizer, tree_decoding=m)[0] for m in ("parser", "chart"))
    assert parser_tree["words"] == chart_tree_["words"] and len(parser_tree["spans"]) == len(chart_tree_["spans"]) == 6
    heuristic = tiny_model(window_size=2)
    assert heuristic.config.tree_decoding == "chart"
    with pytest.raises(ValueError, match=r"one of \('chart',\) for this model \(pruning='heuristic'\), got 'parser'"):
        heuristic.parse(sentences, tokenizer, tree_decoding="parser")
    with pytest.raises(ValueError, match="tree_decoding must be 'chart', or 'parser' with parser pruning"):
        R2D2Config(tree_decoding="parser")


# ------------------------------------------------------------------------- the composition Transformer (issue 28)


def perturbed_r2d2(hidden_dropout=0.0, attention_dropout=0.0, width=16, heads=4) -> R2D2Model:
    """An R2D2Model whose every parameter is moved off its initial value (biases, norms and role embeddings
    included), so that every term of the composition is exercised."""
    torch.manual_seed(0)
    config = R2D2Config(
        vocab_size=40,
        hidden_size=width,
        num_attention_heads=heads,
        intermediate_size=4 * width,
        num_composition_layers=3,
        hidden_dropout_prob=hidden_dropout,
        attention_probs_dropout_prob=attention_dropout,
    )
    model = R2D2Model(config).train()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    return model


def composition_and_gradients(model, transformer, tasks, left, right, probe):
    inputs = [tasks, left, right]
    output = transformer(model, *inputs)
    parameters = [parameter for _, parameter in model.named_parameters() if ".composition_layers." in _]
    gradients = torch.autograd.grad((output * probe).sum(), inputs + parameters)
    return output, gradients


@pytest.mark.parametrize("num_tasks", [1, 2])
@pytest.mark.parametrize("count", [1, 300])
def test_the_composition_transformer_equals_the_reference(num_tasks, count):
    """The written-out attention is the standard layer's function: the same outputs and the same gradients (inputs
    and every parameter of the layers) as `reference_composition_transformer`, in training mode with dropout 0, up
    to float32 rounding (1e-5 of each tensor's largest value). 1 task input is the LM's prediction, 2 a composition."""
    model = perturbed_r2d2()
    generator = torch.Generator().manual_seed(count + num_tasks)
    tasks = torch.randn(1, num_tasks, 16, generator=generator).expand(count, -1, -1).clone().requires_grad_()
    left = torch.randn(count, 16, generator=generator, requires_grad=True)
    right = torch.randn(count, 16, generator=generator, requires_grad=True)
    probe = torch.randn(count, num_tasks + 2, 16, generator=generator)
    expected, expected_gradients = composition_and_gradients(
        model, reference_composition_transformer, tasks, left, right, probe
    )
    actual, gradients = composition_and_gradients(model, R2D2Model.composition_transformer, tasks, left, right, probe)
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5 * float(expected.detach().abs().max()))
    largest = max(float(g.abs().max()) for g in expected_gradients)
    for name, a, e in zip(
        ["tasks", "left", "right"] + [n for n, _ in model.named_parameters() if ".composition_layers." in n],
        gradients,
        expected_gradients,
    ):
        # The keys' biases have gradient 0 (a softmax ignores a shift shared by all keys): rounding only.
        scale = largest if name.endswith("key.bias") else float(e.abs().max())
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-5 * scale, msg=name)


def test_a_training_step_and_trees_equal_those_with_the_reference_composition(monkeypatch):
    """The whole model, dropout 0: the same training loss and gradients of every parameter (same seed, so the same
    Gumbel noise) and, in evaluation, the same trees as with the reference composition Transformer."""
    torch.manual_seed(0)
    config = R2D2Config(
        vocab_size=40,
        hidden_size=16,
        num_attention_heads=4,
        intermediate_size=64,
        num_composition_layers=3,
        window_size=2,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    model = R2D2ForLanguageModeling(config).train()
    ids, mask = batch_of([4, 9, 13, 2])
    labels = ids.masked_fill(mask == 0, -100)
    results = []
    for transformer in (reference_composition_transformer, R2D2Model.composition_transformer):
        monkeypatch.setattr(R2D2Model, "composition_transformer", transformer)
        model.train()
        torch.manual_seed(1)
        loss = model(ids, mask, labels=labels).loss
        gradients = dict(
            zip(
                [n for n, _ in model.named_parameters()],
                torch.autograd.grad(loss, model.parameters(), allow_unused=True),
            )
        )
        model.eval()
        with torch.no_grad():
            chart = model.r2d2(ids, mask).chart
        results.append((loss, gradients, [chart_tree_spans(chart, b) for b in range(len(ids))]))
    (expected_loss, expected_gradients, expected_trees), (loss, gradients, trees) = results
    assert trees == expected_trees
    torch.testing.assert_close(loss, expected_loss, rtol=1e-5, atol=0)
    largest = max(float(g.abs().max()) for g in expected_gradients.values() if g is not None)
    for name, expected in expected_gradients.items():
        if expected is None:
            assert gradients[name] is None, name
        else:
            torch.testing.assert_close(gradients[name], expected, rtol=1e-4, atol=1e-5 * largest, msg=name)


class _Multiply(torch.nn.Module):
    """A dropout stand-in that multiplies by the given masks, one per call, in order."""

    def __init__(self, p, masks):
        super().__init__()
        self.p = p
        self.masks = iter(masks)

    def forward(self, hidden):
        return hidden * next(self.masks)


def test_the_dropout_masks_sit_where_the_reference_layer_drops(monkeypatch):
    """Given the same masks, the layer equals the reference layer whose two nn.Dropout modules multiply by them:
    attention output, feed-forward inner activations, feed-forward output (attention dropout 0 in both)."""
    from hf_structure.models.r2d2.modeling_r2d2 import ROLE_LEFT, ROLE_RIGHT, ROLE_TASK, R2D2CompositionLayer

    layer = perturbed_r2d2(hidden_dropout=0.1).composition_layers[0]
    assert isinstance(layer, R2D2CompositionLayer)  # (a ModuleList's items are typed as any Module)
    count, length = 50, 4
    generator = torch.Generator().manual_seed(3)
    hidden = torch.randn(count, length, 16, generator=generator)
    masks = [(torch.rand(count, length, size, generator=generator) > 0.3).float() / 0.7 for size in (16, 64, 16)]
    monkeypatch.setattr(layer, "dropout_multipliers", lambda *args: [None, *masks])
    actual = layer(hidden, 2)
    monkeypatch.setattr(layer, "dropout", _Multiply(0.1, [masks[0], masks[2]]))
    layer.feed_forward[2] = _Multiply(0.1, [masks[1]])
    roles = torch.tensor([ROLE_TASK, ROLE_TASK, ROLE_LEFT, ROLE_RIGHT])
    visible = torch.eye(length, dtype=torch.bool)
    visible[:, -2:] = True
    expected = reference_composition_layer(layer, hidden, roles, visible)
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)


def test_composition_dropout_keeps_at_the_rate_and_the_torch_seed_reproduces_it():
    """Each site keeps 1 - p of its entries (within 4 sigma), scaled by 1 / (1 - p), with attention and hidden
    dropout of different rates; `torch.manual_seed`, or torch's RNG state restored as on resuming from a checkpoint,
    gives the same masks and output; the next draw differs; evaluation drops nothing."""
    from hf_structure.models.r2d2.modeling_r2d2 import R2D2CompositionLayer

    model = perturbed_r2d2(hidden_dropout=0.1, attention_dropout=0.25)
    layer = model.composition_layers[0]
    assert isinstance(layer, R2D2CompositionLayer)
    torch.manual_seed(5)
    masks = layer.dropout_multipliers(2000, 4, torch.float32, torch.device("cpu"))
    shapes = [(2000, 4, 3, 4), (2000, 4, 16), (2000, 4, 64), (2000, 4, 16)]
    assert len(masks) == len(shapes)
    for mask, p, shape in zip(masks, [0.25, 0.1, 0.1, 0.1], shapes):
        assert mask is not None and tuple(mask.shape) == shape, p  # a mask at every site: no p is 0
        values = set(mask.unique().tolist())
        assert values == {0.0, torch.tensor(1 / (1 - p)).item()}, (p, values)
        kept = float((mask != 0).float().mean())
        assert abs(kept - (1 - p)) <= 4 * (p * (1 - p) / mask.numel()) ** 0.5, (p, kept)

    tasks = torch.randn(1, 2, 16).expand(64, -1, -1)
    left, right = torch.randn(64, 16), torch.randn(64, 16)
    torch.manual_seed(7)
    first = model.composition_transformer(tasks, left, right)
    state = torch.get_rng_state()  # as a checkpoint saves it
    second = model.composition_transformer(tasks, left, right)
    torch.set_rng_state(state)  # as resuming restores it
    resumed = model.composition_transformer(tasks, left, right)
    torch.manual_seed(7)
    again = model.composition_transformer(tasks, left, right)
    assert torch.equal(first, again) and torch.equal(second, resumed)
    assert not torch.equal(first, second)
    model.eval()
    torch.testing.assert_close(
        model.composition_transformer(tasks, left, right),
        reference_composition_transformer(model, tasks, left, right),
        rtol=1e-5,
        atol=1e-5,
    )
