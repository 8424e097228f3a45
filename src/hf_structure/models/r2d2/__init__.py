from ...evaluation.perplexity import pseudo_perplexity
from ...hub.card_metrics import UNSUPERVISED_PARSING, perplexity_metric
from ...registry import CardMetric, ModelSpec, TinyModel
from .configuration_r2d2 import R2D2Config
from .modeling_r2d2 import R2D2ForLanguageModeling, R2D2Model, R2D2PreTrainedModel

# The tests' tiny R2D2 (`ModelSpec.tiny_models`), which its Fast-R2D2 variant extends.
TINY_R2D2 = dict(
    vocab_size=64, hidden_size=16, num_attention_heads=2, intermediate_size=32, num_composition_layers=1, window_size=2
)


def r2d2_perplexities(model, tokenizer, source: str, seed: int = 0, paper_seeds: int = 0) -> dict[str, float]:
    """`pppl`: the R2D2 paper's pseudo-perplexity, which masks nothing (so neither seed applies)."""
    return {"pppl": pseudo_perplexity(model, tokenizer, source)}


MODEL_SPEC = ModelSpec(
    config_class=R2D2Config,
    auto_classes={"AutoModel": R2D2Model, "AutoModelForMaskedLM": R2D2ForLanguageModeling},
    parsing_class="AutoModelForMaskedLM",
    card_metrics=(
        *UNSUPERVISED_PARSING[:2],
        CardMetric(
            "sentence_f1_cpcfg",
            "Sentence-level UF1 (compound-PCFG scorer)",
            "Sentence-level unlabelled F1 as the R2D2 papers' compare_trees.py counts the whole-sentence span",
        ),
        perplexity_metric(
            "pppl_test",
            "Pseudo-perplexity (PTB test) ↓",
            "Bidirectional LM pseudo-perplexity (left and right contexts encoded as separate sentences)",
            task_name="Language modelling",
        ),
    ),
    card_tags=("r2d2", "unsupervised-parsing", "constituency-parsing", "grammar-induction"),
    pipeline_tag="fill-mask",
    datasets=("ptb_text_only",),
    bundled=("r2d2-ptb",),
    perplexity=r2d2_perplexities,
    training="hf_structure.models.r2d2.training_r2d2",
    tiny_models=(
        TinyModel(
            "r2d2",
            config=TINY_R2D2,
            accepted_options={
                "structures": ("constituency",),
                "return_scores": (False,),
                "keep_punctuation": (True, False),
                "tree_decoding": ("chart",),
            },
        ),
        # Fast-R2D2: its top-down parser prunes the chart, and parses on its own too.
        TinyModel(
            "fast_r2d2",
            config=dict(
                TINY_R2D2, pruning="parser", parser_embedding_size=8, parser_hidden_size=8, parser_num_layers=1
            ),
            accepted_options={
                "structures": ("constituency",),
                "return_scores": (False,),
                "keep_punctuation": (True, False),
                "tree_decoding": ("parser", "chart"),
            },
            refused_options={"tree_decoding": "greedy"},  # a decoding no model has
        ),
    ),
)

__all__ = ["MODEL_SPEC", "R2D2Config", "R2D2ForLanguageModeling", "R2D2Model", "R2D2PreTrainedModel"]
