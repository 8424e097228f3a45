"""hf_structure: syntactic-structure models as first-class citizens of the Hugging Face ecosystem.

Importing the package registers its models with the Auto classes and the `unsupervised-parsing` pipeline task.
"""

from transformers import AutoConfig, AutoModel, AutoModelForMaskedLM

from .models.structformer import StructFormerConfig, StructFormerForMaskedLM, StructFormerModel

__version__ = "0.1.0"

AutoConfig.register(StructFormerConfig.model_type, StructFormerConfig, exist_ok=True)
AutoModel.register(StructFormerConfig, StructFormerModel, exist_ok=True)
AutoModelForMaskedLM.register(StructFormerConfig, StructFormerForMaskedLM, exist_ok=True)
# A saved folder carries `auto_map` and its modeling code, so it loads where hf_structure is not installed.
StructFormerConfig.register_for_auto_class()
StructFormerModel.register_for_auto_class("AutoModel")
StructFormerForMaskedLM.register_for_auto_class("AutoModelForMaskedLM")

from . import pipelines  # noqa: E402,F401  (registers the task; needs the model classes above)

__all__ = ["StructFormerConfig", "StructFormerForMaskedLM", "StructFormerModel", "__version__"]
