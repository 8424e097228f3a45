"""How a Graph-to-Graph Transformer parser trains (`scripts/run_parser.py`) and is bundled: teacher-forced oracle
configurations of the swap system, an encoder initialised from a pretrained BERT, and weights stored in half precision
below the graph layers. Training code only: no modeling file imports this module."""

import logging
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file
from transformers import AutoTokenizer

from ...data.tokenization import first_piece_positions
from ...structs.transitions import LEFT_ARC, RIGHT_ARC, SwapConfiguration, swap_oracle
from ...training import ParserTraining
from ...training.arguments import EntryArgumentsError, PretrainedEncoderArguments
from .configuration_g2gtr import G2GTrConfig
from .modeling_g2gtr import TO_DEPENDENT, TO_HEAD, configuration_slot_positions, initial_piece_relations

logger = logging.getLogger(__name__)


@dataclass
class G2GTrTrainingArguments(PretrainedEncoderArguments):
    graph_layers: int | None = field(
        default=None, metadata={"help": "New parser: top encoder layers with graph input (default: all; 0: none)."}
    )
    configurations_per_example: int = field(
        default=8,
        metadata={
            "help": "Oracle configurations of one sentence per training example (they share its "
            "lower layers); every configuration of every sentence is one training item per epoch."
        },
    )


def new_config(arguments: G2GTrTrainingArguments, sentences: list[dict], deprels: list[str]):
    """A parser of the pretrained encoder's sizes, and the encoder's tokenizer."""
    encoder, origin = arguments.encoder_config()
    config = G2GTrConfig(
        encoder_config=encoder, graph_layers=arguments.graph_layers, deprels=deprels, encoder_init=origin
    )
    return config, AutoTokenizer.from_pretrained(arguments.encoder_folder())


# BERT parameter names -> ours (layer index i is kept).
BERT_NAMES = {
    "attention.self.query": "attention.query",
    "attention.self.key": "attention.key",
    "attention.self.value": "attention.value",
    "attention.output.dense": "attention_output",
    "attention.output.LayerNorm": "attention_norm",
    "intermediate.dense": "intermediate",
    "output.dense": "output",
    "output.LayerNorm": "output_norm",
}


def load_bert_encoder(model, folder: Path) -> None:
    """Copy a BERT checkpoint's embeddings and layers into the parser's encoder; every encoder weight must be found."""
    weights = load_file(folder / "model.safetensors")
    ours = {}
    for name, tensor in weights.items():
        name = name.removeprefix("bert.")
        if name.startswith("embeddings.") and "position_ids" not in name:
            ours[name] = tensor
        elif name.startswith("encoder.layer."):
            _, _, index, rest = name.split(".", 3)
            module, parameter = rest.rsplit(".", 1)
            ours[f"layers.{index}.{BERT_NAMES[module]}.{parameter}"] = tensor
    missing, unexpected = model.load_state_dict(ours, strict=False)
    encoder_missing = [
        name for name in missing if name.startswith(("embeddings.", "layers.")) and "relation" not in name
    ]
    if encoder_missing or unexpected:
        raise EntryArgumentsError(f"{folder}: encoder weights missing {encoder_missing}, unexpected {unexpected}")


def initialise(model, arguments: G2GTrTrainingArguments) -> None:
    load_bert_encoder(model, arguments.encoder_folder())


