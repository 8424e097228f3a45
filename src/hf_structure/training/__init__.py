"""Training through `Trainer`, one entry per kind of training and none per model.

`language_model.main` (`scripts/run_mlm.py`) trains language models, `parser.main` (`scripts/run_parser.py`)
supervised parsers. Neither names a model: what differs between models is each model's training recipe, a
`LanguageModelTraining` or `ParserTraining` held as `TRAINING` by a module of the model's own folder
(`models/<name>/training_<name>.py`) that its `ModelSpec.training` names. The module is imported only when a model is
trained or bundled, so parsing never imports it, and no modeling file may.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..extras import require_extra

# Every training module imports `datasets` or builds a `Trainer` (which needs `accelerate`): one clear error here
# rather than a ModuleNotFoundError from deep inside them.
require_extra("train", "training")


@dataclass(frozen=True)
class LanguageModelTraining:
    """How the language-model entry trains one model type.

    Args:
        arguments: a dataclass of the model's own command-line arguments (sizes, objective settings), parsed beside
            the shared ones; a new model's config comes from them.
        new_config: `(arguments, tokenizer) -> config` of a new model over the word tokenizer.
        collator: `(arguments, tokenizer, seed) -> data collator` of its training objective; it must batch the same
            way whenever a batch is made again (a resumed run sees the batches of the uninterrupted one).
        optimizer_parts: `(arguments, training arguments) -> [OptimizerPart]` (`training.trainer`), the parts of
            the model trained as by optimisers of their own (rates, warm-ups, clipping), or None: one optimiser.
        callbacks: `arguments -> [TrainerCallback]` of the model's own training (e.g. a part that starts late).
        eval_loss_is_word_cross_entropy: whether the model's evaluation loss is the mean cross-entropy of its
            predicted words (StructFormer's masked words, R2D2's every word), so that the trainer logs its exp as
            `eval_perplexity`; a model whose loss is anything else sets False and no perplexity is logged.
        training_columns: `(arguments, model, dataset, lines, output folder) -> dataset`: the training examples
            (one a non-empty line of `lines`, in order) with columns of the model's own objective added, e.g. a
            teacher's trees; it may set training-only config (a parser's target). None: the examples as they are.
        new_tokenizer: `(arguments, lines) -> tokenizer` of a new model, from the training sentences (`lines`), e.g.
            a vocabulary of their words or a pretrained encoder's tokenizer that the arguments name. None: a word
            vocabulary of the PTB LM train text (its 10k words, whatever the training text).
    """

    arguments: type
    new_config: Callable[[Any, Any], Any]
    collator: Callable[[Any, Any, int], Callable]
    optimizer_parts: Callable[[Any, Any], list | None] | None = None
    callbacks: Callable[[Any], list] | None = None
    eval_loss_is_word_cross_entropy: bool = True
    training_columns: Callable[[Any, Any, Any, list[str], str], Any] | None = None
    new_tokenizer: Callable[[Any, list[str]], Any] | None = None


def no_further_storage(model) -> list:
    """No storage but float32 and all-half precision."""
    return []


@dataclass(frozen=True)
class ParserTraining:
    """How the supervised-parser entry trains, and `scripts/bundle_parser.py` bundles, one model type.

    Args:
        arguments: a dataclass of the model's own command-line arguments, parsed beside the shared ones.
        new_config: `(arguments, sentences, deprels) -> (config, tokenizer)` of a new parser for the training
            sentences (`read_conllu` dicts) and their sorted label set.
        examples: `(model, sentences, tokenizer, arguments) -> list of dicts`, the training (or dev-loss) examples
            of sentences whose labels are all the parser's; a sentence it cannot use is left out with a warning.
        collator: `(model, tokenizer, arguments) -> data collator` of those examples.
        epoch: what one epoch of the training is (the bundled training record says it).
        initialise: `(model, arguments) -> None`, run on a new parser after the config overrides are applied (e.g.
            copying a pretrained encoder's weights); None: the model's own initialisation.
        storage_plans: `model -> [(description, parameter name -> stored in half precision)]`, the storages to try
            after "all in half precision", smallest first, when a run is bundled.
    """

    arguments: type
    new_config: Callable[[Any, list[dict], list[str]], tuple[Any, Any]]
    examples: Callable[[Any, list[dict], Any, Any], list[dict]]
    collator: Callable[[Any, Any, Any], Callable]
    epoch: str
    initialise: Callable[[Any, Any], None] | None = None
    storage_plans: Callable[[Any], list[tuple[str, Callable[[str], bool]]]] = no_further_storage
