"""The base of every hf_structure model configuration: the conventions all of them share.

Imported by the models' modular sources; `scripts/modular_converter.py` inlines it into each generated
`configuration_<name>.py`, so that a saved folder's configuration stands alone.
"""

from transformers import PreTrainedConfig

# What a model does with punctuation. "reattach": the model was trained without punctuation, so the pipeline removes
# it before the model sees a sentence and re-attaches it afterwards; "keep": the model sees every word.
PUNCTUATION_POLICIES = ("reattach", "keep")


def _installed_pipeline_registered() -> bool:
    from transformers.pipelines import PIPELINE_REGISTRY

    return "unsupervised-parsing" in PIPELINE_REGISTRY.get_supported_tasks()


class StructureConfig(PreTrainedConfig):
    """A syntactic-structure model's configuration: its punctuation policy (checked), the Auto classes a saved folder
    names, and the parsing pipeline it announces.

    Subclasses set `default_auto_map`, `{Auto class: "module.Class"}` for every class the model can be loaded as:
    each saved folder names them all (`save_pretrained` alone records only the saved class's own Auto class, and the
    parsing pipeline loads AutoModel); an `auto_map` given when loading adds to it.

    Args:
        punctuation_policy: one of `PUNCTUATION_POLICIES`.
    """

    default_auto_map = {}

    def __init__(self, punctuation_policy="keep", **kwargs):
        if punctuation_policy not in PUNCTUATION_POLICIES:
            raise ValueError(f"punctuation_policy must be one of {PUNCTUATION_POLICIES}, got {punctuation_policy!r}")
        self.punctuation_policy = punctuation_policy
        kwargs["auto_map"] = {**self.default_auto_map, **(kwargs.get("auto_map") or {})}
        if kwargs.get("custom_pipelines") and _installed_pipeline_registered():
            # hf_structure is imported: its registered pipeline serves the task, so the folder's copy (which would
            # demand trust_remote_code=True) is not announced.
            kwargs.pop("custom_pipelines")
        super().__init__(**kwargs)
