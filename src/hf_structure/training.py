"""Pieces of masked-LM training that the scripts share: datasets of tokenised sentences and the Trainer."""

import hashlib
import math
import os

import torch
from datasets import Dataset
from transformers import DataCollatorForLanguageModeling, PreTrainedTokenizerBase, Trainer
from transformers.trainer_pt_utils import LengthGroupedSampler


def tokenize_sentences(lines: list[str], tokenizer: PreTrainedTokenizerBase, max_length: int) -> Dataset:
    """One example per sentence (trees are per sentence, so nothing is packed across sentences), with a `length`
    column for length-grouped batching. Sentences longer than `max_length` words are truncated."""
    encoded = tokenizer(lines, truncation=True, max_length=max_length, return_attention_mask=False)
    ids = [row for row in encoded["input_ids"] if row]
    return Dataset.from_dict({"input_ids": ids, "length": [len(row) for row in ids]})


class ReproducibleMaskingCollator(DataCollatorForLanguageModeling):
    """MLM masking whose random draws are seeded by `seed` and the batch's own token ids.

    The global random state cannot give this: the data loader collates a batch ahead of the step that uses it, so
    a run resumed from a checkpoint would mask differently from the uninterrupted run. Here the same batch is
    masked the same way whenever it is made. (Batches differ from epoch to epoch, so masks do too.)
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
        return super().torch_call(examples)


class EpochSeededLengthGroupedSampler(LengthGroupedSampler):
    """Length-grouped batches whose order depends only on (seed, epoch), not on the global random state, so that a
    run resumed from a checkpoint sees exactly the batches the uninterrupted run would have seen."""

    def __init__(self, *args, seed: int, **kwargs):
        super().__init__(*args, generator=torch.Generator(), **kwargs)
        self.seed = seed
        self.set_epoch(0)

    def set_epoch(self, epoch: int) -> None:
        self.generator.manual_seed(self.seed + epoch)


class MaskedLMTrainer(Trainer):
    """`Trainer` with reproducible length-grouped batches and `eval_perplexity` (= exp eval_loss) in the logs."""

    def _get_train_sampler(self, train_dataset=None):
        train_dataset = train_dataset if train_dataset is not None else self.train_dataset
        if self.args.train_sampling_strategy != "group_by_length" or "length" not in train_dataset.column_names:
            return super()._get_train_sampler(train_dataset)
        return EpochSeededLengthGroupedSampler(
            self.args.train_batch_size * self.args.gradient_accumulation_steps,
            lengths=train_dataset["length"],
            seed=self.args.data_seed if self.args.data_seed is not None else self.args.seed,
        )

    def evaluate(self, *args, **kwargs):
        metrics = super().evaluate(*args, **kwargs)
        prefix = kwargs.get("metric_key_prefix", "eval")
        if f"{prefix}_loss" in metrics:
            metrics[f"{prefix}_perplexity"] = math.exp(min(metrics[f"{prefix}_loss"], 50.0))
            self.log({f"{prefix}_perplexity": metrics[f"{prefix}_perplexity"]})
        return metrics
