"""StructFormer: the memory-lean p_D against the plain L^3 reference, calibration, outputs, save/load, parse."""

import math

import pytest
import torch

import hf_structure
from hf_structure.data.tokenization import build_word_tokenizer
from hf_structure.models.structformer import StructFormerConfig, StructFormerForMaskedLM, StructFormerModel
from hf_structure.models.structformer import modeling_structformer as modeling
from hf_structure.structs import trees as structures
from tests.helpers.reference_structformer import naive_dependency_distribution

SENTENCES = ["the old man sat on the bench", "a dog ran", "stocks fell sharply after the report was released"]


def tiny_config(**overrides):
    values = dict(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
    values.update(overrides)
    return StructFormerConfig(**values)


def random_batch(batch=4, length=11, seed=0):
    generator = torch.Generator().manual_seed(seed)
    distances = torch.randn(batch, length, generator=generator, dtype=torch.float64) * 2
    heights = torch.randn(batch, length, generator=generator, dtype=torch.float64) * 2
    lengths = torch.tensor([length, length - 3, 2, 1][:batch])
    mask = torch.arange(length)[None, :] < lengths[:, None]
    return distances.requires_grad_(), heights.requires_grad_(), mask


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dependency_distribution_matches_the_cubic_reference_with_gradients(seed):
    distances, heights, mask = random_batch(seed=seed)
    split_scale = torch.tensor(1.3, dtype=torch.float64, requires_grad=True)
    head_scale = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    ours = modeling.dependency_distribution(distances, heights, mask, split_scale, head_scale)
    reference = naive_dependency_distribution(distances, heights, mask, split_scale, head_scale)
    assert (ours - reference).abs().max() <= 1e-5
    weights = torch.randn(ours.shape, generator=torch.Generator().manual_seed(seed), dtype=ours.dtype)
    inputs = [distances, heights, split_scale, head_scale]
    ours_grads = torch.autograd.grad((ours * weights).sum(), inputs)
    reference_grads = torch.autograd.grad((reference * weights).sum(), inputs)
    for mine, theirs in zip(ours_grads, reference_grads):
        assert (mine - theirs).abs().max() <= 1e-5


def test_dependency_distribution_float32_is_close_and_finite_for_large_height_ranges():
    distances, heights, mask = random_batch(seed=3)
    heights = (heights * 20).detach()  # head logits spanning ~+-100: a naive exp would overflow in float32
    scales = torch.tensor(1.0), torch.tensor(1.0)
    ours = modeling.dependency_distribution(distances.float(), heights.float(), mask, *scales)
    reference = naive_dependency_distribution(distances.detach(), heights, mask, *(s.double() for s in scales))
    assert torch.isfinite(ours).all()
    assert (ours.double() - reference).abs().max() <= 1e-5


def test_dependency_distribution_in_float32_matches_float64_with_gradients_and_ignores_autocast():
    distances, heights, mask = random_batch(seed=4)  # head logits within a few units, as in trained models
    distances, heights = distances.detach().float().requires_grad_(), heights.detach().float().requires_grad_()
    scales = torch.tensor(1.3), torch.tensor(0.7)
    weights = torch.randn(4, 11, 11, generator=torch.Generator().manual_seed(4))
    results = {}
    for precision in ("auto", "float64"):
        parent = modeling.dependency_distribution(distances, heights, mask, *scales, precision=precision)
        results[precision] = (parent, *torch.autograd.grad((parent * weights).sum(), [distances, heights]))
    for auto, wide in zip(results["auto"], results["float64"]):
        assert (auto - wide).abs().max() <= 1e-6
    with torch.autocast("cpu", dtype=torch.bfloat16):
        under_autocast = modeling.dependency_distribution(distances, heights, mask, *scales)
    assert (under_autocast - results["auto"][0]).abs().max() <= 1e-7
    with pytest.raises(ValueError, match="precision"):
        modeling.dependency_distribution(distances, heights, mask, *scales, precision="half")


def test_dependency_distribution_is_a_sub_probability_zero_on_diagonal_and_pads():
    distances, heights, mask = random_batch()
    parent = modeling.dependency_distribution(distances, heights, mask, torch.tensor(1.0), torch.tensor(1.0))
    assert torch.all(parent >= -1e-12)
    assert torch.all(parent.sum(-1) <= 1 + 1e-9)
    assert torch.all(parent.diagonal(dim1=1, dim2=2) == 0)
    assert torch.all(parent[~mask] == 0) and torch.all(parent.transpose(1, 2)[~mask] == 0)


def test_sharp_scores_recover_the_algorithm_3_tree():
    # With very sharp temperatures, p_D concentrates on the dependency tree of Algorithm 3 when each word's
    # constituent is decided by heights vs distances, e.g. a head-final phrase then a verb.
    distances = torch.tensor([[1.0, 3.0, 2.0, 0.0]])
    heights = torch.tensor([[0.0, 2.5, 4.0, 1.0]])
    mask = torch.ones(1, 4, dtype=torch.bool)
    parent = modeling.dependency_distribution(distances, heights, mask, torch.tensor(50.0), torch.tensor(50.0))
    predicted = (parent[0].argmax(-1) + 1).tolist()
    predicted[int(heights[0].argmax())] = 0
    _, expected = structures.distances_heights_to_tree(distances[0, :3].tolist(), heights[0].tolist())
    assert predicted == expected


@pytest.mark.parametrize("p", [0.1, 0.5, 0.25, 3e-6])
def test_random_keep_mask_drops_with_probability_p(p):
    torch.manual_seed(0)
    count = 4_000_001  # odd: the last 64-bit number is half used
    keep = modeling.random_keep_mask(torch.Size([count]), p, torch.bfloat16, torch.device("cpu"))
    assert keep.dtype == torch.bfloat16 and keep.shape == (count,)
    assert set(keep.unique().tolist()) <= {0.0, 1.0}
    # Within 5 standard errors, over all entries and over the even and odd ones (the two halves of the numbers).
    for part in (keep, keep[0::2], keep[1::2]):
        dropped = (part == 0).double().mean().item()
        assert abs(dropped - p) <= 5 * math.sqrt(p * (1 - p) / len(part))


def test_random_keep_mask_is_reproducible_from_torch_seed():
    shape = torch.Size([3, 1000, 7])
    torch.manual_seed(5)
    first = modeling.random_keep_mask(shape, 0.3, torch.float32, torch.device("cpu"))
    torch.manual_seed(5)
    again = modeling.random_keep_mask(shape, 0.3, torch.float32, torch.device("cpu"))
    assert torch.equal(first, again)
    torch.manual_seed(6)
    assert not torch.equal(first, modeling.random_keep_mask(shape, 0.3, torch.float32, torch.device("cpu")))


def test_fast_dropout_keeps_the_expectation_and_is_the_identity_in_evaluation():
    dropout = modeling.StructFormerDropout(0.2, fast=True).train()
    hidden = torch.full((1000, 500), 3.0)
    out = dropout(hidden)
    kept = out != 0
    assert torch.allclose(out[kept], torch.tensor(3.0 / 0.8))
    assert abs(kept.double().mean().item() - 0.8) <= 0.005
    assert torch.equal(dropout.eval()(hidden), hidden)
    hidden.requires_grad_()
    dropout.train()
    torch.manual_seed(1)
    out = dropout(hidden)
    (grad,) = torch.autograd.grad(out.sum(), hidden)
    assert torch.equal(grad != 0, out != 0) and torch.allclose(grad[grad != 0], torch.tensor(1 / 0.8))


def test_fast_dropout_is_configurable_and_changes_nothing_in_evaluation():
    torch.manual_seed(0)
    fast = StructFormerForMaskedLM(tiny_config()).eval()
    slow = StructFormerForMaskedLM(tiny_config(fast_dropout=False)).eval()
    slow.load_state_dict(fast.state_dict())
    assert isinstance(slow.structformer.embed_dropout, modeling.StructFormerDropout)
    assert not slow.structformer.embed_dropout.fast and fast.structformer.embed_dropout.fast
    input_ids = torch.randint(2, 50, (2, 7))
    assert torch.equal(fast(input_ids).logits, slow(input_ids).logits)


def test_calibration_lowers_distances_by_the_largest_isolation_margin_per_sentence():
    distances = torch.tensor([[5.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    heights = torch.tensor([[0.0, 0.5, 0.2], [1.0, 1.0, 0.0]])
    mask = torch.tensor([[True, True, True], [True, True, False]])
    calibrated = modeling.calibrate_distances(distances, heights, mask)
    # Sentence 0: word 0 alone (height 0) sits between the sentence start and d0 = 5: isolated by 5, the largest
    # margin (span [1, 2] is isolated by 4.5, word 2 by 0.8, words 0-1 by 0.5; the whole sentence does not count).
    assert calibrated[0].tolist() == pytest.approx([0.0, -4.0, -5.0])
    # Sentence 1 (two words): only single words can be isolated; word 1's margin is relu(d0 - 1) = 0.
    assert calibrated[1].tolist() == pytest.approx([0.0, 0.0, 0.0])


def test_batch_calibration_subtracts_the_largest_margin_of_the_batch_from_every_sentence():
    distances = torch.tensor([[5.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    heights = torch.tensor([[0.0, 0.5, 0.2], [1.0, 1.0, 0.0]])
    mask = torch.tensor([[True, True, True], [True, True, False]])
    calibrated = modeling.calibrate_distances(distances, heights, mask, per_batch=True)
    assert calibrated.flatten().tolist() == pytest.approx([0.0, -4.0, -5.0, -5.0, -5.0, -5.0])


def test_batch_calibration_applies_in_training_only():
    torch.manual_seed(0)
    config = StructFormerConfig(
        vocab_size=30,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        hidden_dropout_prob=0.0,
        calibration_scope="batch",
    )
    model = StructFormerModel(config)
    with torch.no_grad():  # distances well above heights, so that spans are isolated by sentence-specific margins
        model.parser.distance_out.bias.fill_(3.0)
        model.parser.distance_out.weight.mul_(10.0)
    input_ids = torch.randint(2, 30, (3, 7))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 4:] = 0
    model.eval()
    alone = model.parse_scores(input_ids[1:2, :4], attention_mask[1:2, :4])[2]
    evaluated = model.parse_scores(input_ids, attention_mask)[2]
    torch.testing.assert_close(evaluated[1:2, :4, :4], alone)  # a sentence's p_D does not depend on its batch
    model.train()
    trained = model.parse_scores(input_ids, attention_mask)[2]
    # Sentence 1 has the batch's largest margin, so only the other sentences are lowered further in training.
    torch.testing.assert_close(trained[1], evaluated[1])
    assert not torch.allclose(trained[0], evaluated[0]) and not torch.allclose(trained[2], evaluated[2])
    # The authors' perplexity protocol asks for batch calibration at evaluation: the training figure, in eval mode.
    model.eval()
    asked = model.parse_scores(input_ids, attention_mask, calibration_scope="batch")[2]
    torch.testing.assert_close(asked, trained)
    with pytest.raises(ValueError, match="calibration_scope"):
        model.parse_scores(input_ids, attention_mask, calibration_scope="corpus")


def test_forward_passes_the_calibration_scope_to_the_parser():
    torch.manual_seed(0)
    config = StructFormerConfig(
        vocab_size=30,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        hidden_dropout_prob=0.0,
    )
    model = StructFormerForMaskedLM(config).eval()
    with torch.no_grad():
        model.structformer.parser.distance_out.bias.fill_(3.0)
        model.structformer.parser.distance_out.weight.mul_(10.0)
    input_ids = torch.randint(2, 30, (3, 7))
    default = model(input_ids).distances
    by_batch = model(input_ids, calibration_scope="batch").distances
    # Every sentence is lowered by the batch's largest margin, at least its own.
    assert (by_batch <= default + 1e-6).all() and not torch.allclose(by_batch, default)


def test_model_copy_of_algorithm_1_matches_the_library():
    generator = torch.Generator().manual_seed(0)
    for length in range(0, 12):
        distances = torch.randint(0, 4, (length,), generator=generator).float().tolist()  # many ties
        assert modeling.distances_to_spans(distances) == structures.distances_to_spans(distances)


def test_forward_outputs_shapes_and_with_sparse_prediction_masked_positions_only():
    torch.manual_seed(0)
    model = StructFormerForMaskedLM(tiny_config()).eval()
    input_ids = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])
    labels = torch.full_like(input_ids, -100)
    labels[0, 1], labels[1, 0] = 6, 9
    out = model(input_ids, labels=labels, output_attentions=True, output_hidden_states=True)
    assert out.logits.shape == (2, 4, 50)
    assert out.loss.ndim == 0 and math.isfinite(out.loss.item())
    model.sparse_prediction = True
    sparse = model(input_ids, labels=labels)
    assert sparse.logits.shape == (2, 50)  # two predicted positions only
    assert torch.allclose(sparse.logits, out.logits[labels.ne(-100)], atol=1e-5)
    assert torch.allclose(sparse.loss, out.loss, atol=1e-6)
    assert model(input_ids).logits.shape == (2, 4, 50)  # without labels, every position
    assert out.distances.shape == (2, 4) and torch.isinf(out.distances[0, 3]) and torch.isinf(out.distances[1, 1])
    assert torch.isinf(out.heights[1, 2:]).all() and out.heights[1, 2] < 0
    assert out.parent_distribution.shape == (2, 4, 4)
    assert len(out.attentions) == 2 and out.attentions[0].shape == (2, 4, 4, 4)
    assert len(out.hidden_states) == 3
    # Pads get no attention: their p_D rows and columns are zero.
    assert torch.all(out.attentions[0][1, :, :, 2:] == 0)


def test_a_training_step_off_the_cpu_never_waits_on_the_host():
    """On the meta device a tensor has a shape and no values, so reading one (`bool`, `.item()`, boolean indexing)
    fails: the forward and backward passes of training (dense prediction, as SparsePrediction leaves it off the
    CPU) run there only if a GPU would never wait for the host between launches."""
    torch.manual_seed(0)
    model = StructFormerForMaskedLM(tiny_config(calibration_scope="batch")).train().to("meta")
    input_ids = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]], device="meta")
    labels = torch.full((2, 4), -100, device="meta")
    loss = model(input_ids, attention_mask=input_ids.ne(0), labels=labels).loss
    loss.backward()
    assert loss.device.type == "meta" and model.lm_head.weight.grad is not None


def test_blockwise_cross_entropy_equals_the_whole_tensor_computation():
    # 150 rows: two full blocks of 64 and a partial one.
    generator = torch.Generator().manual_seed(0)
    logits = (torch.randn(150, 37, generator=generator) * 4).to(torch.bfloat16).requires_grad_()
    labels = torch.randint(0, 37, (150,), generator=generator)
    loss = modeling.BlockwiseCrossEntropy.apply(logits, labels)
    (grad,) = torch.autograd.grad(loss, logits)
    reference_logits = logits.detach().clone().requires_grad_()
    reference = torch.nn.functional.cross_entropy(reference_logits.float(), labels)
    (reference_grad,) = torch.autograd.grad(reference, reference_logits)
    assert loss.dtype == torch.float32 and grad.dtype == torch.bfloat16
    assert loss.item() == pytest.approx(reference.item(), rel=1e-6)
    # The float32 gradients agree to rounding; cast to bf16 they differ by at most one unit in the last place.
    assert torch.allclose(grad.float(), reference_grad.float(), rtol=2**-7, atol=1e-9)
    # A loss scaled for gradient accumulation scales the gradient (one more bf16 rounding).
    (quarter_grad,) = torch.autograd.grad(modeling.BlockwiseCrossEntropy.apply(logits, labels) / 4, logits)
    assert torch.allclose(quarter_grad.float(), reference_grad.float() / 4, rtol=2**-6, atol=1e-9)
    # Without gradients (evaluation) the loss is the same.
    with torch.no_grad():
        assert modeling.masked_lm_cross_entropy(logits, labels).item() == loss.item()
    # Exact in float64 (the blocks compute in the logits' dtype there), and its own gradient is right.
    wide = torch.randn(150, 7, dtype=torch.float64, generator=generator, requires_grad=True)
    # fast_mode: checked along random directions, not element by element (1,050 of them took 35 s).
    assert torch.autograd.gradcheck(
        lambda x: modeling.BlockwiseCrossEntropy.apply(x, labels % 7), (wide,), fast_mode=True
    )


def test_masked_lm_loss_under_bf16_autocast_is_the_float32_cross_entropy_of_its_logits():
    torch.manual_seed(0)
    model = StructFormerForMaskedLM(tiny_config()).train()
    input_ids = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])
    labels = torch.full_like(input_ids, -100)
    labels[0, 1], labels[0, 3], labels[1, 0] = 6, 8, 9
    torch.manual_seed(1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(input_ids, labels=labels)
    assert out.logits.dtype == torch.bfloat16
    predicted = labels.ne(-100)
    expected = torch.nn.functional.cross_entropy(out.logits[predicted].float(), labels[predicted])
    assert out.loss.item() == pytest.approx(expected.item(), rel=1e-6)
    out.loss.backward()
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in model.parameters())


