"""How an arc-hybrid parser trains (`scripts/run_parser.py`) and is bundled: each sentence's projectivised tree and
its oracle derivation as the stack-size DP scores it, an encoder initialised from a pretrained BERT, and weights
stored in half precision for the encoder from the bottom up. Training code only: no modeling file imports this
module."""

import functools
import logging
from dataclasses import dataclass, field

import torch
from tqdm.auto import tqdm
from transformers import AutoTokenizer, BertModel

from ...data.tokenization import encode_word_pieces
from ...structs.arc_hybrid import stack_size_events, static_oracle
from ...structs.trees import projectivize
from ...training import ParserTraining
from ...training.arguments import EntryArgumentsError, PretrainedEncoderArguments
from .configuration_arc_hybrid import ArcHybridConfig
from .modeling_arc_hybrid import ArcHybridForParsing

logger = logging.getLogger(__name__)


@dataclass
class ArcHybridTrainingArguments(PretrainedEncoderArguments):
    """A new parser's encoder (`--config_overrides encoder_type=bilstm` takes only its tokenizer and word-piece
    embeddings), or a trained arc-hybrid parser to learn from (distillation: `--teacher_model`)."""

    teacher_model: str | None = field(
        default=None,
        metadata={
            "help": "New parser: a trained arc-hybrid parser (folder or bundled name, e.g. arc-hybrid-ewt) that "
            "teaches it: the new parser starts from its tokenizer, its word-piece embeddings, its bottom "
            "--student_layers encoder layers and every scorer of the same shape, and learns its head and label "
            "distributions beside the gold tree's (--teacher_weight). --encoder is then not read."
        },
    )
    student_layers: int | None = field(
        default=None, metadata={"help": "With --teacher_model: the encoder layers kept (default: all of them)."}
    )
    teacher_weight: float = field(
        default=0.5,
        metadata={"help": "With --teacher_model: the teacher's share of the arc and label losses (0 to 1)."},
    )

    def __post_init__(self):
        if not 0 <= self.teacher_weight <= 1:
            raise EntryArgumentsError(f"--teacher_weight must be between 0 and 1, got {self.teacher_weight}")
        if self.student_layers is not None and self.teacher_model is None:
            raise EntryArgumentsError("--student_layers needs --teacher_model")


@functools.lru_cache(maxsize=1)
def load_teacher(name: str):
    """The teacher parser (in eval mode, float32) and its tokenizer, loaded once per run."""
    from ...bundled import load_model_and_tokenizer

    teacher, tokenizer = load_model_and_tokenizer(name)
    if not isinstance(teacher, ArcHybridForParsing):
        raise EntryArgumentsError(f"--teacher_model {name}: a {teacher.config.model_type} model, not an arc-hybrid one")
    return teacher.float(), tokenizer


def new_config(arguments: ArcHybridTrainingArguments, sentences: list[dict], deprels: list[str]):
    """A parser of the pretrained encoder's sizes and the encoder's tokenizer; or, with a teacher, the teacher's
    config with its bottom `student_layers` layers, and the teacher's tokenizer."""
    if arguments.teacher_model:
        teacher, tokenizer = load_teacher(arguments.teacher_model)
        if sorted(deprels) != sorted(teacher.config.deprels):
            raise EntryArgumentsError(
                f"--teacher_model {arguments.teacher_model}: its labels are not the training data's "
                f"({len(teacher.config.deprels)} against {len(deprels)})"
            )
        config = ArcHybridConfig.from_dict(teacher.config.to_dict())
        layers = config.encoder_config.num_hidden_layers
        if arguments.student_layers is not None:
            if not 1 <= arguments.student_layers <= layers:
                raise EntryArgumentsError(f"--student_layers must be 1 to the teacher's {layers}")
            config.encoder_config.num_hidden_layers = arguments.student_layers
        config.encoder_init = (
            f"{arguments.teacher_model}: its embeddings and bottom {config.encoder_config.num_hidden_layers} of "
            f"{layers} layers"
        )
        return config, tokenizer
    encoder, origin = arguments.encoder_config()
    config = ArcHybridConfig(encoder_config=encoder, deprels=deprels, encoder_init=origin)
    return config, AutoTokenizer.from_pretrained(arguments.encoder_folder())


