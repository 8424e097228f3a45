from .configuration_arc_hybrid import ArcHybridConfig
from .modeling_arc_hybrid import ArcHybridForParsing, ArcHybridOutput, ArcHybridPreTrainedModel

__all__ = ["ArcHybridConfig", "ArcHybridForParsing", "ArcHybridOutput", "ArcHybridPreTrainedModel"]