def test_padding_does_not_change_a_sentence():
    torch.manual_seed(0)
    model = StructFormerModel(tiny_config()).eval()
    alone = model(torch.tensor([[9, 10, 11]]))
    padded = model(torch.tensor([[9, 10, 11, 0, 0], [5, 6, 7, 8, 9]]))
    assert torch.allclose(alone.last_hidden_state[0], padded.last_hidden_state[0, :3], atol=1e-5)
    assert torch.allclose(alone.parent_distribution[0], padded.parent_distribution[0, :3, :3], atol=1e-6)


def test_output_embedding_is_tied_and_survives_save_and_load(tmp_path):
    torch.manual_seed(0)
    model = StructFormerForMaskedLM(tiny_config())
    assert model.lm_head.weight.data_ptr() == model.structformer.embed_tokens.weight.data_ptr()
    model.save_pretrained(tmp_path)
    reloaded = StructFormerForMaskedLM.from_pretrained(tmp_path)
    assert reloaded.lm_head.weight.data_ptr() == reloaded.structformer.embed_tokens.weight.data_ptr()
    input_ids = torch.tensor([[5, 6, 7]])
    assert torch.allclose(model.eval()(input_ids).logits, reloaded.eval()(input_ids).logits)


def test_auto_classes_and_saved_code(tmp_path):
    from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM

    torch.manual_seed(0)
    StructFormerForMaskedLM(tiny_config()).save_pretrained(tmp_path)
    assert isinstance(AutoConfig.from_pretrained(tmp_path), StructFormerConfig)
    assert isinstance(AutoModelForMaskedLM.from_pretrained(tmp_path), StructFormerForMaskedLM)
    encoder = AutoModel.from_pretrained(tmp_path)
    assert isinstance(encoder, StructFormerModel)
    assert (tmp_path / "modeling_structformer.py").is_file() and (tmp_path / "configuration_structformer.py").is_file()
    assert "auto_map" in (tmp_path / "config.json").read_text()


