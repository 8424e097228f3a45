"""Scoring parsers (models or baselines) on a gold treebank, and a `Trainer` callback that does it during training."""

import logging
from collections.abc import Sequence

import torch
from transformers import TrainerCallback

from .baselines import baseline_parses
from .metrics import attachment_scores, label_recall, left_head_share, scored_spans, unlabelled_f1
from .structures import Span
from .treebanks import EVALUATED_LABELS, GoldSentence, read_treebank

logger = logging.getLogger(__name__)


def score_parses(gold: Sequence[GoldSentence], parses: Sequence[tuple[Sequence[Span], Sequence[int]]]) -> dict:
    """The evaluation JSON of a parser: `sentences`, `sentence_f1`, `corpus_f1`, `recall_<LABEL>` (when the gold
    has constituents) and `uas`/`uuas` (when it has heads); percentages rounded to 2 decimals."""
    if len(parses) != len(gold):
        raise ValueError(f"{len(parses)} parses for {len(gold)} gold sentences")
    scores = {}
    if any(g.spans for g in gold):
        predicted = [scored_spans(spans, len(g.words)) for (spans, _), g in zip(parses, gold)]
        scores.update(unlabelled_f1(predicted, [g.spans for g in gold]))
        recall = label_recall(predicted, [g.labelled_spans for g in gold], EVALUATED_LABELS)
        scores.update({f"recall_{label}": value for label, value in recall.items()})
    if all(g.heads is not None for g in gold):
        scores.update(attachment_scores([heads for _, heads in parses], [g.heads for g in gold]))
    return {"sentences": len(gold), **{key: round(100 * value, 2) for key, value in scores.items()}}


def evaluate_baseline(treebank_dir: str, name: str, seed: int = 0) -> dict:
    gold = read_treebank(treebank_dir)
    return {"parser": name, **score_parses(gold, baseline_parses(name, [len(g.words) for g in gold], seed))}


@torch.no_grad()
def parse_word_lists(model, tokenizer, sentences: Sequence[Sequence[str]], batch_size: int = 64) -> list[dict]:
    """Run `model.parse` over pre-split sentences (one token per word), batched by length; results in input order."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    results: list[dict | None] = [None] * len(sentences)
    was_training = model.training
    model.eval()
    try:
        for first in range(0, len(order), batch_size):
            indices = order[first : first + batch_size]
            batch = tokenizer(
                [list(sentences[i]) for i in indices], is_split_into_words=True, padding=True, return_tensors="pt"
            )
            for index, words, ids in zip(indices, (sentences[i] for i in indices), batch["attention_mask"].sum(-1)):
                if int(ids) != len(words):
                    raise ValueError(f"sentence {index}: the tokenizer made {int(ids)} tokens of {len(words)} words")
            for index, parsed in zip(indices, model.parse(batch["input_ids"], batch["attention_mask"])):
                results[index] = parsed
    finally:
        model.train(was_training)
    return results


def evaluate_model(model, tokenizer, gold: Sequence[GoldSentence], batch_size: int = 64) -> dict:
    parses = parse_word_lists(model, tokenizer, [g.words for g in gold], batch_size)
    return score_parses(gold, [(p["spans"], p["heads"]) for p in parses])


class ParsingEvaluationCallback(TrainerCallback):
    """At each evaluation, parse a gold treebank and log `parse_sentence_f1`, `parse_corpus_f1`, `parse_uas`...
    and `parse_head_on_left` (percentage of attached words whose predicted head is on their left) with the step.
    For monitoring only: the training never selects anything by these numbers."""

    def __init__(self, treebank_dir: str, tokenizer):
        self.gold = read_treebank(treebank_dir)
        self.tokenizer = tokenizer

    def on_evaluate(self, args, state, control, model=None, metrics=None, **kwargs):
        if model is None or not state.is_world_process_zero:
            return
        parses = parse_word_lists(model, self.tokenizer, [g.words for g in self.gold], args.per_device_eval_batch_size)
        scores = score_parses(self.gold, [(p["spans"], p["heads"]) for p in parses])
        scores["head_on_left"] = round(100 * left_head_share([p["heads"] for p in parses]), 2)
        logged = {f"parse_{key}": value for key, value in scores.items() if key != "sentences"}
        if metrics is not None:
            metrics.update(logged)
        state.log_history.append({**logged, "step": state.global_step})
        logger.info("step %d parsing: %s", state.global_step, logged)
