"""Tiny, seeded random models for tests that need one (random weights, real code): the tiny models that each
registered model type declares (`ModelSpec.tiny_models`, a `hf_structure.registry.TinyModel` each), which the shared
contract tests loop over, and StructFormer and R2D2 checkpoints over a small corpus, their tiny models resized."""

from pathlib import Path

import torch

from hf_structure.data.tokenization import build_word_tokenizer
from hf_structure.models.r2d2 import R2D2ForLanguageModeling
from hf_structure.models.structformer import StructFormerForMaskedLM
from hf_structure.registry import MODEL_SPECS, ModelSpec, TinyModel

CORPUS = ["the old man sat on the bench", "a dog ran and tired"]


def declared_tiny_models() -> dict[str, tuple[ModelSpec, TinyModel]]:
    """Every tiny model the registered model types declare, by name, with its model type's spec, in the order the
    types were registered."""
    return {tiny.name: (spec, tiny) for spec in MODEL_SPECS.values() for tiny in spec.tiny_models}


def tiny_tokenizer(kind: str):
    """A tokenizer of a `TinyModel.tokenizer` kind over the tests' words: a word vocabulary of `CORPUS`
    (`"words"`), or the tiny BERT's WordPiece vocabulary (`"word_pieces"`, `tests.helpers.tiny_treebank`)."""
    from tests.helpers.tiny_treebank import word_piece_tokenizer

    return build_word_tokenizer(CORPUS) if kind == "words" else word_piece_tokenizer()


def declared_tiny_config(name: str, **settings):
    """The config of the declared tiny model `name`, with `settings` changed or added."""
    spec, tiny = declared_tiny_models()[name]
    return spec.config_class(**{**tiny.config, **settings})


def new_declared_tiny_model(name: str, **settings):
    """The declared tiny model `name` (its model type's parsing class, weights seeded 0, `settings` changed in its
    config), in evaluation mode, and its tokenizer."""
    spec, tiny = declared_tiny_models()[name]
    tokenizer = tiny_tokenizer(tiny.tokenizer)
    torch.manual_seed(0)
    return spec.auto_classes[spec.parsing_class](declared_tiny_config(name, **settings)).eval(), tokenizer


def save_declared_tiny_model(name: str, folder: Path, **settings) -> Path:
    """Save the declared tiny model `name` and its tokenizer (`new_declared_tiny_model`) to `folder`; returns it."""
    model, tokenizer = new_declared_tiny_model(name, **settings)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def save_tiny_model(folder: Path, max_position_embeddings: int = 512) -> Path:
    """A tiny random StructFormer with a word tokenizer over `CORPUS`, its embedding as large as the tokenizer."""
    tokenizer = build_word_tokenizer(CORPUS)
    torch.manual_seed(0)
    config = declared_tiny_config(
        "structformer",
        vocab_size=len(tokenizer),
        max_position_embeddings=max_position_embeddings,
        pad_token_id=tokenizer.pad_token_id,
        mask_token_id=tokenizer.mask_token_id,
    )
    StructFormerForMaskedLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def save_tiny_r2d2(folder: Path, corpus: list[str] = CORPUS, **overrides) -> Path:
    """A tiny random R2D2 with a word tokenizer over `corpus` (`overrides`: other config settings): a model whose
    parses give spans and no heads, and whose `parse` takes no `head_decoding`."""
    tokenizer = build_word_tokenizer(corpus)
    torch.manual_seed(0)
    config = declared_tiny_config("r2d2", vocab_size=len(tokenizer), parse_window_size=3, **overrides)
    R2D2ForLanguageModeling(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
