"""The batched-parsing core that the pipeline, `hf-structure parse` and `hf-structure evaluate` share
(`pipelines/batched_parsing.py`): a model's refusal of one sentence (a `ValueError` of its `parse`, as the parsing
contract says) is that sentence's error alone, by all three ways in; results keep the input's order whatever the
batches; the file travels with the pipeline's, so it imports only the standard library.

The refusing model is `tests.helpers.refusing_parser`'s."""

import json

import pytest
import torch
from transformers import pipeline

from hf_structure import SentenceError
from hf_structure.bundled import load_model_and_tokenizer
from hf_structure.cli import main
from hf_structure.evaluation.scoring import evaluate, gold_treebank
from hf_structure.pipelines.batched_parsing import Sentence, parse_in_order
from hf_structure.pipelines.parser import Parser
from tests.helpers.imports import called_names, imported_modules
from tests.helpers.paths import ROOT
from tests.helpers.refusing_parser import GOOD, REFUSED, WITH_REFUSED, save_refusing_parser


@pytest.fixture(scope="module")
def refusing(tmp_path_factory):
    """A saved folder of the refusing parser, registered as a model type of its own."""
    return save_refusing_parser(tmp_path_factory.mktemp("refusing"))


@pytest.fixture(scope="module")
def parser(refusing):
    return pipeline("unsupervised-parsing", model=str(refusing))  # type: ignore[call-overload]  # transformers' overloads name only its own tasks


@pytest.mark.parametrize("batch_size", [1, 2, 64])
def test_the_pipeline_records_a_refused_sentence_and_parses_the_others_as_alone(parser, batch_size):
    batch = [GOOD[0], WITH_REFUSED, GOOD[1], GOOD[2]]
    results = parser(batch, batch_size=batch_size, on_error="record")
    assert results[1] == {
        "words": WITH_REFUSED,
        "error": f"sentence 2: {REFUSED!r} is a word this model does not parse",
    }
    assert [results[0], results[2], results[3]] == [parser(words, is_split_into_words=True) for words in GOOD]
    with pytest.raises(SentenceError, match=f"^sentence 2: {REFUSED!r} is a word this model does not parse$"):
        parser(batch, batch_size=batch_size)


def test_the_pipeline_records_a_refused_sentence_of_a_text_and_of_a_stream(parser):
    texts = ["the dog ran. the xyzzy sat.", "a man sat on the bench."]
    first, second = parser(texts, on_error="record")
    assert first[1]["error"] == f"item 1, sentence 2: {REFUSED!r} is a word this model does not parse"
    assert first[0] == parser("the dog ran.")[0]
    assert "error" not in second[0]
    streamed = list(parser((words for words in [GOOD[0], WITH_REFUSED]), is_split_into_words=True, on_error="record"))
    assert streamed[0] == parser(GOOD[0], is_split_into_words=True)
    assert streamed[1]["error"] == f"the sentence: {REFUSED!r} is a word this model does not parse"


def test_a_dataset_records_a_refused_sentence_and_parses_the_others(parser):
    from datasets import Dataset
    from transformers.pipelines.pt_utils import KeyDataset

    dataset = Dataset.from_dict({"text": ["the dog ran.", "the xyzzy sat. a man sat.", "the man ran."]})
    first, second, third = parser(KeyDataset(dataset, "text"), on_error="record", batch_size=2)
    assert second[0]["error"] == f"sentence 1: {REFUSED!r} is a word this model does not parse"
    assert second[1] == parser("a man sat.")[0] | {"offsets": [[15, 16], [17, 20], [21, 24], [24, 25]]}
    assert [first, third] == [parser("the dog ran."), parser("the man ran.")]


