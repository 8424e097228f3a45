from .configuration_structformer import StructFormerConfig
from .modeling_structformer import StructFormerForMaskedLM, StructFormerModel, StructFormerPreTrainedModel

__all__ = ["StructFormerConfig", "StructFormerForMaskedLM", "StructFormerModel", "StructFormerPreTrainedModel"]
