"""R2D2: a recursive Transformer based on a differentiable tree (Hu, Mi, Wen, Wang, Su, Zheng, de Melo; ACL 2021).

Every chart cell [i, j] is built from its splits k by one composition function, a small Transformer over
[two task tokens, left child, right child]: one task output weighs left and right into the cell's candidate
representation, the other gives the log-probability of composing them. A split's score adds its children's scores;
a straight-through Gumbel-softmax over the splits (argmax at evaluation) picks the cell's representation and tree.
The chart is pruned (`encode_pruned_chart`) so that the compositions grow linearly with the sentence length. The
training objective is a bidirectional language model: each word is predicted, through the same composition
function, from the chart's longest nodes to its left and to its right.

With `pruning="parser"` the model is Fast-R2D2 (Hu, Mi, Li, de Melo; EMNLP 2022): a top-down parser (a BiLSTM) scores
the sentence's splits, the chart merges in the reverse of its split order instead of by the 2021 rule, and the
parser learns from trees drawn from the chart. It parses on its own, and `encode_tree` composes along its tree
only (n - 1 compositions).

"""

# The modular source of configuration_r2d2.py and modeling_r2d2.py, the standalone Hub code that
# scripts/modular_converter.py generates: edit this file, then run the converter.

import math
from dataclasses import dataclass
from typing import Unpack, cast

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput, TransformersKwargs, can_return_tuple

from ...configuration_utils import StructureConfig
from ...data.tokenization import encode_words
from ...layers import masked_lm_cross_entropy, random_keep_mask
from ...structs.merge_orders import (
    encode_along_merges,
    merge_order_from_split_scores,
    merge_order_targets,
    sample_chart_trees,
    split_cross_entropy,
    split_entropy,
)
from ...structs.pruned_chart import ChartEncoding, encode_pruned_chart
from ...structs.trees import distances_to_spans


