"""Language-model perplexities: masked-LM perplexity (with a seeded mask, so that the figure is reproducible), under
this project's protocol and under the StructFormer authors' one, and pseudo-perplexity; which a model reports is its
`ModelSpec.language_model_perplexity`."""

import math
import statistics

import torch
from transformers import DataCollatorForLanguageModeling

from ..data.text import PTB_SPLITS, ptb_lm_lines, text_file_lines


def lm_text_lines(source: str) -> list[str]:
    """`ptb-test` / `ptb-valid` / `ptb-train` name a PTB LM split; anything else is a text file."""
    if source.startswith("ptb-") and source[4:] in PTB_SPLITS:
        return ptb_lm_lines(source[4:])
    return text_file_lines(source)


def _perplexity(total_loss: float, words: int, source: str) -> float:
    if not words:
        raise ValueError(f"{source}: no word to score (every word is empty, <unk> or unmasked)")
    return math.exp(total_loss / words)


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
            total_loss += float(model(**{key: value.to(model.device) for key, value in batch.items()}).loss) * count
            total_words += count
    return _perplexity(total_loss, total_words, source)


def length_sorted_token_batches(sequences: list[list[int]], min_tokens: int) -> list[list[list[int]]]:
    """Sequences sorted by length (stably), cut into consecutive batches of at least `min_tokens` tokens (the last
    one may hold fewer): the StructFormer authors' `batchify` for evaluation."""
    ordered = sorted(sequences, key=len)
    batches, batch, tokens = [], [], 0
    for sequence in ordered:
        batch.append(sequence)
        tokens += len(sequence)
        if tokens >= min_tokens:
            batches.append(batch)
            batch, tokens = [], 0
    if batch:
        batches.append(batch)
    return batches


@torch.no_grad()
def paper_masked_lm_perplexity(
    model, tokenizer, source: str, seed: int = 0, mlm_probability: float = 0.3, batch_tokens: int = 4096
) -> float:
    """Masked-LM perplexity as the StructFormer authors' evaluation measures it (google-research `structformer/`
    `main.py` and `utils.batchify`): sentences sorted by length in batches of at least `batch_tokens` tokens, each
    word (never `<unk>` or a special token) masked with probability `mlm_probability` by a generator seeded with
    `seed`, the calibration margin taken over the whole batch (`calibration_scope="batch"`), exp of the mean
    cross-entropy over all masked words. It differs from `masked_lm_perplexity` only in the batches, the
    calibration and the mask draws; which words can be scored is the tokenizer's (`N` is a word or `<unk>`)."""
    lines = lm_text_lines(source)
    limit = model.config.max_position_embeddings
    encoded = tokenizer(lines, truncation=True, max_length=limit, add_special_tokens=False)["input_ids"]
    unscored = torch.tensor(sorted({tokenizer.unk_token_id, *tokenizer.all_special_ids}))
    generator = torch.Generator().manual_seed(seed)
    total_loss, total_words = 0.0, 0
    model.eval()
    for batch in length_sorted_token_batches([ids for ids in encoded if ids], batch_tokens):
        padded = tokenizer.pad({"input_ids": batch}, return_tensors="pt")
        input_ids, attention_mask = padded["input_ids"], padded["attention_mask"]
        masked = torch.rand(input_ids.shape, generator=generator) < mlm_probability
        masked &= attention_mask.bool() & ~torch.isin(input_ids, unscored)
        count = int(masked.sum())
        if not count:
            continue
        outputs = model(
            input_ids=input_ids.masked_fill(masked, tokenizer.mask_token_id).to(model.device),
            attention_mask=attention_mask.to(model.device),
            labels=input_ids.masked_fill(~masked, -100).to(model.device),
            calibration_scope="batch",
        )
        total_loss += float(outputs.loss) * count
        total_words += count
    return _perplexity(total_loss, total_words, source)


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
    return _perplexity(total, count, source)


def masked_lm_perplexities(model, tokenizer, source: str, seed: int = 0, paper_seeds: int = 5) -> dict[str, float]:
    """`mlm_ppl`: this project's masked-LM perplexity (mask seed `seed`); with `paper_seeds`, `mlm_ppl_paper` and
    `mlm_ppl_paper_sd`: the mean and standard deviation of the authors' protocol (`paper_masked_lm_perplexity`) over
    mask seeds `seed`, `seed + 1`, ... (one mask draw moves the figure by a few points), and their number
    `mlm_ppl_paper_seeds`."""
    scores = {"mlm_ppl": masked_lm_perplexity(model, tokenizer, source, seed=seed)}
    if paper_seeds:
        values = [paper_masked_lm_perplexity(model, tokenizer, source, seed + k) for k in range(paper_seeds)]
        scores["mlm_ppl_paper"] = statistics.fmean(values)
        scores["mlm_ppl_paper_sd"] = statistics.stdev(values) if len(values) > 1 else 0.0
        scores["mlm_ppl_paper_seeds"] = paper_seeds
    return scores


def language_model_perplexity(model, tokenizer, source: str, seed: int = 0, paper_seeds: int = 5) -> dict[str, float]:
    """The perplexities of the model's spec (`ModelSpec.perplexity`) on the text `source` (`lm_text_lines`), as
    {key: value rounded to 2 decimals}; a ValueError for a model that is not a language model."""
    from ..registry import model_spec

    perplexity = model_spec(model.config.model_type).perplexity
    if perplexity is None:
        raise ValueError(f"model type {model.config.model_type!r} is not a language model (no perplexity)")
    scores = perplexity(model, tokenizer, source, seed=seed, paper_seeds=paper_seeds)
    return {key: round(value, 2) for key, value in scores.items()}
