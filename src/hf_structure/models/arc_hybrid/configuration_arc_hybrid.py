"""Arc-hybrid parser configuration."""

from transformers import PretrainedConfig

AUTO_MAP = {
    "AutoConfig": "configuration_arc_hybrid.ArcHybridConfig",
    "AutoModel": "modeling_arc_hybrid.ArcHybridForParsing",
}

HEAD_DECODINGS = ("derivation", "eisner")

# The BERT settings an encoder of type "bert" is built from (all-MiniLM-L6-v2's values by default).
BERT_KEYS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "hidden_act",
    "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
    "layer_norm_eps", "initializer_range", "pad_token_id",
)


class ArcHybridConfig(PretrainedConfig):
    r"""Configuration of an arc-hybrid dependency parser decoded exactly by dynamic programming (Le Roux, Rozenknop &
    Lacroix, CoNLL 2019): the best (derivation, tree) pair under locally normalised scores of dependency arcs,
    transitions (from the buffer front and the stack size) and matchings (which buffer front reduces a shifted word).

    Args:
        encoder_type: `"bert"` (a BERT-type Transformer over word pieces, e.g. initialised from all-MiniLM-L6-v2) or
            `"bilstm"` (a BiLSTM over word-piece embeddings, the features of Shi et al.'s arc-hybrid parser; Le Roux et
            al. use self-attention layers over word, POS and GloVe vectors). A word is represented by
            its first piece; ROOT by `[CLS]`.
        vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, hidden_act,
        hidden_dropout_prob, attention_probs_dropout_prob, max_position_embeddings, type_vocab_size,
        layer_norm_eps, initializer_range: the BERT encoder's (vocab_size and hidden_size, the embedding width, are
            the BiLSTM's too).
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
    """

    model_type = "arc_hybrid"
    # Evaluation also reports the scores of these decodings (`uas_eisner`, ...): the paper's arcs-only ablation.
    reported_head_decodings = ("eisner",)

    def __init__(
        self,
        encoder_type="bert",
        vocab_size=30522,
        hidden_size=384,
        num_hidden_layers=6,
        num_attention_heads=12,
        intermediate_size=1536,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=512,
        type_vocab_size=2,
        layer_norm_eps=1e-12,
        initializer_range=0.02,
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
        pad_token_id=0,
        **kwargs,
    ):
        if encoder_type not in ("bert", "bilstm"):
            raise ValueError(f"encoder_type must be 'bert' or 'bilstm', got {encoder_type!r}")
        if head_decoding not in HEAD_DECODINGS:
            raise ValueError(f"head_decoding must be one of {HEAD_DECODINGS}, got {head_decoding!r}")
        if stack_buckets < 4:
            # Buckets 1, 2 and 3+ at least: which reductions are legal depends on q = 1, q = 2 (onto ROOT), q >= 3.
            raise ValueError(f"stack_buckets must be at least 4 (bucket 0 is unused), got {stack_buckets}")
        if encoder_type == "bert" and hidden_size % num_attention_heads:
            raise ValueError(f"hidden_size {hidden_size} is not a multiple of num_attention_heads")
        self.encoder_type = encoder_type
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
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
        self.punctuation_policy = punctuation_policy
        kwargs["auto_map"] = {**AUTO_MAP, **(kwargs.get("auto_map") or {})}
        if kwargs.get("custom_pipelines") and _installed_pipeline_registered():
            # hf_structure is imported: its registered pipeline serves the task, so the folder's copy (which would
            # demand trust_remote_code=True) is not announced.
            kwargs.pop("custom_pipelines")
        super().__init__(pad_token_id=pad_token_id, **kwargs)


# Copied from hf_structure.models.structformer.configuration_structformer._installed_pipeline_registered
def _installed_pipeline_registered() -> bool:
    from transformers.pipelines import PIPELINE_REGISTRY

    return "unsupervised-parsing" in PIPELINE_REGISTRY.get_supported_tasks()


__all__ = ["ArcHybridConfig"]
