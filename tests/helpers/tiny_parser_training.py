"""The tiny test parser's training recipe (tiny_parser.py, beside it): what `scripts/run_parser.py` trains it with
and `scripts/bundle_parser.py` bundles it with, declared here and named by its `ModelSpec.training`, so that no
shared file knows the model."""

from dataclasses import dataclass, field

import torch

from hf_structure.data.tokenization import build_word_tokenizer
from hf_structure.training import ParserTraining
from tests.helpers.tiny_parser import TinyParserConfig


@dataclass
class TinyParserTrainingArguments:
    tiny_width: int = field(default=8, metadata={"help": "New tiny parser: the word embeddings' width."})


def new_config(arguments: TinyParserTrainingArguments, sentences: list[dict], deprels: list[str]):
    """A word vocabulary of the training sentences, and a config over it."""
    tokenizer = build_word_tokenizer(" ".join(sentence["words"]) for sentence in sentences)
    config = TinyParserConfig(
        vocab_size=len(tokenizer), hidden_size=arguments.tiny_width, pad_token_id=tokenizer.pad_token_id
    )
    return config, tokenizer


def examples(model, sentences: list[dict], tokenizer, arguments: TinyParserTrainingArguments) -> list[dict]:
    encoded = tokenizer([sentence["words"] for sentence in sentences], is_split_into_words=True)
    return [
        {"input_ids": ids, "labels": sentence["heads"], "length": len(ids)}
        for ids, sentence in zip(encoded["input_ids"], sentences)
    ]


def collator(model, tokenizer, arguments: TinyParserTrainingArguments):
    def pad(examples: list[dict]) -> dict:
        def padded(key, value):
            rows = [torch.tensor(example[key]) for example in examples]
            return torch.nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=value)

        input_ids = padded("input_ids", -1)
        return {
            "input_ids": input_ids.clamp(min=0),
            "attention_mask": input_ids.ne(-1).long(),
            "labels": padded("labels", -100),
        }

    return pad


TRAINING = ParserTraining(
    arguments=TinyParserTrainingArguments,
    new_config=new_config,
    examples=examples,
    collator=collator,
    epoch="every sentence once an epoch",
)
