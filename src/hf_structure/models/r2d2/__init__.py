from ...evaluation.perplexity import pseudo_perplexity
from ...hub.card_metrics import UNSUPERVISED_PARSING, perplexity_metric
from ...registry import CardMetric, ModelSpec
from .configuration_r2d2 import R2D2Config
from .modeling_r2d2 import R2D2ForLanguageModeling, R2D2Model, R2D2PreTrainedModel


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
)

__all__ = ["MODEL_SPEC", "R2D2Config", "R2D2ForLanguageModeling", "R2D2Model", "R2D2PreTrainedModel"]
