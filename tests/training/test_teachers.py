"""Teacher trees (issue #46): read from files, parsed by a teacher model and cached, averaged over teachers, and a
Fast-R2D2 trained toward them through `scripts/run_mlm.py` in stages."""

import json

import pytest
import torch

from hf_structure.structs.decoding import average_trees
from hf_structure.training.teachers import TeacherTreesError, cache_path, file_trees, teacher_trees, write_trees
from tests.helpers.tiny_models import save_tiny_model
from tests.training.test_run_mlm import COMMON, TINY_R2D2, data_args, run_mlm, text_files  # noqa: F401

SENTENCES = [["the", "old", "man", "sat"], ["a", "dog", "ran"], ["the", "man"]]
RIGHT = [[(0, 4), (1, 4), (2, 4)], [(0, 3), (1, 3)], [(0, 2)]]
LEFT = [[(0, 4), (0, 3), (0, 2)], [(0, 3), (0, 2)], [(0, 2)]]


def test_a_trees_file_is_matched_to_the_sentences_by_their_words(tmp_path):
    path = tmp_path / "trees.jsonl"
    write_trees(path, SENTENCES[::-1], RIGHT[::-1])
    assert file_trees(path, SENTENCES) == RIGHT
    assert file_trees(path, [SENTENCES[2], SENTENCES[2]]) == [RIGHT[2], RIGHT[2]]
    assert not list(tmp_path.glob(".*partial"))  # written whole, then renamed


@pytest.mark.parametrize(
    "line, message",
    [
        ("not json", "line 2: not a tree with words and spans"),
        ('{"words": ["a", "b"]}', "line 2: not a tree with words and spans"),
        ('{"words": ["a", "b"], "spans": [[0, 3]]}', r"line 2: span \(0, 3\) outside its 2 words"),
        (
            '{"words": ["a", "b", "c"], "spans": [[0.9, 2.7]]}',
            r"line 2: .*span \[0\.9, 2\.7\]: its bounds must be whole",
        ),
    ],
)
def test_a_bad_line_of_a_trees_file_is_named_with_its_file_and_line(tmp_path, line, message):
    path = tmp_path / "trees.jsonl"
    path.write_text(json.dumps({"words": ["a"], "spans": []}) + "\n" + line + "\n")
    with pytest.raises(TeacherTreesError, match=f"trees.jsonl, {message}"):
        file_trees(path, [["a"]])


def test_a_sentence_the_file_has_no_tree_for_is_named(tmp_path):
    path = tmp_path / "trees.jsonl"
    write_trees(path, SENTENCES[:1], RIGHT[:1])
    with pytest.raises(TeacherTreesError, match=r"no tree for sentence 2 \('a dog ran'\)"):
        file_trees(path, SENTENCES[:2])


def test_several_teachers_trees_are_averaged(tmp_path):
    files = []
    for name, trees in (("r1", RIGHT), ("l", LEFT), ("r2", RIGHT)):
        files.append(tmp_path / f"{name}.jsonl")
        write_trees(files[-1], SENTENCES, trees)
    averaged = teacher_trees(SENTENCES, files=files)
    assert [sorted(tree) for tree in averaged] == [sorted(tree) for tree in RIGHT]
    assert averaged == average_trees([RIGHT, LEFT, RIGHT], [4, 3, 2])
    with pytest.raises(TeacherTreesError, match="no teacher"):
        teacher_trees(SENTENCES)


def test_a_teacher_model_parses_once_and_its_cache_is_read_while_it_holds_the_same_sentences(tmp_path):
    from hf_structure.bundled import load_model_and_tokenizer
    from hf_structure.pipelines.parser import Parser

    teacher = str(save_tiny_model(tmp_path / "teacher"))
    cache = tmp_path / "run"
    trees = teacher_trees(SENTENCES, models=[teacher], cache_dir=cache)
    model, tokenizer = load_model_and_tokenizer(teacher)
    parses = Parser(model, tokenizer).parse_words(SENTENCES, structures=("constituency",))
    assert [sorted(tree) for tree in trees] == [sorted(map(tuple, parse["spans"])) for parse in parses]
    cached = cache_path(cache, teacher)
    assert cached.is_file() and cached.parent == cache
    write_trees(cached, SENTENCES, LEFT)  # a cache is read, not parsed again ...
    assert teacher_trees(SENTENCES, models=[teacher], cache_dir=cache) == average_trees([LEFT], [4, 3, 2])
    other = [["a", "man", "sat"]]  # ... unless it is of other sentences
    [parse] = Parser(model, tokenizer).parse_words(other, structures=("constituency",))
    assert teacher_trees(other, models=[teacher], cache_dir=cache) == average_trees([[parse["spans"]]], [3])
    assert file_trees(cached, other)  # and the new parse replaced it


def test_a_teacher_without_constituents_is_refused_naming_it():
    with pytest.raises(TeacherTreesError, match="teacher arc-hybrid-ewt: its parses have no constituents"):
        teacher_trees(SENTENCES, models=["arc-hybrid-ewt"])  # a bundled dependency parser


