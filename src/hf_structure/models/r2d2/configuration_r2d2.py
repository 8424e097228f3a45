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
    """

    model_type = "r2d2"
    tree_decodings = ("parser", "chart")

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
        if pruning not in ("heuristic", "parser"):
            raise ValueError(f"pruning must be 'heuristic' or 'parser', got {pruning!r}")
        tree_decoding = tree_decoding or ("parser" if pruning == "parser" else "chart")
        if tree_decoding not in self.tree_decodings or (tree_decoding == "parser" and pruning != "parser"):
            raise ValueError(f"tree_decoding must be 'chart', or 'parser' with parser pruning; got {tree_decoding!r}")
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
        self.pruning = pruning
        self.parser_embedding_size = parser_embedding_size
        self.parser_hidden_size = parser_hidden_size
        self.parser_num_layers = parser_num_layers
        self.parser_tree_samples = parser_tree_samples
        self.tree_decoding = tree_decoding
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.mask_token_id = mask_token_id
        kwargs["auto_map"] = {**AUTO_MAP, **(kwargs.get("auto_map") or {})}
        if kwargs.get("custom_pipelines") and _installed_pipeline_registered():
            # hf_structure is imported: its registered pipeline serves the task, so the folder's copy (which would
            # demand trust_remote_code=True) is not announced.
            kwargs.pop("custom_pipelines")
        super().__init__(pad_token_id=pad_token_id, tie_word_embeddings=tie_word_embeddings, **kwargs)

    @property
    def reported_tree_decodings(self) -> tuple[str, ...]:
        """The tree decodings this model's evaluation reports: both with parser pruning."""
        return self.tree_decodings if self.pruning == "parser" else ("chart",)


__all__ = ["R2D2Config"]