def test_parse_returns_trees_over_every_word():
    torch.manual_seed(0)
    tokenizer = build_word_tokenizer(SENTENCES)
    config = tiny_config(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id)
    model = StructFormerForMaskedLM(config).eval()
    words = [sentence.split() for sentence in SENTENCES]
    argmax = model.parse(words, tokenizer, head_decoding="argmax")
    for method in ("eisner", "chu-liu-edmonds"):
        for sentence, parse, per_word in zip(words, model.parse(words, tokenizer, head_decoding=method), argmax):
            n = len(sentence)
            scores = parse["scores"]
            assert parse["words"] == sentence
            assert len(scores["heights"]) == n and len(scores["distances"]) == n - 1
            structures.check_heads(parse["heads"])  # a tree, whatever p_D says
            if method == "eisner":
                assert structures.is_projective(parse["heads"])
            # The root is the highest word in every decoding, as in Eq. 18.
            root = max(range(n), key=lambda k: scores["heights"][k])
            assert parse["heads"].index(0) == per_word["heads"].index(0) == root
            assert parse["spans"][0] == (0, n) and len(parse["spans"]) == n - 1  # binary: n-1 internal nodes
            assert parse["spans"] == [s for s in structures.distances_to_spans(scores["distances"]) if s[1] - s[0] > 1]
    # Eq. 18 is a per-word argmax over p_D (the heads need not form a tree).
    ids = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    _, _, parent = model.structformer.parse_scores(ids["input_ids"], ids["attention_mask"])
    for b, (sentence, per_word) in enumerate(zip(words, argmax)):
        n, root = len(sentence), per_word["heads"].index(0)
        assert all(per_word["heads"][i] == int(parent[b, i, :n].argmax()) + 1 for i in range(n) if i != root)