FAST = [*TINY_R2D2, "--pruning", "parser", "--config_overrides", "parser_num_layers=1,parser_hidden_size=16"]


@pytest.fixture(scope="module")
def staged_runs(tmp_path_factory, text_files):  # noqa: F811
    """A tiny Fast-R2D2 trained on right-branching teacher trees: the parser alone (60 steps), then beside the
    language model with the teacher's weight annealed to 0 between steps 5 and 10 (15 steps)."""
    folder = tmp_path_factory.mktemp("staged")
    lines = (text_files / "train.txt").read_text().splitlines()
    sentences = [line.split() for line in lines if line.split()]
    trees = [[(start, len(words)) for start in range(len(words) - 1)] for words in sentences]
    teacher = folder / "right.jsonl"
    write_trees(teacher, sentences, trees)
    alone, refined = folder / "alone", folder / "refined"
    stages = [
        [*FAST, "--parser_only", "--max_steps", "60", "--learning_rate", "1e-2", "--output_dir", str(alone)],
        [
            "--model_name_or_path",
            str(alone),
            *("--teacher_anneal_start", "5", "--teacher_anneal_end", "10", "--max_steps", "15"),
            "--output_dir",
            str(refined),
        ],
    ]
    for stage in stages:
        result = run_mlm([*COMMON, *data_args(text_files), "--teacher_trees", str(teacher), "--do_train", *stage])
        assert result.returncode == 0, result.stderr[-3000:]
    return {"alone": alone, "refined": refined, "sentences": sentences, "trees": trees, "folder": folder}


def test_a_fast_r2d2_learns_its_teachers_trees_alone_then_hands_over_to_the_chart(staged_runs):
    from hf_structure.bundled import load_model_and_tokenizer
    from hf_structure.pipelines.parser import Parser

    alone, refined = staged_runs["alone"], staged_runs["refined"]
    assert json.loads((alone / "config.json").read_text())["parser_target"] == "teacher"
    model, tokenizer = load_model_and_tokenizer(str(alone))
    parses = Parser(model, tokenizer).parse_words(staged_runs["sentences"][:50])
    same = sum({tuple(s) for s in parse["spans"]} == set(tree) for parse, tree in zip(parses, staged_runs["trees"]))
    assert same >= 45  # the parser imitates its teacher
    history = json.loads((alone / "trainer_state.json").read_text())["log_history"]
    losses = [entry["teacher_loss"] for entry in history if "teacher_loss" in entry]
    assert losses[-1] < losses[0] / 2 and "lm_loss" not in history[0]  # the parser alone
    history = json.loads((refined / "trainer_state.json").read_text())["log_history"]
    logged = [entry for entry in history if "lm_loss" in entry]
    assert [entry["step"] for entry in logged] == [5, 10, 15]
    # up to step 5 the parser's loss is the teacher's; from step 10 on, the chart's best tree alone
    assert logged[0]["parser_loss"] == pytest.approx(logged[0]["teacher_loss"], abs=1e-4)
    assert logged[2]["parser_loss"] != pytest.approx(logged[2]["teacher_loss"], abs=1e-3)


def test_a_bundled_student_records_its_teacher_its_stages_and_its_stored_precision(staged_runs, tmp_path):
    import subprocess
    import sys

    from safetensors import safe_open

    from hf_structure.hub import TRAINING_RECORD
    from tests.helpers.hand_treebank import write_hand_treebank
    from tests.helpers.paths import ROOT
    from tests.training.test_run_mlm import environment

    gold = write_hand_treebank(tmp_path / "gold")
    half = tmp_path / "half"
    scripts = ROOT / "scripts"
    teacher = save_tiny_model(tmp_path / "teacher")
    (tmp_path / "command.txt").write_text("python scripts/run_mlm.py ...\n")
    for command in (
        [scripts / "export_half.py", "--model", staged_runs["refined"], "--treebank", gold, "--output", half]
        + ["--keep-float32", "r2d2.split_parser."],
        [scripts / "bundle_checkpoint.py", "--run", half, "--output", tmp_path / "bundled", "--treebank", gold]
        + ["--command-file", tmp_path / "command.txt", "--wall-time-s", "5", "--lm-text"]
        + ["--continues", staged_runs["alone"], "--teacher", teacher],
    ):
        result = subprocess.run(
            [sys.executable, *map(str, command)], capture_output=True, text=True, env=environment(), timeout=600
        )
        assert result.returncode == 0, result.stderr[-3000:]
        if command[0].name == "export_half.py":  # as if another machine had trained it
            record = json.loads((half / TRAINING_RECORD).read_text())
            (half / TRAINING_RECORD).write_text(json.dumps({**record, "machine": "the training machine"}))
    bundled = tmp_path / "bundled"
    with safe_open(bundled / "model.safetensors", "pt") as weights:
        dtypes = {name: str(weights.get_slice(name).get_dtype()) for name in weights.keys()}
    assert {dtype for name, dtype in dtypes.items() if ".split_parser." in name} == {"F32"}
    assert {dtype for name, dtype in dtypes.items() if ".split_parser." not in name} == {"F16"}
    scores = json.loads((bundled / "hf_structure_eval.json").read_text())
    assert scores["teacher"]["model"] == str(teacher) and "sentence_f1" in scores["teacher"]
    assert "sentence_f1_chart" in scores and scores["pppl_test"] is None  # no --lm-text: not measured
    training = json.loads((bundled / TRAINING_RECORD).read_text())
    assert len(training["stages"]) == 2 and training["machine"] == "the training machine"
    card = (bundled / "README.md").read_text()
    assert "## Bootstrapped from a teacher" in card and f"`{teacher}`" in card
    assert f"F1 {scores['teacher']['sentence_f1']:.2f}" in card
    assert "| Pseudo-perplexity (PTB test) ↓ | **—** |" in card and "was not measured" in card
    assert "pppl" not in card.split("---")[1]  # the model-index reports no perplexity