@pytest.mark.parametrize("output_format", ["--json", "--conllu"])
def test_the_cli_parses_the_other_sentence_of_a_line_with_a_refused_one(refusing, tmp_path, capsys, output_format):
    main(["parse", "--model", str(refusing), output_format, "the dog ran. the xyzzy sat.", "a man sat."])
    output = capsys.readouterr()
    error = f"line 1, sentence 2: {REFUSED!r} is a word this model does not parse"
    if output_format == "--json":
        first, refused, other = (json.loads(line) for line in output.out.splitlines())
        assert first["words"] == ["the", "dog", "ran", "."] and "heads" in first and first["line"] == 1
        assert refused == {"line": 1, "words": ["the", REFUSED, "sat", "."], "error": error, **_located(refused)}
        assert "heads" in other and other["line"] == 2
    else:
        blocks = output.out.strip().split("\n\n")
        assert blocks[0].startswith("# newpar\n# sent_id = 1\n# text = the dog ran.\n1\tthe")
        assert blocks[1] == f"# sent_id = 2\n# text = the {REFUSED} sat.\n# error = {error}"
        assert blocks[2].startswith("# newpar\n# sent_id = 3\n# text = a man sat.\n1\ta")
    assert output.err.strip() == (
        "hf-structure parse: 1 of 2 lines held a sentence that could not be parsed (1 of them had their other "
        "sentences parsed; see their `error`)"
    )


def _located(result: dict) -> dict:
    return {key: result[key] for key in ("offsets", "text")}


def test_the_training_evaluation_leaves_a_refused_sentence_out_as_evaluate_does(refusing, tmp_path, capsys):
    from transformers import TrainerControl, TrainerState, TrainingArguments

    from hf_structure.evaluation.callbacks import ParsingEvaluationCallback

    treebank = tmp_path / "gold.conllu"
    blocks = []
    for words in [*GOOD, WITH_REFUSED]:
        heads = [0] + [1] * (len(words) - 1)
        rows = [f"{k}\t{word}\t_\tNOUN\t_\t_\t{head}\tdep\t_\t_" for k, (word, head) in enumerate(zip(words, heads), 1)]
        blocks.append("\n".join(rows) + "\n")
    treebank.write_text("\n".join(blocks), encoding="utf-8")
    main(["evaluate", "--model", str(refusing), "--treebank", str(treebank)])
    reported = json.loads(capsys.readouterr().out)
    assert reported["skipped"] == 1 and reported["sentences"] == len(GOOD)

    model, tokenizer = load_model_and_tokenizer(str(refusing))
    model.train()  # as the Trainer leaves it between evaluations
    metrics: dict = {}
    arguments = TrainingArguments(str(tmp_path / "run"), per_device_eval_batch_size=2, report_to=[])
    ParsingEvaluationCallback(str(treebank), tokenizer).on_evaluate(
        arguments, TrainerState(), TrainerControl(), model=model, metrics=metrics
    )
    assert metrics["eval_parse_skipped"] == 1
    assert {key: metrics[f"eval_parse_{key}"] for key in ("uas", "las")} == {
        key: reported[key] for key in ("uas", "las")
    }
    assert model.training  # put back in training mode


def test_the_cli_writes_the_refused_line_as_its_error_and_the_others_parsed(refusing, tmp_path, capsys):
    source, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
    source.write_text("the dog ran\nthe xyzzy sat\na man sat on the bench\n", encoding="utf-8")
    main(["parse", "--model", str(refusing), "--pretokenized", "--input", str(source), "--output", str(out)])
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert lines[1] == {"words": WITH_REFUSED, "error": f"line 2: {REFUSED!r} is a word this model does not parse"}
    model, tokenizer = load_model_and_tokenizer(str(refusing))
    assert [lines[0]["heads"], lines[2]["heads"]] == [
        p["heads"] for p in Parser(model, tokenizer).parse_words(GOOD[:2])
    ]
    assert capsys.readouterr().err.strip() == "hf-structure parse: 1 of 3 lines could not be parsed (see their `error`)"


