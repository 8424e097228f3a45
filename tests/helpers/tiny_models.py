"""Tiny, seeded StructFormer and R2D2 checkpoints for tests that need a model folder (random weights, real code)."""

from pathlib import Path

import torch

from hf_structure import R2D2Config, R2D2ForLanguageModeling, StructFormerConfig, StructFormerForMaskedLM
from hf_structure.data.tokenization import build_word_tokenizer

CORPUS = ["the old man sat on the bench", "a dog ran and tired"]


def save_tiny_model(folder: Path, max_position_embeddings: int = 512) -> Path:
    tokenizer = build_word_tokenizer(CORPUS)
    torch.manual_seed(0)
    config = StructFormerConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
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
    config = R2D2Config(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_attention_heads=2,
        intermediate_size=32,
        num_composition_layers=1,
        window_size=2,
        parse_window_size=3,
        **overrides,
    )
    R2D2ForLanguageModeling(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