def test_a_teacher_needs_parser_pruning_and_a_tree_for_every_sentence(tmp_path, text_files):  # noqa: F811
    teacher = tmp_path / "few.jsonl"
    write_trees(teacher, [["a", "b"]], [[(0, 2)]])
    from hf_structure.training.language_model import main

    # In this process: each is refused before training, and three fresh interpreters cost ~25 s.
    args = [*COMMON, *data_args(text_files), "--teacher_trees", str(teacher), "--max_steps", "1", "--do_train"]
    with pytest.raises(ValueError, match="needs --pruning parser"):
        main([*TINY_R2D2, *args, "--output_dir", str(tmp_path / "h")], "structformer")
    with pytest.raises(TeacherTreesError, match=r"few\.jsonl: no tree for sentence 1 \("):
        main([*FAST, *args, "--output_dir", str(tmp_path / "m")], "structformer")
    with pytest.raises(ValueError, match="--parser_only needs --teacher_model or --teacher_trees"):
        main(
            [*FAST, *COMMON, *data_args(text_files), "--parser_only", "--output_dir", str(tmp_path / "p")],
            "structformer",
        )


def test_the_teachers_weight_falls_linearly_between_the_anneal_steps():
    from hf_structure.training.teachers import TeacherAnneal

    anneal = TeacherAnneal(10, 20)
    assert [anneal.weight(step) for step in (0, 10, 15, 19, 20, 30)] == [1.0, 1.0, 0.5, pytest.approx(0.1), 0.0, 0.0]


def test_the_collator_pads_the_teachers_merge_orders_with_minus_one():
    from hf_structure.data.tokenization import build_word_tokenizer
    from hf_structure.models.r2d2.training_r2d2 import EveryWordCollator

    tokenizer = build_word_tokenizer(["the old man sat"])
    batch = EveryWordCollator(tokenizer)(
        [
            {"input_ids": [3, 4, 5, 6], "teacher_merge_order": [2, 1, 0]},
            {"input_ids": [3, 4], "teacher_merge_order": [0]},
        ]
    )
    assert torch.equal(batch["teacher_merge_order"], torch.tensor([[2, 1, 0], [0, -1, -1]]))


def test_a_structformer_learns_from_teacher_trees_beside_its_masked_lm_the_weight_annealed(tmp_path, text_files):  # noqa: F811
    from tests.training.test_run_mlm import TINY_MODEL

    lines = (text_files / "train.txt").read_text().splitlines()
    sentences = [line.split() for line in lines if line.split()]
    teacher = tmp_path / "right.jsonl"
    write_trees(teacher, sentences, [[(start, len(words)) for start in range(len(words) - 1)] for words in sentences])
    out = tmp_path / "distilled"
    anneal = ["--teacher_weight", "2", "--teacher_anneal_start", "5", "--teacher_anneal_end", "10"]
    result = run_mlm(
        [*TINY_MODEL, *COMMON, *data_args(text_files), "--teacher_trees", str(teacher), *anneal]
        + ["--max_steps", "15", "--do_train", "--do_eval", "--output_dir", str(out)]
    )
    assert result.returncode == 0, result.stderr[-3000:]
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    logged = [entry for entry in history if "teacher_loss" in entry]
    assert [entry["step"] for entry in logged] == [5, 10, 15]
    # steps 1-5 at the full weight 2, steps 11-15 at 0: the masked LM's loss alone
    assert logged[0]["loss"] == pytest.approx(logged[0]["mlm_loss"] + 2 * logged[0]["teacher_loss"], abs=2e-3)
    assert logged[2]["loss"] == pytest.approx(logged[2]["mlm_loss"], abs=2e-3)
    evaluated = json.loads((out / "eval_results.json").read_text())
    assert "eval_loss" in evaluated and not any("teacher" in key for key in evaluated)
