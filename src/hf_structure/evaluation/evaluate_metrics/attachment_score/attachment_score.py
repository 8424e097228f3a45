"""Unlabelled attachment scores (UAS, UUAS) as an `evaluate` metric: `evaluate.load(<this folder>)`, offline.

Predictions and references are, per sentence, the head of each word (1-based, 0 = root); pass only the words to
score (e.g. punctuation already removed). Scores are percentages, as the CLI and the model cards give them
(`hf_structure.evaluation.metrics.attachment_scores` gives fractions).
"""

import datasets
import evaluate

from hf_structure.evaluation.metrics import attachment_scores


class AttachmentScore(evaluate.Metric):
    def _info(self):
        heads = datasets.Sequence(datasets.Value("int32"))
        return evaluate.MetricInfo(
            description="Directed (UAS) and undirected (UUAS) unlabelled attachment scores (percentages).",
            citation="",
            inputs_description=__doc__,
            features=datasets.Features({"predictions": heads, "references": heads}),
        )

    def _compute(self, predictions, references):
        return {key: 100 * value for key, value in attachment_scores(predictions, references).items()}
