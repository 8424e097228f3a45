"""Graph-to-Graph Transformer (Mohammadshahi & Henderson, Findings of EMNLP 2020): a transition-based dependency
parser whose encoder takes the partial dependency graph as input.

Sentence Transformer form: the encoder reads `[CLS] word pieces [SEP]` (`[CLS]` stands for ROOT). At each parser
configuration (arc-standard with SWAP), every arc built so far enters self-attention as a relation between the
first pieces of its head and dependent (head->dependent or dependent->head, Shaw-style embeddings added to keys and
values), a word's non-first pieces are pre-linked to its first piece, and each attached word's label embedding is
added to its input. An action MLP over the first pieces of [s1; s0; b0] chooses SHIFT, LEFT_ARC, RIGHT_ARC or SWAP,
a label MLP over [s1; s0] the arc's label.

Only the top `graph_layers` layers see the graph: the layers below depend on the sentence alone, so they run once
per sentence, and the parser's configurations of a sentence (all of them in training, teacher-forced; the current
one of every unfinished sentence at each step of decoding) share them.

"""

# The modular source of configuration_g2gtr.py and modeling_g2gtr.py, the standalone Hub code that
# scripts/modular_converter.py generates: edit this file, then run the converter.

import math
from dataclasses import dataclass
from typing import Unpack, cast

import torch
import torch.nn.functional as F
from torch import nn
from transformers import BertConfig, PreTrainedModel
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.configuration_utils import SubConfigSpec
from transformers.utils import ModelOutput, TransformersKwargs, can_return_tuple

from ...configuration_utils import StructureConfig, nested_encoder_config
from ...data.tokenization import encode_word_pieces, word_piece_length_error
from ...structs.transitions import LEFT_ARC, RIGHT_ARC, SwapConfiguration

# The word tags a model may predict besides the parse (`tag_labels`), as CoNLL-U names its columns.
TAG_SETS = ("upos", "xpos", "feats")


class G2GTrConfig(StructureConfig):
    r"""Configuration of a Graph-to-Graph Transformer dependency parser (Mohammadshahi & Henderson, 2020), in its
    Sentence Transformer form: a BERT-type encoder reads the sentence's word pieces, the partial dependency graph
    enters its attention, and a transition classifier reads the stack and buffer words' first pieces.

    Args:
        encoder_config: the BERT encoder's configuration (a `BertConfig` or its dict; default: all-MiniLM-L6-v2's
            sizes). A folder saved before the encoder was nested holds its settings flat, at the top level:
            `nested_encoder_config` takes them from there.
        graph_layers: how many of the top encoder layers take the partial graph as input. The layers below are
            computed once per sentence and shared by all its parser configurations. Default: all of them, as in the
            paper; 0 is the Sentence Transformer baseline without graph input (no relations, no label embeddings).
        deprels: the dependency labels the parser predicts, in id order.
        action_hidden_size, label_hidden_size: hidden sizes of the action and label MLPs.
        classifier_dropout: dropout in both MLPs.
        encoder_init: where the encoder's initial weights came from (a record; not read when loading).
        punctuation_policy: `"keep"`: the parser sees every word, punctuation included.
        tag_labels: the word tags the model predicts besides the parse, by tag set (`"upos"`, `"xpos"`, `"feats"`:
            CoNLL-U's columns, a word's whole FEATS string one tag), each a list of tags in id order; default none.
            Each set is a tagger over the first pieces' states below the graph layers, which no parse reads,
            trained after the parser with everything else frozen, so that a model parses the same with or without
            them.
        tagger_size: the taggers' hidden width.
    """

    model_type = "g2gtr"
    sub_configs_defaults = {"encoder_config": SubConfigSpec(BertConfig)}
    default_auto_map = {
        "AutoConfig": "configuration_g2gtr.G2GTrConfig",
        "AutoModel": "modeling_g2gtr.G2GTrForParsing",
    }
    # Trained on UD English-EWT: raw text is cut into words as EWT cuts it.
    default_word_convention = "ud"

    def __init__(
        self,
        encoder_config=None,
        graph_layers=None,
        deprels=("dep",),
        action_hidden_size=500,
        label_hidden_size=100,
        classifier_dropout=0.33,
        encoder_init=None,
        punctuation_policy="keep",
        tag_labels=None,
        tagger_size=256,
        **kwargs,
    ):
        encoder_config = nested_encoder_config(encoder_config, kwargs)
        unknown_tag_sets = set(tag_labels or ()) - set(TAG_SETS)
        if unknown_tag_sets:
            raise ValueError(f"tag_labels: unknown tag sets {sorted(unknown_tag_sets)}; the sets are {TAG_SETS}")
        layers = encoder_config.num_hidden_layers
        graph_layers = layers if graph_layers is None else graph_layers
        if not 0 <= graph_layers <= layers:
            raise ValueError(f"graph_layers must be between 0 and the encoder's num_hidden_layers, got {graph_layers}")
        if encoder_config.hidden_size % encoder_config.num_attention_heads:
            raise ValueError(
                f"the encoder's hidden_size {encoder_config.hidden_size} is not a multiple of its num_attention_heads"
            )
        self.encoder_config = encoder_config
        self.graph_layers = graph_layers
        self.deprels = list(deprels)
        self.action_hidden_size = action_hidden_size
        self.label_hidden_size = label_hidden_size
        self.classifier_dropout = classifier_dropout
        self.encoder_init = encoder_init
        self.tag_labels = {name: list(tags) for name, tags in (tag_labels or {}).items()}
        self.tagger_size = tagger_size
        super().__init__(punctuation_policy=punctuation_policy, **kwargs)


