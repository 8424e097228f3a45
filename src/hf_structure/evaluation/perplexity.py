"""Language-model perplexities: masked-LM perplexity (with a seeded mask, so that the figure is reproducible) and
pseudo-perplexity; which one a model reports is its `ModelSpec.language_model_perplexity`."""

import math

import torch
from transformers import DataCollatorForLanguageModeling

from ..data.text import PTB_SPLITS, ptb_lm_lines, text_file_lines


def lm_text_lines(source: str) -> list[str]:
    """`ptb-test` / `ptb-valid` / `ptb-train` name a PTB LM split; anything else is a text file."""
    if source.startswith("ptb-") and source[4:] in PTB_SPLITS:
        return ptb_lm_lines(source[4:])
    return text_file_lines(source)


@torch.no_grad()
def masked_lm_perplexity(
    model, tokenizer, source: str, mlm_probability: float = 0.3, batch_size: int = 64, seed: int = 0
) -> float:
    """exp of the mean cross-entropy over masked words, one sentence per example: `mlm_probability` of the words
    (never `<unk>`) are all replaced by `<mask>`, as in the StructFormer paper's evaluation. BERT's 80/10/10 scheme
    would leave a tenth of the predicted words visible and give a much lower, incomparable figure."""
    lines = sorted(lm_text_lines(source), key=lambda line: len(line.split()))
    collator = DataCollatorForLanguageModeling(
        tokenizer, mlm_probability=mlm_probability, seed=seed, mask_replace_prob=1.0, random_replace_prob=0.0
    )
    limit = model.config.max_position_embeddings
    total_loss, total_words = 0.0, 0
    model.eval()
    for first in range(0, len(lines), batch_size):
        encoded = tokenizer(lines[first : first + batch_size], truncation=True, max_length=limit)
        batch = collator([{"input_ids": ids} for ids in encoded["input_ids"] if ids])
        count = int(batch["labels"].ne(-100).sum())
        if count:
            total_loss += float(model(**batch).loss) * count
            total_words += count
    return math.exp(total_loss / total_words)


@torch.no_grad()
def pseudo_perplexity(model, tokenizer, source: str, batch_size: int = 16) -> float:
    """exp of the mean negative log-likelihood of every word (never `<unk>`) given its left and right contexts, each
    encoded as a separate sentence (`model.pseudo_log_likelihood`): the pseudo-perplexity of the R2D2 paper."""
    lines = sorted(lm_text_lines(source), key=lambda line: len(line.split()))
    model.eval()
    total, count = 0.0, 0
    for first in range(0, len(lines), batch_size):
        batch = [line for line in lines[first : first + batch_size] if line.split()]
        if not batch:
            continue
        encoded = tokenizer(batch, padding=True, return_tensors="pt", return_token_type_ids=False)
        input_ids = encoded["input_ids"].to(model.device)
        mask = encoded["attention_mask"].to(model.device)
        log_p = model.pseudo_log_likelihood(input_ids, mask)
        scored = mask.bool() & input_ids.ne(tokenizer.unk_token_id)
        total -= float(log_p[scored].sum())
        count += int(scored.sum())
    return math.exp(total / count)


# By `ModelSpec.language_model_perplexity`: the key the score is reported under, and how it is measured (a function
# of the model, its tokenizer, the text and the masking seed; pseudo-perplexity masks nothing, so takes no seed).
LANGUAGE_MODEL_PERPLEXITIES = {
    "masked": ("mlm_ppl", masked_lm_perplexity),
    "pseudo": ("pppl", lambda model, tokenizer, source, seed: pseudo_perplexity(model, tokenizer, source)),
}


def language_model_perplexity(model, tokenizer, source: str, seed: int = 0) -> tuple[str, float]:
    """The perplexity the model's spec names, on the text `source` (`lm_text_lines`), as (key, value rounded to 2
    decimals); a ValueError for a model that is not a language model."""
    from ..registry import model_spec

    kind = model_spec(model.config.model_type).language_model_perplexity
    if kind is None:
        raise ValueError(f"model type {model.config.model_type!r} is not a language model (no perplexity)")
    key, perplexity = LANGUAGE_MODEL_PERPLEXITIES[kind]
    return key, round(perplexity(model, tokenizer, source, seed=seed), 2)
