"""A tiny, seeded StructFormer checkpoint for tests that need a model folder (random weights, real code)."""

from pathlib import Path

import torch

from hf_structure import StructFormerConfig, StructFormerForMaskedLM
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
