from ...hub.card_metrics import ATTACHMENT
from ...registry import TINY_BERT_ENCODER, ModelSpec, TinyModel
from .configuration_g2gtr import G2GTrConfig
from .modeling_g2gtr import G2GTrForParsing, G2GTrPreTrainedModel

MODEL_SPEC = ModelSpec(
    config_class=G2GTrConfig,
    auto_classes={"AutoModel": G2GTrForParsing},
    parsing_class="AutoModel",
    card_metrics=ATTACHMENT,
    card_tags=("g2gtr", "dependency-parsing", "transition-based-parsing", "universal-dependencies"),
    datasets=("universal_dependencies",),
    training="hf_structure.models.g2gtr.training_g2gtr",
    tiny_models=(
        TinyModel(
            "g2gtr",
            config=dict(
                encoder_config=dict(TINY_BERT_ENCODER),
                action_hidden_size=16,
                label_hidden_size=16,
                deprels=("root", "nsubj", "obj", "det", "punct"),
            ),
            tokenizer="word_pieces",
            accepted_options={"structures": ("dependency",), "return_scores": (False,), "keep_punctuation": (True,)},
            refused_options={"structures": ("constituency", "dependency")},  # one structure it gives, one it lacks
        ),
    ),
)

__all__ = ["MODEL_SPEC", "G2GTrConfig", "G2GTrForParsing", "G2GTrPreTrainedModel"]
