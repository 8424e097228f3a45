"""Training through `scripts/run_mlm.py`: interruption and resume, fine-tuning, two-process runs."""

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.helpers.paths import ROOT

SCRIPT = ROOT / "scripts" / "run_mlm.py"
TINY_MODEL = ["--hidden_size", "32", "--num_hidden_layers", "2", "--num_attention_heads", "4"]
TINY_R2D2 = [
    "--model_type",
    "r2d2",
    "--hidden_size",
    "32",
    "--num_attention_heads",
    "4",
    "--intermediate_size",
    "64",
    "--num_composition_layers",
    "1",
    "--window_size",
    "2",
]
BOTH_MODELS = pytest.mark.parametrize("tiny_model", [TINY_MODEL, TINY_R2D2], ids=["structformer", "r2d2"])
COMMON = [
    "--per_device_train_batch_size",
    "8",
    "--learning_rate",
    "1e-3",
    "--report_to",
    "none",
    "--use_cpu",
    "--seed",
    "7",
    "--logging_steps",
    "5",
    "--train_sampling_strategy",
    "group_by_length",
    "--prediction_loss_only",
    "--dataloader_num_workers",
    "0",
    "--disable_tqdm",
    "true",
]


def environment():
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT / "src"), HF_HUB_OFFLINE="1")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


@pytest.fixture(scope="module")
def text_files(tmp_path_factory):
    from hf_structure.data.text import ptb_lm_lines

    folder = tmp_path_factory.mktemp("text")
    lines = ptb_lm_lines("valid")
    (folder / "train.txt").write_text("\n".join(lines[:400]) + "\n")
    (folder / "valid.txt").write_text("\n".join(lines[400:440]) + "\n")
    return folder


def test_masking_replaces_every_selected_word_by_mask_and_never_touches_unk():
    from hf_structure.data.tokenization import build_word_tokenizer
    from hf_structure.training.collators import ReproducibleMaskingCollator

    tokenizer = build_word_tokenizer(["the old man sat on the bench", "a dog ran"])
    sentences = tokenizer(["the old man sat on the zebra bench a dog ran"] * 50)["input_ids"]
    examples = [{"input_ids": ids} for ids in sentences]

    paper = ReproducibleMaskingCollator(tokenizer, 0.3, seed=0)(examples)
    selected = paper["labels"].ne(-100)
    assert 0.2 < selected.float().mean() < 0.4
    assert paper["input_ids"][selected].eq(tokenizer.mask_token_id).all()  # the paper: all become <mask>
    assert not paper["labels"].eq(tokenizer.unk_token_id).any()  # "zebra" is <unk>: never masked nor predicted
    assert paper["input_ids"][~selected].ne(tokenizer.mask_token_id).all()

    bert = ReproducibleMaskingCollator(tokenizer, 0.3, seed=0, mask_replace_prob=0.8, random_replace_prob=0.1)
    kept_or_random = bert(examples)["input_ids"][selected].ne(tokenizer.mask_token_id).float().mean()
    assert 0.1 < kept_or_random < 0.3  # 80/10/10: about a fifth of the selected words are not <mask>


def test_a_batch_is_masked_the_same_whether_or_not_it_is_the_first_of_the_process():
    # A resumed run's first batch is its process's first; transformers 5.24 reseeds the generator there.
    from hf_structure.data.tokenization import build_word_tokenizer
    from hf_structure.training.collators import ReproducibleMaskingCollator

    tokenizer = build_word_tokenizer(["the old man sat on the bench", "a dog ran"])
    first = [{"input_ids": ids} for ids in tokenizer(["the old man sat on the bench"] * 20)["input_ids"]]
    other = [{"input_ids": ids} for ids in tokenizer(["a dog ran on the bench"] * 20)["input_ids"]]
    collator = ReproducibleMaskingCollator(tokenizer, 0.3, seed=0)
    as_first = collator(first)
    collator(other)
    assert torch.equal(collator(first)["input_ids"], as_first["input_ids"])


def run_mlm(args, **kwargs):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], env=environment(), capture_output=True, text=True, timeout=600, **kwargs
    )


def data_args(text_files):
    return ["--train_file", str(text_files / "train.txt"), "--validation_file", str(text_files / "valid.txt")]


