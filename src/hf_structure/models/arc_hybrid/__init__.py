from ...hub.card_metrics import ATTACHMENT
from ...registry import ModelSpec
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
    pipeline_tag="token-classification",
    datasets=("universal_dependencies",),
    training="hf_structure.models.arc_hybrid.training_arc_hybrid",
)

__all__ = ["MODEL_SPEC", "ArcHybridConfig", "ArcHybridForParsing", "ArcHybridOutput", "ArcHybridPreTrainedModel"]
