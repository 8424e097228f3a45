"""transformers' output conventions in every model class of the package (the registered specs' Auto classes, each
built tiny by its training recipe and run on a batch of the recipe's collator): `return_dict=False`, given or the
config's, returns the output's `to_tuple()` (and parsing still works); output shapes do not depend on whether the
training targets were given, which add losses only, `loss` first, and some targets without the others are an error;
a model's `sparse_prediction` scores the labelled positions alone, and its training recipe turns it on. The training
targets are those each model's own tests declare (`TRAINING_TARGETS` in `tests/models/<name>/__init__.py`); a model
without a training recipe has no batch to run, so these tests skip it."""

import copy
import dataclasses
import inspect

import pytest
import torch

from hf_structure.data.tokenization import build_word_tokenizer
from hf_structure.registry import model_spec
from hf_structure.training import LanguageModelTraining
from hf_structure.training.parser import new_parser
from tests.helpers.model_tests import own_tests, package_model_types
from tests.helpers.tiny_models import CORPUS
from tests.helpers.tiny_treebank import DEPRELS, SENTENCES

pytestmark = pytest.mark.usefixtures("one_thread")

PACKAGE_MODELS = sorted(package_model_types())
# A language model's sizes, where its recipe's arguments have them.
TINY_SIZES = {"hidden_size": 16, "num_attention_heads": 2, "intermediate_size": 32}


@dataclasses.dataclass
class TinyModels:
    """A model type's Auto classes built tiny (random weights), the batch its training collator makes and the names
    of the training targets in it, its recipe and the recipe's arguments, and sentences (words) and a tokenizer to
    parse them with."""

    models: list
    batch: dict
    targets: tuple[str, ...]
    recipe: object
    arguments: object
    sentences: list[list[str]]
    tokenizer: object


@pytest.fixture(scope="module", params=PACKAGE_MODELS)
def tiny(request, bert_folder) -> TinyModels:
    spec = model_spec(request.param)
    if spec.training is None:
        pytest.skip(f"{spec.model_type} has no training recipe, whose collator makes the batch these tests run")
    recipe = spec.training_recipe()
    if isinstance(recipe, LanguageModelTraining):
        names = {field.name for field in dataclasses.fields(recipe.arguments)}
        arguments = recipe.arguments(**{name: size for name, size in TINY_SIZES.items() if name in names})
        tokenizer = build_word_tokenizer(CORPUS)
        config = recipe.new_config(arguments, tokenizer)
        batch = recipe.collator(arguments, tokenizer, 0)([{"input_ids": ids} for ids in tokenizer(CORPUS)["input_ids"]])
        sentences = [line.split() for line in CORPUS]
    else:
        names = {field.name for field in dataclasses.fields(recipe.arguments)}
        # A parser on a pretrained encoder (G2GTr, arc-hybrid) is built on the tiny BERT; others from scratch.
        arguments = recipe.arguments(**({"encoder": str(bert_folder)} if "encoder" in names else {}))
        parser, tokenizer = new_parser(spec.model_type, arguments, SENTENCES, DEPRELS)
        config = parser.config
        examples = recipe.examples(parser, SENTENCES, tokenizer, arguments)
        batch = recipe.collator(parser, tokenizer, arguments)(list(examples))
        sentences = [sentence["words"] for sentence in SENTENCES]
    torch.manual_seed(0)
    models = [model_class(copy.deepcopy(config)) for model_class in spec.auto_classes.values()]
    targets = own_tests(spec.model_type).TRAINING_TARGETS
    return TinyModels(models, batch, targets, recipe, arguments, sentences, tokenizer)


def inputs_of(model, tiny: TinyModels, targets: bool = True) -> dict:
    """The entries of the tiny batch that `model.forward` names (a base model takes no targets), without the training
    targets unless `targets`."""
    names = inspect.signature(model.forward).parameters
    return {key: value for key, value in tiny.batch.items() if key in names and (targets or key not in tiny.targets)}


