from ...hub.card_metrics import ATTACHMENT
from ...registry import TINY_BERT_ENCODER, ModelSpec, TinyModel
from .configuration_arc_hybrid import ArcHybridConfig
from .modeling_arc_hybrid import ArcHybridForParsing, ArcHybridOutput, ArcHybridPreTrainedModel

MODEL_SPEC = ModelSpec(
    config_class=ArcHybridConfig,
    auto_classes={"AutoModel": ArcHybridForParsing},
    parsing_class="AutoModel",
    card_metrics=ATTACHMENT,
    card_tags=(
        "arc-hybrid",
        "dependency-parsing",
        "transition-based-parsing",
        "dynamic-programming",
        "universal-dependencies",
    ),
    datasets=("universal_dependencies",),
    training="hf_structure.models.arc_hybrid.training_arc_hybrid",
    tiny_models=(
        TinyModel(
            "arc_hybrid",
            config=dict(
                encoder_config=dict(TINY_BERT_ENCODER),
                arc_size=16,
                label_size=16,
                step_size=16,
                deprels=("root", "nsubj", "obj", "det", "punct"),
            ),
            tokenizer="word_pieces",
            accepted_options={
                "structures": ("dependency",),
                "return_scores": (False,),
                "keep_punctuation": (True,),
                "head_decoding": ("derivation", "eisner"),
            },
        ),
    ),
)

__all__ = ["MODEL_SPEC", "ArcHybridConfig", "ArcHybridForParsing", "ArcHybridOutput", "ArcHybridPreTrainedModel"]
