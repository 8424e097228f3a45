"""StructFormer: joint unsupervised induction of dependency and constituency structure from masked language
modelling (Shen, Tay, Zheng, Bahri, Metzler, Courville; ACL 2021).

A parser network reads the word embeddings and predicts a syntactic distance for every split between adjacent
words and a syntactic height for every word. Together they give a differentiable dependency distribution
p_D(j|i) ("j is the parent of i"), which gates every self-attention head. Constituency trees are read off the
distances (Algorithm 1), dependency heads off p_D (Eq. 18).
"""

# The modular source of configuration_structformer.py and modeling_structformer.py, the standalone Hub code that
# scripts/modular_converter.py generates: edit this file, then run the converter.

import math
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Unpack

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput, TransformersKwargs, can_return_tuple

from ...configuration_utils import StructureConfig
from ...data.tokenization import encode_words
from ...layers import masked_lm_cross_entropy, random_keep_mask
from ...structs.decoding import chu_liu_edmonds, eisner
from ...structs.merge_orders import merge_order_targets, split_cross_entropy
from ...structs.trees import distances_to_spans

HEAD_DECODINGS = ("eisner", "chu-liu-edmonds", "argmax")


class StructFormerConfig(StructureConfig):
    r"""Configuration of a StructFormer (Shen et al., ACL 2021) masked language model.

    Defaults follow the paper's PTB setting: 8 layers, d_model 512, 8 heads, d_ff 2048, dropout 0.1,
    3 parser convolution layers of width 9.

    Args:
        vocab_size: number of word types (the PTB vocabulary: 9,999 words plus `<pad>` and `<mask>`).
        hidden_size: model width d.
        num_hidden_layers: number of dependency-constrained Transformer blocks.
        num_attention_heads: heads per block.
        intermediate_size: width of the feed-forward layers.
        hidden_dropout_prob: dropout on residual branches and feed-forward layers, and by default on the embeddings.
        attention_probs_dropout_prob: dropout on the attention weights (0 in the released runs).
        embedding_dropout_prob: dropout on the input embeddings; default `hidden_dropout_prob`. The authors' code:
            0 (its dropout sits on the final hidden state instead: `output_dropout_prob`).
        output_dropout_prob: dropout on the final hidden state before the tied output layer (the masked-LM head;
            the authors' code: 0.1, ours 0 by default).
        attention_initialization: the attention's query/key/value and output projections: `"fan_in"` (PyTorch's
            default uniform(+-1/sqrt(fan_in)), as every other linear layer) or `"xavier"` (Xavier-uniform with zero
            biases, the authors' code).
        fast_dropout: on CPU, draw dropout masks two to a 64-bit number of an SFC64 stream seeded from torch's
            generator and apply them as a multiply by 0/1 (`random_keep_mask`: the same distribution, several times
            cheaper than torch's per-element draws, still reproducible by `torch.manual_seed`); False:
            `torch.nn.functional.dropout`.
        num_parser_layers: convolution layers of the parser network.
        parser_conv_size: kernel width of those convolutions.
        max_position_embeddings: longest sentence (in words) the model accepts.
        relations: dependency relations a head may attend along, in order (`"parent"`, `"dependent"`).
        relation_weight_activation: how per-head relation weights are normalised (`"softmax"`, Eqs. 13-14,
            or `"sigmoid"`).
        calibration_scope: over what the largest calibration margin (App. A.2) is taken in training:
            `"sentence"` (as the paper writes it) or `"batch"` (one maximum over the batch, as the authors' code
            does). Evaluation and parsing calibrate per sentence, so a parse never depends on its batch, unless a
            forward call asks for `calibration_scope="batch"` (the authors' perplexity protocol).
        head_decoding: how `parse` turns p_D into dependency heads: `"eisner"` (projective maximum spanning tree
            over log p_D, the highest word as root), `"chu-liu-edmonds"` (the non-projective one), or `"argmax"`
            (Eq. 18 per word, as the paper scores it; the heads may then contain cycles).
        punctuation_policy: `"reattach"`: the model was trained without punctuation, so the pipeline removes
            punctuation before the model sees a sentence and re-attaches it afterwards; `"keep"`: it sees every word.
        layer_norm_eps: epsilon of the layer norms.
        initializer_range: embeddings are initialised uniform(-initializer_range, initializer_range).
    """

    model_type = "structformer"
    default_auto_map = {
        "AutoConfig": "configuration_structformer.StructFormerConfig",
        "AutoModel": "modeling_structformer.StructFormerModel",
        "AutoModelForMaskedLM": "modeling_structformer.StructFormerForMaskedLM",
    }

    def __init__(
        self,
        vocab_size=10001,
        hidden_size=512,
        num_hidden_layers=8,
        num_attention_heads=8,
        intermediate_size=2048,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.0,
        embedding_dropout_prob=None,
        output_dropout_prob=0.0,
        attention_initialization="fan_in",
        fast_dropout=True,
        num_parser_layers=3,
        parser_conv_size=9,
        max_position_embeddings=512,
        relations=("parent", "dependent"),
        relation_weight_activation="softmax",
        calibration_scope="sentence",
        head_decoding="chu-liu-edmonds",
        punctuation_policy="reattach",
        layer_norm_eps=1e-5,
        initializer_range=0.1,
        pad_token_id=0,
        mask_token_id=1,
        tie_word_embeddings=True,
        **kwargs,
    ):
        if hidden_size % num_attention_heads != 0:
            raise ValueError(
                f"hidden_size ({hidden_size}) must be a multiple of num_attention_heads ({num_attention_heads})"
            )
        unknown = set(relations) - {"parent", "dependent"}
        if unknown or not relations:
            raise ValueError(f"relations must be a non-empty subset of ('parent', 'dependent'), got {relations}")
        if relation_weight_activation not in ("softmax", "sigmoid"):
            raise ValueError(
                f"relation_weight_activation must be 'softmax' or 'sigmoid', got {relation_weight_activation!r}"
            )
        if calibration_scope not in ("sentence", "batch"):
            raise ValueError(f"calibration_scope must be 'sentence' or 'batch', got {calibration_scope!r}")
        if head_decoding not in HEAD_DECODINGS:
            raise ValueError(f"head_decoding must be one of {HEAD_DECODINGS}, got {head_decoding!r}")
        if attention_initialization not in ("fan_in", "xavier"):
            raise ValueError(f"attention_initialization must be 'fan_in' or 'xavier', got {attention_initialization!r}")
        if parser_conv_size % 2 != 1:
            raise ValueError(f"parser_conv_size must be odd (same padding), got {parser_conv_size}")
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.embedding_dropout_prob = embedding_dropout_prob
        self.output_dropout_prob = output_dropout_prob
        self.attention_initialization = attention_initialization
        self.fast_dropout = fast_dropout
        self.num_parser_layers = num_parser_layers
        self.parser_conv_size = parser_conv_size
        self.max_position_embeddings = max_position_embeddings
        self.relations = list(relations)
        self.relation_weight_activation = relation_weight_activation
        self.calibration_scope = calibration_scope
        self.head_decoding = head_decoding
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.mask_token_id = mask_token_id
        super().__init__(
            punctuation_policy=punctuation_policy,
            pad_token_id=pad_token_id,
            tie_word_embeddings=tie_word_embeddings,
            **kwargs,
        )

    @property
    def reported_options(self) -> dict[str, dict]:
        """The decodings evaluation reports beside the default, by the suffix of their scores: the paper's per-word
        argmax heads (Eq. 18; `uas_argmax` ...), dependencies alone."""
        return (
            {}
            if self.head_decoding == "argmax"
            else {"argmax": {"head_decoding": "argmax", "structures": ("dependency",)}}
        )


