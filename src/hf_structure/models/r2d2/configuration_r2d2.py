"""R2D2 configuration."""

from transformers import PretrainedConfig

AUTO_MAP = {
    "AutoConfig": "configuration_r2d2.R2D2Config",
    "AutoModel": "modeling_r2d2.R2D2Model",
    "AutoModelForMaskedLM": "modeling_r2d2.R2D2ForLanguageModeling",
}


# Copied from hf_structure.models.structformer.configuration_structformer._installed_pipeline_registered
def _installed_pipeline_registered() -> bool:
    from transformers.pipelines import PIPELINE_REGISTRY

    return "unsupervised-parsing" in PIPELINE_REGISTRY.get_supported_tasks()


class R2D2Config(PretrainedConfig):
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
    """

    model_type = "r2d2"

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
        if punctuation_policy not in ("reattach", "keep"):
            raise ValueError(f"punctuation_policy must be 'reattach' or 'keep', got {punctuation_policy!r}")
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
        self.punctuation_policy = punctuation_policy
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.mask_token_id = mask_token_id
        kwargs["auto_map"] = {**AUTO_MAP, **(kwargs.get("auto_map") or {})}
        if kwargs.get("custom_pipelines") and _installed_pipeline_registered():
            # hf_structure is imported: its registered pipeline serves the task, so the folder's copy (which would
            # demand trust_remote_code=True) is not announced.
            kwargs.pop("custom_pipelines")
        super().__init__(pad_token_id=pad_token_id, tie_word_embeddings=tie_word_embeddings, **kwargs)


__all__ = ["R2D2Config"]