def test_parse_structures_gives_what_is_asked_and_rejects_unknown_names():
    torch.manual_seed(0)
    model = StructFormerModel(tiny_config()).eval()
    tokenizer = build_word_tokenizer(["the old man sat on the bench"])
    sentences = [["the", "old", "man", "sat"], ["on", "the", "bench"]]
    full = model.parse(sentences, tokenizer)
    trees = model.parse(sentences, tokenizer, structures="constituency")
    heads = model.parse(sentences, tokenizer, structures=("dependency",))
    assert [t["spans"] for t in trees] == [f["spans"] for f in full] and all("heads" not in t for t in trees)
    assert [h["heads"] for h in heads] == [f["heads"] for f in full] and all("spans" not in h for h in heads)
    for bad in (("trees",), ()):
        with pytest.raises(ValueError, match="structures must be one or more of"):
            model.parse(sentences, tokenizer, structures=bad)


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="multiple of num_attention_heads"):
        StructFormerConfig(hidden_size=30, num_attention_heads=4)
    with pytest.raises(ValueError, match="relations"):
        StructFormerConfig(relations=("sibling",))


def test_too_long_input_names_the_limit():
    model = StructFormerModel(tiny_config(max_position_embeddings=8))
    with pytest.raises(ValueError, match="max_position_embeddings=8"):
        model(torch.ones(1, 9, dtype=torch.long))


def test_package_registers_auto_classes():
    from transformers import AutoConfig

    assert hf_structure.StructFormerConfig is AutoConfig.for_model("structformer").__class__
