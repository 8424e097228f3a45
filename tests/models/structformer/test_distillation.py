"""StructFormer distilled from a teacher's trees (issue #56): the teacher's loss is the cross-entropy of the parser's
distances against the teacher's splits, it moves the parser's own trees to the teacher's, and it is a training term
only."""

import random

import torch

from hf_structure.data.tokenization import build_word_tokenizer, encode_words
from hf_structure.models.structformer import StructFormerConfig, StructFormerForMaskedLM
from hf_structure.structs.merge_orders import merge_order_from_split_scores, merge_order_targets, split_cross_entropy
from hf_structure.structs.trees import distances_to_spans, spans_to_distances

SENTENCES = [
    "the old man sat on the bench",
    "a dog ran",
    "stocks fell sharply after the report was released",
    "the man and the dog sat",
]


def random_tree(start: int, end: int, draw: random.Random) -> list[tuple[int, int]]:
    if end - start < 2:
        return []
    split = draw.randrange(start + 1, end)
    return [(start, end), *random_tree(start, split, draw), *random_tree(split, end, draw)]


def teacher_batch(trees, sentences):
    """The sentences' ids and mask, and their teacher trees as padded merge orders (as the training collator)."""
    words = [sentence.split() for sentence in sentences]
    encoded = encode_words(words, build_word_tokenizer(SENTENCES), 64)
    lengths = encoded["attention_mask"].sum(-1)
    distances = torch.zeros(len(words), encoded["input_ids"].size(1) - 1)
    for row, (spans, sentence) in enumerate(zip(trees, words)):
        distances[row, : len(sentence) - 1] = torch.tensor(spans_to_distances(spans, len(sentence)), dtype=torch.float)
    orders = merge_order_from_split_scores(distances, lengths)
    orders = torch.where(torch.arange(orders.size(1))[None, :] < (lengths[:, None] - 1), orders, -1)
    return encoded["input_ids"], encoded["attention_mask"], orders


def tiny_model():
    torch.manual_seed(0)
    tokenizer = build_word_tokenizer(SENTENCES)
    config = StructFormerConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        hidden_dropout_prob=0.0,
        pad_token_id=tokenizer.pad_token_id,
        mask_token_id=tokenizer.mask_token_id,
    )
    return StructFormerForMaskedLM(config), tokenizer


def test_the_teachers_loss_is_its_trees_split_cross_entropy_added_in_training_only():
    model, _ = tiny_model()
    draw = random.Random(0)
    trees = [random_tree(0, len(s.split()), draw) for s in SENTENCES]
    input_ids, mask, orders = teacher_batch(trees, SENTENCES)
    labels = input_ids.masked_fill(mask.eq(0), -100)
    model.train()
    model.teacher_weight = 0.25
    out = model(input_ids, attention_mask=mask, labels=labels, teacher_merge_order=orders)
    expected = split_cross_entropy(out.distances, *merge_order_targets(orders, mask.sum(-1)), mask.sum(-1), 1)
    assert torch.allclose(out.teacher_loss, expected)
    assert torch.allclose(out.loss, out.mlm_loss + 0.25 * out.teacher_loss)
    model.eval()
    evaluated = model(input_ids, attention_mask=mask, labels=labels, teacher_merge_order=orders)
    assert evaluated.teacher_loss is None and evaluated.mlm_loss is None  # an eval loss is the masked LM's alone


def test_descending_the_teachers_loss_turns_the_parsers_trees_into_the_teachers():
    model, tokenizer = tiny_model()
    draw = random.Random(1)
    trees = [random_tree(0, len(s.split()), draw) for s in SENTENCES]
    input_ids, mask, orders = teacher_batch(trees, SENTENCES)
    words = [s.split() for s in SENTENCES]

    def same_trees():
        model.eval()
        parses = model.parse(words, tokenizer, structures=("constituency",))
        return sum(set(map(tuple, p["spans"])) == set(tree) for p, tree in zip(parses, trees))

    assert same_trees() < len(SENTENCES)  # the random parser does not hold the random teacher's trees already
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(150):
        model.train()
        loss = model(input_ids, attention_mask=mask, teacher_merge_order=orders).teacher_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] / 4
    assert same_trees() == len(SENTENCES)
    # and the teacher's tree is what the distances decode to, split by split (Algorithm 1)
    model.eval()
    distances = model(input_ids, attention_mask=mask).distances
    for row, tree in enumerate(trees):
        n = len(words[row])
        decoded = {span for span in distances_to_spans(distances[row, : n - 1].tolist()) if span[1] - span[0] > 1}
        assert decoded == set(tree)