# Relations between two pieces in the graph input: none, head->dependent (row is the head), dependent->head.
NO_RELATION, TO_DEPENDENT, TO_HEAD = 0, 1, 2


@dataclass
class G2GTrOutput(ModelOutput):
    """Outputs of `G2GTrForParsing`.

    Args:
        loss: action cross-entropy plus label cross-entropy on arc steps (when targets are given).
        action_logits: `(C, 4)` scores of SHIFT, LEFT_ARC, RIGHT_ARC, SWAP per configuration.
        label_logits: `(C, 2, num_labels)` label scores per configuration, for a LEFT_ARC ([:, 0]) or RIGHT_ARC.
    """

    loss: torch.Tensor | None = None
    action_logits: torch.Tensor | None = None
    label_logits: torch.Tensor | None = None


class G2GTrNewEmbedding(nn.Embedding):
    """Embeddings that the pretrained encoder did not have (graph relations, labels): initialised to zero, so a
    pretrained encoder starts out computing exactly what it computed before."""


class G2GTrEmbeddings(nn.Module):
    """BERT's input embeddings (word piece + position + segment 0, layer norm, dropout); `config`: the encoder's."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.size(1), device=input_ids.device)
        embedded = self.word_embeddings(input_ids) + self.position_embeddings(positions)[None]
        embedded = embedded + self.token_type_embeddings.weight[0]
        return self.dropout(self.LayerNorm(embedded))


class G2GTrAttention(nn.Module):
    """BERT self-attention with the graph input of Eqs. 3-4: e_ij = q_i.(k_j + r^K_ij) / sqrt(d_head) and
    z_i = sum_j a_ij (v_j + r^V_ij), the relation embeddings shared by all heads of the layer. `config`: the
    encoder's."""

    def __init__(self, config: BertConfig, graph: bool):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)
        self.relation_keys = G2GTrNewEmbedding(3, self.head_dim) if graph else None
        self.relation_values = G2GTrNewEmbedding(3, self.head_dim) if graph else None

    def forward(self, hidden: torch.Tensor, mask_bias: torch.Tensor, relations: torch.Tensor | None) -> torch.Tensor:
        return self.attend(*self.project(hidden), mask_bias, relations)

    def project(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries, keys and values of `hidden` `(B, L, d)`, each `(B, heads, L, head_dim)`."""
        query, key, value = (self.split_heads(linear(hidden)) for linear in (self.query, self.key, self.value))
        return query, key, value

    def split_heads(self, projected: torch.Tensor) -> torch.Tensor:
        """`(B, L, d)` -> `(B, heads, L, head_dim)`."""
        return projected.unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)

    def attend(self, query, key, value, mask_bias, relations) -> torch.Tensor:
        """The attention of `query` `(B, heads, Q, head_dim)` over `key` and `value` `(B, heads, L, head_dim)`:
        `(B, Q, d)`. `relations` `(B, Q, L)`: the relation of each query's piece to each piece (None: no graph
        input). The queries may be those of some pieces only (decoding reads the top layer at three pieces)."""
        scores = query @ key.transpose(-1, -2)
        if relations is not None:
            if self.relation_keys is None or self.relation_values is None:
                raise ValueError("relations given to a layer without graph input")
            relation_keys, relation_values = self.relation_keys.weight, self.relation_values.weight
            # q_i . r_k for the three relation types, then picked per pair (i, j): no (B, H, Q, L, d) tensor.
            per_type = query @ relation_keys.t()
            scores = scores + per_type.gather(-1, relations[:, None].expand(-1, self.num_heads, -1, -1))
        weights = self.dropout(torch.softmax(scores / math.sqrt(self.head_dim) + mask_bias, dim=-1))
        context = weights @ value
        if relations is not None:
            one_hot = F.one_hot(relations, 3).to(weights.dtype)  # (B, Q, L, 3)
            mass = torch.einsum("bhij,bijr->bhir", weights, one_hot)  # attention on each relation type
            context = context + mass @ relation_values
        return context.transpose(1, 2).flatten(2)


class G2GTrLayer(nn.Module):
    """A post-layer-norm BERT block; `graph` adds the graph input to its attention. `config`: the encoder's."""

    def __init__(self, config: BertConfig, graph: bool):
        super().__init__()
        self.attention = G2GTrAttention(config, graph)
        self.attention_output = nn.Linear(config.hidden_size, config.hidden_size)
        self.attention_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.intermediate = nn.Linear(config.hidden_size, config.intermediate_size)
        self.activation = ACT2FN[config.hidden_act]
        self.output = nn.Linear(config.intermediate_size, config.hidden_size)
        self.output_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden, mask_bias, relations=None, real=None):
        """`real` `(B, L)`: the pieces that are not pads. With it the feed-forward runs there only, and a pad's
        output is 0: no piece attends to a pad (its attention weight is exactly 0), so no real piece's output
        changes."""
        context = self.attention(hidden, mask_bias, relations)
        if real is None:
            return self.after_attention(hidden, context)
        packed = self.after_attention(hidden[real], context[real])
        output = packed.new_zeros(hidden.shape)
        output[real] = packed
        return output

    def after_attention(self, hidden: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """The block's output at the pieces of `hidden` `(B, Q, d)` (its input there) from their attention
        `context` `(B, Q, d)`."""
        attended = self.dropout(self.attention_output(context))
        hidden = self.attention_norm(hidden + attended)
        return self.output_norm(hidden + self.dropout(self.output(self.activation(self.intermediate(hidden)))))


class G2GTrPreTrainedModel(PreTrainedModel):
    config_class = G2GTrConfig
    config: G2GTrConfig
    base_model_prefix = "g2gtr"
    main_input_name = "input_ids"
    _no_split_modules = ["G2GTrLayer"]

    @torch.no_grad()
    def _init_weights(self, module):
        std = self.config.encoder_config.initializer_range
        if isinstance(module, nn.Linear):
            init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, G2GTrNewEmbedding):
            init.zeros_(module.weight)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=std)
        elif isinstance(module, nn.LayerNorm):
            init.ones_(module.weight)
            init.zeros_(module.bias)
        elif isinstance(module, G2GTrForParsing):
            init.zeros_(module.empty_slots)