@BOTH_MODELS
def test_killed_training_resumes_from_its_last_checkpoint_and_loses_nothing(tmp_path, text_files, tiny_model):
    steps = ["--max_steps", "24", "--save_steps", "8", "--do_train"]
    straight = run_mlm([*tiny_model, *COMMON, *steps, *data_args(text_files), "--output_dir", str(tmp_path / "a")])
    assert straight.returncode == 0, straight.stderr[-3000:]

    interrupted_dir = tmp_path / "b"
    command = [
        sys.executable,
        str(SCRIPT),
        *tiny_model,
        *COMMON,
        *steps,
        *data_args(text_files),
        "--output_dir",
        str(interrupted_dir),
    ]
    process = subprocess.Popen(command, env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 900
        while not (interrupted_dir / "checkpoint-16" / "trainer_state.json").exists():
            assert process.poll() is None, "training ended before it could be interrupted"
            assert time.time() < deadline, "no checkpoint-16 after 900 s"
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert not (interrupted_dir / "model.safetensors").exists()  # it really died before the end

    resumed = run_mlm([*tiny_model, *COMMON, *steps, *data_args(text_files), "--output_dir", str(interrupted_dir)])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    last = interrupted_dir / "checkpoint-16"
    assert f"resuming from the last checkpoint in the output folder: {last}" in resumed.stderr
    state = json.loads((interrupted_dir / "trainer_state.json").read_text())
    assert state["global_step"] == 24
    # Same batches, masks, Gumbel draws and optimiser state after the resume: the weights equal the uninterrupted
    # run's.
    expected = load_file(tmp_path / "a" / "model.safetensors")
    actual = load_file(interrupted_dir / "model.safetensors")
    assert expected.keys() == actual.keys()
    for name in expected:
        assert torch.allclose(expected[name], actual[name], atol=1e-6), name


def test_a_spent_wall_clock_budget_ends_training_early_and_still_saves_the_model_and_its_record(tmp_path, text_files):
    out = tmp_path / "budget"
    # Any budget is spent by the end of the first step, so the run stops there instead of at step 50.
    result = run_mlm(
        [
            *TINY_MODEL,
            *COMMON,
            "--max_steps",
            "50",
            "--max_train_time_s",
            "1e-6",
            "--do_train",
            *data_args(text_files),
            "--output_dir",
            str(out),
        ]
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "wall-clock budget of 0 s spent at step 1: stopping" in result.stderr
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 1
    assert json.loads((out / "hf_structure_training.json").read_text())["steps"] == 1
    assert (out / "model.safetensors").exists()


# The StructFormer authors' schedule (google-research `structformer/main.py`): the rate halved when the valid loss
# stalls, the best-valid weights kept and measured; transformers' own settings, as docs/training.md gives them.
AUTHORS_SCHEDULE = [
    *("--eval_strategy", "epoch", "--save_strategy", "epoch", "--save_only_model"),
    *(
        "--lr_scheduler_type",
        "reduce_lr_on_plateau",
        "--load_best_model_at_end",
        "--metric_for_best_model",
        "eval_loss",
    ),
]


def test_the_authors_schedule_halves_the_rate_after_a_stall_and_keeps_the_best_valid_weights(tmp_path, text_files):
    """A threshold no epoch can meet (a relative improvement of 100%) makes every evaluation a stall; patience 0
    halves the rate at each. The weights saved at the end are the best-valid checkpoint's, whose loss the final
    evaluation prints again."""
    out = tmp_path / "schedule"
    plateau = '{"factor": 0.5, "patience": 0, "threshold": 1.0}'
    result = run_mlm(
        [
            *TINY_MODEL,
            *COMMON,
            *AUTHORS_SCHEDULE,
            *("--lr_scheduler_kwargs", plateau, "--num_train_epochs", "3", "--do_train", "--do_eval"),
            *data_args(text_files),
            *("--output_dir", str(out)),
        ]
    )
    assert result.returncode == 0, result.stderr[-3000:]
    state = json.loads((out / "trainer_state.json").read_text())
    evaluations = [entry for entry in state["log_history"] if "eval_loss" in entry]
    rates: dict[int, set] = {}  # the rates logged in each epoch: (e - 1, e]
    for entry in state["log_history"]:
        if "learning_rate" in entry:
            rates.setdefault(math.ceil(entry["epoch"]), set()).add(entry["learning_rate"])
    assert rates == {1: {1e-3}, 2: {5e-4}, 3: {2.5e-4}}
    epoch_losses = [entry["eval_loss"] for entry in evaluations[:3]]
    assert state["best_metric"] == pytest.approx(min(epoch_losses))
    best = Path(state["best_model_checkpoint"])
    assert load_file(out / "model.safetensors").keys() == load_file(best / "model.safetensors").keys()
    for name, tensor in load_file(best / "model.safetensors").items():
        assert torch.equal(load_file(out / "model.safetensors")[name], tensor), name
    assert evaluations[-1]["eval_loss"] == pytest.approx(state["best_metric"])  # the final evaluation: the best's


def test_token_budget_batches_are_length_sorted_fixed_and_shuffled_by_seed_and_epoch():
    from hf_structure.training.trainer import TokenBudgetBatchSampler

    lengths = [int(n) for n in torch.randint(1, 60, (500,), generator=torch.Generator().manual_seed(0))]
    sampler = TokenBudgetBatchSampler(lengths, 1000, seed=3)
    first = list(sampler)
    assert len(first) == len(sampler)
    assert sorted(i for batch in first for i in batch) == list(range(500))  # every sentence once an epoch
    by_length = sorted(sampler.batches, key=lambda batch: lengths[batch[0]])
    for batch, following in zip(by_length, by_length[1:]):
        tokens = [lengths[i] for i in batch]
        assert tokens == sorted(tokens) and max(tokens) <= lengths[following[0]]
        assert 1000 <= sum(tokens) < 1000 + tokens[-1]  # reaches the count, overshooting by under one sentence
    assert sum(lengths[i] for i in by_length[-1]) < 1000 + max(lengths)
    assert first == list(TokenBudgetBatchSampler(lengths, 1000, seed=3))  # the seed alone decides
    sampler.set_epoch(1)
    second = list(sampler)
    assert second != first and sorted(map(tuple, second)) == sorted(map(tuple, first))  # same batches, new order
    assert second == list(sampler)


def test_token_budget_batches_train_and_resume_as_the_uninterrupted_run(tmp_path, text_files):
    from hf_structure.training.trainer import TokenBudgetBatchSampler

    budget = ["--tokens_per_batch", "600", "--num_train_epochs", "2", "--save_steps", "20", "--do_train"]
    straight = run_mlm([*TINY_MODEL, *COMMON, *budget, *data_args(text_files), "--output_dir", str(tmp_path / "a")])
    assert straight.returncode == 0, straight.stderr[-3000:]
    lengths = [len(line.split()) for line in (text_files / "train.txt").read_text().splitlines()]
    batches = len(TokenBudgetBatchSampler(lengths, 600, seed=7))
    assert json.loads((tmp_path / "a" / "trainer_state.json").read_text())["global_step"] == 2 * batches
    assert batches < len(lengths) / 8  # longer batches than COMMON's 8 sentences: the budget took over
    assert batches < 20 < 2 * batches  # checkpoint-20 is inside the second epoch

    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "checkpoint-20").rename(tmp_path / "b" / "checkpoint-20")
    resumed = run_mlm([*TINY_MODEL, *COMMON, *budget, *data_args(text_files), "--output_dir", str(tmp_path / "b")])
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming from the last checkpoint" in resumed.stderr
    expected, actual = load_file(tmp_path / "a" / "model.safetensors"), load_file(tmp_path / "b" / "model.safetensors")
    for name in expected:
        assert torch.allclose(expected[name], actual[name], atol=1e-6), name


def test_fine_tuning_a_saved_model_on_a_text_file_saves_reloads_and_parses(tmp_path, text_files):
    base = tmp_path / "base"
    first = run_mlm(
        [*TINY_MODEL, *COMMON, "--max_steps", "2", "--do_train", *data_args(text_files), "--output_dir", str(base)]
    )
    assert first.returncode == 0, first.stderr[-3000:]
    domain = tmp_path / "domain.txt"
    domain.write_text("The patient was given 5 mg of aspirin .\nHer blood pressure rose after 3 days .\n" * 20)
    tuned = tmp_path / "tuned"
    result = run_mlm(
        [
            "--model_name_or_path",
            str(base),
            *COMMON,
            "--max_steps",
            "3",
            "--do_train",
            "--do_eval",
            "--train_file",
            str(domain),
            "--validation_file",
            str(domain),
            "--output_dir",
            str(tuned),
            "--config_overrides",
            "calibration_scope=batch",
        ]
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tuned / "trainer_state.json").read_text())["global_step"] == 3
    assert json.loads((base / "config.json").read_text())["calibration_scope"] == "sentence"
    assert json.loads((tuned / "config.json").read_text())["calibration_scope"] == "batch"
    assert "eval_perplexity" in json.loads((tuned / "eval_results.json").read_text())

    from transformers import AutoModelForMaskedLM, AutoTokenizer, pipeline

    import hf_structure  # noqa: F401

    model = AutoModelForMaskedLM.from_pretrained(tuned)
    before = AutoModelForMaskedLM.from_pretrained(base)
    assert not torch.equal(model.structformer.embed_tokens.weight, before.structformer.embed_tokens.weight)
    tokenizer = AutoTokenizer.from_pretrained(tuned)
    assert tokenizer.convert_ids_to_tokens(tokenizer("The 5 Days")["input_ids"]) == ["the", "N", "days"]
    parser = pipeline("unsupervised-parsing", model=str(tuned))  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    parsed = parser("Her blood pressure rose after 3 days.")[0]  # the text is one sentence
    assert parsed["words"] == ["Her", "blood", "pressure", "rose", "after", "3", "days", "."]
    assert parsed["spans"][0] == [0, 8]

    # The run's folder is publishable: run_mlm wrote its training record beside Trainer's own eval_results.json,
    # `evaluate --record` adds the scores, and the export renders a card from both.
    from hf_structure import cli
    from hf_structure.hub import TRAINING_RECORD, export_model_folder

    record = json.loads((tuned / TRAINING_RECORD).read_text())
    assert record["steps"] == 3 and "--config_overrides calibration_scope=batch" in record["command"]
    from tests.helpers.hand_treebank import write_hand_treebank  # two gold sentences (constituents and heads)

    gold = write_hand_treebank(tmp_path / "gold")
    cli.main(["evaluate", "--model", str(tuned), "--treebank", str(gold), "--lm-text", "ptb-test", "--record"])
    scores = json.loads((tuned / "hf_structure_eval.json").read_text())
    assert {"mlm_ppl_test", "mlm_ppl_paper_test", "mlm_ppl_paper_sd_test"} <= scores.keys()
    exported = export_model_folder(tuned, tmp_path / "export", repo_id="org/tuned")
    assert "# tuned" in (exported / "README.md").read_text()

    # Bundling measures the perplexities the model's spec names on the texts it is given and keeps the training data
    # the run recorded (not the default PTB corpus).
    (tmp_path / "command.txt").write_text("hf-structure train-lm ...\n")
    bundled = tmp_path / "bundled"
    bundle = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "bundle_checkpoint.py"),
            "--run",
            str(tuned),
            "--output",
            str(bundled),
            "--treebank",
            str(gold),
            "--command-file",
            str(tmp_path / "command.txt"),
            "--wall-time-s",
            "5",
            "--lm-text",
            "ptb-test",
            str(domain),
            "--paper-mask-seeds",
            "2",
        ],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=600,
    )
    assert bundle.returncode == 0, bundle.stderr[-3000:]
    eval_record = json.loads((bundled / "hf_structure_eval.json").read_text())
    assert {"mlm_ppl_test", "mlm_ppl_paper_test", "mlm_ppl_domain"} <= eval_record.keys()
    assert "mlm_ppl_paper_domain" not in eval_record and not any(key.endswith("_valid") for key in eval_record)
    assert json.loads((bundled / TRAINING_RECORD).read_text())["train_data"].startswith("`domain.txt`")


