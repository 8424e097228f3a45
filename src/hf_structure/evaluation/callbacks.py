"""The `Trainer` callback that scores the model on a gold treebank at each evaluation, for every trainer."""

import logging
from pathlib import Path

from transformers import TrainerCallback

from ..data.conllu_format import read_conllu
from ..data.treebanks import read_treebank
from .metrics import left_head_share
from .scoring import parse_word_lists, reported_options, score_all_words, score_parses

logger = logging.getLogger(__name__)


class ParsingEvaluationCallback(TrainerCallback):
    """At each evaluation, parse a gold treebank and score the parses by the conventions of `hf-structure evaluate`:
    a CoNLL-U file, for a model that sees every word (`punctuation_policy="keep"`), over every word (the CoNLL 2018
    convention); a PTB folder (`mrg/`, `dp/`), or a CoNLL-U file for a model trained without punctuation, over the
    scored words. The model's alternative decodings are scored too (`uas_<method>`, `sentence_f1_<method>` ...), and
    with heads `head_on_left` (percentage of attached words whose predicted head is on their left).

    Every score is logged as `parse_<score>` with the step, and is `eval_parse_<score>` among the evaluation's
    metrics (the Trainer's `eval_` convention, so `--metric_for_best_model parse_las` may choose a checkpoint).
    `max_sentences`: score only the first sentences of the treebank.
    """

    def __init__(self, treebank: str, tokenizer, max_sentences: int | None = None):
        self.treebank, self.tokenizer, self.max_sentences = treebank, tokenizer, max_sentences
        self.gold_of_policy: dict[bool, list] = {}

    def gold(self, model) -> tuple[bool, list]:
        """Whether every word is scored, and the gold sentences (read once per punctuation policy)."""
        every_word = (
            Path(self.treebank).suffix == ".conllu" and getattr(model.config, "punctuation_policy", "keep") == "keep"
        )
        if every_word not in self.gold_of_policy:
            gold = read_conllu(self.treebank) if every_word else read_treebank(self.treebank)
            self.gold_of_policy[every_word] = gold[: self.max_sentences]
        return every_word, self.gold_of_policy[every_word]

    def on_evaluate(self, args, state, control, model=None, metrics=None, **kwargs):
        if model is None or not state.is_world_process_zero:
            return
        every_word, gold = self.gold(model)
        words = [sentence["words"] if every_word else sentence.words for sentence in gold]
        batch_size = args.per_device_eval_batch_size
        parses = parse_word_lists(model, self.tokenizer, words, batch_size)
        score = score_all_words if every_word else score_parses
        scores = score(gold, parses)
        for name, options in reported_options(model).items():
            scored = score(gold, parse_word_lists(model, self.tokenizer, words, batch_size, **options))
            scores.update({f"{key}_{name}": value for key, value in scored.items() if key != "sentences"})
        if all("heads" in parse for parse in parses):
            scores["head_on_left"] = round(100 * left_head_share([parse["heads"] for parse in parses]), 2)
        logged = {f"parse_{key}": value for key, value in scores.items() if key != "sentences"}
        if metrics is not None:
            metrics.update({f"eval_{key}": value for key, value in logged.items()})
        state.log_history.append({**logged, "step": state.global_step})
        logger.info("step %d parsing: %s", state.global_step, logged)
