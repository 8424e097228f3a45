"""The parse contract: each model declares beside `parse` the options it takes (`parse_options`) and what its parses
hold (`parse_outputs`); the pipeline and `hf-structure parse` check every call against that declaration before
anything is parsed, and refuse an option a model does not take the same way, with one `UnsupportedOptionError`
naming the option, the model and what it takes (one test per option and model, on the tiny random models that the
registered model types declare: `ModelSpec.tiny_models`)."""

from typing import Any

import pytest

from hf_structure import UnsupportedOptionError, model_spec
from hf_structure.cli import main
from hf_structure.cli.parse import option_flag
from hf_structure.registry import MODEL_SPECS
from tests.helpers.tiny_models import declared_tiny_models, save_declared_tiny_model

WORDS = ["the", "old", "man", "sat", "on", "the", "bench"]
TINY_MODELS = declared_tiny_models()
MODELS = tuple(TINY_MODELS)
# What each model takes: the contract as its model type documents it (`TinyModel.accepted_options`).
ACCEPTED = {name: tiny.accepted_options for name, (_, tiny) in TINY_MODELS.items()}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A tiny random checkpoint of each declared tiny model."""
    root = tmp_path_factory.mktemp("contract")
    return {name: str(save_declared_tiny_model(name, root / name)) for name in MODELS}


@pytest.fixture(scope="module")
def parsers(folders):
    from transformers import pipeline

    return {name: pipeline("unsupervised-parsing", model=folder) for name, folder in folders.items()}  # type: ignore[call-overload]  # transformers' overloads name only its own tasks


def refused_values() -> dict[str, dict[str, object]]:
    """For every option some model takes, and every model that does not take all the values the models take, a
    value it refuses (the option, for a model that does not take it at all): the one its tiny model declares
    (`TinyModel.refused_options`), else the first value another model takes and it does not (for `structures`, a
    list, as `--structures` gives it)."""
    known: dict[str, list] = {}
    for accepted in ACCEPTED.values():
        for option, values in accepted.items():
            known.setdefault(option, []).extend(value for value in values if value not in known[option])
    refused: dict[str, dict[str, object]] = {}
    for name, (_, tiny) in TINY_MODELS.items():
        for option in dict.fromkeys([*known, *tiny.refused_options]):
            others = [value for value in known.get(option, ()) if value not in ACCEPTED[name].get(option, ())]
            if option in tiny.refused_options:
                refused.setdefault(option, {})[name] = tiny.refused_options[option]
            elif others:
                refused.setdefault(option, {})[name] = (others[0],) if option == "structures" else others[0]
    return refused


# For every option and model, a value the model does not take, and the command line that gives it.
REFUSED = refused_values()
CASES = [(option, name) for option, values in REFUSED.items() for name in values]


def flags_of(option, value) -> list[str]:
    """The pipeline's own options have flags of their own; a model's options, one each, named after them."""
    shared = {
        "structures": ["--structures", ",".join(value) if isinstance(value, tuple) else str(value)],
        "return_scores": ["--scores"],
        "keep_punctuation": ["--drop-punctuation"],
    }
    return shared.get(option, [option_flag(option), str(value)])


def expected_message(name, option, value) -> str:
    """The refusal's text after the model's name, written out from `ACCEPTED`."""
    accepted = ACCEPTED[name]
    refused = f"{option}={value!r}" if option in accepted else f"the option {option}"
    takes = ", ".join(f"{name}={'|'.join(map(repr, values))}" for name, values in accepted.items())
    return f"does not take {refused}; it takes {takes}"


@pytest.fixture
def no_parsing(monkeypatch, parsers):
    """Every model's `parse` fails the test: a refused option must be refused before anything is parsed."""

    def parse(self, *args, **kwargs):
        raise AssertionError("parse was called")

    for parser in parsers.values():
        monkeypatch.setattr(type(parser.model), "parse", parse)


@pytest.mark.parametrize("name", MODELS)
def test_each_model_declares_what_it_takes(parsers, name):
    from hf_structure.pipelines.parser import accepted_options

    assert accepted_options(parsers[name].model) == ACCEPTED[name]