class G2GTrForParsing(G2GTrPreTrainedModel):
    """The encoder with graph input, and the action and label classifiers."""

    accepts_loss_kwargs = False
    # What `quantize="int8"` makes int8 (`pipelines.quantization`): the encoder layers' linear layers (EWT figures:
    # docs/benchmarks.md); the classifiers stay in float32.
    int8_modules = ("layers",)

    def __init__(self, config: G2GTrConfig):
        super().__init__(config)
        encoder = config.encoder_config
        self.embeddings = G2GTrEmbeddings(encoder)
        first_graph = encoder.num_hidden_layers - config.graph_layers
        self.layers = nn.ModuleList(G2GTrLayer(encoder, i >= first_graph) for i in range(encoder.num_hidden_layers))
        # Index 0: no label (a word not attached yet); label l is id l + 1.
        self.label_embeddings = G2GTrNewEmbedding(len(config.deprels) + 1, encoder.hidden_size)
        # Stand-ins for an empty stack slot or buffer front.
        self.empty_slots = nn.Parameter(torch.zeros(3, encoder.hidden_size))
        d, dropout = encoder.hidden_size, config.classifier_dropout
        self.action_classifier = nn.Sequential(
            nn.Linear(3 * d, config.action_hidden_size),
            nn.LeakyReLU(),
            nn.Dropout(dropout),
            nn.Linear(config.action_hidden_size, 4),
        )
        self.label_classifier = nn.Sequential(
            nn.Linear(2 * d, config.label_hidden_size),
            nn.LeakyReLU(),
            nn.Dropout(dropout),
            nn.Linear(config.label_hidden_size, 2 * len(config.deprels)),
        )
        if config.tag_labels:
            # Without dropout: a tagger is trained over frozen word vectors, on which training drops.
            self.taggers = nn.ModuleDict(
                {
                    name: nn.Sequential(
                        nn.Linear(d, config.tagger_size), nn.LeakyReLU(0.1), nn.Linear(config.tagger_size, len(tags))
                    )
                    for name, tags in config.tag_labels.items()
                }
            )
            # This model's parses hold its tags too (the class declares what every G2GTr model's parse holds).
            self.parse_outputs = (*type(self).parse_outputs, *config.tag_labels)
        self.post_init()

    @staticmethod
    def is_pretrained_parameter(name: str) -> bool:
        """Whether a parameter comes from the pretrained encoder (trained with the lower learning rate)."""
        return name.startswith(("embeddings.", "layers.")) and ".relation_" not in name

    @property
    def first_graph_layer(self) -> int:
        return self.config.encoder_config.num_hidden_layers - self.config.graph_layers

    def encode_sentences(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The layers below the graph layers, once per sentence: `(S, T, d)`, 0 at pads."""
        hidden = self.embeddings(input_ids)
        mask_bias, real = _mask_bias(attention_mask, hidden.dtype), attention_mask.bool()
        for layer in self.layers[: self.first_graph_layer]:
            hidden = layer(hidden, mask_bias, real=real)
        return hidden

    def tagging_states(self, input_ids, attention_mask, first_pieces, lengths=None) -> torch.Tensor:
        """`(B, P, d)` what the taggers read: the states below the graph layers (`encode_sentences`) at ROOT and
        each word's first piece (`first_pieces` `(B, P)`). `lengths` is unused: `encode_word_pieces` gives it."""
        return self.word_states(self.encode_sentences(input_ids, attention_mask), first_pieces)

    @staticmethod
    def word_states(sentence_states: torch.Tensor, first_pieces: torch.Tensor) -> torch.Tensor:
        return sentence_states.gather(1, first_pieces[..., None].expand(-1, -1, sentence_states.size(-1)))

    def tag_ids(self, states: torch.Tensor) -> dict[str, list[list[int]]]:
        """Each tag set's best tag id at every position of `states` (`tagging_states`), by tag set."""
        if not self.config.tag_labels:
            return {}
        return {name: tagger(states).argmax(-1).tolist() for name, tagger in self.taggers.items()}

    def encode_configurations(self, sentence_states, attention_mask, relations, token_labels):
        """The graph layers over each configuration (`relations` `(C, T, T)`, `token_labels` `(C, T)` with 0 for
        none): `(C, T, d)`. `sentence_states` and `attention_mask` are already one row per configuration."""
        if not self.config.graph_layers:  # the baseline without graph input: labels do not enter either
            return sentence_states
        hidden = sentence_states + self.label_embeddings(token_labels)
        mask_bias = _mask_bias(attention_mask, hidden.dtype)
        for layer in self.layers[self.first_graph_layer :]:
            hidden = layer(hidden, mask_bias, relations)
        return hidden

    def classify(self, states: torch.Tensor, slot_positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Action and label logits from the pieces at `slot_positions` `(C, 3)` (s1, s0, b0; -1: empty)."""
        picked = states.gather(1, slot_positions.clamp(min=0)[:, :, None].expand(-1, -1, states.size(-1)))
        return self.classify_slots(picked, slot_positions)

    def classify_slots(self, picked: torch.Tensor, slot_positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`classify` from the states already picked at `slot_positions`: `picked` `(C, 3, d)`, any row at an
        empty slot."""
        empty = (slot_positions < 0)[:, :, None]
        picked = torch.where(empty, self.empty_slots.to(picked.dtype), picked)
        action_logits = self.action_classifier(picked.flatten(1))
        label_logits = self.label_classifier(picked[:, :2].flatten(1)).view(len(picked), 2, -1)
        return action_logits, label_logits

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor,
        relations: torch.LongTensor,
        token_labels: torch.LongTensor,
        slot_positions: torch.LongTensor,
        sentence_index: torch.LongTensor | None = None,
        actions: torch.LongTensor | None = None,
        arc_labels: torch.LongTensor | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> G2GTrOutput:
        """Scores of C parser configurations of S sentences.

        Args:
            input_ids, attention_mask: `(S, T)` word pieces of the sentences, `[CLS] ... [SEP]`.
            relations: `(C, T, T)` relation ids of the configurations' partial graphs.
            token_labels: `(C, T)` label id + 1 of each attached word's first piece, 0 elsewhere.
            slot_positions: `(C, 3)` piece positions of s1, s0, b0 (0 is ROOT, `[CLS]`; -1 an empty slot).
            sentence_index: `(C,)` the sentence of each configuration (default: configuration c of sentence c).
            actions: `(C,)` gold actions; arc_labels: `(C,)` gold label ids on arc steps, -100 elsewhere (the
                training targets: both or neither).
        """
        if (actions is None) != (arc_labels is None):
            raise ValueError("actions and arc_labels are the training targets together: give both or neither")
        states = self.encode_sentences(input_ids, attention_mask)
        if sentence_index is not None:
            states, attention_mask = states[sentence_index], attention_mask[sentence_index]
        states = self.encode_configurations(states, attention_mask, relations, token_labels)
        action_logits, label_logits = self.classify(states, slot_positions)
        loss = None
        if actions is not None and arc_labels is not None:
            direction = (actions == RIGHT_ARC).long()  # which label scores apply: 0 LEFT_ARC, 1 RIGHT_ARC
            chosen = label_logits.gather(1, direction[:, None, None].expand(-1, 1, label_logits.size(-1))).squeeze(1)
            # A mean over the arc steps; a sum over none is 0 and still reaches every parameter (DDP needs that).
            label_loss = F.cross_entropy(chosen.float(), arc_labels, ignore_index=-100, reduction="sum")
            loss = F.cross_entropy(action_logits.float(), actions) + label_loss / arc_labels.ne(-100).sum().clamp(min=1)
        return G2GTrOutput(loss=loss, action_logits=action_logits, label_logits=label_logits)

    # The parse contract (the pipeline and CLI check every call against it before parsing): `parse` takes no
    # option, and a parse holds heads and labels besides `words`.
    parse_options: dict[str, tuple[str, ...]] = {}
    parse_outputs = ("heads", "deprels")

    def parse_length_error(self, words: list[str], tokenizer) -> str | None:
        """Why `parse` would refuse `words` for their length (more word pieces than the encoder's positions), or
        None; the pipeline asks before batching, so that its error names the caller's item."""
        return word_piece_length_error(words, tokenizer, self.config.encoder_config.max_position_embeddings)

    @torch.no_grad()
    def parse(self, sentences: list[list[str]], tokenizer) -> list[dict]:
        """Parse a batch of sentences given as words (punctuation included). All unfinished sentences advance one
        transition per step; illegal actions are never chosen, so the heads always form a tree. The graph layers
        run again for a sentence only after an arc (`G2GTrDecodingCache`).

        Returns one dict per sentence: `words`, `heads` (1-based, 0 = root), `deprels` and each tag set of
        `config.tag_labels` (`upos` ...). Raises ValueError naming
        the sentence when one has no word or more word pieces than the encoder's positions.
        """
        inputs = encode_word_pieces(sentences, tokenizer, self.config.encoder_config.max_position_embeddings)
        first_pieces = inputs["first_pieces"].tolist()
        device = self.device
        attention_mask = inputs["attention_mask"].to(device)
        relations = initial_piece_relations(first_pieces, inputs["lengths"].tolist(), inputs["attention_mask"])
        sentence_states = self.encode_sentences(inputs["input_ids"].to(device), attention_mask)
        tag_ids = self.tag_ids(self.word_states(sentence_states, inputs["first_pieces"].to(device)))
        cache = G2GTrDecodingCache(self, sentence_states, attention_mask, relations.to(device))
        configurations = [SwapConfiguration(len(words)) for words in sentences]
        active = list(range(len(sentences)))  # the unfinished sentences, in the cache's order
        changed: list[int] = []  # the cache rows whose graph changed since their graph layers last ran
        while active:
            cache.encode(torch.tensor(changed, dtype=torch.long, device=device))
            slots = torch.tensor(
                [configuration_slot_positions(configurations[b], first_pieces[b]) for b in active], device=device
            )
            action_logits, label_logits = self.classify_slots(cache.top_states(slots), slots)
            legal = torch.tensor([configurations[b].legal_actions() for b in active], device=device)
            actions = action_logits.masked_fill(~legal, float("-inf")).argmax(-1).tolist()
            labels = label_logits.argmax(-1).tolist()
            arcs = []  # (cache row, head piece, dependent piece, label)
            for row, (b, action, (left_label, right_label)) in enumerate(zip(active, actions, labels)):
                configuration = configurations[b]
                if action in (LEFT_ARC, RIGHT_ARC):
                    label = left_label if action == LEFT_ARC else right_label
                    s1, s0 = configuration.stack[-2], configuration.stack[-1]
                    head, dependent = (s0, s1) if action == LEFT_ARC else (s1, s0)
                    arcs.append((row, first_pieces[b][head], first_pieces[b][dependent], label))
                    configuration.apply(action, label)
                else:
                    configuration.apply(action)
            if arcs:
                cache.add_arcs(*torch.tensor(arcs, device=device).unbind(1))
            unfinished = [row for row, b in enumerate(active) if not configurations[b].is_terminal()]
            if len(unfinished) < len(active):
                cache.keep(torch.tensor(unfinished, dtype=torch.long, device=device))
            new_row = {row: new for new, row in enumerate(unfinished)}
            changed = [new_row[row] for row, *_ in arcs if row in new_row]
            active = [active[row] for row in unfinished]
        return [
            {
                "words": list(words),
                "heads": configuration.heads[1:],
                # Decoding labels every arc, and a finished configuration has each word's.
                "deprels": [self.config.deprels[cast(int, label)] for label in configuration.labels[1:]],
                **{
                    name: [self.config.tag_labels[name][tag] for tag in ids[b][1 : len(words) + 1]]
                    for name, ids in tag_ids.items()
                },
            }
            for b, (words, configuration) in enumerate(zip(sentences, configurations))
        ]


class G2GTrDecodingCache:
    """What decoding keeps of each unfinished sentence of a batch between transitions, one row per sentence.

    Only arcs change a configuration's graph input (relations and labels); SHIFT and SWAP move words between stack
    and buffer, which only the classifiers see. So the graph layers run for a sentence at the start and after each of
    its arcs (`encode`), and what they give is kept: the top layer's input, keys and values at every piece. The
    classifiers read the top layer at three pieces (s1, s0, b0), so at every step its queries, attention and
    feed-forward run at those pieces only (`top_states`). An arc changes the first graph layer's input at one piece
    (the dependent's label), so that layer's queries, keys and values are kept too and projected again at that piece
    only (`add_arcs`). Below the top layer the feed-forward runs at real pieces only, not at pads: a pad is never
    attended to (its attention weight is exactly 0), so its keys and values are left at zero. Each real piece's
    numbers are those of running every layer at every piece. Finished sentences leave the cache (`keep`), so each
    step works on unfinished sentences only.
    """

    def __init__(
        self, model: G2GTrForParsing, states: torch.Tensor, attention_mask: torch.Tensor, relations: torch.Tensor
    ):
        """`states` `(S, T, d)`: the layers below the graph layers; `relations` `(S, T, T)`: the graphs before any
        arc."""
        self.model = model
        self.states, self.relations, self.real = states, relations, attention_mask.bool()
        self.mask_bias = _mask_bias(attention_mask, states.dtype)
        # (cast: a ModuleList's items are typed Module; the model holds G2GTrLayers there)
        self.graph_layers = cast(list[G2GTrLayer], list(model.layers[model.first_graph_layer :]))
        if not self.graph_layers:
            return
        token_labels = torch.zeros(states.shape[:2], dtype=torch.long, device=states.device)
        self.inputs = states + model.label_embeddings(token_labels)  # the first graph layer's
        self.projections = self.graph_layers[0].attention.project(self.inputs)  # its queries, keys, values
        if len(self.graph_layers) > 1:
            attention = self.graph_layers[-1].attention
            heads_shape = (len(states), attention.num_heads, states.size(1), attention.head_dim)
            self.top_inputs = torch.zeros_like(states)
            self.top_keys, self.top_values = states.new_zeros(heads_shape), states.new_zeros(heads_shape)
            self.encode(torch.arange(len(states), device=states.device))

    def encode(self, rows: torch.Tensor) -> None:
        """Runs the graph layers below the top one for the sentences at `rows`, and the top layer's keys and
        values. (With one graph layer, `add_arcs` keeps them.)"""
        if len(self.graph_layers) < 2 or not len(rows):
            return
        first, *middle, top = self.graph_layers
        mask_bias, relations = self.mask_bias[rows], self.relations[rows]
        queries, keys, values = (kept[rows] for kept in self.projections)
        context = first.attention.attend(queries, keys, values, mask_bias, relations)
        local, pieces = self.real[rows].nonzero(as_tuple=True)  # the real pieces
        sentences = rows[local]
        hidden = first.after_attention(self.inputs[sentences, pieces], context[local, pieces])
        if middle:
            padded = hidden.new_zeros(context.shape)
            padded[local, pieces] = hidden
            for layer in middle:
                padded = layer(padded, mask_bias, relations, real=self.real[rows])
            hidden = padded[local, pieces]
        self.top_inputs[sentences, pieces] = hidden.to(self.top_inputs.dtype)
        for kept, linear in ((self.top_keys, top.attention.key), (self.top_values, top.attention.value)):
            # (under autocast the projections are in a lower precision than the states: kept as the states)
            kept[sentences, :, pieces] = linear(hidden).unflatten(-1, kept.shape[1:2] + kept.shape[3:]).to(kept.dtype)

    def top_states(self, slot_positions: torch.Tensor) -> torch.Tensor:
        """The encoder's output at `slot_positions` `(S, 3)` of each sentence (-1, an empty slot: any row):
        `(S, 3, d)`."""
        positions = slot_positions.clamp(min=0)
        d = self.states.size(-1)
        if not self.graph_layers:
            return self.states.gather(1, positions[:, :, None].expand(-1, -1, d))
        top = self.graph_layers[-1]
        if len(self.graph_layers) > 1:
            inputs, keys, values = self.top_inputs, self.top_keys, self.top_values
        else:
            inputs, (_, keys, values) = self.inputs, self.projections
        inputs = inputs.gather(1, positions[:, :, None].expand(-1, -1, d))
        queries = top.attention.split_heads(top.attention.query(inputs))
        relations = self.relations.gather(1, positions[:, :, None].expand(-1, -1, self.relations.size(-1)))
        return top.after_attention(inputs, top.attention.attend(queries, keys, values, self.mask_bias, relations))

    def add_arcs(self, rows, heads, dependents, labels) -> None:
        """Adds the arcs head -> dependent (first pieces) with `labels` (ids) to the sentences at `rows`."""
        if not self.graph_layers:
            return
        self.relations[rows, heads, dependents] = TO_DEPENDENT
        self.relations[rows, dependents, heads] = TO_HEAD
        changed = self.states[rows, dependents] + self.model.label_embeddings(labels + 1)
        self.inputs[rows, dependents] = changed.to(self.inputs.dtype)
        for kept, projected in zip(self.projections, self.graph_layers[0].attention.project(changed[:, None])):
            kept[rows, :, dependents] = projected[:, :, 0].to(kept.dtype)

    def keep(self, rows: torch.Tensor) -> None:
        """Keeps the sentences at `rows` only, in that order."""
        names = ["states", "relations", "real", "mask_bias"]
        if self.graph_layers:
            names.append("inputs")
            queries, keys, values = (kept[rows] for kept in self.projections)
            self.projections = queries, keys, values
        if len(self.graph_layers) > 1:
            names += ["top_inputs", "top_keys", "top_values"]
        for name in names:
            setattr(self, name, getattr(self, name)[rows])


def _mask_bias(attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """`(B, 1, 1, T)` additive attention bias: 0 at real pieces, a large negative number at pads."""
    return (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def initial_piece_relations(
    first_pieces: list[list[int]], lengths: list[int], attention_mask: torch.Tensor
) -> torch.Tensor:
    """`(B, T, T)` relations of a batch of sentences before any arc: each word's non-first pieces depend on its first
    piece. `first_pieces[b]`: the piece of ROOT and of each word's first piece (`first_piece_positions`); `lengths`:
    words. A word's pieces run from its first piece to the next word's (the last word's to `[SEP]`, the last real
    piece)."""
    batch, length = attention_mask.shape
    relations = torch.zeros(batch, length, length, dtype=torch.long)
    for b, (first, words, pieces) in enumerate(zip(first_pieces, lengths, attention_mask.sum(-1).tolist())):
        for start, end in zip(first[1 : words + 1], [*first[2 : words + 1], pieces - 1]):
            relations[b, start, start + 1 : end] = TO_DEPENDENT
            relations[b, start + 1 : end, start] = TO_HEAD
    return relations


def configuration_slot_positions(configuration, first_pieces: list[int]) -> list[int]:
    """Piece positions of a parser configuration's s1, s0 and b0 (-1 for an empty slot), the `slot_positions` of
    `G2GTrForParsing.forward`."""
    stack, buffer = configuration.stack, configuration.buffer
    s1 = first_pieces[stack[-2]] if len(stack) >= 2 else -1
    s0 = first_pieces[stack[-1]] if stack else -1
    b0 = first_pieces[buffer[0]] if buffer else -1
    return [s1, s0, b0]


__all__ = ["G2GTrConfig", "G2GTrForParsing", "G2GTrOutput", "G2GTrPreTrainedModel"]