@BOTH_MODELS
def test_two_cpu_processes_with_torchrun(tmp_path, text_files, tiny_model):
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--standalone",  # a free port: the suite may run beside another
        str(SCRIPT),
        *tiny_model,
        *COMMON,
        "--max_steps",
        "3",
        "--do_train",
        "--ddp_backend",
        "gloo",
        *data_args(text_files),
        "--output_dir",
        str(tmp_path / "ddp"),
    ]
    result = subprocess.run(command, env=environment(), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    state = json.loads((tmp_path / "ddp" / "trainer_state.json").read_text())
    assert state["global_step"] == 3
    # Two ranks of 8 sentences make a step of 16 of the 400: 3 steps are 0.12 of an epoch (one process: 0.06).
    assert state["epoch"] == pytest.approx(3 * 16 / 400)
    assert (tmp_path / "ddp" / "model.safetensors").exists()


def test_an_r2d2_is_fine_tuned_on_new_text_and_parses(tmp_path, text_files):
    base = tmp_path / "base"
    first = run_mlm(
        [*TINY_R2D2, *COMMON, "--max_steps", "2", "--do_train", *data_args(text_files), "--output_dir", str(base)]
    )
    assert first.returncode == 0, first.stderr[-3000:]
    domain = tmp_path / "domain.txt"
    domain.write_text("The patient was given 5 mg of aspirin .\nHer blood pressure rose after 3 days .\n" * 20)
    tuned = tmp_path / "tuned"
    result = run_mlm(
        [
            "--model_name_or_path",
            str(base),
            *COMMON,
            "--max_steps",
            "3",
            "--do_train",
            "--do_eval",
            "--train_file",
            str(domain),
            "--validation_file",
            str(domain),
            "--output_dir",
            str(tuned),
            "--config_overrides",
            "parse_window_size=3",
        ]
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tuned / "trainer_state.json").read_text())["global_step"] == 3
    assert json.loads((tuned / "config.json").read_text())["parse_window_size"] == 3
    assert "eval_perplexity" in json.loads((tuned / "eval_results.json").read_text())
    from transformers import AutoModelForMaskedLM, pipeline

    import hf_structure  # noqa: F401

    tuned_model, base_model = AutoModelForMaskedLM.from_pretrained(tuned), AutoModelForMaskedLM.from_pretrained(base)
    assert not torch.equal(tuned_model.r2d2.embed_tokens.weight, base_model.r2d2.embed_tokens.weight)
    parser = pipeline("unsupervised-parsing", model=str(tuned))  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    parsed = parser("Her blood pressure rose after 3 days.")[0]  # the text is one sentence
    assert parsed["words"] == ["Her", "blood", "pressure", "rose", "after", "3", "days", "."]
    assert parsed["spans"][0] == [0, 8] and len(parsed["spans"]) == 6  # binary over the 7 words, then the period