@pytest.mark.parametrize("name", MODELS)
def test_every_value_a_model_takes_parses(parsers, name):
    parser = parsers[name]
    for option, values in ACCEPTED[name].items():
        for value in values:
            assert parser(WORDS, is_split_into_words=True, **{option: value})["words"] == WORDS


@pytest.mark.parametrize(("option", "name"), CASES, ids=[f"{option}-{name}" for option, name in CASES])
def test_the_pipeline_refuses_an_option_before_parsing(parsers, no_parsing, option, name):
    parser, value = parsers[name], REFUSED[option][name]
    model = parser.model
    with pytest.raises(UnsupportedOptionError) as error_info:
        parser([" ".join(WORDS)] * 3, batch_size=2, **{option: value})
    assert str(error_info.value) == (
        f"{type(model).__name__} (model type {model.config.model_type!r}, {model.name_or_path}) "
        + expected_message(name, option, value)
    )
    assert error_info.value.options == (option,) and isinstance(error_info.value, ValueError)
    with pytest.raises(UnsupportedOptionError, match="does not take"):  # given when the pipeline is made, too
        type(parser)(model=model, tokenizer=parser.tokenizer, **{option: value})


@pytest.mark.parametrize(("option", "name"), CASES, ids=[f"{option}-{name}" for option, name in CASES])
def test_the_cli_refuses_an_option_before_parsing_in_one_line(parsers, folders, no_parsing, tmp_path, option, name):
    value = REFUSED[option][name]
    flags = flags_of(option, value)
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text(" ".join(WORDS) + "\n" + "a dog ran\n", encoding="utf-8")
    with pytest.raises(UnsupportedOptionError) as pipeline_error:
        parsers[name](" ".join(WORDS), **{option: value})
    with pytest.raises(SystemExit) as exit_info:
        main(["parse", "--model", folders[name], *flags, "--input", str(source), "--output", str(out)])
    assert exit_info.value.code == f"hf-structure parse: {' '.join(flags)}: {pipeline_error.value}"
    assert not out.exists()


def test_a_misspelt_option_and_several_refused_options_are_named_together(parsers, no_parsing):
    with pytest.raises(UnsupportedOptionError, match=r"does not take the option head_decodng; it takes structures="):
        parsers["structformer"]("a dog ran", head_decodng="eisner")
    with pytest.raises(UnsupportedOptionError) as error_info:
        parsers["g2gtr"]("a dog ran", head_decoding="eisner", return_scores=True, structures="dependency")
    assert "does not take return_scores=True, the option head_decoding; it takes" in str(error_info.value)
    assert error_info.value.options == ("return_scores", "head_decoding")


@pytest.mark.parametrize("name", [name for name, (spec, _) in TINY_MODELS.items() if "heads" not in spec.parse_outputs])
def test_the_cli_refuses_conllu_for_a_model_without_heads_before_parsing(parsers, folders, no_parsing, name, tmp_path):
    model, out = parsers[name].model, tmp_path / "out.conllu"
    with pytest.raises(SystemExit) as exit_info:
        main(["parse", "--model", folders[name], "--conllu", "--output", str(out), " ".join(WORDS)])
    assert exit_info.value.code == (
        f"hf-structure parse: --conllu: {type(model).__name__} (model type {model.config.model_type!r}, "
        f"{model.name_or_path}) gives no dependency heads, which CoNLL-U holds; use --json, --draw or --svg"
    )
    assert not out.exists()


def test_the_pipeline_returns_data_and_leaves_conllu_to_the_format_module(parsers, no_parsing):
    with pytest.raises(UnsupportedOptionError, match="does not take the option output_format"):
        parsers["g2gtr"]("a dog ran", output_format="conllu")


def test_the_registry_reads_the_declaration_of_the_parsing_class():
    from hf_structure import R2D2Model, StructFormerForMaskedLM

    assert model_spec("structformer").parse_options is StructFormerForMaskedLM.parse_options
    assert model_spec("r2d2").parse_options == {"tree_decoding": ("parser", "chart")} == R2D2Model.parse_options
    assert model_spec("arc_hybrid").parse_outputs == ("heads", "deprels")
    assert model_spec("g2gtr").parse_options == {}