def initialise(model, arguments: ArcHybridTrainingArguments) -> None:
    """The pretrained BERT's weights: all but the pooler (unused) for a BERT encoder, the word-piece embeddings for
    a BiLSTM one. With a teacher: each of its weights that the new parser has in the same shape (the embeddings,
    the bottom layers, the scorers the overrides leave as they were), and the teacher's share of the loss."""
    if arguments.teacher_model:
        teacher, _ = load_teacher(arguments.teacher_model)
        own = model.state_dict()
        copied = {
            name: weight
            for name, weight in teacher.state_dict().items()
            if name in own and own[name].shape == weight.shape
        }
        model.load_state_dict(copied, strict=False)
        model.teacher_weight = arguments.teacher_weight
        logger.info(
            "from the teacher: %d of the %d weights; new: %s", len(copied), len(own), sorted(set(own) - set(copied))
        )
        return
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
    rows = arc_hybrid_examples(sentences, tokenizer, model.config.deprels, model.config.stack_buckets)
    if arguments.teacher_model:
        teacher, _ = load_teacher(arguments.teacher_model)
        with_teacher_distributions(rows, teacher, ArcHybridCollator(tokenizer.pad_token_id))
    return rows


@torch.no_grad()
def with_teacher_distributions(rows: list[dict], teacher, collate, batch_size: int = 32) -> None:
    """Add to each example the teacher's distributions: `teacher_arcs`, for each word d its p(h | d) over the heads
    0..n, and `teacher_labels`, its label distribution for the arc from its gold head. Computed once, before
    training, in batches of similar lengths."""
    order = sorted(range(len(rows)), key=lambda index: rows[index]["length"])
    for start in tqdm(range(0, len(order), batch_size), desc="teacher distributions", unit="batch"):
        batch = [rows[index] for index in order[start : start + batch_size]]
        inputs = collate(batch)
        output = teacher(**{key: inputs[key] for key in ("input_ids", "attention_mask", "first_pieces", "lengths")})
        label_probs = teacher.label_logits(output.word_states, inputs["heads"].clamp(min=0)).float().softmax(-1)
        arc_probs = output.arc_log_probs.exp()
        for row, arcs, labels in zip(batch, arc_probs, label_probs, strict=True):
            length = len(row["heads"]) - 1
            row["teacher_arcs"] = arcs[: length + 1, 1 : length + 1].T.tolist()  # [d - 1][h]
            row["teacher_labels"] = labels[1 : length + 1].tolist()  # [d - 1][label]


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
        batch = {
            "input_ids": input_ids.masked_fill(input_ids.eq(-1), self.pad_token_id),
            "attention_mask": input_ids.ne(-1).long(),
            "first_pieces": first_pieces,
            "lengths": torch.tensor([len(example["heads"]) - 1 for example in examples]),
            "heads": heads,
            "labels": labels,
            "steps": padded("steps", -100),
            "matchings": padded("matchings", -100),
        }
        if "teacher_arcs" in examples[0]:
            positions = heads.size(1)  # ROOT, the words, the empty buffer
            arcs = torch.zeros(len(examples), positions, positions)
            label_probs = torch.zeros(len(examples), positions, len(examples[0]["teacher_labels"][0]))
            for index, example in enumerate(examples):
                by_word = torch.tensor(example["teacher_arcs"])  # (n, n + 1): [d - 1, h]
                arcs[index, : by_word.size(1), 1 : by_word.size(0) + 1] = by_word.T
                label_probs[index, 1 : by_word.size(0) + 1] = torch.tensor(example["teacher_labels"])
            batch.update(teacher_arcs=arcs, teacher_labels=label_probs)
        return batch


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
