"""Arc-hybrid dependency parsing with exact dynamic programming (Le Roux, Rozenknop & Lacroix, CoNLL 2019).

A parse is a pair (arc-hybrid derivation, dependency tree). Its score adds, in log-probabilities from locally
trained distributions:
- every arc h -> d: p(h | d), a biaffine head classifier over the encoded words (Dozat & Manning);
- every transition: p(action | buffer front, stack size), where the stack size q is bucketed (1-9, >= 10). Given the
  sentence, (buffer front, q) fixes the step's index in the derivation, which the paper encodes with step position
  embeddings; here a step is represented by its buffer front's vector plus an embedding of q;
- every shifted word k: p(j | k, q), which buffer front j reduces it (the paper's matching distribution).
The stack-size DP (`stack_size_dp`) finds the best pair exactly; a deprel classifier labels its arcs.

Training maximises the log-likelihood of the four distributions along the oracle derivation of the gold tree
(projectivised, as decoding is projective): the paper's objective.

"""

# The modular source of configuration_arc_hybrid.py and modeling_arc_hybrid.py, the standalone Hub code that
# scripts/modular_converter.py generates: edit this file, then run the converter.

from dataclasses import dataclass
from typing import Unpack

import torch
from torch import nn
from transformers import BertConfig, BertModel, PreTrainedModel
from transformers import initialization as init
from transformers.configuration_utils import SubConfigSpec
from transformers.utils import ModelOutput, TransformersKwargs, can_return_tuple

from ...configuration_utils import StructureConfig, nested_encoder_config
from ...data.tokenization import encode_word_pieces, word_piece_length_error
from ...structs.arc_hybrid import stack_size_dp
from ...structs.decoding import eisner

HEAD_DECODINGS = ("derivation", "eisner")
# The word tags a model may predict besides the parse (`tag_labels`), as CoNLL-U names its columns.
TAG_SETS = ("upos", "xpos", "feats")
# The most chart positions (sentences x P x P, P = longest sentence + 2) one parse call decodes at once: a full batch
# of 32 sentences of up to 46 words. A batch holding longer sentences is parsed a few at a time, so that its charts
# (B x Q x P x P) stay the size of an ordinary batch's and a long parse's memory does not jump with its longest one.
PARSE_CHART_POSITIONS = 32 * 48 * 48


def consecutive_chunks(lengths: list[int], max_positions: int) -> list[range]:
    """`range(len(lengths))` cut into consecutive chunks whose count x (longest + 2)^2 stays within `max_positions`
    (a sentence alone may exceed it)."""
    chunks, start, longest = [], 0, 0
    for index, length in enumerate(lengths):
        longest = max(longest, length)
        if index > start and (index - start + 1) * (longest + 2) ** 2 > max_positions:
            chunks.append(range(start, index))
            start, longest = index, length
    return [*chunks, range(start, len(lengths))] if lengths else []


