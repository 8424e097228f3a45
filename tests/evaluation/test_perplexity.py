"""Masked-LM perplexity under the StructFormer authors' protocol: their batches, per-batch calibration, their masks."""

import math
import statistics

import pytest
import torch

from hf_structure.data.tokenization import build_word_tokenizer
from hf_structure.evaluation import perplexity
from hf_structure.models.structformer import StructFormerConfig, StructFormerForMaskedLM

WORDS = "the old man sat on the bench while a dog ran and tired".split()


def test_length_sorted_batches_hold_at_least_the_token_budget_except_the_last():
    sequences = [[1] * length for length in (5, 1, 4, 2, 6, 3, 2)]
    batches = perplexity.length_sorted_token_batches(sequences, min_tokens=6)
    assert [[len(s) for s in batch] for batch in batches] == [[1, 2, 2, 3], [4, 5], [6]]
    assert perplexity.length_sorted_token_batches(sequences, min_tokens=100) == [sorted(sequences, key=len)]


@pytest.fixture(scope="module")
def tiny_model_and_text(tmp_path_factory):
    generator = torch.Generator().manual_seed(0)
    lines = []
    for _ in range(60):
        length = int(torch.randint(2, 15, (1,), generator=generator))
        picks = torch.randint(0, len(WORDS) + 1, (length,), generator=generator).tolist()
        lines.append(" ".join(WORDS[k] if k < len(WORDS) else "zebra" for k in picks))  # zebra: <unk>
    text = tmp_path_factory.mktemp("text") / "text.txt"
    text.write_text("\n".join(lines) + "\n")
    tokenizer = build_word_tokenizer([" ".join(WORDS)])
    torch.manual_seed(0)
    config = StructFormerConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        pad_token_id=tokenizer.pad_token_id,
        mask_token_id=tokenizer.mask_token_id,
    )
    return StructFormerForMaskedLM(config).eval(), tokenizer, str(text)


def test_paper_protocol_batches_masks_and_calibration(tiny_model_and_text, monkeypatch):
    model, tokenizer, text = tiny_model_and_text
    calls = []
    forward = model.forward

    def recording_forward(**kwargs):
        output = forward(**kwargs)
        calls.append({**kwargs, "loss": float(output.loss)})
        return output

    monkeypatch.setattr(model, "forward", recording_forward)
    value = perplexity.paper_masked_lm_perplexity(model, tokenizer, text, seed=3, batch_tokens=50)

    assert all(call["calibration_scope"] == "batch" for call in calls)
    lengths = [call["attention_mask"].sum(dim=1).tolist() for call in calls]
    assert all(sum(batch) >= 50 for batch in lengths[:-1]) and len(calls) > 3
    flat = [length for batch in lengths for length in batch]
    assert flat == sorted(flat) and len(flat) == 60
    labels = torch.cat([call["labels"][call["labels"].ne(-100)] for call in calls])
    assert not torch.isin(labels, torch.tensor([tokenizer.unk_token_id, *tokenizer.all_special_ids])).any()
    masked = [call["input_ids"].eq(tokenizer.mask_token_id) for call in calls]
    assert all(torch.equal(m, call["labels"].ne(-100)) for m, call in zip(masked, calls))  # every masked word scored
    scorable = sum(int(call["attention_mask"].sum()) for call in calls) - open(text).read().split().count("zebra")
    assert 0.2 < len(labels) / scorable < 0.4
    counts = [int(call["labels"].ne(-100).sum()) for call in calls]
    mean_loss = sum(call["loss"] * count for call, count in zip(calls, counts)) / sum(counts)
    assert value == pytest.approx(math.exp(mean_loss))


def test_paper_protocol_is_seeded_and_summarised_over_mask_seeds(tiny_model_and_text):
    model, tokenizer, text = tiny_model_and_text
    per_seed = [perplexity.paper_masked_lm_perplexity(model, tokenizer, text, seed=seed) for seed in (4, 5, 6)]
    assert perplexity.paper_masked_lm_perplexity(model, tokenizer, text, seed=4) == per_seed[0]
    assert len(set(per_seed)) == 3
    scores = perplexity.language_model_perplexity(model, tokenizer, text, seed=4, paper_seeds=3)
    assert scores == {
        "mlm_ppl": round(perplexity.masked_lm_perplexity(model, tokenizer, text, seed=4), 2),
        "mlm_ppl_paper": round(statistics.fmean(per_seed), 2),
        "mlm_ppl_paper_sd": round(statistics.stdev(per_seed), 2),
        "mlm_ppl_paper_seeds": 3,
    }
    assert perplexity.language_model_perplexity(model, tokenizer, text, paper_seeds=0).keys() == {"mlm_ppl"}


def test_a_text_with_no_word_to_score_is_refused_by_name(tiny_model_and_text, tmp_path):
    model, tokenizer, _ = tiny_model_and_text
    text = tmp_path / "unknown.txt"
    text.write_text("zebra zebra\nyak\n")
    for measure in (perplexity.masked_lm_perplexity, perplexity.paper_masked_lm_perplexity):
        with pytest.raises(ValueError, match=f"{text}: no word to score"):
            measure(model, tokenizer, str(text))


class HandedOver(Exception):
    """Raised by the model stand-in once it has seen what a perplexity hands it."""


class ModelElsewhere(torch.nn.Module):
    """The tiny model as if its parameters were on another device than the CPU, where the batches start (issue #59:
    `hf-structure evaluate --device cuda --lm-text ...` failed with "index is on cpu"): `device` is `meta`, and the
    first call records the devices of the tensors it is given, then stops the measurement."""

    def __init__(self, model):
        super().__init__()
        self.model, self.config, self.devices = model, model.config, set()

    @property
    def device(self) -> torch.device:
        return torch.device("meta")

    def forward(self, *args, **kwargs):
        self.devices |= {value.device for value in [*args, *kwargs.values()] if torch.is_tensor(value)}
        raise HandedOver

    pseudo_log_likelihood = forward


@pytest.mark.parametrize(
    "measure",
    [perplexity.masked_lm_perplexity, perplexity.paper_masked_lm_perplexity, perplexity.pseudo_perplexity],
    ids=["masked-lm", "paper", "pseudo"],
)
def test_every_perplexity_hands_the_model_its_batches_on_the_models_device(tiny_model_and_text, measure):
    model, tokenizer, text = tiny_model_and_text
    elsewhere = ModelElsewhere(model)
    with pytest.raises(HandedOver):
        measure(elsewhere, tokenizer, text)
    assert elsewhere.devices == {torch.device("meta")}
