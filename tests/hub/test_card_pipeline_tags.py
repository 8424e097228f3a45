"""A model card's `pipeline_tag` names a pipeline that loads the model, or none: on the Hub it picks the widget and
the task users filter by, and a tag whose pipeline fails to load the model (the parsers' `token-classification`
did) misleads both. The parsers have no such pipeline (only hf_structure's custom `unsupervised-parsing` loads
them); the language models take `fill-mask`."""

from typing import cast

import pytest
from huggingface_hub import ModelCard
from transformers.pipelines import SUPPORTED_TASKS, pipeline

from hf_structure.bundled import bundled_checkpoints
from hf_structure.hub import export_model_folder
from hf_structure.hub.cards import folder_model_spec
from hf_structure.hub.export import TASK
from hf_structure.registry import MODEL_SPECS

# What each tag's pipeline is given, in the model's own tokenizer's words: a tag without one here fails its test.
TASK_INPUTS = {"fill-mask": lambda tokenizer: f"the old man sat on the {tokenizer.mask_token} ."}


@pytest.mark.parametrize("model_type", sorted(MODEL_SPECS))
def test_every_model_type_s_pipeline_tag_is_a_task_whose_pipeline_loads_one_of_its_auto_classes(model_type):
    spec = MODEL_SPECS[model_type]
    if spec.pipeline_tag is not None:  # a KeyError names a tag that is no task of transformers
        task = cast(dict, SUPPORTED_TASKS[spec.pipeline_tag])
        assert {cls.__name__ for cls in task["pt"]} & set(spec.auto_classes)


@pytest.mark.parametrize("name", sorted(bundled_checkpoints()))
def test_every_bundled_model_s_exported_card_names_a_pipeline_that_loads_it_or_none(name, tmp_path):
    out = export_model_folder(name, tmp_path / name)
    tag = ModelCard.load(out / "README.md").data.pipeline_tag
    if tag is None:
        # A parser, an AutoModel alone, whose generic pipelines (feature-extraction) give no parse: hf_structure's
        # own pipeline, which the card shows, is the one that loads it.
        (parse,) = pipeline(TASK, model=str(out))("The old man sat on the bench.")  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
        assert parse["heads"] and not folder_model_spec(out).auto_classes.keys() - {"AutoModel"}
        return
    tagged = pipeline(tag, model=str(out), trust_remote_code=True)
    assert tagged.model.config.name_or_path == str(out) and tagged(TASK_INPUTS[tag](tagged.tokenizer))