class R2D2Config(StructureConfig):
    r"""Configuration of R2D2 (Hu et al., ACL 2021): a recursive Transformer over a differentiable, pruned CKY chart,
    trained as a bidirectional language model.

    Args:
        vocab_size: number of word types (with `<pad>`, `<mask>` and `<unk>`).
        hidden_size: width d of every node representation and of the composition Transformer.
        num_composition_layers: layers of the composition Transformer (the paper: 3).
        num_attention_heads, intermediate_size: its heads and feed-forward width.
        hidden_dropout_prob, attention_probs_dropout_prob: dropout in the composition Transformer.
        window_size: the chart rows filled as in CKY before pruning starts (the paper's m; 4 in the released
            training configuration). Compositions per sentence grow as about window^2 * length.
        parse_window_size: the window used by `parse` (the paper parses with 8); default `window_size`.
        gumbel_temperature: temperature of the straight-through Gumbel-softmax over split points in training.
        max_parse_words: the longest sentence `parse` accepts (the chart's index tables are length^2 per sentence).
        punctuation_policy: `"reattach"`: the model sees words without punctuation, as in its training text.
        pruning: which merge the pruned chart makes once its lowest rows are full. `"heuristic"`: the 2021 paper's
            rule over the chart's own composition probabilities. `"parser"`: Fast-R2D2 (Hu et al., EMNLP 2022): a
            top-down parser (a BiLSTM over its own word embeddings) scores every split of the sentence, and the chart
            merges in the reverse of its split order, lowest-scoring split first (with Gumbel noise in training, so
            that the order is a tree drawn from the parser). The parser is trained next to the language model to
            match trees drawn from the chart.
        parser_embedding_size, parser_hidden_size, parser_num_layers: the parser's word embeddings, BiLSTM width
            per direction and depth (the authors' English configuration: 128, 256, 4).
        parser_tree_samples: trees drawn from the chart per sentence for the parser's loss (the authors: 256).
        tree_decoding: the tree `parse` returns: `"parser"` (the parser's own tree: top-down at the highest split
            score; the default with parser pruning) or `"chart"` (the chart's best tree, the only one with heuristic
            pruning). Evaluation reports the other beside it.
        merge_rule: the heuristic pruning's choice of the next merge: `"2021"` (the ACL paper's rule) or `"2022"`
            (the authors' later code; see `encode_pruned_chart`).
        merge_noise: Gumbel noise on the merge scores in training, so that the merges are drawn rather than the
            best: on the parser's split scores (parser pruning) or the 2022 rule's bigram scores. None (default): on
            for both (the authors' code), read when the model runs (`noisy_merges`); the 2021 rule has none.
        parser_target: what the top-down parser learns from: `"sampled"` (`parser_tree_samples` trees drawn from
            the chart, the authors'), `"best"` (the chart's best tree only) or `"teacher"` (parser pruning only):
            trees given with each training batch (`teacher_merge_order`, e.g. an unsupervised teacher's), mixed with
            the chart's best tree by `R2D2ForLanguageModeling.teacher_weight` (1: the teacher's alone).
        parser_target_temperature: the temperature of the chart's split scores when the parser's target trees are
            drawn (`"sampled"`); above 1 flattens them.
        tie_decoder: the language model predicts words through the composition Transformer (True) or through a
            decoder Transformer of its own, of the same size (False; the authors' later code).
        initialization: `"normal"`: every linear layer and embedding N(0, `initializer_range`); `"pytorch"`: the
            linear layers keep PyTorch's default initialisation (the authors' code), embeddings stay normal.
    """

    model_type = "r2d2"
    default_auto_map = {
        "AutoConfig": "configuration_r2d2.R2D2Config",
        "AutoModel": "modeling_r2d2.R2D2Model",
        "AutoModelForMaskedLM": "modeling_r2d2.R2D2ForLanguageModeling",
    }
    tree_decodings = ("parser", "chart")
    merge_rules = ("2021", "2022")
    parser_targets = ("sampled", "best", "teacher")
    initializations = ("normal", "pytorch")

    def __init__(
        self,
        vocab_size=10003,
        hidden_size=256,
        num_composition_layers=3,
        num_attention_heads=4,
        intermediate_size=1024,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        window_size=4,
        parse_window_size=None,
        gumbel_temperature=1.0,
        max_parse_words=500,
        punctuation_policy="reattach",
        pruning="heuristic",
        parser_embedding_size=128,
        parser_hidden_size=256,
        parser_num_layers=4,
        parser_tree_samples=256,
        tree_decoding=None,
        merge_rule="2021",
        merge_noise=None,
        parser_target="sampled",
        parser_target_temperature=1.0,
        tie_decoder=True,
        initialization="normal",
        layer_norm_eps=1e-5,
        initializer_range=0.02,
        pad_token_id=0,
        mask_token_id=1,
        tie_word_embeddings=True,
        **kwargs,
    ):
        if hidden_size % num_attention_heads:
            raise ValueError(
                f"hidden_size ({hidden_size}) must be a multiple of num_attention_heads ({num_attention_heads})"
            )
        for name, value in (("window_size", window_size), ("parse_window_size", parse_window_size)):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        if pruning not in ("heuristic", "parser"):
            raise ValueError(f"pruning must be 'heuristic' or 'parser', got {pruning!r}")
        tree_decoding = tree_decoding or ("parser" if pruning == "parser" else "chart")
        if tree_decoding not in self.tree_decodings or (tree_decoding == "parser" and pruning != "parser"):
            raise ValueError(f"tree_decoding must be 'chart', or 'parser' with parser pruning; got {tree_decoding!r}")
        if merge_rule not in self.merge_rules:
            raise ValueError(f"merge_rule must be one of {self.merge_rules}, got {merge_rule!r}")
        if merge_noise and pruning == "heuristic" and merge_rule == "2021":
            raise ValueError("merge_noise needs parser pruning or merge_rule='2022': the 2021 rule has no noise")
        if parser_target not in self.parser_targets:
            raise ValueError(f"parser_target must be one of {self.parser_targets}, got {parser_target!r}")
        if parser_target == "teacher" and pruning != "parser":
            raise ValueError("parser_target='teacher' trains the top-down parser: it needs pruning='parser'")
        if parser_target_temperature <= 0:
            raise ValueError(f"parser_target_temperature must be positive, got {parser_target_temperature}")
        if initialization not in self.initializations:
            raise ValueError(f"initialization must be one of {self.initializations}, got {initialization!r}")
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_composition_layers = num_composition_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.window_size = window_size
        self.parse_window_size = parse_window_size or window_size
        self.gumbel_temperature = gumbel_temperature
        self.max_parse_words = max_parse_words
        self.pruning = pruning
        self.parser_embedding_size = parser_embedding_size
        self.parser_hidden_size = parser_hidden_size
        self.parser_num_layers = parser_num_layers
        self.parser_tree_samples = parser_tree_samples
        self.tree_decoding = tree_decoding
        self.merge_rule = merge_rule
        self.merge_noise = merge_noise
        self.parser_target = parser_target
        self.parser_target_temperature = parser_target_temperature
        self.tie_decoder = tie_decoder
        self.initialization = initialization
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
    def noisy_merges(self) -> bool:
        """Whether training draws the merges with Gumbel noise: `merge_noise`, or by default wherever the authors'
        code does (parser pruning, the 2022 rule)."""
        if self.merge_noise is None:
            return self.pruning == "parser" or self.merge_rule == "2022"
        return bool(self.merge_noise)

    @property
    def accepted_tree_decodings(self) -> tuple[str, ...]:
        """The tree decodings this model's `parse` takes: both with parser pruning, else the chart's."""
        return self.tree_decodings if self.pruning == "parser" else ("chart",)

    @property
    def reported_options(self) -> dict[str, dict]:
        """The decodings evaluation reports beside the default, by the suffix of their scores: with parser pruning,
        the other of the parser's tree and the chart's (`sentence_f1_chart` ...)."""
        return {
            method: {"tree_decoding": method} for method in self.accepted_tree_decodings if method != self.tree_decoding
        }


