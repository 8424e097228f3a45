"""hf_structure: syntactic-structure models as first-class citizens of the Hugging Face ecosystem.

Importing the package registers its models with the Auto classes (through `registry.register_model`) and the
`unsupervised-parsing` pipeline task, and lets `transformers.pipeline` accept the bundled short names.
"""

from .data.gold import TreebankFormatError
from .models.arc_hybrid import ArcHybridConfig, ArcHybridForParsing
from .models.g2gtr import G2GTrConfig, G2GTrForParsing
from .models.r2d2 import R2D2Config, R2D2ForLanguageModeling, R2D2Model
from .models.structformer import StructFormerConfig, StructFormerForMaskedLM, StructFormerModel
from .registry import CardMetric, ModelSpec, model_spec, register_model
from .version import __version__

# The scores every unsupervised parser's card reports: the gold PTB sample's UF1 and attachment scores.
_PARSING_CARD_METRICS = (
    CardMetric("sentence_f1", "Sentence-level UF1", "Sentence-level unlabelled F1"),
    CardMetric("corpus_f1", "Corpus-level UF1", "Corpus-level unlabelled F1"),
    CardMetric("uas", "UAS", "Unlabelled attachment score (directed)"),
    CardMetric("uuas", "UUAS", "Undirected unlabelled attachment score"),
)

# Where the language models' perplexities are measured, and how the masked ones are reported on the Hub.
_PTB_LM_TEST = {"type": "ptb_text_only", "name": "Penn Treebank LM text (Mikolov et al.)", "split": "test"}
_MASKED_LM_PERPLEXITY = {"task_type": "fill-mask", "task_name": "Masked language modelling", "dataset": _PTB_LM_TEST,
                         "lower_is_better": True, "metric_type": "perplexity"}

register_model(
    ModelSpec(
        config_class=StructFormerConfig,
        auto_classes={"AutoModel": StructFormerModel, "AutoModelForMaskedLM": StructFormerForMaskedLM},
        parsing_class="AutoModelForMaskedLM",
        card_template="structformer.md",
        card_metrics=(
            *_PARSING_CARD_METRICS,
            CardMetric(
                "uas_argmax",
                "UAS (paper's argmax rule)",
                "Unlabelled attachment score with the paper's per-word argmax heads (Eq. 18)",
            ),
            CardMetric(
                "mlm_ppl_test",
                "MLM perplexity (PTB test) ↓",
                "Masked-LM perplexity (30% of words replaced by <mask>, seed 0, calibration per sentence)",
                **_MASKED_LM_PERPLEXITY,
            ),
            CardMetric(
                "mlm_ppl_paper_test",
                "MLM perplexity, paper's protocol (PTB test) ↓",
                "Masked-LM perplexity under the StructFormer authors' protocol (length-sorted batches of >= 4,096 "
                "tokens, calibration per batch), mean over mask seeds",
                **_MASKED_LM_PERPLEXITY,
            ),
        ),
        card_tags=("structformer", "unsupervised-parsing", "constituency-parsing", "dependency-parsing",
                   "grammar-induction"),
        # The model is an AutoModelForMaskedLM (the standard fill-mask pipeline runs on it); parsing is the custom
        # `unsupervised-parsing` pipeline, named in the tags.
        pipeline_tag="fill-mask",
        datasets=("ptb_text_only",),
        bundled=("structformer-ptb",),
        language_model_perplexity="masked",
        training="hf_structure.models.structformer.training_structformer",
    )
)

register_model(
    ModelSpec(
        config_class=G2GTrConfig,
        auto_classes={"AutoModel": G2GTrForParsing},
        parsing_class="AutoModel",
        card_template="g2gtr.md",
        card_metrics=(
            CardMetric("uas", "UAS", "Unlabelled attachment score (all words, punctuation included)"),
            CardMetric("las", "LAS", "Labelled attachment score (all words; universal relation labels)"),
        ),
        card_tags=("g2gtr", "dependency-parsing", "transition-based-parsing", "universal-dependencies"),
        pipeline_tag="token-classification",
        datasets=("universal_dependencies",),
        training="hf_structure.models.g2gtr.training_g2gtr",
    )
)

register_model(
    ModelSpec(
        config_class=R2D2Config,
        auto_classes={"AutoModel": R2D2Model, "AutoModelForMaskedLM": R2D2ForLanguageModeling},
        parsing_class="AutoModelForMaskedLM",
        card_template="r2d2.md",
        card_metrics=(
            _PARSING_CARD_METRICS[0],
            _PARSING_CARD_METRICS[1],
            CardMetric(
                "sentence_f1_cpcfg",
                "Sentence-level UF1 (compound-PCFG scorer)",
                "Sentence-level unlabelled F1 as the R2D2 papers' compare_trees.py counts the whole-sentence span",
            ),
            CardMetric(
                "pppl_test",
                "Pseudo-perplexity (PTB test) ↓",
                "Bidirectional LM pseudo-perplexity (left and right contexts encoded as separate sentences)",
                task_type="fill-mask",
                task_name="Language modelling",
                dataset=_PTB_LM_TEST,
                lower_is_better=True,
                metric_type="perplexity",
            ),
        ),
        card_tags=("r2d2", "unsupervised-parsing", "constituency-parsing", "grammar-induction"),
        pipeline_tag="fill-mask",
        datasets=("ptb_text_only",),
        language_model_perplexity="pseudo",
        training="hf_structure.models.r2d2.training_r2d2",
    )
)

register_model(
    ModelSpec(
        config_class=ArcHybridConfig,
        auto_classes={"AutoModel": ArcHybridForParsing},
        parsing_class="AutoModel",
        card_template="arc_hybrid.md",
        card_metrics=(
            CardMetric("uas", "UAS", "Unlabelled attachment score (all words, punctuation included)"),
            CardMetric("las", "LAS", "Labelled attachment score (all words; universal relation labels)"),
        ),
        card_tags=("arc-hybrid", "dependency-parsing", "transition-based-parsing", "dynamic-programming",
                   "universal-dependencies"),
        pipeline_tag="token-classification",
        datasets=("universal_dependencies",),
        training="hf_structure.models.arc_hybrid.training_arc_hybrid",
    )
)

from . import pipelines  # noqa: E402,F401  (registers the task; needs the model classes above)
from .bundled import ModelFolderError  # noqa: E402
from .extras import MissingExtraError  # noqa: E402
from .pipelines.unsupervised_parsing import SentenceError, UnsupportedOptionError  # noqa: E402

__all__ = [
    "ArcHybridConfig",
    "ArcHybridForParsing",
    "CardMetric",
    "G2GTrConfig",
    "G2GTrForParsing",
    "MissingExtraError",
    "ModelFolderError",
    "ModelSpec",
    "R2D2Config",
    "R2D2ForLanguageModeling",
    "R2D2Model",
    "SentenceError",
    "StructFormerConfig",
    "StructFormerForMaskedLM",
    "StructFormerModel",
    "TreebankFormatError",
    "UnsupportedOptionError",
    "__version__",
    "model_spec",
    "register_model",
]
