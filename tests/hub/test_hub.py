"""Publishing: the exported Hub folder (written whole or not at all, on a full disk or a read-only folder), its model
card, the (faked) upload and a real one to a Hub that cannot be reached or refuses, an offline Hub cache, and loading
the folder with `trust_remote_code=True` where hf_structure cannot be imported.

All models here are tiny random ones and every eval/training number is a made-up TEST FIXTURE.
"""

import hashlib
import http.server
import json
import os
import runpy
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import torch

from hf_structure import cli, hub
from hf_structure.hub.space import SPACE_FILES
from tests.helpers.filesystems import small_tmpfs
from tests.helpers.imports import called_names, imported_modules
from tests.helpers.paths import ROOT
from tests.helpers.tiny_models import save_tiny_model

SRC = ROOT / "src"
REPO_ID = "org/structformer-ptb"
SENTENCES = ["the old man sat on the bench", "a dog ran", "the dog sat on the old bench"]
TEXT = "The old man sat on the bench."
CODE_FILES = (
    "modeling_structformer.py",
    "configuration_structformer.py",
    "unsupervised_parsing.py",
    "parser.py",
    "batched_parsing.py",
    "quantization.py",
    "word_tokenization.py",
)
UPLOADED = (
    "model.safetensors",
    "config.json",
    *CODE_FILES,
    "tokenizer.json",
    "tokenizer_config.json",
    "README.md",
    "hf_structure_eval.json",
    "hf_structure_training.json",
)

# TEST FIXTURES: made-up numbers (distinct from anything in the template) to check that the card reads them.
EVAL_FIXTURE = {
    "dataset": "Penn Treebank WSJ (section 00 sample)",
    "sentences": 3,
    "sentence_f1": 41.27,
    "corpus_f1": 37.19,
    "uas": 23.71,
    "uuas": 47.53,
    "uas_argmax": 25.17,
    "mlm_ppl_test": 123.45,
    "mlm_ppl_paper_test": 118.5,
    "mlm_ppl_paper_sd_test": 2.5,
    "mlm_ppl_paper_seeds_test": 5,
    "recall_NP": 55.5,
    "baselines": {
        "right-branching": {"sentence_f1": 39.94, "corpus_f1": 35.61, "uas": 20.29, "uuas": 50.34},
        "left-branching": {"sentence_f1": 8.66, "corpus_f1": 6.37, "uas": 30.37, "uuas": 50.58},
    },
}
TRAINING_FIXTURE: dict[str, Any] = {
    "command": "python scripts/run_mlm.py --output_dir runs/test-fixture --hidden_size 32 --max_steps 17",
    "wall_time_s": 5432.1,
    "machine": "test fixture machine (2 CPU cores)",
    "steps": 17,
    "epochs": 0.25,
}