# Rows of `R2D2Model.special_embeddings`.
MIX_TASK, SCORE_TASK, MASK, BOS, EOS = range(5)
# Roles of the composition Transformer's inputs (added to queries and keys only, as in the authors' code).
ROLE_TASK, ROLE_LEFT, ROLE_RIGHT = range(3)


@dataclass
class R2D2ModelOutput(ModelOutput):
    """
    Args:
        root_states: `(B, d)` representation of each sentence's whole-sentence node.
        chart: every node of the batch's charts (`ChartEncoding`), or of their trees after `encode_tree`.
        split_scores: `(B, n - 1)` the top-down parser's split scores (parser pruning only).
    """

    root_states: torch.Tensor | None = None
    chart: ChartEncoding | None = None
    split_scores: torch.Tensor | None = None


@dataclass
class R2D2LanguageModelingOutput(ModelOutput):
    """
    Args:
        loss: mean cross-entropy of the predicted words (those with a label other than -100), plus in training with
            parser pruning the parser's loss.
        logits: `(B, n, vocab)` for every word; in training with `sparse_prediction` and `labels`, `(P, vocab)` for
            the P predicted words only (in row-major order of the batch).
        root_states: `(B, d)` as in `R2D2ModelOutput`.
        lm_loss: the language-model part of `loss`.
        parser_loss: the top-down parser's cross-entropy against its target trees (training with parser pruning).
        teacher_loss: in training with teacher trees (`teacher_merge_order`), the parser's cross-entropy against
            them, whatever their weight in its target (how far the parser has moved from its teacher).
        split_entropy: in training, how flat the chart's split distributions are (`split_entropy`: 1 is uniform).
    """

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    root_states: torch.Tensor | None = None
    lm_loss: torch.Tensor | None = None
    parser_loss: torch.Tensor | None = None
    teacher_loss: torch.Tensor | None = None
    split_entropy: torch.Tensor | None = None


class R2D2FeedForward(nn.Sequential):
    """The composition layer's feed-forward block: expand, GELU, dropout, contract. A `Sequential` (parameters
    `0.*` and `3.*`) whose parts have names: `R2D2CompositionLayer.forward` runs them one by one, drawing the
    dropout's mask with its other masks (`dropout_multipliers`)."""

    def __init__(self, config):
        super().__init__(
            nn.Linear(config.hidden_size, config.intermediate_size),
            nn.GELU(),
            nn.Dropout(config.hidden_dropout_prob),
            nn.Linear(config.intermediate_size, config.hidden_size),
        )

    # (cast: a Sequential's items are typed Module; __init__ put these types there)
    @property
    def expand(self) -> nn.Linear:
        return cast(nn.Linear, self[0])

    @property
    def activation(self) -> nn.Module:
        return self[1]

    @property
    def dropout(self) -> nn.Dropout:
        return cast(nn.Dropout, self[2])

    @property
    def contract(self) -> nn.Linear:
        return cast(nn.Linear, self[3])


