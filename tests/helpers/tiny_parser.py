"""A tiny dependency parser defined outside the package, to prove that a new model needs no change to shared code.

It scores arcs with a bilinear form over word embeddings and decodes each word's head greedily towards the left
(every word but the first takes its best head among the words before it; the first word is the root), so its heads
are always a projective tree; it learns heads on the left (its training recipe: tiny_parser_training.py, beside it).
This file imports only torch and transformers: an exported folder carries it as the model's remote code.
"""

import torch
from torch import nn
from transformers import PreTrainedConfig, PreTrainedModel


class TinyParserConfig(PreTrainedConfig):
    model_type = "tiny-test-parser"

    def __init__(self, vocab_size=16, hidden_size=8, punctuation_policy="keep", pad_token_id=0, **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.punctuation_policy = punctuation_policy
        # transformers' types give PreTrainedConfig's __init__ its dataclass fields alone; it takes any keyword.
        super().__init__(pad_token_id=pad_token_id, **kwargs)  # type: ignore[call-arg]


class TinyParserModel(PreTrainedModel):
    config_class: type[PreTrainedConfig] = TinyParserConfig  # test_model_contract's variants name other configs
    base_model_prefix = "tiny"

    def __init__(self, config):
        super().__init__(config)
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.arc = nn.Bilinear(config.hidden_size, config.hidden_size, 1)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, labels=None, **kwargs):
        """`(B, L, L)` scores of word j heading word i; with `labels` (gold heads, 1-based, -100 at pads) also the
        cross-entropy of each head among the words before its dependent: `(loss, scores)`."""
        hidden = self.embed(input_ids)
        length = input_ids.size(1)
        left = hidden[:, :, None].expand(-1, -1, length, -1).contiguous()
        right = hidden[:, None].expand(-1, length, -1, -1).contiguous()
        scores = self.arc(left, right).squeeze(-1)
        if labels is None:
            return scores
        before = torch.ones(length, length, dtype=torch.bool, device=scores.device).tril(-1)
        targets = labels - 1
        learnable = (labels > 0) & (targets < torch.arange(length, device=labels.device))  # heads on the left
        masked = scores.masked_fill(~before, torch.finfo(scores.dtype).min)
        loss = nn.functional.cross_entropy(masked[learnable], targets[learnable])
        return loss, scores

    parse_options: dict[str, tuple[str, ...]] = {}  # the parse contract: no option; parses hold heads and labels
    parse_outputs = ("heads", "deprels")

    @torch.no_grad()
    def parse(self, sentences, tokenizer):
        encoded = tokenizer([list(s) for s in sentences], is_split_into_words=True, padding=True, return_tensors="pt")
        scores = self(encoded["input_ids"], encoded["attention_mask"])
        results = []
        for b, words in enumerate(sentences):
            heads = [0] + [int(scores[b, i, :i].argmax()) + 1 for i in range(1, len(words))]
            results.append({"words": list(words), "heads": heads, "deprels": ["root"] + ["dep"] * (len(words) - 1)})
        return results
