"""Scores that several models' cards report, for their specs (`ModelSpec.card_metrics`) to pick from."""

from ..registry import CardMetric

# Every unsupervised parser's: the gold PTB sample's unlabelled F1 and attachment scores.
UNSUPERVISED_PARSING = (
    CardMetric("sentence_f1", "Sentence-level UF1", "Sentence-level unlabelled F1"),
    CardMetric("corpus_f1", "Corpus-level UF1", "Corpus-level unlabelled F1"),
    CardMetric("uas", "UAS", "Unlabelled attachment score (directed)"),
    CardMetric("uuas", "UUAS", "Undirected unlabelled attachment score"),
)

# Every supervised dependency parser's, on a UD treebank.
ATTACHMENT = (
    CardMetric("uas", "UAS", "Unlabelled attachment score (all words, punctuation included)"),
    CardMetric("las", "LAS", "Labelled attachment score (all words; universal relation labels)"),
)

# Where the language models' perplexities are measured.
PTB_LM_TEST = {"type": "ptb_text_only", "name": "Penn Treebank LM text (Mikolov et al.)", "split": "test"}


def perplexity_metric(key: str, label: str, description: str, task_name: str = "Masked language modelling"):
    """A perplexity on the PTB LM test text, as the Hub's model-index reports it (lower is better)."""
    return CardMetric(
        key,
        label,
        description,
        task_type="fill-mask",
        task_name=task_name,
        dataset=PTB_LM_TEST,
        lower_is_better=True,
        metric_type="perplexity",
    )
