"""Examples and batches for language-model training: one tokenised sentence per example, and reproducibly masked
batches for any masked language model. A model with another objective keeps its collator in its own recipe (R2D2's
in `models/r2d2/training_r2d2.py`)."""

import hashlib
import os

import torch
from datasets import Dataset
from transformers import DataCollatorForLanguageModeling, PreTrainedTokenizerBase

from .teachers import TEACHER_COLUMN, padded_teacher_merge_orders


def tokenize_sentences(lines: list[str], tokenizer: PreTrainedTokenizerBase, max_length: int | None) -> Dataset:
    """One example per sentence (trees are per sentence, so nothing is packed across sentences), with a `length`
    column for length-grouped batching. Sentences longer than `max_length` words are truncated (None: none is)."""
    encoded = tokenizer(lines, truncation=max_length is not None, max_length=max_length, return_attention_mask=False)
    ids = [row for row in encoded["input_ids"] if row]
    return Dataset.from_dict({"input_ids": ids, "length": [len(row) for row in ids]})


class ReproducibleMaskingCollator(DataCollatorForLanguageModeling):
    """MLM masking whose random draws are seeded by `seed` and the batch's own token ids.

    The global random state cannot give this: the data loader collates a batch ahead of the step that uses it, so
    a run resumed from a checkpoint would mask differently from the uninterrupted run. Here the same batch is
    masked the same way whenever it is made. (Batches differ from epoch to epoch, so masks do too.) Examples with a
    teacher's tree (`TEACHER_COLUMN`) give it padded with -1.
    """

    def __init__(
        self,
        tokenizer,
        mlm_probability: float,
        seed: int,
        mask_replace_prob: float = 1.0,
        random_replace_prob: float = 0.0,
    ):
        super().__init__(
            tokenizer,
            mlm_probability=mlm_probability,
            seed=seed,
            mask_replace_prob=mask_replace_prob,
            random_replace_prob=random_replace_prob,
        )

    def torch_call(self, examples):
        digest = hashlib.sha256(str(self.seed).encode())
        for example in examples:
            digest.update(torch.as_tensor(example["input_ids"], dtype=torch.int64).numpy().tobytes() + b"|")
        self.generator = torch.Generator().manual_seed(int.from_bytes(digest.digest()[:8], "little"))
        # transformers >= 5.24 replaces the generator by a seed-only one on a process's first batch unless it was
        # made in this process (its per-worker seeding); ours is, so say so, or a resumed run's first batch differs.
        self._generator_pid = os.getpid()
        if TEACHER_COLUMN not in examples[0]:
            return super().torch_call(examples)
        batch = super().torch_call([{"input_ids": example["input_ids"]} for example in examples])
        batch[TEACHER_COLUMN] = padded_teacher_merge_orders(examples, batch["input_ids"].size(1))
        return batch
