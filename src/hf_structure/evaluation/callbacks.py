"""The `Trainer` callback that scores the model on a gold treebank at each evaluation, for every trainer."""

import logging

from transformers import TrainerCallback

from ..pipelines.parser import Parser
from .metrics import left_head_share
from .scoring import GoldTreebank, evaluate, gold_treebank, scores_every_word

logger = logging.getLogger(__name__)


class ParsingEvaluationCallback(TrainerCallback):
    """At each evaluation, parse a gold treebank and score the parses by the conventions of `hf-structure evaluate`:
    a CoNLL-U file, for a model that sees every word (`punctuation_policy="keep"`), over every word (the CoNLL 2018
    convention); a PTB folder (`mrg/`, `dp/`), or a CoNLL-U file for a model trained without punctuation, over the
    scored words. The model's alternative decodings are scored too (`uas_<method>`, `sentence_f1_<method>` ...), and
    with heads `head_on_left` (percentage of attached words whose predicted head is on their left).

    Every score is logged as `parse_<score>` with the step, and is `eval_parse_<score>` among the evaluation's
    metrics (the Trainer's `eval_` convention, so `--metric_for_best_model parse_las` may choose a checkpoint).
    The scores are `hf-structure evaluate`'s (`scoring.evaluate`): a sentence the model cannot parse is left out of
    them, counted as `parse_skipped` and named in a warning. `max_sentences`: score only the first sentences of the
    treebank.
    """

    def __init__(self, treebank: str, tokenizer, max_sentences: int | None = None):
        self.treebank, self.tokenizer, self.max_sentences = treebank, tokenizer, max_sentences
        self.gold_of_rule: dict[bool, GoldTreebank] = {}

    def gold(self, model) -> GoldTreebank:
        """The gold sentences the model is scored against (read once for each way of scoring)."""
        every_word = scores_every_word(model, self.treebank)
        if every_word not in self.gold_of_rule:
            self.gold_of_rule[every_word] = gold_treebank(model, self.treebank, self.max_sentences)
        return self.gold_of_rule[every_word]

    def on_evaluate(self, args, state, control, model=None, metrics=None, **kwargs):
        if model is None or not state.is_world_process_zero:
            return
        scores, parses = evaluate(Parser(model, self.tokenizer), self.gold(model), args.per_device_eval_batch_size)
        logged = {
            f"parse_{key}": value
            for key, value in scores.items()
            if isinstance(value, (int, float)) and key not in ("sentences", "sentences_per_second")
        }
        if scores.get("skipped"):
            logged["parse_skipped"] = len(scores["skipped"])
            logger.warning("step %d parsing: not scored: %s", state.global_step, "; ".join(scores["skipped"]))
        if all("heads" in parse for parse in parses):
            logged["parse_head_on_left"] = round(100 * left_head_share([parse["heads"] for parse in parses]), 2)
        if metrics is not None:
            metrics.update({f"eval_{key}": value for key, value in logged.items()})
        state.log_history.append({**logged, "step": state.global_step})
        logger.info("step %d parsing: %s", state.global_step, logged)
