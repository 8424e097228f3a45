"""A parsing model that refuses one word: the contract's tiny test parser with one rule more, it refuses every
sentence holding the word REFUSED, naming the sentence's place in its batch as the bundled models do. For the tests
of the one error policy, through every way in."""

from pathlib import Path

import torch

from hf_structure import ModelSpec, register_model
from hf_structure.data.tokenization import build_word_tokenizer
from tests.helpers.paths import FIXTURES
from tests.helpers.tiny_parser import TinyParserConfig, TinyParserModel

REFUSED = "xyzzy"
GOOD = [["the", "dog", "ran"], ["a", "man", "sat", "on", "the", "bench"], ["the", "man", "ran"]]
WITH_REFUSED = ["the", REFUSED, "sat"]


class RefusingParserConfig(TinyParserConfig):
    model_type = "refusing-test-parser"

    def __init__(self, vocab_size=16, hidden_size=8, **kwargs):  # transformers reads a config's own signature
        super().__init__(vocab_size, hidden_size, **kwargs)


class RefusingParserModel(TinyParserModel):
    config_class = RefusingParserConfig

    @torch.no_grad()
    def parse(self, sentences, tokenizer):
        for index, words in enumerate(sentences):
            if REFUSED in words:
                raise ValueError(f"sentence {index}: {REFUSED!r} is a word this model does not parse")
        return super().parse(sentences, tokenizer)


def save_refusing_parser(folder: Path) -> Path:
    """A saved folder of the refusing parser, its model type registered (again, harmlessly, for a second caller)."""
    register_model(
        ModelSpec(
            config_class=RefusingParserConfig,
            auto_classes={"AutoModel": RefusingParserModel},
            parsing_class="AutoModel",
            card_template=FIXTURES / "tiny_card.md",
            card_metrics=(),
        )
    )
    tokenizer = build_word_tokenizer([" ".join(words) for words in [*GOOD, WITH_REFUSED]])
    torch.manual_seed(0)
    config = RefusingParserConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id)
    RefusingParserModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