def test_a_model_that_does_not_declare_the_contract_is_not_registered():
    from transformers import PreTrainedConfig, PreTrainedModel

    from hf_structure import ModelSpec, register_model

    class UndeclaredConfig(PreTrainedConfig):
        model_type = "undeclared-test-parser"

    class UndeclaredModel(PreTrainedModel):
        config_class = UndeclaredConfig
        parse_outputs = ("heads",)

        def parse(self, sentences, tokenizer, head_decoding=None):
            return []

    spec = ModelSpec(
        config_class=UndeclaredConfig,
        auto_classes={"AutoModel": UndeclaredModel},
        parsing_class="AutoModel",
        card_metrics=(),
    )
    with pytest.raises(TypeError, match="undeclared-test-parser: UndeclaredModel has parse but no valid parse_options"):
        register_model(spec)


def test_an_exported_folder_refuses_the_same_way_without_hf_structure(parsers, tmp_path):
    from tests.helpers.remote_code import parse_without_hf_structure

    out = tmp_path / "exported"
    parsers["r2d2"].save_pretrained(out)  # the model's and the pipeline's code go with it (parses: tests/models/r2d2)
    with pytest.raises(
        AssertionError,
        match="UnsupportedOptionError: R2D2Model .* does not take the option "
        "head_decoding; it takes structures='constituency'",
    ):
        parse_without_hf_structure(out, WORDS, tmp_path, is_split_into_words=True, head_decoding="eisner")


# ---------------------------------------------------------------------------------------------------------------
# Word conventions: raw text is cut into words as each model's training text was, unless a call or config says else.

# Every model type's tiny model cuts text as its config class says (`default_word_convention`).
HYPHENATED = "A well-known man and/or his dog ran."
WORDS_BY_CONVENTION = {
    "ptb": ["A", "well-known", "man", "and/or", "his", "dog", "ran", "."],
    "ud": ["A", "well", "-", "known", "man", "and", "/", "or", "his", "dog", "ran", "."],
}


def convention_of(name) -> str:
    spec, _ = TINY_MODELS[name]
    # Each model's generated config class has StructureConfig's `default_word_convention` (copied, not inherited).
    config_class: Any = spec.config_class
    return config_class.default_word_convention


def test_the_package_s_models_cut_text_into_words_as_their_training_text_was():
    """The language models train on the PTB's text, the supervised parsers on EWT's: each of the package's config
    classes cuts raw text as its recipe's training text was cut."""
    from hf_structure.training import LanguageModelTraining, ParserTraining

    checked = 0
    for spec in MODEL_SPECS.values():
        if spec.training is None or not spec.config_class.__module__.startswith("hf_structure.models."):
            continue  # a model without a recipe, or another package's
        recipe = spec.training_recipe()
        assert isinstance(recipe, (LanguageModelTraining, ParserTraining))
        expected = "ptb" if isinstance(recipe, LanguageModelTraining) else "ud"
        config_class: Any = spec.config_class  # a StructureConfig, copied into the generated file
        assert config_class.default_word_convention == expected, spec.config_class.model_type
        checked += 1
    assert checked >= 4


def words_of(results) -> list[list[str]]:
    """The words of each sentence of a text's results, after checking that each is the text's own characters."""
    for result in results:
        assert [HYPHENATED[start:end] for start, end in result["offsets"]] == result["words"]
    return [result["words"] for result in results]


@pytest.mark.parametrize("name", MODELS)
def test_each_model_type_cuts_text_into_words_as_its_training_text_was(parsers, name):
    parser = parsers[name]
    convention = convention_of(name)
    assert parser.model.config.word_convention == convention
    assert words_of(parser(HYPHENATED)) == [WORDS_BY_CONVENTION[convention]]
    # Word lists are taken as given, in any convention.
    assert parser(["well-known", "and/or"], is_split_into_words=True, word_convention="ud")["words"] == [
        "well-known",
        "and/or",
    ]