class R2D2CompositionLayer(nn.Module):
    """One post-LayerNorm Transformer layer over the composition's inputs [tasks..., left, right], role embeddings
    added to queries and keys (as the authors' code). Each task input attends to itself, left and right; left and
    right attend to each other only."""

    def __init__(self, config: R2D2Config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.role_embeddings = nn.Embedding(3, config.hidden_size)
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.output = nn.Linear(config.hidden_size, config.hidden_size)
        self.attention_dropout = config.attention_probs_dropout_prob
        self.attention_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.feed_forward = R2D2FeedForward(config)
        self.feed_forward_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def fused_qkv(self, num_tasks: int) -> tuple[torch.Tensor, torch.Tensor]:
        """`(3d, d)` weight and `(T, 3d)` per-input bias of queries, keys and values in one projection, T = num_tasks
        + 2: a role embedding r enters queries and keys only, and `W (h + r) + b = W h + (W r + b)`. The attention
        scale 1 / sqrt(head size) is folded into the queries."""
        scale = 1.0 / math.sqrt(self.query.out_features // self.num_heads)
        roles = self.role_embeddings.weight[[ROLE_TASK] * num_tasks + [ROLE_LEFT, ROLE_RIGHT]]
        weight = torch.cat([self.query.weight * scale, self.key.weight, self.value.weight])
        bias = torch.cat(
            [
                F.linear(roles, self.query.weight, self.query.bias) * scale,
                F.linear(roles, self.key.weight, self.key.bias),
                self.value.bias.expand(len(roles), -1),
            ],
            dim=-1,
        )
        return weight, bias

    def dropout_multipliers(
        self, count: int, length: int, dtype: torch.dtype, device: torch.device
    ) -> list[torch.Tensor | None]:
        """Dropout masks of `forward`'s four sites, as multipliers 0.0 (dropped) or 1 / (1 - p), None where p is 0:
        the attention probabilities `(C, T, 3, H)` (keys: itself, left, right), the attention output `(C, T, d)`,
        the feed-forward's inner activations `(C, T, f)` and its output `(C, T, d)`. On CPU the sites of one
        probability come from one `random_keep_mask` draw (seeded from torch's generator, so that `torch.manual_seed`
        and a checkpoint's RNG state reproduce them): torch's per-element Bernoulli draws took a quarter of a CPU
        training step of the composition Transformer. Elsewhere they are torch's own draws on the device."""
        dim = self.query.in_features
        sites = [
            ((count, length, 3, self.num_heads), self.attention_dropout),
            ((count, length, dim), self.dropout.p),
            ((count, length, self.feed_forward.expand.out_features), self.feed_forward.dropout.p),
            ((count, length, dim), self.dropout.p),
        ]
        multipliers: list[torch.Tensor | None] = [None] * len(sites)
        for p in sorted({p for _, p in sites if p > 0}):
            indices = [index for index, (_, site_p) in enumerate(sites) if site_p == p]
            sizes = [math.prod(sites[index][0]) for index in indices]
            if device.type == "cpu":
                keep = random_keep_mask((sum(sizes),), p, dtype, device)
            else:
                keep = torch.empty(sum(sizes), dtype=dtype, device=device).bernoulli_(1 - p)
            if p < 1:
                keep.mul_(1 / (1 - p))
            for index, part in zip(indices, keep.split(sizes)):
                multipliers[index] = part.view(sites[index][0])
        return multipliers

    def forward(self, hidden: torch.Tensor, num_tasks: int) -> torch.Tensor:
        """`hidden` (C, T, d): num_tasks task inputs, then left and right -> (C, T, d).

        The attention is written out for this visibility: an input's keys are at most [itself, left, right] (left
        and right: [left, right]), so its scores are elementwise products summed per head, with no T x T batched
        matmuls and no mask; queries, keys and values come from one projection (`fused_qkv`). The same function as
        a standard layer with that attention mask, up to float32 rounding (tests/helpers/reference_r2d2.py has one)."""
        count, length, dim = hidden.shape
        heads = self.num_heads
        head_dim = dim // heads
        if self.training:
            keep = self.dropout_multipliers(count, length, hidden.dtype, hidden.device)
        else:
            keep = [None] * 4
        weight, bias = self.fused_qkv(num_tasks)
        query, key, value = F.linear(hidden, weight).add_(bias).split(dim, dim=-1)
        # (C, T, 3, H): the scores of [itself, left, right]; left and right see themselves among [left, right] only.
        self_scores = (query * key).view(count, length, heads, head_dim).sum(-1)
        self_scores[:, num_tasks:] = float("-inf")
        pair_scores = (query[:, :, None] * key[:, None, num_tasks:]).view(count, length, 2, heads, head_dim).sum(-1)
        probs = torch.softmax(torch.cat([self_scores[:, :, None], pair_scores], dim=2), dim=2)
        if keep[0] is not None:
            probs = probs * keep[0]
        values = value.view(count, length, heads, head_dim)
        pair_values = value[:, num_tasks:].reshape(count, 1, 2, heads, head_dim)
        attended = probs[:, :, 0, :, None] * values + (probs[:, :, 1:, :, None] * pair_values).sum(2)
        out = self.output(attended.view(count, length, dim))
        hidden = self.attention_norm(hidden + (out if keep[1] is None else out * keep[1]))
        inner = self.feed_forward.activation(self.feed_forward.expand(hidden))
        if keep[2] is not None:
            inner = inner * keep[2]
        out = self.feed_forward.contract(inner)
        return self.feed_forward_norm(hidden + (out if keep[3] is None else out * keep[3]))


class R2D2SplitParser(nn.Module):
    """Fast-R2D2's top-down parser: a BiLSTM over its own word embeddings; the score of split k (between words k and
    k + 1) is an MLP of the forward state of word k and the backward state of word k + 1, each layer-normalised (as
    the authors' released code)."""

    def __init__(self, config: R2D2Config):
        super().__init__()
        hidden = config.parser_hidden_size
        self.embed_tokens = nn.Embedding(
            config.vocab_size, config.parser_embedding_size, padding_idx=config.pad_token_id
        )
        self.lstm = nn.LSTM(
            config.parser_embedding_size,
            hidden,
            num_layers=config.parser_num_layers,
            batch_first=True,
            bidirectional=True,
            dropout=config.hidden_dropout_prob if config.parser_num_layers > 1 else 0.0,
        )
        self.norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps)
        self.score = nn.Sequential(
            nn.Linear(2 * hidden, hidden), nn.GELU(), nn.Dropout(config.hidden_dropout_prob), nn.Linear(hidden, 1)
        )

    def forward(self, input_ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """`(B, n)` word ids and `(B,)` lengths -> `(B, n - 1)` split scores (meaningless past a sentence's end)."""
        packed = nn.utils.rnn.pack_padded_sequence(
            self.embed_tokens(input_ids), lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        states, _ = self.lstm(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=input_ids.size(1))
        forward_states, backward_states = self.norm(states.unflatten(-1, (2, -1))).unbind(-2)
        pairs = torch.cat([forward_states[:, :-1], backward_states[:, 1:]], dim=-1)
        return self.score(pairs).squeeze(-1)


class R2D2PreTrainedModel(PreTrainedModel):
    config_class = R2D2Config
    config: R2D2Config
    base_model_prefix = "r2d2"
    main_input_name = "input_ids"
    _no_split_modules = ["R2D2CompositionLayer"]

    @torch.no_grad()
    def _init_weights(self, module):
        std = self.config.initializer_range
        if isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=std)
        elif isinstance(module, nn.Linear):
            if self.config.initialization == "pytorch":
                # nn.Linear's own: weights U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (kaiming_uniform_ with a = sqrt(5)),
                # biases alike.
                init.kaiming_uniform_(module.weight, a=math.sqrt(5))
                if module.bias is not None:
                    bound = 1 / math.sqrt(module.in_features)
                    init.uniform_(module.bias, -bound, bound)
                return
            init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.LayerNorm) and module.weight is not None:
            init.ones_(module.weight)
            init.zeros_(module.bias)
        elif isinstance(module, R2D2ForLanguageModeling):
            init.zeros_(module.output_bias)


class R2D2Model(R2D2PreTrainedModel):
    """Word embeddings, the composition function and the pruned chart over them."""

    # Loading a language-model checkpoint into the model alone (as parsing does) leaves its LM head unused, as
    # intended: the prediction layer, output bias, untied output embedding and untied decoder.
    _keys_to_ignore_on_load_unexpected = [r"^prediction_head\.", r"^output_bias$", r"^lm_head\.", r"^decoder_layers\."]

    def __init__(self, config: R2D2Config):
        super().__init__(config)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        # The two task tokens of a composition, the masked word of the LM objective, and the sentence edges.
        self.special_embeddings = nn.Embedding(5, config.hidden_size)
        self.composition_layers = nn.ModuleList(
            R2D2CompositionLayer(config) for _ in range(config.num_composition_layers)
        )
        self.mix_weights = nn.Linear(config.hidden_size, 2)
        self.composition_score = nn.Linear(config.hidden_size, 1)
        self.node_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, elementwise_affine=False)
        self.split_parser = R2D2SplitParser(config) if config.pruning == "parser" else None
        self.parse_options = {"tree_decoding": config.accepted_tree_decodings}
        self.post_init()

    def get_input_embeddings(self):
        return self.embed_tokens

    def set_input_embeddings(self, value):
        self.embed_tokens = value

    def composition_transformer(
        self, tasks: torch.Tensor, left: torch.Tensor, right: torch.Tensor, layers: nn.ModuleList | None = None
    ) -> torch.Tensor:
        """Run [tasks..., left, right] through the composition layers (or `layers`, of the same kind): each task
        input sees itself, left and right; left and right see only each other. `tasks` (C, k, d), `left` and
        `right` (C, d) -> (C, k + 2, d)."""
        hidden = torch.cat([tasks, left[:, None], right[:, None]], dim=1)
        for layer in self.composition_layers if layers is None else layers:
            hidden = layer(hidden, tasks.size(1))
        return hidden

    def compose(self, left: torch.Tensor, right: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The composition function: `(C, d)` children -> `(C, d)` candidate states and `(C,)` log p(compose)."""
        tasks = self.special_embeddings.weight[[MIX_TASK, SCORE_TASK]].expand(left.size(0), -1, -1)
        hidden = self.composition_transformer(tasks, left, right)
        weights = torch.softmax(self.mix_weights(hidden[:, MIX_TASK]), dim=-1)
        states = self.node_norm(weights[:, :1] * hidden[:, -2] + weights[:, 1:] * hidden[:, -1])
        log_p = F.logsigmoid(self.composition_score(hidden[:, SCORE_TASK])).squeeze(-1)
        return states, log_p

    def choose_split(self, scores: torch.Tensor) -> torch.Tensor:
        """One split per cell: a straight-through Gumbel-softmax sample in training, the argmax otherwise."""
        if self.training:
            return F.gumbel_softmax(scores.float(), tau=self.config.gumbel_temperature, hard=True)
        return F.one_hot(scores.argmax(-1), scores.size(-1)).to(scores.dtype)

    def split_scores(self, input_ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """`(B, n - 1)` the top-down parser's split scores (parser pruning only)."""
        if self.split_parser is None:
            raise ValueError("this R2D2 has no top-down parser (pruning='heuristic'); pruning='parser' has one")
        return self.split_parser(input_ids, lengths)

    def parser_merge_order(self, split_scores: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The merge order of the parser's tree; in training, of a tree drawn from the parser (Gumbel noise on the
        scores, as the authors' code)."""
        if self.training and self.config.noisy_merges:
            split_scores = split_scores - torch.empty_like(split_scores).exponential_().log()
        return merge_order_from_split_scores(split_scores, lengths)

    def _lengths(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be (batch, length), got shape {tuple(input_ids.shape)}")
        if attention_mask is None:
            attention_mask = input_ids.ne(self.config.pad_token_id)
        lengths = attention_mask.sum(-1)
        if bool((lengths == 0).any()):
            raise ValueError("every sentence needs at least one token")
        return lengths

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        window_size: int | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> R2D2ModelOutput:
        """The pruned chart over the batch; with parser pruning, merging along the parser's tree."""
        lengths = self._lengths(input_ids, attention_mask)
        split_scores = merge_order = None
        if self.split_parser is not None:
            split_scores = self.split_scores(input_ids, lengths)
            merge_order = self.parser_merge_order(split_scores.detach(), lengths)
        chart = encode_pruned_chart(
            self.embed_tokens(input_ids),
            lengths,
            self.compose,
            self.choose_split,
            window_size or self.config.window_size,
            merge_order=merge_order,
            merge_rule=self.config.merge_rule,
            merge_noise=self.training and self.config.noisy_merges,
        )
        return R2D2ModelOutput(root_states=chart.node_states[chart.roots], chart=chart, split_scores=split_scores)

    def encode_tree(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        merge_order: torch.Tensor | None = None,
    ) -> R2D2ModelOutput:
        """Fast-R2D2's forced encoding: compose along one tree only (n - 1 compositions a sentence), the tree of
        `merge_order` (`(B, n - 1)`, see `merge_order_from_split_scores`) or else the parser's."""
        lengths = self._lengths(input_ids, attention_mask)
        split_scores = None
        if merge_order is None:
            split_scores = self.split_scores(input_ids, lengths)
            merge_order = merge_order_from_split_scores(split_scores, lengths)
        chart = encode_along_merges(
            self.embed_tokens(input_ids), lengths, merge_order.to(input_ids.device), self.compose
        )
        return R2D2ModelOutput(root_states=chart.node_states[chart.roots], chart=chart, split_scores=split_scores)

    def context_states(self, chart: ChartEncoding, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`(B, n, d)` left and right context of every word: the longest node the chart built that ends just before
        the word (that starts just after it), BOS (EOS) at the sentence's edges, as in the paper."""
        built = chart.node_of_span >= 0  # (B, start, end)
        batch_size, n, _ = built.shape
        device = built.device
        batch = torch.arange(batch_size, device=device)[:, None]
        positions = torch.arange(n, device=device)
        longest_start = built.long().argmax(dim=1)  # [b, end]: the first start with a node ending at `end`
        longest_end = (built.long() * (positions + 1)).argmax(dim=2)  # [b, start]: the last end from `start`
        left_end = (positions - 1).clamp(min=0).expand(batch_size, -1)
        right_start = (positions + 1).clamp(max=n - 1).expand(batch_size, -1)
        left_nodes = chart.node_of_span[batch, longest_start.gather(1, left_end), left_end]
        right_nodes = chart.node_of_span[batch, right_start, longest_end.gather(1, right_start)]
        edges = self.special_embeddings.weight
        left = torch.where((positions == 0)[None, :, None], edges[BOS], chart.node_states[left_nodes.clamp(min=0)])
        at_end = (positions[None, :] >= lengths[:, None] - 1)[..., None]
        right = torch.where(at_end, edges[EOS], chart.node_states[right_nodes.clamp(min=0)])
        return left, right

    @property
    def max_parse_words(self) -> int:
        return self.config.max_parse_words

    # The parse contract (the pipeline and CLI check every call against it before parsing): the keyword options of
    # `parse` with the values each takes (an instance lists those of its config's pruning), and what a parse holds
    # besides `words`.
    parse_options: dict[str, tuple[str, ...]] = {"tree_decoding": R2D2Config.tree_decodings}
    parse_outputs = ("spans",)

    @torch.no_grad()
    def parse(self, sentences: list[list[str]], tokenizer, tree_decoding: str | None = None) -> list[dict]:
        """Parse a batch of sentences given as words (one token per word, as in the training text).

        Returns one dict per sentence: `words` and `spans`, the binary tree's constituents of two or more words
        (0-based `[start, end)`, top-down). `tree_decoding` (default `config.tree_decoding`): `"chart"` reads the
        tree from the whole-sentence node along the chosen splits, with the chart pruned at
        `config.parse_window_size`; `"parser"` (parser pruning only) is the top-down parser's tree, split at the
        highest score, with no composition at all. Raises ValueError naming the sentence when one cannot be parsed.
        """
        method = tree_decoding or self.config.tree_decoding
        if method not in self.config.accepted_tree_decodings:
            raise ValueError(
                f"tree_decoding must be one of {self.config.accepted_tree_decodings} for this model "
                f"(pruning={self.config.pruning!r}), got {method!r}"
            )
        encoded = encode_words(sentences, tokenizer, self.config.max_parse_words)
        input_ids, attention_mask = encoded["input_ids"].to(self.device), encoded["attention_mask"].to(self.device)
        was_training = self.training
        self.eval()
        try:
            if method == "parser":
                lengths = attention_mask.sum(-1)
                scores = self.split_scores(input_ids, lengths).float().tolist()
                return [
                    {
                        "words": list(words),
                        "spans": [span for span in distances_to_spans(row[: len(words) - 1]) if span[1] - span[0] > 1],
                    }
                    for words, row in zip(sentences, scores)
                ]
            chart = self(input_ids, attention_mask, window_size=self.config.parse_window_size, return_dict=True).chart
        finally:
            self.train(was_training)
        splits = chart.node_split.tolist()
        spans_of_node = chart.node_span.tolist()
        node_of_span = chart.node_of_span
        results = []
        for b, (words, root) in enumerate(zip(sentences, chart.roots.tolist())):
            spans, stack = [], [root]
            while stack:  # the root's tree, top-down: a node's children are the spans on both sides of its split
                node = stack.pop()
                start, end = spans_of_node[node]
                if start == end:
                    continue
                spans.append((start, end + 1))
                split = splits[node]
                stack += [int(node_of_span[b, split + 1, end]), int(node_of_span[b, start, split])]
            results.append({"words": list(words), "spans": spans})
        return results


class R2D2ForLanguageModeling(R2D2PreTrainedModel):
    """R2D2 with its bidirectional language-model head: every word is predicted from [MASK, left context, right
    context] through the composition Transformer (or a decoder of its own, `tie_decoder=False`), a dense layer and
    the output embedding (tied to the input).

    Training state (not saved), set by a training run's callbacks:
    - `sparse_prediction`: whether a forward call given `labels` predicts the labelled words alone (as transformers'
      ModernBERT does), not the pads nor `<unk>`: the loss needs nothing else, and the random draws of training
      (dropout) stay those of the runs that made the bundled checkpoints;
    - `train_parser`: whether training adds the top-down parser's loss; a run may start it late, the parser meanwhile
      merging by its untrained scores;
    - `train_language_model`: False trains the parser alone toward its teacher's trees (no chart is built);
    - `teacher_weight`: with `parser_target="teacher"`, the teacher's tree's weight in the parser's target, the rest
      going to the chart's best tree (a run may anneal it from 1 to 0)."""

    _tied_weights_keys = {"lm_head.weight": "r2d2.embed_tokens.weight"}
    accepts_loss_kwargs = False

    def __init__(self, config: R2D2Config):
        super().__init__(config)
        self.r2d2 = R2D2Model(config)
        self.parse_options = self.r2d2.parse_options
        self.prediction_head = nn.Sequential(
            nn.Linear(config.hidden_size, config.hidden_size),
            nn.GELU(),
            nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps, elementwise_affine=False),
        )
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.output_bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.decoder_layers = None
        if not config.tie_decoder:
            self.decoder_layers = nn.ModuleList(
                R2D2CompositionLayer(config) for _ in range(config.num_composition_layers)
            )
        self.sparse_prediction = False
        self.train_parser = True
        self.train_language_model = True
        self.teacher_weight = 1.0
        self.post_init()

    def get_output_embeddings(self):
        return self.lm_head

    def set_output_embeddings(self, new_embeddings):
        self.lm_head = new_embeddings

    def predict_words(self, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        """`(P, vocab)` logits of the word between contexts `left` and `right` (each `(P, d)`)."""
        mask = self.r2d2.special_embeddings.weight[[MASK]].expand(left.size(0), -1, -1)
        hidden = self.r2d2.composition_transformer(mask, left, right, self.decoder_layers)[:, 0]
        return self.lm_head(self.prediction_head(self.r2d2.node_norm(hidden))) + self.output_bias

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        teacher_merge_order: torch.LongTensor | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> R2D2LanguageModelingOutput:
        """`labels` `(B, n)`: the word to predict at each position, -100 where none is. `teacher_merge_order`
        (`(B, n - 1)`, see `merge_order_from_split_scores`): a tree per sentence for the parser to learn from in
        training (`parser_target="teacher"`)."""
        if attention_mask is None:
            attention_mask = input_ids.ne(self.config.pad_token_id)
        lengths = attention_mask.sum(-1)
        teacher_targets = None
        if self.training and teacher_merge_order is not None:
            teacher_targets = merge_order_targets(teacher_merge_order.to(input_ids.device), lengths)
        if self.training and not self.train_language_model:
            if self.config.parser_target != "teacher" or teacher_targets is None:
                raise ValueError("training the parser alone needs parser_target='teacher' and teacher_merge_order")
            loss = split_cross_entropy(self.r2d2.split_scores(input_ids, lengths), *teacher_targets, lengths, 1)
            return R2D2LanguageModelingOutput(loss=loss, parser_loss=loss, teacher_loss=loss)
        outputs = self.r2d2(input_ids, attention_mask, return_dict=True)
        left, right = self.r2d2.context_states(outputs.chart, lengths)
        if labels is not None and self.sparse_prediction:
            predicted = labels.ne(-100)
            logits = predicted_logits = self.predict_words(left[predicted], right[predicted])
        else:
            logits = self.predict_words(left.flatten(0, 1), right.flatten(0, 1)).view(*input_ids.shape, -1)
            if labels is None:
                return R2D2LanguageModelingOutput(logits=logits, root_states=outputs.root_states)
            predicted = labels.ne(-100)
            predicted_logits = logits[predicted]
        loss = lm_loss = masked_lm_cross_entropy(predicted_logits, labels[predicted])
        parser_loss = teacher_loss = entropy = None
        if self.training:
            entropy = split_entropy(outputs.chart)
        if outputs.split_scores is not None and self.training:
            if teacher_targets is not None:
                teacher_loss = split_cross_entropy(outputs.split_scores, *teacher_targets, lengths, 1)
            if self.train_parser:
                # The parser learns from the chart alone (the target trees are discrete), the chart nothing from
                # the parser's loss: the sum trains each part by its own loss, as the authors' two optimisers do.
                # Evaluation leaves it out, so that the eval loss stays the language model's (its exp the
                # perplexity).
                parser_loss = self.parser_loss(outputs.split_scores, outputs.chart, lengths, teacher_loss)
                loss = loss + parser_loss
        return R2D2LanguageModelingOutput(
            loss=loss,
            logits=logits,
            root_states=outputs.root_states,
            lm_loss=lm_loss,
            parser_loss=parser_loss,
            teacher_loss=teacher_loss,
            split_entropy=entropy,
        )

    def parser_loss(
        self, split_scores: torch.Tensor, chart: ChartEncoding, lengths: torch.Tensor, teacher_loss: torch.Tensor | None
    ) -> torch.Tensor:
        """The top-down parser's cross-entropy (of its `split_scores`) against its target (`config.parser_target`):
        trees drawn from the `chart`, the chart's best tree, or the teacher's tree (`teacher_loss`) weighted by
        `teacher_weight` and the chart's best tree by the rest."""
        target = self.config.parser_target
        if target == "teacher":
            if teacher_loss is None:
                raise ValueError("parser_target='teacher' needs a teacher tree per sentence (teacher_merge_order)")
            weight = float(self.teacher_weight)
            if weight >= 1:
                return teacher_loss
            best = split_cross_entropy(split_scores, *sample_chart_trees(chart, 1, 0.0), lengths, 1)
            return weight * teacher_loss + (1 - weight) * best if weight > 0 else best
        samples = 1 if target == "best" else self.config.parser_tree_samples
        temperature = 0.0 if target == "best" else self.config.parser_target_temperature
        targets = sample_chart_trees(chart, samples, temperature)
        return split_cross_entropy(split_scores, *targets, lengths, samples)

    @torch.no_grad()
    def pseudo_log_likelihood(self, input_ids: torch.LongTensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """`(B, n)` log p of every word given its left and right contexts encoded as separate sentences (so that
        the word itself cannot reach its context's tree, as the paper defines pseudo-perplexity); 0 at padding."""
        mask = attention_mask.bool()
        lengths = mask.sum(-1).tolist()
        n = input_ids.size(1)
        pieces, owners = [], []  # every non-empty prefix and suffix, and which (sentence, word, side) it serves
        for b, length in enumerate(lengths):
            ids = input_ids[b, :length]
            for i in range(length):
                if i > 0:
                    pieces.append(ids[:i])
                    owners.append((b, i, 0))
                if i < length - 1:
                    pieces.append(ids[i + 1 :])
                    owners.append((b, i, 1))
        edges = self.r2d2.special_embeddings.weight
        contexts = torch.stack([edges[BOS], edges[EOS]])[None, None].repeat(len(lengths), n, 1, 1)
        if pieces:
            padded = nn.utils.rnn.pad_sequence(pieces, batch_first=True, padding_value=self.config.pad_token_id)
            piece_mask = nn.utils.rnn.pad_sequence([torch.ones_like(p, dtype=torch.bool) for p in pieces], True)
            roots = self.r2d2(padded, piece_mask, return_dict=True).root_states
            rows, words, sides = (torch.tensor(column, device=roots.device) for column in zip(*owners))
            contexts[rows, words, sides] = roots.to(contexts.dtype)
        logits = self.predict_words(contexts[mask][:, 0], contexts[mask][:, 1])
        scores = torch.zeros(input_ids.shape, dtype=torch.float, device=input_ids.device)
        scores[mask] = torch.log_softmax(logits.float(), -1).gather(1, input_ids[mask][:, None]).squeeze(1)
        return scores

    @property
    def max_parse_words(self) -> int:
        return self.r2d2.max_parse_words

    parse_options = R2D2Model.parse_options
    parse_outputs = R2D2Model.parse_outputs

    def parse(self, sentences: list[list[str]], tokenizer, tree_decoding: str | None = None) -> list[dict]:
        """See `R2D2Model.parse`."""
        return self.r2d2.parse(sentences, tokenizer, tree_decoding)


__all__ = ["R2D2Config", "R2D2ForLanguageModeling", "R2D2Model", "R2D2PreTrainedModel", "encode_pruned_chart"]
