"""The spaCy factory of hf_structure's component, kept out of the `hf_structure` package.

spaCy imports every `spacy_factories` entry point whenever it builds a pipeline (`spacy.blank("en")` too), and
importing `hf_structure` loads torch's and transformers' model code (about two seconds). This module imports spaCy
alone; the component (`hf_structure.spacy_component`) loads when a pipeline adds it, and its model when it first
parses.
"""

from spacy.language import Language


# `assigns`: everything the component may set; what it sets for a given model depends on what that model gives
# (hf_structure.spacy_component's docstring).
@Language.factory(
    "hf_structure",
    assigns=[
        "token.head",
        "token.dep",
        "token.pos",
        "token.tag",
        "token.morph",
        "token.is_sent_start",
        "doc.sents",
        "doc.spans",
    ],
    default_config={
        "model": "structformer-ptb",
        "batch_size": 32,
        "spans_key": "constituents",
        "num_threads": None,
        "save_model": False,
        "quantize": None,
    },
)
def make_component(
    nlp: Language,
    name: str,
    model: str,
    batch_size: int,
    spans_key: str,
    num_threads: int | None,
    save_model: bool,
    quantize: str | None,
):
    from hf_structure.spacy_component import StructureParser

    return StructureParser(
        model,
        batch_size=batch_size,
        spans_key=spans_key,
        num_threads=num_threads,
        save_model=save_model,
        quantize=quantize,
        name=name,
    )
