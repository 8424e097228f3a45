"""StructFormer configuration."""

from transformers import PretrainedConfig

AUTO_MAP = {
    "AutoConfig": "configuration_structformer.StructFormerConfig",
    "AutoModel": "modeling_structformer.StructFormerModel",
    "AutoModelForMaskedLM": "modeling_structformer.StructFormerForMaskedLM",
}

HEAD_DECODINGS = ("eisner", "chu-liu-edmonds", "argmax")


def _installed_pipeline_registered() -> bool:
    from transformers.pipelines import PIPELINE_REGISTRY

    return "unsupervised-parsing" in PIPELINE_REGISTRY.get_supported_tasks()


class StructFormerConfig(PretrainedConfig):
    r"""Configuration of a StructFormer (Shen et al., ACL 2021) masked language model.

    Defaults follow the paper's PTB setting: 8 layers, d_model 512, 8 heads, d_ff 2048, dropout 0.1,
    3 parser convolution layers of width 9.

    Args:
        vocab_size: number of word types (the PTB vocabulary: 9,999 words plus `<pad>` and `<mask>`).
        hidden_size: model width d.
        num_hidden_layers: number of dependency-constrained Transformer blocks.
        num_attention_heads: heads per block.
        intermediate_size: width of the feed-forward layers.
        hidden_dropout_prob: dropout on embeddings, residual branches and feed-forward layers.
        attention_probs_dropout_prob: dropout on the attention weights (0 in the released runs).
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
            does). Evaluation and parsing always calibrate per sentence, so a parse never depends on its batch.
        head_decoding: how `parse` turns p_D into dependency heads: `"eisner"` (projective maximum spanning tree
            over log p_D, the highest word as root), `"chu-liu-edmonds"` (the non-projective one), or `"argmax"`
            (Eq. 18 per word, as the paper scores it; the heads may then contain cycles).
        punctuation_policy: `"reattach"`: the model was trained without punctuation, so the pipeline removes
            punctuation before the model sees a sentence and re-attaches it afterwards; `"keep"`: it sees every word.
        layer_norm_eps: epsilon of the layer norms.
        initializer_range: embeddings are initialised uniform(-initializer_range, initializer_range).
    """

    model_type = "structformer"
    # Evaluation also reports the scores of these decodings (`uas_argmax`, ...): the paper's rule (Eq. 18).
    reported_head_decodings = ("argmax",)

    def __init__(
        self,
        vocab_size=10001,
        hidden_size=512,
        num_hidden_layers=8,
        num_attention_heads=8,
        intermediate_size=2048,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.0,
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
        if punctuation_policy not in ("reattach", "keep"):
            raise ValueError(f"punctuation_policy must be 'reattach' or 'keep', got {punctuation_policy!r}")
        if parser_conv_size % 2 != 1:
            raise ValueError(f"parser_conv_size must be odd (same padding), got {parser_conv_size}")
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.fast_dropout = fast_dropout
        self.num_parser_layers = num_parser_layers
        self.parser_conv_size = parser_conv_size
        self.max_position_embeddings = max_position_embeddings
        self.relations = list(relations)
        self.relation_weight_activation = relation_weight_activation
        self.calibration_scope = calibration_scope
        self.head_decoding = head_decoding
        self.punctuation_policy = punctuation_policy
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.mask_token_id = mask_token_id
        # Every saved folder names all the classes it can be loaded as (save_pretrained alone records only the
        # saved class's own Auto class, and the parsing pipeline loads AutoModel).
        kwargs["auto_map"] = {**AUTO_MAP, **(kwargs.get("auto_map") or {})}
        if kwargs.get("custom_pipelines") and _installed_pipeline_registered():
            # hf_structure is imported: its registered pipeline serves the task, so the folder's copy (which would
            # demand trust_remote_code=True) is not announced.
            kwargs.pop("custom_pipelines")
        super().__init__(pad_token_id=pad_token_id, tie_word_embeddings=tie_word_embeddings, **kwargs)


__all__ = ["StructFormerConfig"]