def test_evaluation_during_training_logs_perplexity_and_parsing_scores_with_the_step(tmp_path, text_files):
    treebank = tmp_path / "treebank"
    (treebank / "mrg").mkdir(parents=True)
    (treebank / "dp").mkdir()
    (treebank / "mrg" / "t.mrg").write_text(
        "( (S (NP (DT the) (JJ old) (NN man)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN bench)))) (. .)) )\n"
        "( (S (NP (DT a) (NN dog)) (VP (VBD ran))) )\n"
    )
    (treebank / "dp" / "t.dp").write_text(
        "the\tDT\t3\nold\tJJ\t3\nman\tNN\t4\nsat\tVBD\t0\non\tIN\t4\nthe\tDT\t7\nbench\tNN\t5\n.\t.\t4\n\n"
        "a\tDT\t2\ndog\tNN\t3\nran\tVBD\t0\n"
    )
    result = run_mlm(
        [
            *TINY_MODEL,
            *COMMON,
            "--max_steps",
            "4",
            "--do_train",
            "--eval_strategy",
            "steps",
            "--eval_steps",
            "2",
            "--treebank_dir",
            str(treebank),
            *data_args(text_files),
            "--output_dir",
            str(tmp_path / "run"),
        ]
    )
    assert result.returncode == 0, result.stderr[-3000:]
    history = json.loads((tmp_path / "run" / "trainer_state.json").read_text())["log_history"]
    parsing = [entry for entry in history if "parse_sentence_f1" in entry]
    assert [entry["step"] for entry in parsing] == [2, 4]
    assert all(0 <= entry["parse_uas"] <= 100 and "parse_corpus_f1" in entry for entry in parsing)
    assert all(0 <= entry["parse_head_on_left"] <= 100 for entry in parsing)
    perplexities = [entry for entry in history if "eval_perplexity" in entry]
    assert [entry["step"] for entry in perplexities] == [2, 4]
    assert all(entry["eval_perplexity"] > 1 for entry in perplexities)


