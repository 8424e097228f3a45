from .configuration_r2d2 import R2D2Config
from .modeling_r2d2 import R2D2ForLanguageModeling, R2D2Model, R2D2PreTrainedModel

__all__ = ["R2D2Config", "R2D2ForLanguageModeling", "R2D2Model", "R2D2PreTrainedModel"]
