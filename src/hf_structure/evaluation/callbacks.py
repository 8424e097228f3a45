"""A `Trainer` callback that scores the model on a gold treebank at each evaluation."""

import logging

from transformers import TrainerCallback

from ..data.treebanks import read_treebank
from .metrics import left_head_share
from .scoring import alternative_tree_decodings, parse_word_lists, score_parses

logger = logging.getLogger(__name__)


class ParsingEvaluationCallback(TrainerCallback):
    """At each evaluation, parse a gold treebank and log `parse_sentence_f1`, `parse_uas`, ... (whatever the model's
    parses can be scored on) and `parse_head_on_left` (percentage of attached words whose predicted head is on
    their left) with the step. For monitoring only: the training never selects anything by these numbers."""

    def __init__(self, treebank: str, tokenizer):
        self.gold = read_treebank(treebank)
        self.tokenizer = tokenizer

    def on_evaluate(self, args, state, control, model=None, metrics=None, **kwargs):
        if model is None or not state.is_world_process_zero:
            return
        words = [g.words for g in self.gold]
        parses = parse_word_lists(model, self.tokenizer, words, args.per_device_eval_batch_size)
        scores = score_parses(self.gold, parses)
        for method in alternative_tree_decodings(model):  # e.g. Fast-R2D2's chart tree beside its parser's
            alternative = parse_word_lists(model, self.tokenizer, words, args.per_device_eval_batch_size,
                                           tree_decoding=method)
            scored = score_parses(self.gold, [{"spans": p["spans"]} for p in alternative], suffix=f"_{method}")
            scores.update({key: value for key, value in scored.items() if key != "sentences"})
        if all("heads" in p for p in parses):
            scores["head_on_left"] = round(100 * left_head_share([p["heads"] for p in parses]), 2)
        logged = {f"parse_{key}": value for key, value in scores.items() if key != "sentences"}
        if metrics is not None:
            metrics.update(logged)
        state.log_history.append({**logged, "step": state.global_step})
        logger.info("step %d parsing: %s", state.global_step, logged)