def write_whole_checkpoint(folder):
    """A checkpoint folder with the files Trainer saves for resuming (tiny ones)."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    save_file({"weight": torch.zeros(64)}, folder / "model.safetensors")
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
        torch.save({"state": torch.zeros(64)}, folder / name)
    (folder / "trainer_state.json").write_text('{"global_step": 8}')
    return folder


def cut_short(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.parametrize(
    "breaking, defect",
    [
        (lambda folder: (folder / "trainer_state.json").unlink(), "no trainer_state.json"),
        (lambda folder: cut_short(folder / "trainer_state.json"), "trainer_state.json is cut short"),
        (lambda folder: (folder / "model.safetensors").unlink(), "no model.safetensors"),
        (lambda folder: cut_short(folder / "model.safetensors"), "model.safetensors is cut short"),
        (lambda folder: (folder / "optimizer.pt").unlink(), "no optimizer.pt"),
        (lambda folder: cut_short(folder / "scheduler.pt"), "scheduler.pt is cut short"),
        (lambda folder: (folder / "rng_state.pth").unlink(), "no whole rng_state.pth"),
    ],
    ids=["state-gone", "state-cut", "weights-gone", "weights-cut", "optimizer-gone", "scheduler-cut", "rng-gone"],
)
def test_a_checkpoint_killed_while_saving_or_missing_a_file_is_passed_over(tmp_path, caplog, breaking, defect):
    from hf_structure.training.trainer import checkpoint_defect, last_complete_checkpoint

    assert last_complete_checkpoint(str(tmp_path / "missing")) is None
    for step in (8, 16, 24):
        write_whole_checkpoint(tmp_path / f"checkpoint-{step}")
    (tmp_path / "checkpoint-final").mkdir()
    assert last_complete_checkpoint(str(tmp_path)) == str(tmp_path / "checkpoint-24")
    breaking(tmp_path / "checkpoint-24")
    assert checkpoint_defect(str(tmp_path / "checkpoint-24")) == defect
    assert last_complete_checkpoint(str(tmp_path)) == str(tmp_path / "checkpoint-16")
    assert f"passing over {tmp_path / 'checkpoint-24'}, not a whole checkpoint: {defect}" in caplog.text


def test_a_checkpoint_of_a_run_that_saves_the_model_only_needs_no_optimizer(tmp_path):
    from hf_structure.training.trainer import checkpoint_defect

    folder = write_whole_checkpoint(tmp_path / "checkpoint-8")
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
        (folder / name).unlink()
    assert checkpoint_defect(str(folder), with_optimizer=False) is None
    assert checkpoint_defect(str(folder)) == "no optimizer.pt"
    (folder / "model.safetensors").rename(folder / "model-00001-of-00001.safetensors")
    index = {"weight_map": {"weight": "model-00001-of-00001.safetensors", "other": "model-00002-of-00002.safetensors"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    assert checkpoint_defect(str(folder), with_optimizer=False) == "no model-00002-of-00002.safetensors"


def test_the_script_without_do_train_or_do_eval_refuses_in_one_line(tmp_path):
    result = run_mlm([*TINY_MODEL, "--output_dir", str(tmp_path / "out")])
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.splitlines() == ["run_mlm.py: nothing to do: give --do_train, --do_eval or both"]


def tiny_fast_r2d2():
    from hf_structure.models.r2d2 import R2D2ForLanguageModeling
    from tests.helpers.tiny_models import declared_tiny_config

    torch.manual_seed(0)
    return R2D2ForLanguageModeling(declared_tiny_config("fast_r2d2", vocab_size=30))


def r2d2_trainer(tmp_path, own_args, **training):
    from hf_structure.models.r2d2.training_r2d2 import TRAINING
    from hf_structure.training.trainer import LanguageModelTrainer, LanguageModelTrainingArguments

    model = tiny_fast_r2d2()
    args = LanguageModelTrainingArguments(
        output_dir=str(tmp_path),
        use_cpu=True,
        report_to="none",
        **{"learning_rate": 1e-4, "weight_decay": 0.01, **training},
    )
    assert TRAINING.optimizer_parts is not None  # R2D2's recipe: the parser, the rest of the model
    return LanguageModelTrainer(model=model, args=args, optimizer_parts=TRAINING.optimizer_parts(own_args, args))


def test_the_top_down_parser_trains_at_its_own_learning_rate_and_warm_up(tmp_path):
    from hf_structure.models.r2d2.training_r2d2 import R2D2TrainingArguments

    trainer = r2d2_trainer(
        tmp_path,
        R2D2TrainingArguments(parser_learning_rate=1e-2, parser_warmup_steps=4),
        lr_scheduler_type="linear",
        warmup_steps=0,
    )
    model = trainer.model
    optimizer = trainer.create_optimizer()
    assert trainer.create_optimizer() is optimizer and len(optimizer.param_groups) == 4  # asked twice, split once
    parser = {id(p) for name, p in model.named_parameters() if "split_parser" in name}
    for group in optimizer.param_groups:
        in_parser = {id(p) in parser for p in group["params"]}
        assert len(in_parser) == 1 and group["lr"] == (1e-2 if in_parser == {True} else 1e-4)
    assert sum(len(g["params"]) for g in optimizer.param_groups) == len(list(model.parameters()))
    scheduler = trainer.create_scheduler(num_training_steps=10, optimizer=optimizer)
    rates_in_parser: dict[bool, set[float]] = {True: set(), False: set()}
    for group in optimizer.param_groups:  # step 0: the parser warms up from 0, the rest starts at its peak
        rates_in_parser[id(group["params"][0]) in parser].add(group["lr"])
    assert rates_in_parser == {True: {0.0}, False: {1e-4}}
    optimizer.step()
    scheduler.step()
    rates = {round(g["lr"], 12) for g in optimizer.param_groups}
    assert rates == {round(1e-2 / 4, 12), round(1e-4 * 9 / 10, 12)}  # warm-up 1/4; linear decay 9/10


def test_the_parser_and_the_language_model_are_clipped_apart_or_together_with_both_norms_logged(tmp_path):
    from hf_structure.models.r2d2.training_r2d2 import R2D2TrainingArguments

    for separately in (True, False):
        trainer = r2d2_trainer(tmp_path, R2D2TrainingArguments(clip_parts_separately=separately), max_grad_norm=1.0)
        model = trainer.model
        for parameter in model.parameters():  # the parser's gradient norm 30, the rest's 0.5
            parameter.grad = torch.ones_like(parameter)
        parts = {
            "parser": [p for n, p in model.named_parameters() if "split_parser" in n],
            "lm": [p for n, p in model.named_parameters() if "split_parser" not in n],
        }
        for name, target in (("parser", 30.0), ("lm", 0.5)):
            norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in parts[name]]))
            for p in parts[name]:
                p.grad.mul_(target / norm)
        total = trainer._clip_grad_norm(model)
        assert torch.isclose(total, torch.tensor((30.0**2 + 0.5**2) ** 0.5))
        after = {
            name: torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in ps])).item()
            for name, ps in parts.items()
        }
        if separately:
            assert after == pytest.approx({"parser": 1.0, "lm": 0.5}, rel=1e-4)
        else:  # one clip over both: the same factor for both
            assert after == pytest.approx({"parser": 30.0 / total.item(), "lm": 0.5 / total.item()}, rel=1e-4)
        logs = {"loss": 1.0}
        trainer.log(logs)
        assert logs["grad_norm_parser"] == pytest.approx(30.0, rel=1e-3)
        assert logs["grad_norm_lm"] == pytest.approx(0.5, rel=1e-3)


def test_a_schedule_tied_to_the_wall_clock_decays_by_the_budget_spent_or_the_steps_whichever_is_further(tmp_path):
    from hf_structure.training.trainer import LanguageModelTrainer, LanguageModelTrainingArguments

    def trainer_with_clock(**settings):
        args = LanguageModelTrainingArguments(
            output_dir=str(tmp_path),
            use_cpu=True,
            report_to="none",
            learning_rate=1e-3,
            lr_scheduler_type="linear",
            warmup_steps=0,
            max_train_time_s=100,
            **settings,
        )
        trainer = LanguageModelTrainer(model=tiny_fast_r2d2(), args=args)
        wall_clock = trainer.wall_clock
        assert wall_clock is not None  # max_train_time_s sets one
        now = [0.0]
        wall_clock.clock = lambda: now[0]
        trainer.create_optimizer()
        scheduler = trainer.create_scheduler(num_training_steps=100)
        wall_clock.on_train_begin(args, None, None)
        return trainer, scheduler, now

    def rates_after(trainer, scheduler, now, seconds):
        now[0] = seconds
        trainer.optimizer.step()
        scheduler.step()
        return {round(group["lr"], 9) for group in trainer.optimizer.param_groups}

    trainer, scheduler, now = trainer_with_clock(lr_decay_by_wall_clock=True)
    assert rates_after(trainer, scheduler, now, 50.0) == {5e-4}  # step 1, half the budget spent: half decayed
    assert rates_after(trainer, scheduler, now, 100.0) == {0.0}  # the budget spent: decayed to 0
    trainer, scheduler, now = trainer_with_clock()  # by steps alone, as before
    assert rates_after(trainer, scheduler, now, 50.0) == {round(1e-3 * 99 / 100, 9)}
    with pytest.raises(ValueError, match="needs --max_train_time_s"):
        LanguageModelTrainer(
            model=tiny_fast_r2d2(),
            args=LanguageModelTrainingArguments(
                output_dir=str(tmp_path), use_cpu=True, report_to="none", lr_decay_by_wall_clock=True
            ),
        )


def test_training_logs_the_language_model_and_parser_losses_and_the_split_entropy_apart(tmp_path, text_files):
    result = run_mlm(
        [
            *TINY_R2D2,
            *COMMON,
            "--max_steps",
            "4",
            "--logging_steps",
            "2",
            "--do_train",
            "--pruning",
            "parser",
            "--parser_learning_rate",
            "1e-2",
            "--clip_parts_separately",
            "--parser_start_step",
            "2",
            "--config_overrides",
            "parser_num_layers=1,parser_hidden_size=8,parser_embedding_size=8,parser_target=best",
            *data_args(text_files),
            "--output_dir",
            str(tmp_path / "run"),
        ]
    )
    assert result.returncode == 0, result.stderr[-3000:]
    history = json.loads((tmp_path / "run" / "trainer_state.json").read_text())["log_history"]
    logged = [entry for entry in history if "loss" in entry]
    assert [entry["step"] for entry in logged] == [2, 4]
    for entry in logged:
        assert 0 < entry["split_entropy"] <= 1 and entry["lm_loss"] > 0 and entry["grad_norm_lm"] > 0
    # The parser starts at step 2: no parser loss or gradient in the first two steps, both in the next two.
    assert "parser_loss" not in logged[0] and "grad_norm_parser" not in logged[0]
    assert logged[1]["parser_loss"] > 0 and logged[1]["grad_norm_parser"] > 0
    assert logged[1]["loss"] == pytest.approx(logged[1]["lm_loss"] + logged[1]["parser_loss"], rel=1e-3)


# What the documented scripts' shell variables stand for when their commands are parsed.
PLACEHOLDERS = {
    "$seed": "1",
    "SEED": "1",
    "$steps": "10",
    "${STEPS:-300}": "300",
    "$warmup": "1",
    "$TRAIN_S": "60",
    "$batch": "8",
    "$pruning": "parser",
    "${teacher_a[@]}": "--teacher_trees runs/trees.jsonl --teacher_model structformer-ptb",
    "${teacher_b[@]}": "--teacher_trees runs/trees.jsonl runs/a/teacher-structformer-ptb.jsonl",
}


def documented_commands() -> list[tuple[str, list[str]]]:
    """(file, arguments after the script) of every training command in records/: the `command*.txt` files, and the
    shell scripts' runs of an argument array `common` (their shell variables read as `PLACEHOLDERS` say; a run whose
    own arguments are `$arguments` takes each run of the `device_variants.txt` beside the script)."""
    commands = []
    for path in sorted((ROOT / "records").glob("*/command*.txt")):
        words = path.read_text().split()
        script_at = next(i for i, word in enumerate(words) if word.endswith(("run_mlm.py", "run_parser.py")))
        commands.append((f"{path.parent.name}/{path.name}", words[script_at:]))
    for path in sorted((ROOT / "records").glob("*/*.sh")):
        text = path.read_text().replace("\\\n", " ")
        if "common=(" not in text:
            continue
        array_at = text.index("common=(") + len("common=(")
        array = text[array_at : text.index(")\n", array_at)].split()
        for line in text.splitlines():  # each run adds its own arguments after the array
            if '"${common[@]}"' in line and "scripts/run_" in line:
                script = line.split('"${common[@]}"')[0].split()[-1]
                own = line.split('"${common[@]}"', 1)[1].split(">")[0].split()
                if "$arguments" not in own:
                    commands.append((f"{path.parent.name}/{path.name}", [script, *array, *own]))
                    continue
                own.remove("$arguments")
                for variant in (path.parent / "device_variants.txt").read_text().splitlines():
                    if variant.strip() and not variant.startswith("#"):
                        commands.append(
                            (f"{path.parent.name}/{path.name}", [script, *array, *variant.split()[2:], *own])
                        )

    def substituted(word: str) -> str:
        word = word.strip('"')
        return PLACEHOLDERS.get(word, word.replace("$seed", "1").replace("SEED", "1"))

    return [(name, [part for word in words for part in substituted(word).split()]) for name, words in commands]


def test_the_documented_training_commands_still_parse(monkeypatch):
    """Every recipe in records/ gives arguments its entry still takes (a saved model named by a command is taken for a
    model of the command's --model_type, or of the script's default)."""
    from hf_structure.training import arguments, language_model, parser

    commands = documented_commands()
    assert {
        "r2d2-ptb-training/fast_r2d2_run.sh",
        "g2gtr-ewt-training/command_stage2.txt",
        "arc-hybrid-ewt-training/command.txt",
        "r2d2-ptb-training/device_run.sh",
        "r2d2-ptb-training/schedule_c.sh",
        "r2d2-ptb-training/teacher_run.sh",
        "r2d2-ptb-training/students_run.sh",
        "structformer-ptb-training/command_distill.txt",
    } <= {name for name, _ in commands}
    for name, words in commands:
        entry, default = (language_model, "structformer") if words[0].endswith("run_mlm.py") else (parser, "g2gtr")
        given = words[words.index("--model_type") + 1] if "--model_type" in words else default
        monkeypatch.setattr(arguments, "saved_model_type", lambda path, given=given: given)
        if "--bf16" in words and "--use_cpu" not in words:  # a GPU's command, parsed on this CPU
            words = [*words, "--use_cpu"]
        recipe, parsed = entry.parse_command_line(words[1:], default)
        assert parsed[0].model_type == given, name


def test_an_entry_refuses_a_model_it_does_not_train_naming_it(monkeypatch):
    from hf_structure.training import arguments, language_model, parser

    with pytest.raises(ValueError, match="model type 'r2d2' is not trained by this entry"):
        parser.parse_command_line(["--model_type", "r2d2", "--output_dir", "x"], "g2gtr")
    with pytest.raises(ValueError, match="model type 'no-such-model' is not an hf_structure model"):
        language_model.parse_command_line(["--model_type", "no-such-model"], "structformer")
    monkeypatch.setattr(arguments, "saved_model_type", lambda path: "structformer")
    with pytest.raises(ValueError, match="--model_type r2d2 disagrees with --model_name_or_path saved, a structformer"):
        language_model.parse_command_line(["--model_type", "r2d2", "--model_name_or_path", "saved"], "structformer")
    with pytest.raises(ValueError, match="not used .*--window_size"):  # R2D2's own argument is not StructFormer's
        language_model.parse_command_line(["--model_name_or_path", "saved", "--window_size", "3"], "structformer")


def test_perplexity_is_logged_only_for_a_loss_that_is_a_word_cross_entropy(tmp_path):
    """exp(eval_loss) is a perplexity only when the recipe says the loss is the predicted words' mean
    cross-entropy (`LanguageModelTraining.eval_loss_is_word_cross_entropy`)."""
    from hf_structure.data.tokenization import build_word_tokenizer
    from hf_structure.models.r2d2.training_r2d2 import EveryWordCollator
    from hf_structure.training.collators import tokenize_sentences
    from hf_structure.training.trainer import LanguageModelTrainer, LanguageModelTrainingArguments

    tokenizer = build_word_tokenizer(["the dog ran", "a man sat on the bench"])
    dataset = tokenize_sentences(["the dog ran", "a man sat on the bench"], tokenizer, None)
    args = LanguageModelTrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to="none")
    for declared in (True, False):
        trainer = LanguageModelTrainer(
            model=tiny_fast_r2d2(),
            args=args,
            eval_dataset=dataset,
            data_collator=EveryWordCollator(tokenizer),
            perplexity_from_eval_loss=declared,
        )
        metrics = trainer.evaluate()
        assert ("eval_perplexity" in metrics) is declared and "eval_loss" in metrics


def test_sentences_are_truncated_only_for_a_model_with_a_length_limit():
    from hf_structure.data.tokenization import build_word_tokenizer
    from hf_structure.training.collators import tokenize_sentences

    line = " ".join(["word"] * 40)
    tokenizer = build_word_tokenizer([line])
    assert tokenize_sentences([line], tokenizer, None)["length"] == [40]
    assert tokenize_sentences([line], tokenizer, 10)["length"] == [10]


def test_a_new_model_reads_the_tokenizer_its_recipe_gives(tmp_path, monkeypatch):
    """`LanguageModelTraining.new_tokenizer`: here a word vocabulary of the training text itself, not the PTB's."""
    import dataclasses

    from transformers import AutoTokenizer

    from hf_structure.data.tokenization import build_word_tokenizer
    from hf_structure.models.r2d2 import training_r2d2
    from hf_structure.training.language_model import main

    def tokenizer_of_the_text(arguments, lines):
        return build_word_tokenizer(lines)

    monkeypatch.setattr(
        training_r2d2, "TRAINING", dataclasses.replace(training_r2d2.TRAINING, new_tokenizer=tokenizer_of_the_text)
    )
    text, out = tmp_path / "text.txt", tmp_path / "run"
    text.write_text("the patient was given aspirin\nher blood pressure rose\n" * 4)
    steps = ["--max_steps", "1", "--do_train", "--train_file", str(text), "--validation_file", str(text)]
    main([*TINY_R2D2, *COMMON, *steps, "--output_dir", str(out)], "structformer")
    words = ["the", "patient", "was", "given", "aspirin", "her", "blood", "pressure", "rose"]
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert sorted(tokenizer.get_vocab()) == sorted(["<pad>", "<mask>", "<unk>", *words])
    assert json.loads((out / "config.json").read_text())["vocab_size"] == len(words) + 3