def test_evaluate_leaves_a_refused_sentence_out_and_names_it(refusing, tmp_path):
    def conllu(sentences) -> str:
        rows = []
        for number, words in enumerate(sentences, 1):
            rows.append(f"# sent_id = s{number}")
            rows += [
                f"{i}\t{w}\t_\tNOUN\t_\t_\t{i - 1}\t{'root' if i == 1 else 'dep'}\t_\t_" for i, w in enumerate(words, 1)
            ]
            rows.append("")
        return "\n".join(rows) + "\n"

    model, tokenizer = load_model_and_tokenizer(str(refusing))
    odd, clean = tmp_path / "odd.conllu", tmp_path / "clean.conllu"
    odd.write_text(conllu([GOOD[0], WITH_REFUSED, GOOD[1]]), encoding="utf-8")
    clean.write_text(conllu(GOOD[:2]), encoding="utf-8")
    scores = evaluate(Parser(model, tokenizer), gold_treebank(model, odd))[0]
    assert scores.pop("skipped") == [f"sentence 2 ({odd}:6): {REFUSED!r} is a word this model does not parse"]
    expected = evaluate(Parser(model, tokenizer), gold_treebank(model, clean))[0]
    scores.pop("sentences_per_second"), expected.pop("sentences_per_second")
    assert scores == expected


def test_results_come_in_input_order_as_soon_as_they_are_complete():
    """Sentences are parsed shortest first within a window, and each batch gives back the longest run of complete
    results from where the last one stopped: a model that records the batches it was given shows both."""

    class Recorder:
        batches: list[list[list[str]]] = []

        def parse(self, sentences, tokenizer):
            self.batches.append(sentences)
            return [{"words": words} for words in sentences]

    lengths = [3, 1, 4, 1, 5, 2]
    sentences = [Sentence([f"w{k}"] * n, list(range(n)), f"s{k}") for k, n in enumerate(lengths)]
    sentences.insert(2, Sentence(["."], [], "punctuation alone"))  # nothing to parse: complete from the start
    model = Recorder()
    yielded = list(parse_in_order(model, None, iter(sentences), {}, batch_size=2, window=4))
    # Windows of four: s0 s1 (punctuation) s2, then s3 s4 s5; within each, the shortest first.
    assert [[len(words) for words in batch] for batch in model.batches] == [[1, 3], [4], [1, 2], [5]]
    assert [[sentence.name for sentence, _ in done] for done in yielded] == [
        ["s0", "s1", "punctuation alone"],
        ["s2"],
        ["s3"],  # s5 is parsed too, but s4 before it is not
        ["s4", "s5"],
    ]
    assert [parse for done in yielded for _, parse in done] == [
        None if not s.seen else {"words": s.words} for s in sentences
    ]


def test_the_core_imports_only_the_standard_library():
    """It travels with the pipeline's file in a saved model folder, where hf_structure is not installed."""
    path = ROOT / "src" / "hf_structure" / "pipelines" / "batched_parsing.py"
    assert imported_modules(path) == {"re", "unicodedata", "collections.abc", "typing"}
    assert not called_names(path) & {"__import__", "exec", "eval"}


def test_the_parser_imports_torch_the_standard_library_and_its_siblings():
    """`Parser` travels with the pipeline's file too; the pipeline adds transformers alone."""
    pipelines = ROOT / "src" / "hf_structure" / "pipelines"
    standard = {"collections.abc", "contextlib", "math", "os", "time", "typing", "unicodedata"}
    assert imported_modules(pipelines / "parser.py") == standard | {"torch", ".batched_parsing", ".word_tokenization"}
    pipeline_file = imported_modules(pipelines / "unsupervised_parsing.py")
    assert pipeline_file - {"collections.abc", "typing"} == {
        "transformers",
        ".batched_parsing",
        ".parser",
        ".quantization",
    }


def test_between_two_batches_the_caller_keeps_its_own_gradient_mode_and_model_mode(parser):
    reader = parser.parser
    sentences = [sentence for words in GOOD for sentence in reader.sentences(words, is_split_into_words=True)]
    reader.model.train()
    try:
        batches = reader.results(sentences, batch_size=1)
        first = next(batches)
        assert torch.is_grad_enabled() and reader.model.training  # the parse's context ended with its batch
        assert [result for done in [first, *batches] for _, result in done] == [
            parser(words, is_split_into_words=True) for words in GOOD
        ]
    finally:
        reader.model.eval()
