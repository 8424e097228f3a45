from .configuration_g2gtr import G2GTrConfig
from .modeling_g2gtr import G2GTrForParsing, G2GTrPreTrainedModel

__all__ = ["G2GTrConfig", "G2GTrForParsing", "G2GTrPreTrainedModel"]
