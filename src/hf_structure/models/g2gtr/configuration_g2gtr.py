"""Graph-to-Graph Transformer configuration."""

from transformers import PretrainedConfig

AUTO_MAP = {
    "AutoConfig": "configuration_g2gtr.G2GTrConfig",
    "AutoModel": "modeling_g2gtr.G2GTrForParsing",
}


class G2GTrConfig(PretrainedConfig):
    r"""Configuration of a Graph-to-Graph Transformer dependency parser (Mohammadshahi & Henderson, 2020), in its
    Sentence Transformer form: a BERT-type encoder reads the sentence's word pieces, the partial dependency graph
    enters its attention, and a transition classifier reads the stack and buffer words' first pieces.

    Args:
        vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, hidden_act,
        hidden_dropout_prob, attention_probs_dropout_prob, max_position_embeddings, type_vocab_size,
        layer_norm_eps, initializer_range: the BERT encoder's (defaults: all-MiniLM-L6-v2's).
        graph_layers: how many of the top encoder layers take the partial graph as input. The layers below are
            computed once per sentence and shared by all its parser configurations. Default: all of them, as in the
            paper; 0 is the Sentence Transformer baseline without graph input (no relations, no label embeddings).
        deprels: the dependency labels the parser predicts, in id order.
        action_hidden_size, label_hidden_size: hidden sizes of the action and label MLPs.
        classifier_dropout: dropout in both MLPs.
        encoder_init: where the encoder's initial weights came from (a record; not read when loading).
        punctuation_policy: `"keep"`: the parser sees every word, punctuation included.
    """

    model_type = "g2gtr"

    def __init__(
        self,
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
        graph_layers=None,
        deprels=("dep",),
        action_hidden_size=500,
        label_hidden_size=100,
        classifier_dropout=0.33,
        encoder_init=None,
        punctuation_policy="keep",
        pad_token_id=0,
        **kwargs,
    ):
        graph_layers = num_hidden_layers if graph_layers is None else graph_layers
        if not 0 <= graph_layers <= num_hidden_layers:
            raise ValueError(f"graph_layers must be between 0 and num_hidden_layers, got {graph_layers}")
        if hidden_size % num_attention_heads:
            raise ValueError(f"hidden_size {hidden_size} is not a multiple of num_attention_heads")
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
        self.graph_layers = graph_layers
        self.deprels = list(deprels)
        self.action_hidden_size = action_hidden_size
        self.label_hidden_size = label_hidden_size
        self.classifier_dropout = classifier_dropout
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


__all__ = ["G2GTrConfig"]
