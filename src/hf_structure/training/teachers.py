"""Teacher trees: constituency trees for a model to learn from, given by other models or by files, one per training
sentence; several teachers' trees are combined by tree averaging (`structs.decoding.average_trees`).

A teacher model is any model `hf_structure` can load whose `parse` gives constituents (`spans`): a bundled short
name, a folder or a Hub id. It parses the sentences once; its trees are cached as JSON lines (the format of
`hf-structure parse --json` and of `--teacher_trees` files), so a resumed run, or a later stage given the file,
reads them instead of parsing again."""

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm
from transformers import TrainerCallback

from ..data.trees_files import TreesFileError, read_trees_file
from ..file_modes import written_whole
from ..structs.decoding import TIE_BREAKS, average_trees
from ..structs.merge_orders import merge_order_from_split_scores
from ..structs.trees import Span, spans_to_distances
from .arguments import EntryArgumentsError

logger = logging.getLogger(__name__)
TEACHER_COLUMN = "teacher_merge_order"
"""The training examples' column of their teacher's tree, as the merge order of its splits (the model's
`teacher_merge_order` input)."""


@dataclass
class TeacherArguments:
    """The command-line arguments that name a model's teachers (a recipe's arguments inherit them)."""

    teacher_model: list[str] = field(
        default_factory=list,
        metadata={
            "help": "Teacher models whose constituency trees the student learns from: bundled names (e.g. "
            "structformer-ptb), folders or Hub ids. They parse the training text once; the trees are cached in the "
            "output folder (teacher-<name>.jsonl). Several teachers' trees (models and files) are averaged."
        },
    )
    teacher_trees: list[str] = field(
        default_factory=list,
        metadata={
            "help": "Teacher trees as JSON lines with `words` and `spans` (`hf-structure parse --json`, or a "
            "cache file of --teacher_model), matched to the training sentences by their words."
        },
    )
    teacher_tie_break: str = field(
        default="right",
        metadata={
            "help": f"Of several teachers' averaged trees with equal votes, which wins: one of {TIE_BREAKS} "
            "(structs.decoding.average_trees)."
        },
    )
    teacher_anneal_start: int | None = field(
        default=None,
        metadata={
            "help": "With teacher trees: from this step the teacher's weight falls linearly to 0 at "
            "--teacher_anneal_end (R2D2: its share of the parser's target, the rest going to the chart's best "
            "tree; StructFormer: the weight of the distances' loss against the teacher's trees); unset, it stays."
        },
    )
    teacher_anneal_end: int | None = field(
        default=None, metadata={"help": "The step at which the teacher's weight reaches 0 (see the start)."}
    )

    def __post_init__(self):
        if self.teacher_tie_break not in TIE_BREAKS:
            raise EntryArgumentsError(
                f"--teacher_tie_break must be one of {TIE_BREAKS}, got {self.teacher_tie_break!r}"
            )
        if (self.teacher_anneal_start is None) != (self.teacher_anneal_end is None):
            raise EntryArgumentsError("--teacher_anneal_start and --teacher_anneal_end go together")
        start, end = self.teacher_anneal_start, self.teacher_anneal_end
        if start is not None and end is not None and not 0 <= start < end:
            raise EntryArgumentsError("--teacher_anneal_start must be >= 0 and below --teacher_anneal_end")
        if self.teacher_anneal_start is not None and not self.has_teacher:
            raise EntryArgumentsError("--teacher_anneal_* need --teacher_model or --teacher_trees")

    @property
    def has_teacher(self) -> bool:
        return bool(self.teacher_model or self.teacher_trees)

    def anneal_callbacks(self, initial_weight: float = 1.0) -> list["TeacherAnneal"]:
        """The callback that anneals the model's `teacher_weight` from `initial_weight`, if one is asked for."""
        if self.teacher_anneal_start is None or self.teacher_anneal_end is None:
            return []
        return [TeacherAnneal(self.teacher_anneal_start, self.teacher_anneal_end, initial_weight)]

    def trees(self, sentences: Sequence[Sequence[str]], cache_dir: str | Path) -> list[list[Span]]:
        """The teachers' (averaged) tree of each sentence."""
        return teacher_trees(
            sentences, self.teacher_model, self.teacher_trees, cache_dir, tie_break=self.teacher_tie_break
        )


class TeacherAnneal(TrainerCallback):
    """The model's `teacher_weight`: `initial` before step `start`, falling linearly to 0 at step `end`, 0 after."""

    def __init__(self, start: int, end: int, initial: float = 1.0):
        self.start, self.end, self.initial = start, end, initial

    def weight(self, step: int) -> float:
        return self.initial * min(1.0, max(0.0, (self.end - step) / (self.end - self.start)))

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        model.teacher_weight = self.weight(state.global_step)


class TeacherTreesError(ValueError):
    """A teacher cannot give a tree for every training sentence; the message names the teacher and the sentence,
    file line or span."""