def child_env(tmp_path: Path, **extra) -> dict:
    """Environment of a child Python: offline, its own HF home and dynamic-module cache, one thread."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("HF_")}
    env.update(
        HF_HOME=str(tmp_path / "hf_home"),
        HF_MODULES_CACHE=str(tmp_path / "hf_modules"),
        HF_HUB_OFFLINE="1",
        OMP_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
        TRANSFORMERS_VERBOSITY="error",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
    )
    env.update(extra)
    return env


def run_child(args, tmp_path, env, timeout=120) -> str:
    result = subprocess.run(
        args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    assert result.returncode == 0, f"child failed:\nSTDOUT:\n{result.stdout}\nSTDERR:\n{result.stderr[-4000:]}"
    # Every load was trusted explicitly (or needed no remote code): transformers never had to ask.
    assert "Do you wish to run the custom code" not in result.stdout + result.stderr
    return result.stdout


def run_command(arguments: list[str], tmp_path: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """`hf-structure ARGUMENTS` in a child process (this checkout's source), for a failure met for real."""
    return subprocess.run(
        [sys.executable, "-m", "hf_structure.cli", *arguments],
        cwd=tmp_path,
        env=env or child_env(tmp_path, PYTHONPATH=str(SRC)),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def last_line(done: subprocess.CompletedProcess) -> str:
    """What the user reads of a failed command: its last line on stderr, after no traceback."""
    assert "Traceback" not in done.stderr, done.stderr[-4000:]
    return done.stderr.strip().splitlines()[-1]


def last_json_line(stdout: str):
    """The child's result: its last stdout line (transformers may print notices before it)."""
    return json.loads(stdout.strip().splitlines()[-1])


def normalise(parse: dict) -> dict:
    return {"spans": [list(span) for span in parse["spans"]], "heads": list(parse["heads"])}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("checkpoint") / "structformer-ptb"
    save_tiny_model(folder)
    (folder / "hf_structure_eval.json").write_text(json.dumps(EVAL_FIXTURE))
    (folder / "hf_structure_training.json").write_text(json.dumps(TRAINING_FIXTURE))
    return folder


@pytest.fixture(scope="module")
def exported(checkpoint, tmp_path_factory) -> Path:
    return hub.export_model_folder(checkpoint, tmp_path_factory.mktemp("export") / "folder", repo_id=REPO_ID)


@pytest.fixture(scope="module")
def expected(exported) -> dict:
    """The installed package's parses of SENTENCES (model.parse) and of TEXT (pipeline)."""
    from transformers import AutoModel, AutoTokenizer, pipeline

    model = AutoModel.from_pretrained(exported).eval()
    assert type(model).__module__.startswith("hf_structure.")
    tokenizer = AutoTokenizer.from_pretrained(exported)
    parses = []
    for sentence in SENTENCES:
        parses.append(normalise(model.parse([sentence.split()], tokenizer)[0]))
    (parsed,) = pipeline("unsupervised-parsing", model=exported)(TEXT)  # type: ignore[call-overload]  # transformers' overloads name only its own tasks; one sentence
    return {"model": parses, "pipeline": normalise(parsed), "tree": parsed["tree"]}


def assert_upload_folder(folder: Path) -> None:
    """Every file a Hub repo needs, with the config entries and a card carrying model-index."""
    names = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert set(UPLOADED) <= names, f"missing {set(UPLOADED) - names}"
    tokenizer_config = json.loads((folder / "tokenizer_config.json").read_text())
    assert "local_files_only" not in tokenizer_config and "is_local" not in tokenizer_config
    config = json.loads((folder / "config.json").read_text())
    assert config["auto_map"] == {
        "AutoConfig": "configuration_structformer.StructFormerConfig",
        "AutoModel": "modeling_structformer.StructFormerModel",
        "AutoModelForMaskedLM": "modeling_structformer.StructFormerForMaskedLM",
    }
    task = config["custom_pipelines"]["unsupervised-parsing"]
    assert task["impl"] == "unsupervised_parsing.UnsupervisedParsingPipeline"
    assert task["pt"] == ["AutoModel"]
    assert str(SRC) not in (folder / "config.json").read_text()  # no path of this machine leaks into the config
    readme = (folder / "README.md").read_text()
    assert readme.startswith("---\n") and "\nmodel-index:\n" in readme.split("\n---\n")[0]
    for name in CODE_FILES:  # self-contained: the code that runs remotely never imports hf_structure
        assert "hf_structure" not in [
            line.split()[1].split(".")[0]
            for line in (folder / name).read_text().splitlines()
            if line.startswith(("import ", "from "))
        ]


# ------------------------------------------------------------------------------------------------- export folder


def test_export_folder_has_every_file_and_config_entry(exported, checkpoint):
    assert_upload_folder(exported)
    config = json.loads((exported / "config.json").read_text())
    assert config["custom_pipelines"]["unsupervised-parsing"]["default"] == {"model": [REPO_ID, None]}
    assert json.loads((exported / "hf_structure_eval.json").read_text()) == EVAL_FIXTURE
    assert json.loads((exported / "hf_structure_training.json").read_text()) == TRAINING_FIXTURE
    for name in CODE_FILES[:2]:
        assert (exported / name).read_text() == (SRC / "hf_structure/models/structformer" / name).read_text()
    assert (exported / CODE_FILES[2]).read_text() == (SRC / "hf_structure/pipelines" / CODE_FILES[2]).read_text()


def test_export_refuses_a_checkpoint_without_records(checkpoint, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(checkpoint, bare)
    (bare / "hf_structure_training.json").unlink()
    with pytest.raises(FileNotFoundError, match="hf_structure_training.json"):
        hub.export_model_folder(bare, tmp_path / "out")
    # A record without some scores: one error names every missing key and the one command that writes them all.
    broken = {
        key: value for key, value in EVAL_FIXTURE.items() if key not in ("uas", "mlm_ppl_test", "mlm_ppl_paper_test")
    }
    (bare / "hf_structure_training.json").write_text(json.dumps(TRAINING_FIXTURE))
    (bare / "hf_structure_eval.json").write_text(json.dumps(broken))
    expected = (
        rf"lacks the required keys \['uas', 'mlm_ppl_test', 'mlm_ppl_paper_test'\] \(write it with "
        rf"`hf-structure evaluate --model {bare} --treebank GOLD --lm-text ptb-test --record`\)"
    )
    with pytest.raises(ValueError, match=expected):
        hub.export_model_folder(bare, tmp_path / "out")


def test_an_export_onto_a_full_disk_is_one_line_leaves_nothing_and_the_next_one_works(checkpoint, tmp_path):
    """The folder is written beside the target and renamed into place when whole: a full disk leaves no part-written
    folder that the next export would refuse as not empty."""
    with small_tmpfs(tmp_path / "small", "1m") as small:
        ballast = small / "ballast"
        ballast.write_bytes(bytes(800 * 1024))  # leaves room for the config and code files, not the weights
        out = small / "model"
        done = run_command(["export", "--model", str(checkpoint), "--output", str(out)], tmp_path)
        assert done.returncode == 1
        assert last_line(done) == f"hf-structure export: cannot write {out}: No space left on device"
        assert [path.name for path in small.iterdir()] == ["ballast"]
        ballast.unlink()
        cli.main(["export", "--model", str(checkpoint), "--output", str(out)])
        assert_upload_folder(out)


def test_an_export_into_a_read_only_folder_is_one_line(checkpoint, tmp_path):
    with small_tmpfs(tmp_path / "read-only", "64k", read_only=True) as read_only:
        out = read_only / "model"
        done = run_command(["export", "--model", str(checkpoint), "--output", str(out)], tmp_path)
        assert done.returncode == 1
        assert last_line(done) == f"hf-structure export: cannot write {out}: Read-only file system"


def test_installed_pipeline_needs_no_remote_code(exported, expected):
    """With hf_structure imported the folder's custom_pipelines is dropped and the registered pipeline serves it."""
    from transformers import AutoConfig, pipeline

    assert "custom_pipelines" in json.loads((exported / "config.json").read_text())
    assert not getattr(AutoConfig.from_pretrained(exported), "custom_pipelines", None)
    parser = pipeline("unsupervised-parsing", model=exported)  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    assert type(parser).__module__ == "hf_structure.pipelines.unsupervised_parsing"
    assert type(parser.model).__module__.startswith("hf_structure.")
    assert normalise(parser(TEXT)[0]) == expected["pipeline"]


@pytest.mark.parametrize("trust_remote_code", [True, False])
def test_the_documented_route_with_hf_structure_imported_names_the_task(exported, expected, trust_remote_code):
    """docs/publishing.md: with hf_structure imported, its registered pipeline serves the task (the config classes
    leave out the folder's `custom_pipelines`, which would demand remote code), so the task is named; without
    hf_structure, `pipeline(model=folder, trust_remote_code=True)` infers it (`tests/helpers/remote_code.py`)."""
    from transformers import pipeline

    parser = pipeline("unsupervised-parsing", model=str(exported), trust_remote_code=trust_remote_code)  # type: ignore[call-overload]  # transformers' overloads name only its own tasks
    assert type(parser).__module__ == "hf_structure.pipelines.unsupervised_parsing"
    assert normalise(parser(TEXT)[0]) == expected["pipeline"]


# ------------------------------------------------------------------------------------------------------ model card


def test_model_card_round_trips_the_eval_results(checkpoint, tmp_path):
    from huggingface_hub import ModelCard
    from huggingface_hub.repocard_data import eval_results_to_model_index, model_index_to_eval_results

    path = tmp_path / "README.md"
    hub.render_model_card(checkpoint, repo_id=REPO_ID).save(path)
    card = ModelCard.load(path)
    results = [(r.metric_type, r.dataset_name, r.metric_value) for r in card.data.eval_results]
    dataset, ptb_text = EVAL_FIXTURE["dataset"], "Penn Treebank LM text (Mikolov et al.)"
    assert results == [
        ("sentence_f1", dataset, 41.27),
        ("corpus_f1", dataset, 37.19),
        ("uas", dataset, 23.71),
        ("uuas", dataset, 47.53),
        ("uas_argmax", dataset, 25.17),
        ("perplexity", ptb_text, 123.45),
        ("perplexity", ptb_text, 118.5),  # the authors' protocol, named apart
    ]
    names = [r.metric_name for r in card.data.eval_results if r.metric_type == "perplexity"]
    assert "seed 0, calibration per sentence" in names[0] and "authors' protocol" in names[1]
    assert card.data.model_name == "structformer-ptb"
    assert card.data.license == "apache-2.0" and card.data.library_name == "transformers"
    assert card.data.pipeline_tag and "unsupervised-parsing" in card.data.tags
    # The model-index metadata is well formed: it converts to EvalResults and back unchanged.
    model_index = card.data.to_dict()["model-index"]
    name, parsed = model_index_to_eval_results(model_index)
    assert name == "structformer-ptb" and parsed == card.data.eval_results
    assert eval_results_to_model_index(name, parsed) == model_index
    assert "model-index:" in path.read_text().split("\n---\n")[0]

    text = card.text
    assert TRAINING_FIXTURE["command"] in text and TRAINING_FIXTURE["machine"] in text
    assert "1 h 31 min (5432 s)" in text  # wall time from training.json
    assert "WSJ sections 00–01) were removed" in text
    # The results table: this model beside both baselines, every number from eval_results.json.
    assert "| metric | this model | right-branching | left-branching |" in text
    assert "| Sentence-level UF1 | **41.27** | 39.94 | 8.66 |" in text
    assert "| UUAS | **47.53** | 50.34 | 50.58 |" in text
    assert "**123.45**" in text
    assert f'AutoModel.from_pretrained("{REPO_ID}", trust_remote_code=True)' in text
    assert f'pipeline("unsupervised-parsing", model="{REPO_ID}")' in text
    assert "shen-etal-2021-structformer" in text and "Courville, Aaron" in text
    assert "{{" not in text and "{%" not in text


def test_model_card_follows_the_records(checkpoint, tmp_path):
    """Nothing in the card is typed by hand: changing the records changes the card."""
    changed = tmp_path / "changed"
    shutil.copytree(checkpoint, changed)
    (changed / "hf_structure_eval.json").write_text(json.dumps({**EVAL_FIXTURE, "uas": 99.87}))
    command = TRAINING_FIXTURE["command"] + " --include_wsj_00_01"
    (changed / "hf_structure_training.json").write_text(json.dumps({**TRAINING_FIXTURE, "command": command}))
    card = hub.render_model_card(changed)
    assert {r.metric_type: r.metric_value for r in card.data.eval_results}["uas"] == 99.87
    assert "| UAS | **99.87** |" in card.text
    assert "Warning: the training text included WSJ sections 00–01" in card.text


# ----------------------------------------------------------------------------------------------------------- upload


def test_push_uploads_the_export_and_contacts_nothing_else(checkpoint, monkeypatch):
    import huggingface_hub

    calls: list[tuple[Any, ...]] = []  # (method, repo id, keywords[, the files uploaded])

    def create_repo(self, repo_id, **kwargs):
        calls.append(("create_repo", repo_id, kwargs))

    def upload_folder(self, *, repo_id, folder_path, **kwargs):
        folder = Path(folder_path)
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        assert_upload_folder(folder)
        calls.append(("upload_folder", repo_id, kwargs, files))
        return "fake-commit-info"

    def no_network(*args, **kwargs):
        raise AssertionError("push_model tried to open a connection")

    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", create_repo)
    monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", upload_folder)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    assert hub.push_model(checkpoint, REPO_ID, private=True) == "fake-commit-info"
    assert [call[0] for call in calls] == ["create_repo", "upload_folder"]
    assert calls[0][1] == REPO_ID and calls[0][2]["private"] is True and calls[0][2]["exist_ok"] is True
    assert calls[1][1] == REPO_ID and calls[1][2]["repo_type"] == "model"
    assert set(calls[1][3]) == set(UPLOADED)


def push_env(tmp_path: Path, endpoint: str) -> dict:
    """A child's environment that sends the Hub's requests to `endpoint`, with a token that it never checks."""
    env = child_env(tmp_path, PYTHONPATH=str(SRC), HF_ENDPOINT=endpoint, HF_TOKEN="hf_test_token_never_checked")
    del env["HF_HUB_OFFLINE"]  # offline, huggingface_hub would refuse before any request
    return env


def test_push_without_a_network_is_one_line_naming_the_repository(checkpoint, tmp_path):
    """huggingface_hub passes its HTTP client's transport errors on as they are (httpx's under huggingface_hub 1,
    httpx2's under 2; no OSError): a push that cannot reach the Hub ends in one line, not a traceback."""
    with socket.socket() as closed:  # bound and not listening: a connection to it is refused, and no one else has it
        closed.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{closed.getsockname()[1]}"
        done = run_command(
            ["push", "--model", str(checkpoint), "--repo-id", REPO_ID], tmp_path, push_env(tmp_path, endpoint)
        )
    assert done.returncode == 1
    line = last_line(done)
    assert line.startswith(f"hf-structure push: could not upload to {REPO_ID}: ") and "Connection refused" in line


class Unauthorized(http.server.BaseHTTPRequestHandler):
    """The Hub's answer to a token it does not know, to every request."""

    def do_GET(self):
        body = b'{"error": "Invalid credentials in Authorization header"}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *args):  # not on the test's stderr
        pass


def test_push_the_hub_refuses_is_one_line_with_its_reason(checkpoint, tmp_path):
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Unauthorized) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        done = run_command(
            ["push", "--model", str(checkpoint), "--repo-id", REPO_ID], tmp_path, push_env(tmp_path, endpoint)
        )
        server.shutdown()
    assert done.returncode == 1
    line = last_line(done)
    assert line.startswith(f"hf-structure push: could not upload to {REPO_ID}: ") and "401" in line
    assert line.endswith("Invalid credentials in Authorization header")


def test_push_with_an_injected_api(checkpoint):
    class FakeApi:
        def __init__(self):
            self.calls = []

        def create_repo(self, repo_id, **kwargs):
            self.calls.append(("create_repo", repo_id, kwargs["private"]))

        def upload_folder(self, *, repo_id, folder_path, **kwargs):
            self.calls.append(("upload_folder", repo_id, sorted(p.name for p in Path(folder_path).iterdir())))
            return "done"

    api = FakeApi()
    assert hub.push_model(checkpoint, "someone/sf-small", api=api) == "done"
    assert api.calls == [
        ("create_repo", "someone/sf-small", False),
        ("upload_folder", "someone/sf-small", sorted(UPLOADED)),
    ]


def test_push_with_a_space_uploads_the_folder_to_the_model_and_then_to_the_space(checkpoint):
    class FakeApi:
        def __init__(self, refused_type=None):
            self.calls, self.refused_type = [], refused_type

        def create_repo(self, repo_id, repo_type, **kwargs):
            if repo_type == self.refused_type:
                raise OSError("You have reached the maximum number of Spaces")
            self.calls.append(("create_repo", repo_id, repo_type, kwargs.get("space_sdk")))

        def upload_folder(self, *, repo_id, folder_path, repo_type, **kwargs):
            self.calls.append(
                ("upload_folder", repo_id, repo_type, sorted(p.name for p in Path(folder_path).iterdir()))
            )
            return f"{repo_type} commit"

    api = FakeApi()
    files = sorted([*UPLOADED, "app.py", "requirements.txt"])
    assert hub.push_model(checkpoint, REPO_ID, api=api, space_id="org/structformer-demo") == "model commit"
    assert api.calls == [
        ("create_repo", REPO_ID, "model", None),
        ("upload_folder", REPO_ID, "model", files),
        ("create_repo", "org/structformer-demo", "space", "gradio"),
        ("upload_folder", "org/structformer-demo", "space", files),
    ]
    refused = FakeApi(refused_type="space")
    with pytest.raises(
        hub.HubUploadError,
        match=r"^could not upload to org/structformer-demo: You have reached the maximum number of Spaces "
        rf"\(the model was uploaded to {REPO_ID}\)$",
    ):
        hub.push_model(checkpoint, REPO_ID, api=refused, space_id="org/structformer-demo")
    assert [call[:3] for call in refused.calls] == [
        ("create_repo", REPO_ID, "model"),
        ("upload_folder", REPO_ID, "model"),
    ]


def test_export_with_a_space_adds_the_app_its_requirements_and_the_spaces_settings(checkpoint, exported, tmp_path):
    from huggingface_hub import ModelCard

    done = run_command(
        [
            "export",
            "--model",
            str(checkpoint),
            "--output",
            str(tmp_path / "space"),
            "--repo-id",
            REPO_ID,
            "--space",
            "org/structformer-demo",
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("; `python app.py` in it serves it as a Space")
    folder = tmp_path / "space"
    assert sorted(p.name for p in folder.iterdir()) == sorted([*(p.name for p in exported.iterdir()), *SPACE_FILES])
    assert (folder / "app.py").read_text() == (SRC / "hf_structure/hub/app.py").read_text()
    # What a Space installs from requirements.txt, and the standard library: no hf_structure.
    assert imported_modules(folder / "app.py") == {
        *("html", "os", "threading", "collections.abc", "pathlib", "xml.sax.saxutils"),
        *("huggingface_hub", "transformers", "gradio"),
    }
    assert not called_names(folder / "app.py") & {"__import__", "exec", "eval"}
    requirements = (folder / "requirements.txt").read_text().splitlines()
    assert [line.split(">")[0].split("<")[0] for line in requirements] == [
        "torch",
        "transformers",
        "tokenizers",
        "huggingface_hub",
        "safetensors",
        "gradio",
    ]
    assert "gradio>=6.31,<7" in requirements  # the demo extra's range
    card = ModelCard.load(folder / "README.md")
    settings = {key: card.data.to_dict().get(key) for key in ("title", "sdk", "sdk_version", "app_file", "models")}
    assert settings == {
        "title": "structformer-ptb",
        "sdk": "gradio",
        "sdk_version": "6.31.0",
        "app_file": "app.py",
        "models": [REPO_ID],
    }
    assert "[org/structformer-demo](https://huggingface.co/spaces/org/structformer-demo)" in card.text
    assert "`python app.py`" in card.text
    # Without the flag, nothing of the Space: the card is the plain export's.
    assert (exported / "README.md").read_text() == hub.render_model_card(checkpoint, repo_id=REPO_ID).content
    assert (
        "sdk:" not in (exported / "README.md").read_text()
        and "python app.py" not in (exported / "README.md").read_text()
    )
    (folder / "app.py").unlink()
    with pytest.raises(RuntimeError, match=r"lacks \['app.py'\]"):
        hub.check_export(folder, space=True)
    hub.check_export(folder)  # still a model repository


def test_push_script_dry_run_writes_the_upload_folder(checkpoint, exported, tmp_path):
    from safetensors.torch import load_file

    out = tmp_path / "dry-run"
    stdout = run_child(
        [
            sys.executable,
            str(ROOT / "scripts/push_to_hub.py"),
            "--model",
            str(checkpoint),
            "--repo-id",
            REPO_ID,
            "--dry-run",
            str(out),
        ],
        tmp_path,
        child_env(tmp_path, PYTHONPATH=str(SRC)),
    )
    assert "nothing was uploaded" in stdout
    assert_upload_folder(out)
    # The very folder push_model uploads (same files, config, card, weights).
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in exported.iterdir())
    for name in ("config.json", "README.md", "tokenizer.json", "tokenizer_config.json", *CODE_FILES):
        assert (out / name).read_text() == (exported / name).read_text(), name
    ours, theirs = load_file(out / "model.safetensors"), load_file(exported / "model.safetensors")
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)


# ---------------------------------------------------------------------------------------------- offline Hub cache


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


LOAD_FROM_CACHE = r"""
import json, sys
import hf_structure  # registers the pipeline task
from transformers import AutoModel, AutoTokenizer, pipeline

repo_id, sentences, text = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
model = AutoModel.from_pretrained(repo_id, trust_remote_code=True).eval()
tokenizer = AutoTokenizer.from_pretrained(repo_id)
parses = []
for sentence in sentences:
    parses.append(model.parse([sentence.split()], tokenizer)[0])
parser = pipeline("unsupervised-parsing", model=repo_id)
print(json.dumps({"model": parses, "pipeline": parser(text)[0], "model_module": type(model).__module__,
                  "pipeline_module": type(parser).__module__}))
"""


def test_make_hf_cache_serves_from_pretrained_and_pipeline_offline(checkpoint, expected, tmp_path, monkeypatch):
    cache = tmp_path / "hub-cache"
    monkeypatch.setattr(
        sys, "argv", ["make_hf_cache.py", "--model", str(checkpoint), "--repo-id", REPO_ID, "--cache-dir", str(cache)]
    )
    runpy.run_path(str(ROOT / "scripts/make_hf_cache.py"), run_name="__main__")

    repo = cache / "models--org--structformer-ptb"
    commit = (repo / "refs" / "main").read_text()
    assert len(commit) == 40 and all(c in "0123456789abcdef" for c in commit)
    snapshot = repo / "snapshots" / commit
    assert set(UPLOADED) <= {p.name for p in snapshot.iterdir()}
    for pointer in snapshot.iterdir():
        assert pointer.is_symlink() and not os.path.isabs(os.readlink(pointer))
        blob = pointer.resolve()
        assert blob.parent == (repo / "blobs").resolve()
        data = blob.read_bytes()
        # Hub etags: sha256 of the content for LFS files (weights), the git blob sha1 for the others.
        etag = hashlib.sha256(data).hexdigest() if pointer.name.endswith(".safetensors") else git_blob_sha1(data)
        assert blob.name == etag, pointer.name
    if shutil.which("git"):  # an independent check of the git blob sha1
        git = subprocess.run(["git", "hash-object", str(snapshot / "config.json")], capture_output=True, text=True)
        assert git.stdout.strip() == (snapshot / "config.json").resolve().name

    env = child_env(tmp_path, PYTHONPATH=str(SRC), HF_HUB_CACHE=str(cache))
    out = last_json_line(
        run_child([sys.executable, "-c", LOAD_FROM_CACHE, REPO_ID, json.dumps(SENTENCES), TEXT], tmp_path, env)
    )
    assert out["pipeline_module"] == "hf_structure.pipelines.unsupervised_parsing"
    assert [normalise(p) for p in out["model"]] == expected["model"]
    assert normalise(out["pipeline"]) == expected["pipeline"]


# ------------------------------------------------------------------------------ remote code without hf_structure


LOAD_WITHOUT_HF_STRUCTURE = r"""
import sys


class BlockHfStructure:
    # Whatever else is on sys.path (an editable install, a .pth file), hf_structure and nltk cannot be imported.
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("hf_structure", "nltk"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
        return None


sys.meta_path.insert(0, BlockHfStructure())
assert not any(name.startswith("hf_structure") for name in sys.modules)
try:
    import hf_structure  # noqa: F401
except ImportError:
    pass
else:
    raise SystemExit("hf_structure is importable in the child")

import json

from transformers import AutoModel, AutoTokenizer, pipeline

folder, sentences, text = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
PARAGRAPH = "Dogs bark. \u201cCats\u201d don\u2019t."
model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)  # it reads config.json (auto_map)
parses = []
for sentence in sentences:
    parses.append(model.parse([sentence.split()], tokenizer)[0])
parser = pipeline(model=folder, trust_remote_code=True)  # the task comes from config.json's custom_pipelines
(parsed,) = parser(text)
paragraph = [(result["words"], result["text"]) for result in parser(PARAGRAPH)]  # word_tokenization.py travelled
assert not any(name.split(".")[0] in ("hf_structure", "nltk") for name in sys.modules)
print(json.dumps({"model": parses, "pipeline": parsed, "paragraph": paragraph, "model_class": type(model).__name__,
                  "model_module": type(model).__module__, "pipeline_module": type(parser).__module__,
                  "task": parser.task}))
"""


def test_export_loads_with_remote_code_where_hf_structure_is_absent(exported, expected, tmp_path):
    # -I: no PYTHONPATH, no user site, no current directory on sys.path; the meta-path blocker does the rest.
    out = last_json_line(
        run_child(
            [sys.executable, "-I", "-c", LOAD_WITHOUT_HF_STRUCTURE, str(exported), json.dumps(SENTENCES), TEXT],
            tmp_path,
            child_env(tmp_path),
        )
    )
    assert out["model_class"] == "StructFormerModel"
    assert out["model_module"].startswith("transformers_modules.")
    assert out["pipeline_module"].startswith("transformers_modules.")
    assert out["task"] == "unsupervised-parsing"
    assert [normalise(p) for p in out["model"]] == expected["model"]
    assert normalise(out["pipeline"]) == expected["pipeline"]
    assert out["pipeline"]["tree"] == expected["tree"]
    assert out["paragraph"] == [
        [["Dogs", "bark", "."], "Dogs bark."],
        [["\u201c", "Cats", "\u201d", "do", "n\u2019t", "."], "\u201cCats\u201d don\u2019t."],
    ]
