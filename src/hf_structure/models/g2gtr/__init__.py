from ...hub.card_metrics import ATTACHMENT
from ...registry import ModelSpec
from .configuration_g2gtr import G2GTrConfig
from .modeling_g2gtr import G2GTrForParsing, G2GTrPreTrainedModel

MODEL_SPEC = ModelSpec(
    config_class=G2GTrConfig,
    auto_classes={"AutoModel": G2GTrForParsing},
    parsing_class="AutoModel",
    card_metrics=ATTACHMENT,
    card_tags=("g2gtr", "dependency-parsing", "transition-based-parsing", "universal-dependencies"),
    pipeline_tag="token-classification",
    datasets=("universal_dependencies",),
    training="hf_structure.models.g2gtr.training_g2gtr",
)

__all__ = ["MODEL_SPEC", "G2GTrConfig", "G2GTrForParsing", "G2GTrPreTrainedModel"]