def assert_same(left, right) -> None:
    """Equal outputs: tensors equal, and dataclasses (R2D2's chart) and tuples equal item by item."""
    if isinstance(left, torch.Tensor):
        assert torch.equal(left, right)
    elif dataclasses.is_dataclass(left):
        for field in dataclasses.fields(left):
            assert_same(getattr(left, field.name), getattr(right, field.name))
    elif isinstance(left, tuple):
        assert isinstance(right, tuple) and len(left) == len(right)
        for left_item, right_item in zip(left, right):
            assert_same(left_item, right_item)
    else:
        assert left == right


def shape_of(value):
    """A tensor's shape, a tuple's shapes; any other value's type."""
    if isinstance(value, torch.Tensor):
        return tuple(value.shape)
    if isinstance(value, tuple):
        return tuple(shape_of(item) for item in value)
    return type(value).__name__


@torch.no_grad()
def test_return_dict_false_gives_the_outputs_tuple_and_parsing_still_works(tiny):
    for model in tiny.models:
        model.eval()
        inputs = inputs_of(model, tiny)
        output = model(**inputs)
        assert_same(model(**inputs, return_dict=False), output.to_tuple())
        assert_same(model(**inputs, return_dict=True), output)
        parses = model.parse(tiny.sentences, tiny.tokenizer) if hasattr(model, "parse") else None
        model.config.return_dict = False
        try:
            assert_same(model(**inputs), output.to_tuple())
            assert_same(model(**inputs, return_dict=True), output)
            if parses is not None:  # models that run their forward to parse ask it for the dict
                assert model.parse(tiny.sentences, tiny.tokenizer) == parses
        finally:
            model.config.return_dict = True


@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
@torch.no_grad()
def test_the_training_targets_add_losses_first_and_change_no_output_shape(tiny, training):
    trained = [model for model in tiny.models if set(tiny.targets) & inputs_of(model, tiny).keys()]
    assert trained  # every model type trains one of its classes
    for model in trained:
        model.train(training)
        torch.manual_seed(0)
        with_targets = model(**inputs_of(model, tiny))
        without_targets = model(**inputs_of(model, tiny, targets=False))
        assert with_targets.loss is not None and without_targets.loss is None
        assert [field.name for field in dataclasses.fields(with_targets)][0] == "loss"
        assert {key: shape_of(with_targets.get(key)) for key in without_targets} == {
            key: shape_of(value) for key, value in without_targets.items()
        }
        assert all(with_targets[key].dim() == 0 for key in with_targets.keys() - without_targets.keys())
    for model in trained:
        model.eval()


@torch.no_grad()
def test_some_of_the_training_targets_without_the_others_are_one_error_naming_the_missing(tiny):
    checked = False
    for model in tiny.models:
        targets = [key for key in inputs_of(model, tiny) if key in tiny.targets]
        for missing in targets if len(targets) > 1 else []:
            inputs = {key: value for key, value in inputs_of(model, tiny).items() if key != missing}
            with pytest.raises(ValueError, match=missing):
                model(**inputs)
            checked = True
    if not checked:
        pytest.skip("no class of this model type takes several training targets")


@torch.no_grad()
def test_sparse_prediction_scores_the_labelled_positions_alone_and_training_turns_it_on(tiny):
    sparse = [model for model in tiny.models if hasattr(model, "sparse_prediction")]
    if not sparse:
        pytest.skip("no class of this model type has sparse_prediction")
    callbacks = tiny.recipe.callbacks(tiny.arguments) if tiny.recipe.callbacks else []
    for model in sparse:
        model.eval()
        inputs = inputs_of(model, tiny)
        dense = model(**inputs)
        model.sparse_prediction = True
        try:
            scored = model(**inputs)
        finally:
            model.sparse_prediction = False
        predicted = inputs["labels"].ne(-100)
        assert predicted.any()
        torch.testing.assert_close(scored.logits, dense.logits[predicted])
        torch.testing.assert_close(scored.loss, dense.loss)
        for callback in callbacks:
            callback.on_train_begin(None, None, None, model=model)
        assert model.sparse_prediction
        model.sparse_prediction = False