# The widest spread of head logits within a sentence that p_D computes in float32 (exp(60) ~ 1e26 < 3e38).
FLOAT32_LOGIT_RANGE = 60.0


def split_mask_from(mask: torch.Tensor) -> torch.Tensor:
    """`(B, L)` bool: True at position k when k and k+1 are both real words (k is a split point)."""
    return F.pad(mask[:, 1:], (0, 1), value=False) & mask


def calibrate_distances(
    distances: torch.Tensor, heights: torch.Tensor, mask: torch.Tensor, per_batch: bool = False
) -> torch.Tensor:
    """Lower all distances of a sentence so that no constituent is cut off from its context (App. A.2, Eqs. 19-21).

    For every span [l, r] other than the whole sentence, the margin is by how much both boundary distances exceed
    the largest height inside the span; the largest margin of the sentence is subtracted from its distances
    (as the paper writes it), or with `per_batch` the largest margin of the whole batch (as the authors' code
    does).
    """
    length = distances.size(1)
    index = torch.arange(length, device=distances.device)
    upper = index[:, None] <= index[None, :]  # [l, r]: l <= r
    neg = torch.finfo(heights.dtype).min
    # Largest height in [l, r], as a running maximum over r of the heights from l on.
    span_heights = heights[:, None, :].masked_fill(~upper, neg).cummax(dim=-1).values
    split_mask = split_mask_from(mask)
    big = torch.finfo(distances.dtype).max / 4
    boundary = distances.masked_fill(~split_mask, big)  # the sentence ends act as infinitely high splits
    left_boundary = F.pad(boundary[:, :-1], (1, 0), value=big)  # distance of split l-1
    margin = torch.minimum(
        torch.relu(left_boundary[:, :, None] - span_heights), torch.relu(boundary[:, None, :] - span_heights)
    )
    whole_sentence = (index[:, None] == 0) & ~split_mask[:, None, :]  # [0, r] with r the last word (or a pad)
    valid = upper & mask[:, None, :] & ~whole_sentence
    margin = margin.masked_fill(~valid, 0.0).flatten(1).amax(dim=-1)
    if per_batch:
        margin = margin.amax().expand_as(margin)
    return distances - margin[:, None]


