from ...evaluation.perplexity import masked_lm_perplexities
from ...hub.card_metrics import UNSUPERVISED_PARSING, perplexity_metric
from ...registry import CardMetric, ModelSpec, TinyModel
from .configuration_structformer import StructFormerConfig
from .modeling_structformer import StructFormerForMaskedLM, StructFormerModel, StructFormerPreTrainedModel

MODEL_SPEC = ModelSpec(
    config_class=StructFormerConfig,
    auto_classes={"AutoModel": StructFormerModel, "AutoModelForMaskedLM": StructFormerForMaskedLM},
    parsing_class="AutoModelForMaskedLM",
    card_metrics=(
        *UNSUPERVISED_PARSING,
        CardMetric(
            "uas_argmax",
            "UAS (paper's argmax rule)",
            "Unlabelled attachment score with the paper's per-word argmax heads (Eq. 18)",
        ),
        perplexity_metric(
            "mlm_ppl_test",
            "MLM perplexity (PTB test) ↓",
            "Masked-LM perplexity (30% of words replaced by <mask>, seed 0, calibration per sentence)",
        ),
        perplexity_metric(
            "mlm_ppl_paper_test",
            "MLM perplexity, paper's protocol (PTB test) ↓",
            "Masked-LM perplexity under the StructFormer authors' protocol (length-sorted batches of >= 4,096 "
            "tokens, calibration per batch), mean over mask seeds",
        ),
    ),
    card_tags=(
        "structformer",
        "unsupervised-parsing",
        "constituency-parsing",
        "dependency-parsing",
        "grammar-induction",
    ),
    # The model is an AutoModelForMaskedLM (the standard fill-mask pipeline runs on it); parsing is the custom
    # `unsupervised-parsing` pipeline, named in the tags.
    pipeline_tag="fill-mask",
    datasets=("ptb_text_only",),
    bundled=("structformer-ptb",),
    perplexity=masked_lm_perplexities,
    training="hf_structure.models.structformer.training_structformer",
    tiny_models=(
        TinyModel(
            "structformer",
            config=dict(
                vocab_size=64,
                hidden_size=32,
                num_hidden_layers=2,
                num_attention_heads=4,
                intermediate_size=64,
                max_position_embeddings=16,
            ),
            accepted_options={
                "structures": ("constituency", "dependency"),
                "return_scores": (False, True),
                "keep_punctuation": (True, False),
                "head_decoding": ("eisner", "chu-liu-edmonds", "argmax"),
            },
            refused_options={"structures": ("dependencies",)},  # misspelt
        ),
    ),
)

__all__ = [
    "MODEL_SPEC",
    "StructFormerConfig",
    "StructFormerForMaskedLM",
    "StructFormerModel",
    "StructFormerPreTrainedModel",
]