def oracle_examples(sentences: list[dict], tokenizer, deprels: list[str], per_example: int) -> list[dict]:
    """One example per `per_example` oracle configurations of a sentence (configurations t, t + k, t + 2k, ... of a
    sentence with k examples), with the sentence's pieces, gold arcs and oracle actions. A sentence longer than the
    encoder's positions is left out with a warning."""
    label_ids = {label: index for index, label in enumerate(deprels)}
    rows = []
    for sentence in sentences:
        encoded = tokenizer(sentence["words"], is_split_into_words=True, truncation=True)
        word_ids = encoded.word_ids()
        if len({w for w in word_ids if w is not None}) != len(sentence["words"]):
            logger.warning("sentence %s: longer than the encoder's positions, left out", sentence["id"])
            continue
        actions = swap_oracle(sentence["heads"])
        chunks = max(1, -(-len(actions) // per_example))
        for offset in range(chunks):
            rows.append(
                {
                    "input_ids": encoded["input_ids"],
                    "first_pieces": first_piece_positions(word_ids, len(sentence["words"])),
                    "heads": sentence["heads"],
                    "labels": [label_ids[label] for label in sentence["deprels"]],
                    "actions": actions,
                    "steps": list(range(offset, len(actions), chunks)),
                    "length": len(encoded["input_ids"]),
                }
            )
    return rows


def examples(model, sentences: list[dict], tokenizer, arguments: G2GTrTrainingArguments) -> list[dict]:
    return oracle_examples(sentences, tokenizer, model.config.deprels, arguments.configurations_per_example)


class OracleCollator:
    """Replays each example's oracle actions and takes its configurations at the example's steps: the batch's
    sentences (padded pieces), and per configuration the partial graph, the attached words' labels, the s1/s0/b0
    pieces, the gold action and, on arc steps, the gold label."""

    def __init__(self, pad_token_id: int):
        self.pad_token_id = pad_token_id

    def __call__(self, examples: list[dict]) -> dict:
        length = max(len(example["input_ids"]) for example in examples)
        input_ids = torch.full((len(examples), length), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(examples), length), dtype=torch.long)
        relations, token_labels, slots, sentence_index, actions, arc_labels = [], [], [], [], [], []
        for s, example in enumerate(examples):
            pieces = example["input_ids"]
            input_ids[s, : len(pieces)] = torch.tensor(pieces)
            attention_mask[s, : len(pieces)] = 1
            first = example["first_pieces"]
            graph = initial_piece_relations([first], [len(example["heads"])], attention_mask[s : s + 1])[0]
            labels_in = torch.zeros(length, dtype=torch.long)
            wanted = set(example["steps"])
            configuration = SwapConfiguration(len(example["heads"]))
            for step, action in enumerate(example["actions"]):
                label = None
                if action in (LEFT_ARC, RIGHT_ARC):
                    s1, s0 = configuration.stack[-2], configuration.stack[-1]
                    dependent = s1 if action == LEFT_ARC else s0
                    label = example["labels"][dependent - 1]
                if step in wanted:
                    relations.append(graph.clone())
                    token_labels.append(labels_in.clone())
                    slots.append(configuration_slot_positions(configuration, first))
                    sentence_index.append(s)
                    actions.append(action)
                    arc_labels.append(-100 if label is None else label)
                if label is not None:
                    head = configuration.stack[-1] if action == LEFT_ARC else configuration.stack[-2]
                    graph[first[head], first[dependent]], graph[first[dependent], first[head]] = TO_DEPENDENT, TO_HEAD
                    labels_in[first[dependent]] = label + 1
                configuration.apply(action, label)
        return {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "relations": torch.stack(relations),
            "token_labels": torch.stack(token_labels),
            "slot_positions": torch.tensor(slots),
            "sentence_index": torch.tensor(sentence_index),
            "actions": torch.tensor(actions),
            "arc_labels": torch.tensor(arc_labels),
        }


def collator(model, tokenizer, arguments: G2GTrTrainingArguments) -> OracleCollator:
    return OracleCollator(tokenizer.pad_token_id)


def storage_plans(model) -> list:
    """With graph input in the top layers only: half precision below them, float32 for them and the classifiers."""
    if not model.config.graph_layers:
        return []
    below = model.first_graph_layer
    lower = ("embeddings.", *(f"layers.{index}." for index in range(below)))
    return [
        (
            f"half precision for the embeddings and layers 0-{below - 1} (below the graph input), float32 for the "
            "graph layers and the classifiers",
            lambda name: name.startswith(lower),
        )
    ]


TRAINING = ParserTraining(
    arguments=G2GTrTrainingArguments,
    new_config=new_config,
    examples=examples,
    collator=collator,
    epoch="every oracle configuration once an epoch",
    initialise=initialise,
    storage_plans=storage_plans,
)
