"""How an arc-hybrid parser trains (`scripts/run_parser.py`) and is bundled: each sentence's projectivised tree and
its oracle derivation as the stack-size DP scores it, an encoder initialised from a pretrained BERT, and weights
stored in half precision for the encoder from the bottom up. Training code only: no modeling file imports this
module."""

import logging
from dataclasses import dataclass

import torch
from transformers import AutoTokenizer, BertModel

from ...data.tokenization import encode_word_pieces
from ...structs.arc_hybrid import stack_size_events, static_oracle
from ...structs.trees import projectivize
from ...training import ParserTraining
from ...training.arguments import PretrainedEncoderArguments
from .configuration_arc_hybrid import ArcHybridConfig

logger = logging.getLogger(__name__)


@dataclass
class ArcHybridTrainingArguments(PretrainedEncoderArguments):
    """A new parser's encoder (`--config_overrides encoder_type=bilstm` takes only its tokenizer and word-piece
    embeddings)."""


def new_config(arguments: ArcHybridTrainingArguments, sentences: list[dict], deprels: list[str]):
    """A parser of the pretrained encoder's sizes, and the encoder's tokenizer."""
    encoder, origin = arguments.encoder_config()
    config = ArcHybridConfig(encoder_config=encoder, deprels=deprels, encoder_init=origin)
    return config, AutoTokenizer.from_pretrained(arguments.encoder_folder())


def initialise(model, arguments: ArcHybridTrainingArguments) -> None:
    """The pretrained BERT's weights: all but the pooler (unused) for a BERT encoder, the word-piece embeddings for
    a BiLSTM one."""
    pretrained = BertModel.from_pretrained(arguments.encoder_folder())
    if model.config.encoder_type == "bert":
        weights = {k: v for k, v in pretrained.state_dict().items() if not k.startswith("pooler.")}
        model.encoder.load_state_dict(weights)
    else:
        model.embeddings.weight.data.copy_(pretrained.embeddings.word_embeddings.weight)


def arc_hybrid_examples(sentences: list[dict], tokenizer, deprels: list[str], stack_buckets: int) -> list[dict]:
    """One example per sentence: its pieces, its tree made projective (`projectivize`; decoding is projective), its
    labels, and the oracle derivation's steps and matchings as the stack-size DP scores them. A sentence the
    tokenizer cannot encode within the encoder's positions is left out with a warning."""
    label_ids = {label: index for index, label in enumerate(deprels)}
    rows, lifted = [], 0
    for sentence in sentences:
        try:
            encoded = encode_word_pieces([sentence["words"]], tokenizer, tokenizer.model_max_length)
        except ValueError as error:
            logger.warning("sentence %s: %s; left out", sentence["id"], error)
            continue
        heads = projectivize(sentence["heads"])
        lifted += heads != sentence["heads"]
        length = len(heads)
        steps, matchings = stack_size_events(static_oracle(heads), length, stack_buckets)
        rows.append(
            {
                "input_ids": encoded["input_ids"][0].tolist(),
                "first_pieces": encoded["first_pieces"][0].tolist(),
                "heads": [0, *heads],
                "labels": [0, *(label_ids[label] for label in sentence["deprels"])],
                "steps": [list(step) for step in steps],
                "matchings": [list(matching) for matching in matchings],
                "length": len(encoded["input_ids"][0]),
            }
        )
    logger.info("%d of %d sentences were not projective and were projectivised (lifting)", lifted, len(rows))
    return rows


def examples(model, sentences: list[dict], tokenizer, arguments: ArcHybridTrainingArguments) -> list[dict]:
    return arc_hybrid_examples(sentences, tokenizer, model.config.deprels, model.config.stack_buckets)


class ArcHybridCollator:
    """Pads `arc_hybrid_examples` into the tensors `ArcHybridForParsing.forward` takes (-100 where nothing is)."""

    def __init__(self, pad_token_id: int):
        self.pad_token_id = pad_token_id

    def __call__(self, examples: list[dict]) -> dict:
        def padded(key, value):
            rows = [torch.tensor(example[key]) for example in examples]
            return torch.nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=value)

        input_ids = padded("input_ids", -1)
        first_pieces = padded("first_pieces", 0)  # n + 2 positions: ROOT, the words, the empty buffer
        heads = torch.nn.functional.pad(padded("heads", -100), (0, 1), value=-100)
        labels = torch.nn.functional.pad(padded("labels", -100), (0, 1), value=-100)
        heads[:, 0] = labels[:, 0] = -100  # ROOT has no head
        return {
            "input_ids": input_ids.masked_fill(input_ids.eq(-1), self.pad_token_id),
            "attention_mask": input_ids.ne(-1).long(),
            "first_pieces": first_pieces,
            "lengths": torch.tensor([len(example["heads"]) - 1 for example in examples]),
            "heads": heads,
            "labels": labels,
            "steps": padded("steps", -100),
            "matchings": padded("matchings", -100),
        }


def collator(model, tokenizer, arguments: ArcHybridTrainingArguments) -> ArcHybridCollator:
    return ArcHybridCollator(tokenizer.pad_token_id)


def storage_plans(model) -> list:
    """A BERT encoder feeding scorers trained from scratch: half precision for the encoder, then for fewer and fewer
    of its layers from the top; a BiLSTM encoder: for its word-piece embeddings."""
    plans = [("half precision for the pretrained encoder, float32 for the scorers", model.is_pretrained_parameter)]
    layers = model.config.encoder_config.num_hidden_layers if model.config.encoder_type == "bert" else 0
    for top in range(1, layers):
        lower = ("encoder.embeddings.", *(f"encoder.encoder.layer.{i}." for i in range(layers - top)))
        description = (
            f"half precision for the encoder's embeddings and layers 0-{layers - top - 1}, float32 for its "
            f"top {top} layer(s) and the scorers"
        )
        plans.append((description, lambda name, lower=lower: name.startswith(lower)))
    return plans


TRAINING = ParserTraining(
    arguments=ArcHybridTrainingArguments,
    new_config=new_config,
    examples=examples,
    collator=collator,
    epoch="every sentence once an epoch; non-projective trees projectivised by lifting",
    initialise=initialise,
    storage_plans=storage_plans,
)
