"""Unlabelled constituency F1 as an `evaluate` metric: `evaluate.load(<this folder>)`, offline.

Predictions and references are, per sentence, lists of `[start, end)` spans (0-based, end exclusive). With
`lengths` (words per sentence), single-word spans and the whole-sentence span are dropped from both sides, as the
scoring conventions require; without it, the spans are scored as given. Scores are percentages, as the CLI and
the model cards give them (`hf_structure.evaluation.metrics.unlabelled_f1` gives fractions).
"""

import datasets
import evaluate

from hf_structure.evaluation.metrics import scored_spans, unlabelled_f1

_CITATION = """@inproceedings{shen2021structformer,
  title={StructFormer: Joint Unsupervised Induction of Dependency and Constituency Structure
         from Masked Language Modeling},
  author={Shen, Yikang and Tay, Yi and Zheng, Che and Bahri, Dara and Metzler, Donald and Courville, Aaron},
  booktitle={ACL}, year={2021}}"""


class UnlabelledF1(evaluate.Metric):
    def _info(self):
        spans = datasets.Sequence(datasets.Sequence(datasets.Value("int32")))
        return evaluate.MetricInfo(
            description="Sentence-level mean and corpus-level unlabelled bracketing F1 (percentages).",
            citation=_CITATION,
            inputs_description=__doc__,
            features=datasets.Features({"predictions": spans, "references": spans}),
        )

    def _compute(self, predictions, references, lengths=None):
        def as_sets(rows):
            sets = [{tuple(span) for span in spans} for spans in rows]
            return [scored_spans(s, n) for s, n in zip(sets, lengths)] if lengths is not None else sets

        scores = unlabelled_f1(as_sets(predictions), as_sets(references))
        return {key: 100 * value for key, value in scores.items()}