def dependency_distribution(
    distances: torch.Tensor,
    heights: torch.Tensor,
    mask: torch.Tensor,
    split_scale: torch.Tensor,
    head_scale: torch.Tensor,
    precision: str = "auto",
) -> torch.Tensor:
    """The parent distribution p_D(j|i) of Eqs. 6-12, exactly, in O(B L^2) memory.

    Word i's constituent is [l, r] with probability pL(l|i) pR(r|i) (Eqs. 7-10); its parent is then j in [l, r]
    with probability softmax_j(h_j * head_scale) over the span (Eq. 11). The authors build the B x L x L x L
    span tensors. Here the sum over spans is reorganised: with w_j = exp(a_j) and Z[l, r] = sum_{k in [l, r]} w_k,

        p_D(j|i) = w_j sum_{l <= min(i,j)} sum_{r >= max(i,j)} pL(l|i) pR(r|i) / Z[l, r],

    and because pL(l|i) = 0 for l > i and pR(r|i) = 0 for r < i, the inner sums are two (B, L, L) matrix products
    followed by a prefix sum over l (for j <= i) or a suffix sum over r (for j >= i).

    Args:
        distances: `(B, L)`, distance of the split between words k and k+1 at position k (entries that are not
            splits are ignored).
        heights: `(B, L)` syntactic heights.
        mask: `(B, L)` bool, True at real words.
        split_scale, head_scale: positive scalars, 1/mu_1 and 1/mu_2.
        precision: `"auto"` computes on the CPU in float32 when every sentence's head logits (h_j * head_scale)
            span at most `FLOAT32_LOGIT_RANGE`, so that no w_j or 1/Z can underflow or overflow, and in float64
            otherwise; on an accelerator (but MPS) always in float64, which needs no look at the values;
            `"float64"` always computes in float64.

    Returns:
        `(B, L, L)` with p_D(j|i) at [b, i, j]; zero on the diagonal and at pads. Rows need not sum to one.
    """
    if precision not in ("auto", "float64"):
        raise ValueError(f"precision must be 'auto' or 'float64', got {precision!r}")
    dtype = distances.dtype
    # With logits centred on the sentence's largest, w_j >= exp(-spread) and 1/Z <= exp(spread): float32 holds both
    # while the spread is small (trained models stay within a few units); float64 holds them up to about 700.
    if precision == "float64" or dtype == torch.float64:
        compute = torch.float64
    elif distances.device.type in ("cpu", "mps"):
        # Reading the spread costs nothing on the CPU (and MPS has no float64); elsewhere it would make the host
        # wait for the device every forward pass, so float64, exact at any spread, is used without looking.
        logits = (heights * head_scale).detach()
        spread = logits.masked_fill(~mask, float("-inf")).amax(-1) - logits.masked_fill(~mask, float("inf")).amin(-1)
        compute = torch.float32 if bool((spread <= FLOAT32_LOGIT_RANGE).all()) else torch.float64
    else:
        compute = torch.float64
    distances, heights = distances.to(compute), heights.to(compute)
    length = distances.size(1)
    index = torch.arange(length, device=distances.device)
    split_mask = split_mask_from(mask)

    # gamma[b, i, k] = p(word i's constituent extends across split k), Eq. 6; nothing crosses a sentence end.
    gamma = torch.sigmoid((heights[:, :, None] - distances[:, None, :]) * split_scale)
    gamma = gamma.masked_fill(~split_mask[:, None, :], 0.0)
    left_of_i = index[None, :] < index[:, None]  # [i, k]: k < i
    # p(l in C(i)) for l <= i is the minimum of gamma over splits l..i-1 (Eq. 7); 1 for l >= i.
    inside_left = torch.where(left_of_i, gamma, 1.0).flip(-1).cummin(-1).values.flip(-1)
    p_left = inside_left - F.pad(inside_left[..., :-1], (1, 0), value=0.0)  # Eq. 8
    # p(r in C(i)) for r >= i is the minimum of gamma over splits i..r-1; 1 for r <= i.
    inside_right = torch.where(left_of_i, 1.0, gamma).cummin(-1).values
    inside_right = F.pad(inside_right[..., :-1], (1, 0), value=1.0)
    p_right = inside_right - F.pad(inside_right[..., 1:], (0, 1), value=0.0)  # Eq. 9

    # Span normalisers in the log domain, centred per sentence so that w_j <= 1.
    logits = (heights * head_scale).masked_fill(~mask, -1e4)
    centre = logits.amax(dim=-1, keepdim=True).detach()
    logits = logits - centre
    upper = index[:, None] <= index[None, :]  # [l, r]: l <= r
    log_z = torch.logcumsumexp(logits[:, None, :].masked_fill(~upper, -1e4), dim=-1)
    span_ok = upper & mask[:, :, None] & mask[:, None, :]
    # exp(-log Z) only where the span is real: elsewhere the exponent is masked before exp so no inf appears.
    inv_z = torch.exp(-log_z.masked_fill(~span_ok, 0.0)).masked_fill(~span_ok, 0.0)
    weights = torch.exp(logits).masked_fill(~mask, 0.0)

    # autocast would run these in bfloat16; a device without autocast (meta) runs them as they are.
    device_type = distances.device.type
    with torch.autocast(device_type, enabled=False) if torch.amp.is_autocast_available(device_type) else nullcontext():
        right_sums = torch.bmm(p_right, inv_z.transpose(1, 2))  # [i, l] = sum_r pR(r|i) / Z[l, r]
        left_sums = torch.bmm(p_left, inv_z)  # [i, r] = sum_l pL(l|i) / Z[l, r]
    parent_before = torch.cumsum(p_left * right_sums, dim=-1)  # j <= i: sum over l <= j
    parent_after = torch.flip(torch.cumsum(torch.flip(p_right * left_sums, [-1]), dim=-1), [-1])  # j >= i
    p_parent = weights[:, None, :] * torch.where(left_of_i, parent_before, parent_after)
    keep = mask[:, :, None] & mask[:, None, :] & ~torch.eye(length, dtype=torch.bool, device=mask.device)
    return p_parent.masked_fill(~keep, 0.0).to(dtype)