def teacher_trees(
    sentences: Sequence[Sequence[str]],
    models: Sequence[str] = (),
    files: Sequence[str | Path] = (),
    cache_dir: str | Path | None = None,
    batch_size: int = 64,
    tie_break: str = "right",
) -> list[list[Span]]:
    """One binary tree per sentence (its spans of two or more words): the teachers' trees, averaged where there are
    several (`tie_break`: see `average_trees`). `models` parse the sentences (their trees cached in `cache_dir` as
    `teacher-<name>.jsonl`, reused when they hold exactly these sentences); `files` give trees as JSON lines with
    `words` and `spans`, matched to the sentences by their words."""
    if not models and not files:
        raise TeacherTreesError("no teacher: name a teacher model or a teacher-trees file")
    per_teacher = [model_trees(name, sentences, cache_dir, batch_size) for name in models]
    per_teacher += [file_trees(path, sentences) for path in files]
    return average_trees(per_teacher, [len(words) for words in sentences], tie_break)


def cache_path(cache_dir: str | Path, model: str) -> Path:
    """Where a teacher model's trees are cached: its name or path, made a file name."""
    return Path(cache_dir) / f"teacher-{re.sub(r'[^A-Za-z0-9._-]+', '_', str(model)).strip('_.')}.jsonl"


def model_trees(
    model: str, sentences: Sequence[Sequence[str]], cache_dir: str | Path | None, batch_size: int = 64
) -> list[list[Span]]:
    """A teacher model's trees of the sentences, read from its cache file where that holds these sentences."""
    cached = cache_path(cache_dir, model) if cache_dir is not None else None
    if cached is not None and cached.is_file():
        try:
            trees = file_trees(cached, sentences)
            logger.info("teacher %s: %d trees read from %s", model, len(trees), cached)
            return trees
        except TeacherTreesError as error:
            logger.info("teacher %s: the cache %s is not for these sentences (%s); parsing again", model, cached, error)
    from ..bundled import load_model_and_tokenizer
    from ..pipelines.parser import Parser

    teacher, tokenizer = load_model_and_tokenizer(model)
    if "spans" not in getattr(teacher, "parse_outputs", ()):
        raise TeacherTreesError(f"teacher {model}: its parses have no constituents (spans)")
    options: dict[str, Any] = {"structures": ("constituency",)} if "structures" in teacher.parse_options else {}
    with tqdm(total=len(sentences), desc=f"teacher {model}", unit="sentence") as progress:
        parser = Parser(teacher, tokenizer)
        parses = parser.parse_words(sentences, batch_size=batch_size, on_batch=progress.update, **options)
    trees = [[(start, end) for start, end in parse["spans"]] for parse in parses]
    if cached is not None:
        write_trees(cached, sentences, trees)
    return trees


def write_trees(path: str | Path, sentences: Sequence[Sequence[str]], trees: Sequence[Sequence[Span]]) -> None:
    """Trees as JSON lines (`words`, `spans`), written whole or not at all."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with written_whole(path) as stream:
        for words, spans in zip(sentences, trees):
            stream.write(json.dumps({"words": list(words), "spans": [list(span) for span in spans]}) + "\n")


def file_trees(path: str | Path, sentences: Sequence[Sequence[str]]) -> list[list[Span]]:
    """The trees of a JSON-lines file (`words`, `spans`: `hf-structure parse --json` output) for the sentences,
    matched by their words (a sentence that occurs twice takes the file's first tree of it). Raises
    TeacherTreesError naming the file line of a bad record, or the first sentence the file has no tree for."""
    try:
        by_words = read_trees_file(path)
    except TreesFileError as error:
        raise TeacherTreesError(str(error)) from None
    trees = []
    for number, sentence in enumerate(sentences, 1):
        tree = by_words.get(tuple(sentence))
        if tree is None:
            raise TeacherTreesError(f"{path}: no tree for sentence {number} ({' '.join(sentence)[:80]!r})")
        trees.append(tree)
    return trees


def with_teacher_merge_orders(arguments: TeacherArguments, dataset, lines: list[str], output_dir: str):
    """The training examples (one a non-empty line of `lines`, in order, one token a word, truncated to their
    `length`) with each one's teacher tree as a merge order (`TEACHER_COLUMN`), the teachers' trees averaged."""
    sentences = [words for words in (line.split() for line in lines) if words]
    if len(sentences) != len(dataset) or any(len(w) < n for w, n in zip(sentences, dataset["length"])):
        raise EntryArgumentsError("teacher trees need one token per word of the training text (a word-level tokenizer)")
    sentences = [words[:length] for words, length in zip(sentences, dataset["length"])]
    trees = arguments.trees(sentences, output_dir)
    lengths = torch.tensor([len(words) for words in sentences])
    distances = torch.zeros(len(sentences), max(int(lengths.max()) - 1, 0))
    for row, (words, spans) in enumerate(zip(sentences, trees)):
        distances[row, : len(words) - 1] = torch.tensor(spans_to_distances(spans, len(words)), dtype=torch.float)
    orders = merge_order_from_split_scores(distances, lengths)
    return dataset.add_column(TEACHER_COLUMN, [order[: n - 1] for order, n in zip(orders.tolist(), lengths.tolist())])


def padded_teacher_merge_orders(examples: Sequence[dict], width: int) -> torch.Tensor:
    """The examples' teacher merge orders as one `(B, width - 1)` tensor for a batch padded to `width` words, -1
    past each sentence's splits."""
    orders = torch.full((len(examples), max(width - 1, 0)), -1, dtype=torch.long)
    for row, example in enumerate(examples):
        orders[row, : len(example[TEACHER_COLUMN])] = torch.as_tensor(example[TEACHER_COLUMN], dtype=torch.long)
    return orders