@pytest.mark.parametrize("name", ["structformer", "g2gtr"])
def test_a_call_or_the_pipeline_overrides_the_model_s_word_convention(parsers, name):
    parser = parsers[name]
    own = convention_of(name)
    other = "ud" if own == "ptb" else "ptb"
    expected = [WORDS_BY_CONVENTION[other]]
    assert words_of(parser(HYPHENATED, word_convention=other)) == expected
    assert [words_of(results) for results in parser([HYPHENATED] * 3, batch_size=2, word_convention=other)] == [
        expected
    ] * 3
    generated = parser((text for text in [HYPHENATED]), word_convention=other)
    assert [words_of(results) for results in generated] == [expected]
    made_so = type(parser)(model=parser.model, tokenizer=parser.tokenizer, word_convention=other)
    assert words_of(made_so(HYPHENATED)) == expected
    assert words_of(made_so(HYPHENATED, word_convention=own)) == [WORDS_BY_CONVENTION[own]]
    assert words_of(parser(HYPHENATED)) == [WORDS_BY_CONVENTION[own]]  # the pipeline's own is unchanged


def test_an_unknown_word_convention_is_an_error_naming_the_conventions(parsers):
    message = r"word_convention must be one of \('ptb', 'ud'\), got 'spacy'"
    with pytest.raises(ValueError, match=message):
        parsers["g2gtr"](HYPHENATED, word_convention="spacy")
    with pytest.raises(ValueError, match=message):
        type(parsers["g2gtr"])(
            model=parsers["g2gtr"].model, tokenizer=parsers["g2gtr"].tokenizer, word_convention="spacy"
        )


@pytest.mark.parametrize("model_type", list(MODEL_SPECS))
def test_each_config_class_gives_its_model_type_s_word_convention_which_a_config_may_override(model_type):
    config_class: Any = model_spec(model_type).config_class  # a StructureConfig, copied into the generated file
    assert config_class().word_convention == config_class.default_word_convention
    for convention in ("ptb", "ud"):
        config = config_class(word_convention=convention)
        assert config.word_convention == convention
        assert config_class.from_dict(config.to_dict()).word_convention == convention
    with pytest.raises(ValueError, match=r"word_convention must be one of \('ptb', 'ud'\), got 'spacy'"):
        config_class(word_convention="spacy")


@pytest.mark.parametrize("name", ["structformer", "g2gtr"])
def test_a_saved_config_states_the_convention_and_one_without_it_takes_the_model_type_s(folders, name, tmp_path):
    import json
    import shutil

    from transformers import pipeline

    own = convention_of(name)
    other = "ud" if own == "ptb" else "ptb"
    folder = shutil.copytree(folders[name], tmp_path / name)
    config = json.loads((folder / "config.json").read_text())
    assert config["word_convention"] == own
    (folder / "config.json").write_text(json.dumps({**config, "word_convention": other}))
    assert words_of(pipeline("unsupervised-parsing", model=str(folder))(HYPHENATED)) == [WORDS_BY_CONVENTION[other]]  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    del config["word_convention"]  # a folder saved before the conventions (the bundled checkpoints' config.json)
    (folder / "config.json").write_text(json.dumps(config))
    parser = pipeline("unsupervised-parsing", model=str(folder))  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    assert parser.model.config.word_convention == own
    assert words_of(parser(HYPHENATED)) == [WORDS_BY_CONVENTION[own]]


def test_an_exported_folder_cuts_words_by_its_convention_without_hf_structure(parsers, tmp_path):
    from tests.helpers.remote_code import parse_without_hf_structure

    out = tmp_path / "exported"
    parsers["g2gtr"].save_pretrained(out)  # the generated pipeline file and word_tokenization.py go with it
    for options, convention in (({}, "ud"), ({"word_convention": "ptb"}, "ptb")):
        results = parse_without_hf_structure(out, HYPHENATED, tmp_path, **options)
        assert words_of(results) == [WORDS_BY_CONVENTION[convention]]