def decode_heads(parent: torch.Tensor, heights: torch.Tensor, mask: torch.Tensor, method: str) -> torch.Tensor:
    """`(B, L)` 1-based heads (0 = root, 0 at pads) from p_D. The root is the highest word in every method.

    `"argmax"` is Eq. 18, each word's most probable parent, as the paper scores it: per-word decisions that may
    form cycles. `"eisner"` / `"chu-liu-edmonds"` take the projective / non-projective maximum spanning tree over
    log p_D with that root, so the heads always form a tree.
    """
    root = heights.masked_fill(~mask, float("-inf")).argmax(dim=-1)
    if method == "argmax":
        heads = parent.argmax(dim=-1) + 1
        heads[torch.arange(len(root)), root] = 0
        return heads.masked_fill(~mask, 0)
    batch, length = mask.shape
    # Position 0 is the artificial root; scores[b, i, j] is the score of j heading i, both shifted by one.
    scores = torch.full((batch, length + 1, length + 1), float("-inf"), dtype=torch.float64, device=parent.device)
    scores[:, 1:, 1:] = parent.double().clamp_min(1e-30).log()  # every arc stays possible: a tree always exists
    scores[:, 1:, 1:].diagonal(dim1=-2, dim2=-1).fill_(float("-inf"))
    scores[torch.arange(batch), root + 1, 0] = 0.0
    word_mask = F.pad(mask, (1, 0), value=False)
    decode = eisner if method == "eisner" else chu_liu_edmonds
    return decode(scores, word_mask)[:, 1:]


@dataclass
class StructFormerModelOutput(ModelOutput):
    """Outputs of `StructFormerModel`.

    Args:
        last_hidden_state: `(B, L, d)` final-layer states after the final layer norm.
        distances: `(B, L)` calibrated syntactic distances; position k is the split between words k and k+1, and
            positions that are not splits hold +inf.
        heights: `(B, L)` syntactic heights; pads hold -inf.
        parent_distribution: `(B, L, L)` p_D(j|i) at [b, i, j].
        hidden_states: optional tuple of `(B, L, d)`, the embeddings then each block's output.
        attentions: optional tuple of `(B, H, L, L)` dependency-constrained attention weights per block.
    """

    last_hidden_state: torch.Tensor | None = None
    distances: torch.Tensor | None = None
    heights: torch.Tensor | None = None
    parent_distribution: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass
class StructFormerMaskedLMOutput(ModelOutput):
    """Outputs of `StructFormerForMaskedLM`.

    Args:
        loss: masked-LM cross-entropy, averaged over the positions whose label is not -100; in training with a
            teacher's trees, plus `teacher_weight` times `teacher_loss`.
        logits: `(B, L, V)` scores at every position; in training with `sparse_prediction` and `labels`, `(N, V)`
            at the N labelled positions only (in row-major order of the batch).
        distances, heights, parent_distribution, hidden_states, attentions: as in `StructFormerModelOutput`.
        mlm_loss: in training with a teacher's trees, the masked-LM cross-entropy alone.
        teacher_loss: in training with a teacher's trees (`teacher_merge_order`), the distances' cross-entropy
            against them (`split_cross_entropy`: at every node of the teacher's tree, -log softmax over the node's
            splits of its own split's distance, summed over a tree and divided by its length), whatever its weight.
    """

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    distances: torch.Tensor | None = None
    heights: torch.Tensor | None = None
    parent_distribution: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    mlm_loss: torch.Tensor | None = None
    teacher_loss: torch.Tensor | None = None


class StructFormerDropout(nn.Module):
    """Dropout; on CPU with `fast` its masks come from `random_keep_mask` (same distribution as torch's)."""

    def __init__(self, p: float, fast: bool):
        super().__init__()
        self.p = p
        self.fast = fast

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return hidden
        if not self.fast or hidden.device.type != "cpu" or self.p >= 1:
            return F.dropout(hidden, self.p, training=True)
        keep = random_keep_mask(hidden.shape, self.p, hidden.dtype, hidden.device)
        # Times 1.0 is exact, so the kept values are those of torch's dropout: hidden / (1 - p), rounded once.
        return (hidden * keep).mul_(1 / (1 - self.p))

    def extra_repr(self) -> str:
        return f"p={self.p}, fast={self.fast}"