class ArcHybridConfig(StructureConfig):
    r"""Configuration of an arc-hybrid dependency parser decoded exactly by dynamic programming (Le Roux, Rozenknop &
    Lacroix, CoNLL 2019): the best (derivation, tree) pair under locally normalised scores of dependency arcs,
    transitions (from the buffer front and the stack size) and matchings (which buffer front reduces a shifted word).

    Args:
        encoder_type: `"bert"` (a BERT-type Transformer over word pieces, e.g. initialised from all-MiniLM-L6-v2) or
            `"bilstm"` (a BiLSTM over word-piece embeddings, the features of Shi et al.'s arc-hybrid parser; Le Roux et
            al. use self-attention layers over word, POS and GloVe vectors). A word is represented by
            its first piece; ROOT by `[CLS]`.
        encoder_config: the pretrained BERT encoder's configuration (a `BertConfig` or its dict; default:
            all-MiniLM-L6-v2's sizes): all of it for a BERT encoder; for a BiLSTM one, its vocabulary, embedding width
            (`hidden_size`), padding id, dropout (`hidden_dropout_prob`), longest input and initializer range. A
            folder saved before the encoder was nested holds its settings flat, at the top level:
            `nested_encoder_config` takes them from there.
        lstm_hidden_size, lstm_layers: the BiLSTM encoder's (each direction).
        arc_size, label_size: widths of the biaffine arc and label scorers' projections (Dozat & Manning).
        step_size: width of the step (buffer front + stack size) and matching representations.
        stack_buckets: stack sizes are bucketed 1 .. stack_buckets - 1, the last bucket holding every larger size
            (the paper: 1-9 and >= 10, i.e. 11 with the unused 0).
        scorer_dropout: dropout on the scorers' projections.
        head_decoding: `"derivation"`: the stack-size DP over arc, transition and matching scores (the paper);
            `"eisner"`: Eisner's algorithm over the arc scores alone (the paper's "dependency scores only").
        deprels: the dependency labels the parser predicts, in id order.
        encoder_init: where the encoder's initial weights came from (a record; not read when loading).
        punctuation_policy: `"keep"`: the parser sees every word, punctuation included.
        tag_labels: the word tags the model predicts besides the parse, by tag set (`"upos"`, `"xpos"`, `"feats"`:
            CoNLL-U's columns, a word's whole FEATS string one tag), each a list of tags in id order; default none.
            Each set is a tagger over the encoded words that no parse reads, trained after the parser with
            everything else frozen, so that a model parses the same with or without them.
        tagger_size: the taggers' hidden width.
    """

    model_type = "arc_hybrid"
    sub_configs_defaults = {"encoder_config": SubConfigSpec(BertConfig)}
    default_auto_map = {
        "AutoConfig": "configuration_arc_hybrid.ArcHybridConfig",
        "AutoModel": "modeling_arc_hybrid.ArcHybridForParsing",
    }
    # Trained on UD English-EWT: raw text is cut into words as EWT cuts it.
    default_word_convention = "ud"

    def __init__(
        self,
        encoder_type="bert",
        encoder_config=None,
        lstm_hidden_size=256,
        lstm_layers=2,
        arc_size=384,
        label_size=128,
        step_size=128,
        stack_buckets=11,
        scorer_dropout=0.33,
        head_decoding="derivation",
        deprels=("dep",),
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
        if encoder_type not in ("bert", "bilstm"):
            raise ValueError(f"encoder_type must be 'bert' or 'bilstm', got {encoder_type!r}")
        if head_decoding not in HEAD_DECODINGS:
            raise ValueError(f"head_decoding must be one of {HEAD_DECODINGS}, got {head_decoding!r}")
        if stack_buckets < 4:
            # Buckets 1, 2 and 3+ at least: which reductions are legal depends on q = 1, q = 2 (onto ROOT), q >= 3.
            raise ValueError(f"stack_buckets must be at least 4 (bucket 0 is unused), got {stack_buckets}")
        if encoder_type == "bert" and encoder_config.hidden_size % encoder_config.num_attention_heads:
            raise ValueError(
                f"the encoder's hidden_size {encoder_config.hidden_size} is not a multiple of its num_attention_heads"
            )
        self.encoder_type = encoder_type
        self.encoder_config = encoder_config
        self.lstm_hidden_size = lstm_hidden_size
        self.lstm_layers = lstm_layers
        self.arc_size = arc_size
        self.label_size = label_size
        self.step_size = step_size
        self.stack_buckets = stack_buckets
        self.scorer_dropout = scorer_dropout
        self.head_decoding = head_decoding
        self.deprels = list(deprels)
        self.encoder_init = encoder_init
        self.tag_labels = {name: list(tags) for name, tags in (tag_labels or {}).items()}
        self.tagger_size = tagger_size
        super().__init__(punctuation_policy=punctuation_policy, **kwargs)

    @property
    def reported_options(self) -> dict[str, dict]:
        """The decodings evaluation reports beside the default, by the suffix of their scores: the paper's
        arcs-only ablation (`uas_eisner` ...)."""
        return {} if self.head_decoding == "eisner" else {"eisner": {"head_decoding": "eisner"}}


# A log-probability for what cannot happen: finite, so that a row with no legal event stays a number.
IMPOSSIBLE = -1e4


@dataclass
class ArcHybridOutput(ModelOutput):
    """Outputs of `ArcHybridForParsing`.

    Args:
        loss: the sum of the mean negative log-likelihoods of gold heads, transitions, matchings and labels.
        word_states: `(B, P, d)` ROOT (position 0), the words (1..n) and the empty buffer (n + 1).
        arc_log_probs: `(B, P, P)` `[b, h, d]` log p(h | d) over the heads 0..n of each word d.
    """

    loss: torch.Tensor | None = None
    word_states: torch.Tensor | None = None
    arc_log_probs: torch.Tensor | None = None


class ArcHybridBiaffine(nn.Module):
    """`s[b, x, y] = left[b, x] U right[b, y]^T + left[b, x] . v` for each of `outputs` channels (Dozat & Manning,
    with the bias on the left side as Le Roux et al.'s B functions)."""

    def __init__(self, size: int, outputs: int = 1):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(outputs, size, size))
        self.bias = nn.Linear(size, outputs)

    def forward(self, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        """`left` `(B, X, s)`, `right` `(B, Y, s)` -> `(B, X, Y, outputs)`."""
        bilinear = torch.einsum("bxs,ost,byt->bxyo", left, self.weight, right)
        return bilinear + self.bias(left)[:, :, None]


def _projection(size_in: int, size_out: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(nn.Linear(size_in, size_out), nn.LeakyReLU(0.1), nn.Dropout(dropout))


def _tagger(size_in: int, hidden: int, tags: int) -> nn.Sequential:
    """A word tagger's MLP. Without dropout: it is trained over frozen word vectors, on which training drops."""
    return nn.Sequential(nn.Linear(size_in, hidden), nn.LeakyReLU(0.1), nn.Linear(hidden, tags))


class ArcHybridPreTrainedModel(PreTrainedModel):
    config_class = ArcHybridConfig
    config: ArcHybridConfig
    base_model_prefix = "arc_hybrid"
    main_input_name = "input_ids"
    _no_split_modules = ["BertLayer"]

    @torch.no_grad()
    def _init_weights(self, module):
        std = self.config.encoder_config.initializer_range
        if isinstance(module, nn.Linear):
            init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=std)
        elif isinstance(module, nn.LayerNorm):
            init.ones_(module.weight)
            init.zeros_(module.bias)
        elif isinstance(module, ArcHybridBiaffine):
            init.zeros_(module.weight)
        elif isinstance(module, ArcHybridForParsing):
            init.normal_(module.empty_buffer, mean=0.0, std=std)


class ArcHybridForParsing(ArcHybridPreTrainedModel):
    """The encoder, the four scorers (arcs, labels, transitions, matchings) and exact decoding. `teacher_weight`: in
    distillation (a teacher's distributions given to `forward`), their share of the arc and label losses."""

    accepts_loss_kwargs = False
    teacher_weight = 0.5

    def __init__(self, config: ArcHybridConfig):
        super().__init__(config)
        encoder = config.encoder_config
        if config.encoder_type == "bert":
            self.encoder = BertModel(encoder, add_pooling_layer=False)
            width = encoder.hidden_size
        else:
            self.embeddings = nn.Embedding(encoder.vocab_size, encoder.hidden_size, padding_idx=encoder.pad_token_id)
            between_layers = encoder.hidden_dropout_prob if config.lstm_layers > 1 else 0.0
            self.lstm = nn.LSTM(
                encoder.hidden_size,
                config.lstm_hidden_size,
                config.lstm_layers,
                batch_first=True,
                bidirectional=True,
                dropout=between_layers,
            )
            self.lstm_dropout = nn.Dropout(encoder.hidden_dropout_prob)
            width = 2 * config.lstm_hidden_size
        # The position after the last word: the empty buffer.
        self.empty_buffer = nn.Parameter(torch.zeros(width))
        dropout = config.scorer_dropout
        self.arc_head = _projection(width, config.arc_size, dropout)
        self.arc_dependent = _projection(width, config.arc_size, dropout)
        self.arc_scorer = ArcHybridBiaffine(config.arc_size)
        self.label_head = _projection(width, config.label_size, dropout)
        self.label_dependent = _projection(width, config.label_size, dropout)
        self.label_scorer = ArcHybridBiaffine(config.label_size, len(config.deprels))
        # A step is (buffer front, stack size): given the sentence, the pair fixes the step's index in the derivation.
        self.step = _projection(width, config.step_size, dropout)
        self.stack_size_embeddings = nn.Embedding(config.stack_buckets, config.step_size)
        self.transition_scorer = nn.Sequential(
            nn.Linear(config.step_size, config.step_size), nn.ReLU(), nn.Linear(config.step_size, 3)
        )
        self.matched_word = _projection(width, config.step_size, dropout)
        self.matching_stack_size_embeddings = nn.Embedding(config.stack_buckets, config.step_size)
        self.matching_front = _projection(width, config.step_size, dropout)
        self.matching_scorer = ArcHybridBiaffine(config.step_size)
        if config.tag_labels:
            self.taggers = nn.ModuleDict(
                {name: _tagger(width, config.tagger_size, len(tags)) for name, tags in config.tag_labels.items()}
            )
            # This model's parses hold its tags too (the class declares what every arc-hybrid model's parse holds).
            self.parse_outputs = (*type(self).parse_outputs, *config.tag_labels)
        self.post_init()

    @property
    def int8_modules(self) -> tuple[str, ...]:
        """What `quantize="int8"` makes int8 (`pipelines.quantization`): the BERT encoder's linear layers (EWT figures:
        docs/benchmarks.md); a BiLSTM encoder stays as it is."""
        return ("encoder",) if self.config.encoder_type == "bert" else ()

    @staticmethod
    def is_pretrained_parameter(name: str) -> bool:
        """Whether a parameter comes from the pretrained encoder (trained with the lower learning rate): BERT's, or
        the BiLSTM encoder's word-piece embeddings."""
        return name.startswith(("encoder.", "embeddings."))

    def encode_words(self, input_ids, attention_mask, first_pieces, lengths) -> torch.Tensor:
        """`(B, P, d)` vectors of ROOT (`[CLS]`, position 0), the words (their first pieces, 1..n) and the empty
        buffer (n + 1); zeros beyond. `first_pieces` `(B, P)`: the piece of each position 0..n (0 elsewhere)."""
        if self.config.encoder_type == "bert":
            pieces = self.encode_pieces(input_ids, attention_mask)
        else:
            embedded = self.embeddings(input_ids)
            packed = nn.utils.rnn.pack_padded_sequence(
                embedded, attention_mask.sum(-1).cpu(), batch_first=True, enforce_sorted=False
            )
            states, _ = self.lstm(packed)
            pieces, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=input_ids.size(1))
            pieces = self.lstm_dropout(pieces)
        words = pieces.gather(1, first_pieces[..., None].expand(-1, -1, pieces.size(-1)))
        positions = torch.arange(first_pieces.size(1), device=first_pieces.device)
        is_end = (positions[None] == lengths[:, None] + 1)[..., None]
        is_beyond = (positions[None] > lengths[:, None] + 1)[..., None]
        words = torch.where(is_end, self.empty_buffer.to(words.dtype), words)
        return words.masked_fill(is_beyond, 0.0)

    def encode_pieces(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The BERT encoder's `(B, T, d)` output (at real pieces; pads are never read). In parsing (without
        gradients) sentences of similar piece counts go through it together, `parse_group_size` at a time, each group
        padded to its own longest: batches come sorted by words, and a batch's pads were then almost half its pieces
        (EWT dev, batch 32)."""
        if torch.is_grad_enabled():
            return self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        counts = attention_mask.sum(-1)
        pieces = None
        for group in counts.argsort(stable=True).split(self.parse_group_size):
            length = int(counts[group].max())
            encoded = self.encoder(
                input_ids=input_ids[group, :length], attention_mask=attention_mask[group, :length]
            ).last_hidden_state
            if pieces is None:
                pieces = encoded.new_zeros(*input_ids.shape, encoded.size(-1))
            pieces[group, :length] = encoded
        if pieces is None:
            raise ValueError("no sentence to encode: the batch is empty")
        return pieces

    parse_group_size = 8  # sentences; on one CPU thread smaller groups pay more per call than they save in pads

    def tagging_states(self, input_ids, attention_mask, first_pieces, lengths) -> torch.Tensor:
        """`(B, P, d)` what the taggers read: the encoded words at positions 1..n (`encode_words`)."""
        return self.encode_words(input_ids, attention_mask, first_pieces, lengths)

    def tag_ids(self, states: torch.Tensor) -> dict[str, list[list[int]]]:
        """Each tag set's best tag id at every position of `states` (`tagging_states`), by tag set."""
        if not self.config.tag_labels:
            return {}
        return {name: tagger(states).argmax(-1).tolist() for name, tagger in self.taggers.items()}

    def arc_log_probs(self, words: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """`(B, P, P)` `[b, h, d]` log p(h | d), normalised over the heads 0..n, h != d."""
        scores = self.arc_scorer(self.arc_head(words), self.arc_dependent(words)).squeeze(-1).float()
        positions = torch.arange(words.size(1), device=words.device)
        allowed = (positions[None, :, None] <= lengths[:, None, None]) & (positions[:, None] != positions[None, :])
        return scores.masked_fill(~allowed, IMPOSSIBLE).log_softmax(dim=1)

    def label_logits(self, words: torch.Tensor, heads: torch.Tensor) -> torch.Tensor:
        """`(B, P, labels)` label scores of each position's arc from `heads` `(B, P)`."""
        head_states = words.gather(1, heads[..., None].expand(-1, -1, words.size(-1)))
        head, dependent = self.label_head(head_states), self.label_dependent(words)
        # The biaffine over aligned pairs only: (B, P, s) x (labels, s, s) x (B, P, s).
        bilinear = torch.einsum("bps,ost,bpt->bpo", head, self.label_scorer.weight, dependent)
        return bilinear + self.label_scorer.bias(head)

    def transition_log_probs(self, words: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """`(B, P, Q, 3)` `[b, j, q, action]` log p(action | buffer front j, stack-size bucket q), over the actions
        legal there: SHIFT and LEFT need a word at the front, LEFT and RIGHT a word on the stack (q >= 2), and RIGHT
        onto ROOT (q = 2) waits for the empty buffer, so that the tree has one root."""
        steps = self.step(words)[:, :, None] + self.stack_size_embeddings.weight[None, None]
        scores = self.transition_scorer(torch.relu(steps)).float()
        positions = torch.arange(words.size(1), device=words.device)[None, :, None]
        buckets = torch.arange(self.config.stack_buckets, device=words.device)[None, None, :]
        front_is_word = (positions >= 1) & (positions <= lengths[:, None, None])
        legal = torch.stack(
            [
                front_is_word.expand(-1, -1, buckets.size(-1)),
                front_is_word & (buckets >= 2),
                (buckets >= 3) | ((buckets == 2) & ~front_is_word),
            ],
            dim=-1,
        )
        return scores.masked_fill(~legal, IMPOSSIBLE).log_softmax(dim=-1)

    def matching_log_probs(self, words: torch.Tensor, lengths: torch.Tensor, shifted=None) -> torch.Tensor:
        """log p(j | k, q) over the buffer fronts j = k + 1 .. n + 1 that can reduce word k shifted onto a stack of
        bucket q: `(B, P, Q, P)` `[b, k, q, j]`, or with `shifted` `(B, M, 2)` (k, q) pairs only: `(B, M, P)`."""
        words_side = self.matched_word(words)  # (B, P, s)
        if shifted is None:
            left = words_side[:, :, None] + self.matching_stack_size_embeddings.weight[None, None]  # (B, P, Q, s)
            left = left.flatten(1, 2)
            word_index = torch.arange(words.size(1), device=words.device).repeat_interleave(self.config.stack_buckets)
            word_index = word_index[None].expand(words.size(0), -1)
        else:
            word_index = shifted[..., 0]
            left = words_side.gather(1, word_index[..., None].expand(-1, -1, words_side.size(-1)))
            left = left + self.matching_stack_size_embeddings(shifted[..., 1])
        scores = self.matching_scorer(left, self.matching_front(words)).squeeze(-1).float()  # (B, X, P)
        positions = torch.arange(words.size(1), device=words.device)
        allowed = (positions[None, None, :] > word_index[..., None]) & (
            positions[None, None, :] <= lengths[:, None, None] + 1
        )
        log_probs = scores.masked_fill(~allowed, IMPOSSIBLE).log_softmax(dim=-1)
        if shifted is None:
            return log_probs.view(words.size(0), words.size(1), self.config.stack_buckets, -1)
        return log_probs

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor,
        first_pieces: torch.LongTensor,
        lengths: torch.LongTensor,
        heads: torch.LongTensor | None = None,
        labels: torch.LongTensor | None = None,
        steps: torch.LongTensor | None = None,
        matchings: torch.LongTensor | None = None,
        teacher_arcs: torch.Tensor | None = None,
        teacher_labels: torch.Tensor | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> ArcHybridOutput:
        """Scores of a batch of sentences, and with the gold targets the training loss.

        Args:
            input_ids, attention_mask: `(B, T)` word pieces, `[CLS] ... [SEP]`.
            first_pieces: `(B, P)` the piece of ROOT (0) and of each word 1..n; lengths: `(B,)` words.
            heads, labels: `(B, P)` gold (projective) head and label id of each word 1..n; -100 elsewhere.
            steps: `(B, 2n, 3)` the oracle derivation's (buffer front, stack-size bucket, action); -100 padding.
            matchings: `(B, n, 3)` each shifted word's (word, stack-size bucket, buffer front at its reduction);
                -100 padding.
            (heads, labels, steps and matchings are the training targets: all or none.)
            teacher_arcs: `(B, P, P)` `[b, h, d]` a teacher's p(h | d) (distillation; 0 where nothing is);
                teacher_labels: `(B, P, labels)` its label distribution of each word's arc from its gold head. With
                them the arc and label losses are `(1 - teacher_weight)` x the gold cross-entropy `+ teacher_weight`
                x the cross-entropy against the teacher's distribution.
        """
        targets = {"heads": heads, "labels": labels, "steps": steps, "matchings": matchings}
        missing = [name for name, target in targets.items() if target is None]
        if 0 < len(missing) < len(targets):
            raise ValueError(f"the training targets go together: {', '.join(missing)} missing")
        words = self.encode_words(input_ids, attention_mask, first_pieces, lengths)
        arc_log_probs = self.arc_log_probs(words, lengths)
        loss = None
        if heads is not None and labels is not None and steps is not None and matchings is not None:
            real = heads.ne(-100)
            gold_heads = heads.clamp(min=0)
            arc_losses = -arc_log_probs.gather(1, gold_heads[:, None]).squeeze(1)
            label_log_probs = self.label_logits(words, gold_heads).float().log_softmax(dim=-1)
            label_losses = -label_log_probs.gather(-1, labels.clamp(min=0)[..., None]).squeeze(-1)
            if teacher_arcs is not None and teacher_labels is not None:
                weight = self.teacher_weight
                arc_losses = (1 - weight) * arc_losses - weight * (teacher_arcs * arc_log_probs).sum(1)
                label_losses = (1 - weight) * label_losses - weight * (teacher_labels * label_log_probs).sum(-1)
            arc_loss, label_loss = arc_losses[real].mean(), label_losses[real].mean()
            step_real = steps[..., 0].ne(-100)
            transitions = self.transition_log_probs(words, lengths)
            batch = torch.arange(words.size(0), device=words.device)[:, None]
            picked = steps.clamp(min=0)
            transition_loss = -transitions[batch, picked[..., 0], picked[..., 1], picked[..., 2]][step_real].mean()
            match_real = matchings[..., 0].ne(-100)
            picked = matchings.clamp(min=0)
            matched = self.matching_log_probs(words, lengths, picked[..., :2])
            matching_loss = -matched.gather(2, picked[..., 2:]).squeeze(2)[match_real].mean()
            loss = arc_loss + label_loss + transition_loss + matching_loss
        return ArcHybridOutput(loss=loss, word_states=words, arc_log_probs=arc_log_probs)

    # The parse contract (the pipeline and CLI check every call against it before parsing): the keyword options of
    # `parse` with the values each takes, and what a parse holds besides `words`.
    parse_options = {"head_decoding": HEAD_DECODINGS}
    parse_outputs = ("heads", "deprels")

    def parse_length_error(self, words: list[str], tokenizer) -> str | None:
        """Why `parse` would refuse `words` for their length (more word pieces than the encoder's positions), or
        None; the pipeline asks before batching, so that its error names the caller's item."""
        return word_piece_length_error(words, tokenizer, self.config.encoder_config.max_position_embeddings)

    @torch.no_grad()
    def parse(self, sentences: list[list[str]], tokenizer, head_decoding: str | None = None) -> list[dict]:
        """Parse a batch of sentences given as words (punctuation included).

        `head_decoding`: `"derivation"` (the stack-size DP) or `"eisner"` (over the arc scores alone); default
        `config.head_decoding`. Returns one dict per sentence: `words`, `heads` (1-based, 0 = root; a projective tree
        with one root, by construction), `deprels` and each tag set of `config.tag_labels` (`upos` ...). Raises
        ValueError naming the sentence when one has no word or more word pieces than the encoder's positions.
        """
        decoding = head_decoding or self.config.head_decoding
        if decoding not in HEAD_DECODINGS:
            raise ValueError(f"head_decoding must be one of {HEAD_DECODINGS}, got {decoding!r}")
        inputs = encode_word_pieces(sentences, tokenizer, self.config.encoder_config.max_position_embeddings)
        heads, label_ids = [], []
        tag_ids: dict[str, list[list[int]]] = {name: [] for name in self.config.tag_labels}
        for chunk in consecutive_chunks(inputs["lengths"].tolist(), PARSE_CHART_POSITIONS):
            chunk_heads, chunk_labels, chunk_tags = self._decode(rows_of(inputs, chunk), decoding)
            heads += chunk_heads
            label_ids += chunk_labels
            for name, ids in chunk_tags.items():
                tag_ids[name] += ids
        return [
            {
                "words": list(words_of),
                "heads": heads[b][1 : len(words_of) + 1],
                "deprels": [self.config.deprels[label] for label in label_ids[b][1 : len(words_of) + 1]],
                **{
                    name: [self.config.tag_labels[name][tag] for tag in ids[b][1 : len(words_of) + 1]]
                    for name, ids in tag_ids.items()
                },
            }
            for b, words_of in enumerate(sentences)
        ]

    def _decode(
        self, inputs: dict, decoding: str
    ) -> tuple[list[list[int]], list[list[int]], dict[str, list[list[int]]]]:
        """Heads, label ids and tag ids by tag set (ROOT first) of a batch of encoded sentences."""
        inputs = {key: value.to(self.device) for key, value in inputs.items()}
        lengths = inputs["lengths"]
        words = self.encode_words(**inputs)
        arc_log_probs = self.arc_log_probs(words, lengths)
        if decoding == "derivation":
            _, heads, _ = stack_size_dp(
                self.transition_log_probs(words, lengths),
                self.matching_log_probs(words, lengths),
                arc_log_probs,
                lengths,
                single_root=True,
            )
        else:
            positions = torch.arange(words.size(1), device=words.device)
            mask = (positions[None] >= 1) & (positions[None] <= lengths[:, None])
            heads = eisner(arc_log_probs.transpose(1, 2), mask, single_root=True)
        heads = heads.to(words.device)
        return heads.tolist(), self.label_logits(words, heads).argmax(-1).tolist(), self.tag_ids(words)


def rows_of(inputs: dict, rows: range) -> dict:
    """The `encode_word_pieces` inputs of sentences `rows` alone, their padding cut to the longest of them."""
    selected = slice(rows.start, rows.stop)
    pieces = int(inputs["attention_mask"][selected].sum(-1).max())
    width = int(inputs["lengths"][selected].max()) + 2
    return {
        "input_ids": inputs["input_ids"][selected, :pieces],
        "attention_mask": inputs["attention_mask"][selected, :pieces],
        "first_pieces": inputs["first_pieces"][selected, :width],
        "lengths": inputs["lengths"][selected],
    }


__all__ = ["ArcHybridConfig", "ArcHybridForParsing", "ArcHybridOutput", "ArcHybridPreTrainedModel"]
