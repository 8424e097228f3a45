"""The tiny test parser's `ModelSpec`: what a model's folder declares as `MODEL_SPEC` (its card template is a test
fixture, its training recipe `tiny_parser_training.py`). Tests register it with `register_model(MODEL_SPEC)`."""

from hf_structure import CardMetric, ModelSpec
from tests.helpers.paths import FIXTURES
from tests.helpers.tiny_parser import TinyParserConfig, TinyParserModel

MODEL_SPEC = ModelSpec(
    config_class=TinyParserConfig,
    auto_classes={"AutoModel": TinyParserModel},
    parsing_class="AutoModel",
    card_template=FIXTURES / "tiny_card.md",
    card_metrics=(
        CardMetric("uas", "UAS", "Unlabelled attachment score"),
        CardMetric("las", "LAS", "Labelled attachment score"),
    ),
    card_tags=("dependency-parsing",),
    training="tests.helpers.tiny_parser_training",
)