class StructFormerParser(nn.Module):
    """The parser network (Eqs. 1-3): convolutions over the word embeddings, then distance and height heads."""

    def __init__(self, config: StructFormerConfig):
        super().__init__()
        d = config.hidden_size
        self.convs = nn.ModuleList(
            nn.Conv1d(d, d, config.parser_conv_size, padding=config.parser_conv_size // 2)
            for _ in range(config.num_parser_layers)
        )
        self.norm = nn.LayerNorm(d, elementwise_affine=False)
        # Width-2 convolution over words (k, k+1), written as a linear map of the pair.
        self.distance_pair = nn.Linear(2 * d, d)
        self.distance_out = nn.Linear(d, 1)
        self.height_hidden = nn.Linear(d, d)
        self.height_out = nn.Linear(d, 1)

    def forward(self, embeddings: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = embeddings
        # Pads must not leak into the convolution. A multiply by 0/1: on CPU masked_fill with a bool mask is slower.
        word_mask = mask[:, :, None].to(embeddings.dtype)
        for conv in self.convs:
            hidden = hidden * word_mask
            hidden = torch.tanh(self.norm(conv(hidden.transpose(1, 2)).transpose(1, 2)))
        next_hidden = F.pad(hidden[:, 1:], (0, 0, 0, 1))
        pair = torch.tanh(self.norm(self.distance_pair(torch.cat([hidden, next_hidden], dim=-1))))
        distances = self.distance_out(pair).squeeze(-1)
        heights = self.height_out(torch.tanh(self.norm(self.height_hidden(hidden)))).squeeze(-1)
        return distances.float(), heights.float()


class StructFormerAttentionProjection(nn.Linear):
    """A projection of the attention made of `blocks` square d x d layers side by side (query, key and value: 3),
    so that `attention_initialization="xavier"` initialises each as the authors' separate layers."""

    def __init__(self, hidden_size: int, blocks: int):
        super().__init__(hidden_size, blocks * hidden_size)
        self.blocks = blocks


class StructFormerAttention(nn.Module):
    """Dependency-constrained self-attention (Eqs. 16-17): sigmoid(QK^T / sqrt(d_head)) gated by p_ij, times V."""

    def __init__(self, config: StructFormerConfig):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.qkv = StructFormerAttentionProjection(config.hidden_size, 3)
        self.out = StructFormerAttentionProjection(config.hidden_size, 1)
        self.dropout = StructFormerDropout(config.attention_probs_dropout_prob, config.fast_dropout)

    def forward(self, hidden: torch.Tensor, relation_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        batch, length, _ = hidden.shape
        query, key, value = (
            self.qkv(hidden).view(batch, length, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        )
        gate = torch.sigmoid(query @ key.transpose(-1, -2) / math.sqrt(self.head_dim))
        weights = self.dropout(gate * relation_mask.to(gate.dtype))
        context = (weights @ value).transpose(1, 2).reshape(batch, length, -1)
        return self.out(context), weights


class StructFormerLayer(nn.Module):
    """Pre-layer-norm block: dependency-constrained attention, then a LeakyReLU feed-forward layer."""

    def __init__(self, config: StructFormerConfig):
        super().__init__()
        self.attention_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.attention = StructFormerAttention(config)
        self.feed_forward_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.feed_forward = nn.Sequential(
            nn.Linear(config.hidden_size, config.intermediate_size),
            nn.LeakyReLU(),
            StructFormerDropout(config.hidden_dropout_prob, config.fast_dropout),
            nn.Linear(config.intermediate_size, config.hidden_size),
        )
        self.dropout = StructFormerDropout(config.hidden_dropout_prob, config.fast_dropout)

    def forward(self, hidden: torch.Tensor, relation_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        attended, weights = self.attention(self.attention_norm(hidden), relation_mask)
        hidden = hidden + self.dropout(attended)
        hidden = hidden + self.dropout(self.feed_forward(self.feed_forward_norm(hidden)))
        return hidden, weights


class StructFormerPreTrainedModel(PreTrainedModel):
    config_class = StructFormerConfig
    config: StructFormerConfig
    base_model_prefix = "structformer"
    main_input_name = "input_ids"
    _no_split_modules = ["StructFormerLayer"]

    @torch.no_grad()
    def _init_weights(self, module):
        if isinstance(module, nn.Embedding):
            init.uniform_(module.weight, -self.config.initializer_range, self.config.initializer_range)
        elif isinstance(module, StructFormerAttentionProjection) and self.config.attention_initialization == "xavier":
            for block in module.weight.chunk(module.blocks):
                init.xavier_uniform_(block)
            init.zeros_(module.bias)
        elif isinstance(module, (nn.Linear, nn.Conv1d)):
            # PyTorch's default fan-in scaling, as in the authors' code.
            fan_in = module.weight[0].numel()
            bound = 1.0 / math.sqrt(fan_in)
            init.uniform_(module.weight, -bound, bound)
            if module.bias is not None:
                init.uniform_(module.bias, -bound, bound)
        elif isinstance(module, nn.LayerNorm) and module.weight is not None:
            init.ones_(module.weight)
            init.zeros_(module.bias)
        elif isinstance(module, StructFormerModel):
            init.normal_(module.relation_logits, mean=0.0, std=0.1)
            init.zeros_(module.log_scales)
        elif isinstance(module, StructFormerForMaskedLM):
            init.zeros_(module.output_bias)


class StructFormerModel(StructFormerPreTrainedModel):
    """The StructFormer encoder: parser network, p_D, and dependency-constrained Transformer blocks."""

    # Loading a masked-LM checkpoint into the encoder alone leaves its output bias unused, as intended.
    _keys_to_ignore_on_load_unexpected = ["output_bias"]

    def __init__(self, config: StructFormerConfig):
        super().__init__(config)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.embed_positions = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        embedding_dropout = config.embedding_dropout_prob
        self.embed_dropout = StructFormerDropout(
            config.hidden_dropout_prob if embedding_dropout is None else embedding_dropout, config.fast_dropout
        )
        self.parser = StructFormerParser(config)
        self.layers = nn.ModuleList(StructFormerLayer(config) for _ in range(config.num_hidden_layers))
        self.final_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        # Per layer and head, logits of the weights over the relations (Eqs. 13-14).
        self.relation_logits = nn.Parameter(
            torch.zeros(config.num_hidden_layers, config.num_attention_heads, len(config.relations))
        )
        # log(1/mu_1) for the split test (Eq. 6) and log(1/mu_2) for the head softmax (Eq. 11).
        self.log_scales = nn.Parameter(torch.zeros(2))
        self.post_init()

    def get_input_embeddings(self):
        return self.embed_tokens

    def set_input_embeddings(self, value):
        self.embed_tokens = value

    def relation_weights(self) -> torch.Tensor:
        """`(layers, heads, relations)` mixture weights of the dependency relations."""
        if self.config.relation_weight_activation == "softmax":
            return torch.softmax(self.relation_logits, dim=-1)
        return torch.sigmoid(self.relation_logits)

    def parse_scores(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        embeddings: torch.Tensor | None = None,
        with_parent: bool = True,
        calibration_scope: str | None = None,
    ):
        """Distances, heights (with +inf / -inf where undefined) and p_D (None without `with_parent`) for a batch
        (`embeddings`: the word embeddings of `input_ids` where the caller has them already). `calibration_scope`
        (`"sentence"` / `"batch"`) overrides the default: the config's scope in training, per sentence otherwise."""
        mask = attention_mask.bool()
        if embeddings is None:
            embeddings = self.embed_tokens(input_ids)
        distances, heights = self.parser(embeddings, mask)
        if calibration_scope is None:
            calibration_scope = self.config.calibration_scope if self.training else "sentence"
        elif calibration_scope not in ("sentence", "batch"):
            raise ValueError(f"calibration_scope must be 'sentence' or 'batch', got {calibration_scope!r}")
        distances = calibrate_distances(distances, heights, mask, per_batch=calibration_scope == "batch")
        split_scale, head_scale = self.log_scales.exp().unbind()
        parent = dependency_distribution(distances, heights, mask, split_scale, head_scale) if with_parent else None
        distances = distances.masked_fill(~split_mask_from(mask), float("inf"))
        heights = heights.masked_fill(~mask, float("-inf"))
        return distances, heights, parent

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        calibration_scope: str | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> StructFormerModelOutput:
        """`calibration_scope`: see `parse_scores`. `output_attentions`, `output_hidden_states`: default the
        config's."""
        output_attentions = kwargs.get("output_attentions", self.config.output_attentions)
        output_hidden_states = kwargs.get("output_hidden_states", self.config.output_hidden_states)
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be (batch, length), got shape {tuple(input_ids.shape)}")
        length = input_ids.size(1)
        if length > self.config.max_position_embeddings:
            raise ValueError(
                f"sentence of {length} tokens exceeds max_position_embeddings={self.config.max_position_embeddings}"
            )
        if attention_mask is None:
            attention_mask = input_ids.ne(self.config.pad_token_id)
        mask = attention_mask.bool()

        embeddings = self.embed_tokens(input_ids)
        distances, heights, parent = self.parse_scores(input_ids, mask, embeddings, calibration_scope=calibration_scope)
        # Each head attends along a mixture of "to my parent" (p_D) and "to my dependent" (p_D^T), Eq. 15.
        relations = torch.stack(
            [parent if name == "parent" else parent.transpose(1, 2) for name in self.config.relations], dim=1
        )
        relation_masks = torch.einsum("lhr,brij->lbhij", self.relation_weights(), relations)

        positions = torch.arange(length, device=input_ids.device)
        hidden = self.embed_dropout(embeddings + self.embed_positions(positions)[None])
        all_hidden: tuple[torch.Tensor, ...] | None = (hidden,) if output_hidden_states else None
        all_attentions: tuple[torch.Tensor, ...] | None = () if output_attentions else None
        for layer, relation_mask in zip(self.layers, relation_masks):
            hidden, weights = layer(hidden, relation_mask)
            if all_hidden is not None:
                all_hidden += (hidden,)
            if all_attentions is not None:
                all_attentions += (weights,)
        return StructFormerModelOutput(
            last_hidden_state=self.final_norm(hidden),
            distances=distances,
            heights=heights,
            parent_distribution=parent,
            hidden_states=all_hidden,
            attentions=all_attentions,
        )

    @property
    def max_parse_words(self) -> int:
        """The longest sentence `parse` accepts (one position per word)."""
        return self.config.max_position_embeddings

    # The parse contract (the pipeline and CLI check every call against it before parsing): the keyword options of
    # `parse` with the values each takes, and what a parse holds besides `words`.
    parse_options = {"head_decoding": HEAD_DECODINGS, "structures": ("constituency", "dependency")}
    parse_outputs = ("spans", "heads", "scores")

    @torch.no_grad()
    def parse(
        self,
        sentences: list[list[str]],
        tokenizer,
        head_decoding: str | None = None,
        structures: Sequence[str] = ("constituency", "dependency"),
    ) -> list[dict]:
        """Parse a batch of sentences given as words (the words the model sees: no punctuation).

        Returns one dict per sentence: `words`; with `"constituency"` in `structures`, `spans`, the binary tree's
        constituents of two or more words (0-based `[start, end)`, top-down) by Algorithm 1; with `"dependency"`,
        `heads`, 1-based (0 = root) by `head_decoding` (default `config.head_decoding`, see `decode_heads`); and
        `scores` with the sentence's `distances` (n-1) and `heights` (n). Without `"dependency"`, p_D and the head
        decoding (most of the work after the parser network) are skipped. Raises ValueError naming the sentence
        when one cannot be parsed.
        """
        method = head_decoding or self.config.head_decoding
        if method not in HEAD_DECODINGS:
            raise ValueError(f"head_decoding must be one of {HEAD_DECODINGS}, got {method!r}")
        structures = (structures,) if isinstance(structures, str) else tuple(structures)
        if not structures or not set(structures) <= {"constituency", "dependency"}:
            raise ValueError(f"structures must be one or more of 'constituency', 'dependency', got {structures}")
        encoded = encode_words(sentences, tokenizer, self.config.max_position_embeddings)
        lengths = encoded["attention_mask"].sum(dim=-1).tolist()
        input_ids = encoded["input_ids"].to(self.device)
        mask = encoded["attention_mask"].to(self.device).bool()
        with_heads = "dependency" in structures
        distances, heights, parent = self.parse_scores(input_ids, mask, with_parent=with_heads)
        heads = decode_heads(parent, heights, mask, method).tolist() if with_heads else None
        results = []
        for b, (words, n) in enumerate(zip(sentences, lengths)):
            sentence_distances = distances[b, : n - 1].tolist()
            result: dict[str, Any] = {"words": list(words)}
            if "constituency" in structures:
                result["spans"] = [span for span in distances_to_spans(sentence_distances) if span[1] - span[0] > 1]
            if heads is not None:
                result["heads"] = heads[b][:n]
            result["scores"] = {"distances": sentence_distances, "heights": heights[b, :n].tolist()}
            results.append(result)
        return results


class StructFormerForMaskedLM(StructFormerPreTrainedModel):
    """StructFormer with its masked-LM head: final hidden states times the (tied) input embedding, plus a bias.

    Training state (not saved), set by a training run's callbacks: `sparse_prediction`, whether a forward call given
    `labels` scores the labelled positions alone (as transformers' ModernBERT does): the loss needs nothing else,
    and the vocabulary projection at every position costs a CPU training step of the PTB model about a tenth more;
    `teacher_weight`, the weight of the teacher's trees' loss beside the masked LM's (distillation: the parser's
    distances drawn toward a teacher's trees, the weight annealed to 0)."""

    _tied_weights_keys = {"lm_head.weight": "structformer.embed_tokens.weight"}
    accepts_loss_kwargs = False

    def __init__(self, config: StructFormerConfig):
        super().__init__(config)
        self.structformer = StructFormerModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.output_bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.output_dropout = StructFormerDropout(config.output_dropout_prob, config.fast_dropout)
        self.sparse_prediction = False
        self.teacher_weight = 1.0
        self.post_init()

    def get_output_embeddings(self):
        return self.lm_head

    def set_output_embeddings(self, new_embeddings):
        self.lm_head = new_embeddings

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        calibration_scope: str | None = None,
        teacher_merge_order: torch.LongTensor | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> StructFormerMaskedLMOutput:
        """`labels` `(B, L)`: the word to predict at each position, -100 where none is. `calibration_scope`: see
        `StructFormerModel.parse_scores`. `teacher_merge_order` `(B, L - 1)`: in training, a teacher's tree of each
        sentence as the order in which its splits merge (-1 past a sentence's splits; distillation, see
        `teacher_loss`); ignored in evaluation, whose loss stays the masked LM's."""
        outputs = self.structformer(
            input_ids, attention_mask=attention_mask, calibration_scope=calibration_scope, return_dict=True, **kwargs
        )
        hidden = self.output_dropout(outputs.last_hidden_state)
        loss = None
        if labels is not None and self.sparse_prediction:
            predicted = labels.ne(-100)
            logits = F.linear(hidden[predicted], self.lm_head.weight, self.output_bias)
            loss = masked_lm_cross_entropy(logits, labels[predicted])
        else:
            logits = F.linear(hidden, self.lm_head.weight, self.output_bias)
            if labels is not None:
                loss = masked_lm_cross_entropy(logits.flatten(0, 1), labels.flatten())
        mlm_loss = teacher_loss = None
        if self.training and teacher_merge_order is not None:
            if attention_mask is None:
                attention_mask = input_ids.ne(self.config.pad_token_id)
            lengths = attention_mask.sum(-1)
            targets = merge_order_targets(teacher_merge_order.to(input_ids.device), lengths)
            # the calibrated distances: a sentence's are shifted by one margin, so softmax over a node's splits is
            # that of the parser's own, and the splits it ranks first are those `parse` splits at
            teacher_loss = split_cross_entropy(outputs.distances, *targets, lengths, 1)
            mlm_loss = loss
            loss = teacher_loss * self.teacher_weight if loss is None else loss + teacher_loss * self.teacher_weight
        return StructFormerMaskedLMOutput(
            loss=loss,
            logits=logits,
            distances=outputs.distances,
            heights=outputs.heights,
            parent_distribution=outputs.parent_distribution,
            hidden_states=outputs.hidden_states,
            attentions=outputs.attentions,
            mlm_loss=mlm_loss,
            teacher_loss=teacher_loss,
        )

    @property
    def max_parse_words(self) -> int:
        return self.structformer.max_parse_words

    parse_options = StructFormerModel.parse_options
    parse_outputs = StructFormerModel.parse_outputs

    def parse(
        self,
        sentences: list[list[str]],
        tokenizer,
        head_decoding: str | None = None,
        structures: Sequence[str] = ("constituency", "dependency"),
    ) -> list[dict]:
        """See `StructFormerModel.parse`."""
        return self.structformer.parse(sentences, tokenizer, head_decoding, structures)


__all__ = [
    "StructFormerConfig",
    "StructFormerModel",
    "StructFormerForMaskedLM",
    "StructFormerPreTrainedModel",
    "calibrate_distances",
    "decode_heads",
    "dependency_distribution",
]
