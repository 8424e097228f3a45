"""Publishing a checkpoint: the Hub-ready folder, its model card, the upload, and an offline Hub cache.

A checkpoint folder (`save_pretrained` output, e.g. `src/hf_structure/pretrained/structformer-ptb`) holds the model,
its tokenizer and two JSON files written by the run that made it:

`eval_results.json` (percentages with 2 decimals, perplexity as a plain number)::

    {
      "dataset": "Penn Treebank WSJ (section 00 sample)",  # required: display name of the gold treebank scored
      "sentence_f1": 48.1,   # required: sentence-level unlabelled F1 (mean over sentences), all lengths
      "corpus_f1": 43.2,     # required: corpus-level unlabelled F1
      "uas": 40.1,           # required: directed attachment score, punctuation excluded
      "uuas": 55.3,          # required: undirected attachment score
      "mlm_ppl_test": 61.2,  # required: masked-LM perplexity on the PTB LM test split
                             #   (`hf-structure evaluate --lm-text ptb-test`: 30% of words -> <mask>, seed 0)
      "baselines": {         # required: the same scorer on the same words; each value has at least the four
        "right-branching": {"sentence_f1": 39.94, "corpus_f1": 35.61, "uas": 20.29, "uuas": 50.34},
        "left-branching": {"sentence_f1": 8.66, "corpus_f1": 6.37, "uas": 30.37, "uuas": 50.58}
      },                     #   parsing metrics above ("random" and others are shown when present)
      "sentences": 1921,     # optional: how many gold sentences were scored
      "dataset_id": "...",   # optional: model-index dataset id (default "ptb-wsj-sample")
      "dataset_split": "...",# optional: which part of the treebank (e.g. "wsj_0001-wsj_0099")
      "recall_NP": 70.1, ... # optional: any further `hf-structure evaluate` keys; they are kept, not rendered
    }

`training.json`::

    {
      "command": "python scripts/run_mlm.py ...",  # required: the exact command that trained the model
      "wall_time_s": 7260.5,                      # required: training wall-clock time in seconds
      "machine": "2 CPU cores (...)",             # required: what it ran on
      "steps": 7000,                              # required: optimizer steps
      "epochs": 11.7,                             # required: passes over the training text
      "wsj_00_01_excluded": true,                 # optional: default = "--include_wsj_00_01" not in command
      "train_data": "...",                        # optional: describes the training text when it is not the
                                                  #   PTB LM train split (e.g. --train_file runs)
      "train_sentences": 38157,                   # optional
      "train_words": 810000                       # optional
    }

The model card (`README.md`) is rendered from `modeling_cards/structformer.md` with every number read from these
two files; the model-index metadata (`huggingface_hub.EvalResult`s) is built from `eval_results.json` too.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

EVAL_RESULTS_FILE = "eval_results.json"
TRAINING_FILE = "training.json"
REQUIRED_EVAL_KEYS = ("dataset", "sentence_f1", "corpus_f1", "uas", "uuas", "mlm_ppl_test", "baselines")
REQUIRED_TRAINING_KEYS = ("command", "wall_time_s", "machine", "steps", "epochs")
PARSING_METRICS = (
    # (key in eval_results.json, model-index metric name, table row label)
    ("sentence_f1", "Sentence-level unlabelled F1", "Sentence-level UF1"),
    ("corpus_f1", "Corpus-level unlabelled F1", "Corpus-level UF1"),
    ("uas", "Unlabelled attachment score (directed)", "UAS"),
    ("uuas", "Undirected unlabelled attachment score", "UUAS"),
)
DEFAULT_DATASET_ID = "ptb-wsj-sample"
TEMPLATE_PATH = Path(__file__).resolve().parents[2] / "modeling_cards" / "structformer.md"
TASK = "unsupervised-parsing"
# Files the Hub stores with Git LFS (its default .gitattributes), whose etag is the sha256 of the content; every
# other file's etag is its git blob sha1.
LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".onnx", ".npy", ".npz", ".zip")
LFS_MIN_SIZE = 10 * 1024 * 1024
REQUIRED_EXPORT_FILES = (
    "config.json",
    "model.safetensors",
    "configuration_structformer.py",
    "modeling_structformer.py",
    "unsupervised_parsing.py",
    "tokenizer.json",
    "tokenizer_config.json",
    "README.md",
    EVAL_RESULTS_FILE,
    TRAINING_FILE,
)


# --------------------------------------------------------------------------------------------- checkpoint records


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _write_json(path: Path, data: dict, sort_keys: bool = False) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=sort_keys, ensure_ascii=False) + "\n", encoding="utf-8")


def _load_record(model_dir: str | os.PathLike, name: str, required: tuple[str, ...]) -> dict:
    path = Path(model_dir) / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: the checkpoint folder needs {name} (see hf_structure.hub)")
    record = _read_json(path)
    missing = [key for key in required if key not in record]
    if missing:
        raise ValueError(f"{path} lacks the required keys {missing}")
    return record


def load_eval_results(model_dir: str | os.PathLike) -> dict:
    results = _load_record(model_dir, EVAL_RESULTS_FILE, REQUIRED_EVAL_KEYS)
    for name, scores in results["baselines"].items():
        missing = [key for key, _, _ in PARSING_METRICS if key not in scores]
        if missing:
            raise ValueError(f"{EVAL_RESULTS_FILE}: baseline {name!r} lacks {missing}")
    return results


def load_training(model_dir: str | os.PathLike) -> dict:
    training = _load_record(model_dir, TRAINING_FILE, REQUIRED_TRAINING_KEYS)
    training.setdefault("wsj_00_01_excluded", "--include_wsj_00_01" not in training["command"])
    return training


# ------------------------------------------------------------------------------------------------------ model card


def eval_results_list(results: dict):
    """The `huggingface_hub.EvalResult`s (model-index entries) of an `eval_results.json` record."""
    from huggingface_hub import EvalResult

    parsing = {
        "task_type": "token-classification",  # the nearest Hub task id: every word is assigned a head
        "task_name": "Unsupervised constituency and dependency parsing",
        "dataset_type": results.get("dataset_id", DEFAULT_DATASET_ID),
        "dataset_name": results["dataset"],
        "dataset_split": results.get("dataset_split"),
    }
    entries = [
        EvalResult(**parsing, metric_type=key, metric_name=name, metric_value=results[key])
        for key, name, _ in PARSING_METRICS
    ]
    entries.append(
        EvalResult(
            task_type="fill-mask",
            task_name="Masked language modelling",
            dataset_type="ptb_text_only",
            dataset_name="Penn Treebank LM text (Mikolov et al.)",
            dataset_split="test",
            metric_type="perplexity",
            metric_name="Masked-LM perplexity (30% of words replaced by <mask>, seed 0)",
            metric_value=results["mlm_ppl_test"],
        )
    )
    return entries


def _cell(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def results_table(results: dict) -> str:
    """Markdown table: this model beside the baselines of `eval_results.json`, one row per metric."""
    baselines = list(results["baselines"])
    header = "| metric | this model | " + " | ".join(baselines) + " |"
    rule = "|---|---:|" + "---:|" * len(baselines)
    rows = [
        f"| {label} | **{_cell(results[key])}** | "
        + " | ".join(_cell(results["baselines"][b].get(key)) for b in baselines)
        + " |"
        for key, _, label in PARSING_METRICS
    ]
    rows.append(
        "| MLM perplexity (PTB test) ↓ | **"
        + _cell(results["mlm_ppl_test"])
        + "** | "
        + " | ".join(_cell(results["baselines"][b].get("mlm_ppl_test")) for b in baselines)
        + " |"
    )
    return "\n".join([header, rule, *rows])


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"


def render_model_card(
    model_dir: str | os.PathLike,
    repo_id: str | None = None,
    template_path: str | os.PathLike | None = None,
):
    """The `huggingface_hub.ModelCard` (README.md) of a checkpoint folder; every number comes from its
    `eval_results.json`, `training.json` and `config.json`."""
    from huggingface_hub import ModelCard, ModelCardData

    from . import __version__

    model_dir = Path(model_dir)
    template_path = Path(template_path) if template_path else TEMPLATE_PATH
    if not template_path.is_file():
        raise FileNotFoundError(f"model card template {template_path} not found (it lives in the source repository)")
    results = load_eval_results(model_dir)
    training = load_training(model_dir)
    config = _read_json(model_dir / "config.json")
    model_name = repo_id.split("/")[-1] if repo_id else model_dir.name
    card_data = ModelCardData(
        model_name=model_name,
        language="en",
        license="apache-2.0",
        library_name="transformers",
        # The model is an AutoModelForMaskedLM (the standard fill-mask pipeline runs on it); parsing is the
        # custom `unsupervised-parsing` pipeline, named in the tags.
        pipeline_tag="fill-mask",
        tags=[
            "structformer",
            "unsupervised-parsing",
            "constituency-parsing",
            "dependency-parsing",
            "grammar-induction",
            "custom_code",
        ],
        datasets=["ptb_text_only"],
        metrics=[key for key, _, _ in PARSING_METRICS] + ["perplexity"],
        eval_results=eval_results_list(results),
    )
    return ModelCard.from_template(
        card_data,
        template_path=str(template_path),
        model_name=model_name,
        repo_id=repo_id or f"<your-org>/{model_name}",
        config=config,
        eval=results,
        results_table=results_table(results),
        training=training,
        wall_time=_duration(float(training["wall_time_s"])),
        hf_structure_version=__version__,
    )


# ------------------------------------------------------------------------------------------------ the Hub folder


def export_model_folder(
    model_dir: str | os.PathLike, out_dir: str | os.PathLike, repo_id: str | None = None
) -> Path:
    """Write the folder that goes to the Hub: weights, config (auto_map + custom_pipelines), modeling, configuration
    and pipeline code, tokenizer, README.md model card, eval_results.json and training.json. `model_dir` is a
    checkpoint folder or a bundled model name. Returns `out_dir`."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer, pipeline

    from .pretrained import resolve_model_path  # (importing hf_structure registered the pipeline task)

    model_dir = Path(resolve_model_path(str(model_dir)))
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir} is not empty")
    # Read the records first: a checkpoint without them is not published.
    load_eval_results(model_dir)
    load_training(model_dir)

    model = AutoModelForMaskedLM.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    parser = pipeline(TASK, model=model, tokenizer=tokenizer)
    parser.save_pretrained(out_dir)  # model + code files + custom_pipelines + the pipeline file + tokenizer

    config = _read_json(out_dir / "config.json")
    task_info = config.get("custom_pipelines", {}).get(TASK)
    if task_info is None:
        raise RuntimeError(f"the saved config.json has no custom_pipelines entry for {TASK!r}")
    # The registered default names the bundled folder on this machine; on the Hub the repo is its own default.
    if repo_id:
        task_info["default"] = {"model": [repo_id, None]}
    else:
        task_info.pop("default", None)
    _write_json(out_dir / "config.json", config, sort_keys=True)

    # transformers 5 saves how this process loaded the tokenizer (`is_local`, `local_files_only`, which follows
    # HF_HUB_OFFLINE); that is state of this machine, not of the tokenizer, so it is left out of the upload.
    tokenizer_config = _read_json(out_dir / "tokenizer_config.json")
    for key in ("is_local", "local_files_only"):
        tokenizer_config.pop(key, None)
    _write_json(out_dir / "tokenizer_config.json", tokenizer_config)

    for name in (EVAL_RESULTS_FILE, TRAINING_FILE):
        shutil.copyfile(model_dir / name, out_dir / name)
    render_model_card(model_dir, repo_id=repo_id).save(out_dir / "README.md")
    check_export(out_dir)
    return out_dir


def check_export(folder: str | os.PathLike) -> None:
    """Raise when an exported folder lacks a file or config entry that loading from the Hub needs."""
    folder = Path(folder)
    missing = [name for name in REQUIRED_EXPORT_FILES if not (folder / name).is_file()]
    if missing:
        raise RuntimeError(f"{folder} lacks {missing}")
    config = _read_json(folder / "config.json")
    auto_map = config.get("auto_map", {})
    for auto_class in ("AutoConfig", "AutoModel", "AutoModelForMaskedLM"):
        module = auto_map.get(auto_class, "").split(".")[0]
        if not (folder / f"{module}.py").is_file():
            raise RuntimeError(f"config.json auto_map[{auto_class!r}] = {auto_map.get(auto_class)!r}: no code file")
    impl = config.get("custom_pipelines", {}).get(TASK, {}).get("impl", "")
    if not (folder / f"{impl.split('.')[0]}.py").is_file():
        raise RuntimeError(f"config.json custom_pipelines[{TASK!r}].impl = {impl!r}: no code file")


def push_model(
    model_dir: str | os.PathLike,
    repo_id: str,
    private: bool = False,
    dry_run_dir: str | os.PathLike | None = None,
    api=None,
    token: str | None = None,
    commit_message: str = "Upload StructFormer model (hf_structure)",
):
    """Export `model_dir` and upload it to `repo_id` (created if needed). With `dry_run_dir`, write the folder that
    would be uploaded there and contact nothing (returns that path); otherwise returns `upload_folder`'s result."""
    if dry_run_dir is not None:
        return export_model_folder(model_dir, dry_run_dir, repo_id=repo_id)
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi(token=token)
    with tempfile.TemporaryDirectory(prefix="hf_structure_push_") as folder:
        export_model_folder(model_dir, folder, repo_id=repo_id)
        api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
        return api.upload_folder(repo_id=repo_id, folder_path=folder, repo_type="model", commit_message=commit_message)


# ------------------------------------------------------------------------------------------------ offline Hub cache


def file_etag(path: str | os.PathLike) -> str:
    """The etag the Hub serves for a file: sha256 of the content for Git LFS files, else the git blob sha1."""
    path = Path(path)
    size = path.stat().st_size
    if path.name.endswith(LFS_SUFFIXES) or size >= LFS_MIN_SIZE:
        digest = hashlib.sha256()
    else:
        digest = hashlib.sha1()
        digest.update(f"blob {size}\0".encode())
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def populate_cache(
    folder: str | os.PathLike,
    repo_id: str,
    cache_dir: str | os.PathLike,
    revision: str = "main",
    commit_hash: str | None = None,
) -> Path:
    """Lay `folder`'s files out in a Hub cache as `hf_hub_download` would: `models--org--name/blobs/<etag>`,
    `snapshots/<commit>/<file>` (relative symlinks to the blobs, copies where symlinks are unavailable) and
    `refs/<revision>` holding the commit hash. Without `commit_hash`, a stable stand-in is derived from the files
    (sha1 of their paths and etags). Returns the snapshot folder."""
    from huggingface_hub.file_download import repo_folder_name

    folder = Path(folder)
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    if not files:
        raise ValueError(f"{folder} has no files")
    etags = {p.relative_to(folder).as_posix(): file_etag(p) for p in files}
    if commit_hash is None:
        commit_hash = hashlib.sha1("".join(f"{name}\0{etag}\n" for name, etag in etags.items()).encode()).hexdigest()
    if len(commit_hash) != 40 or any(c not in "0123456789abcdef" for c in commit_hash):
        raise ValueError(f"commit_hash must be 40 lowercase hex digits, got {commit_hash!r}")
    repo_dir = Path(cache_dir) / repo_folder_name(repo_id=repo_id, repo_type="model")
    blobs, snapshot = repo_dir / "blobs", repo_dir / "snapshots" / commit_hash
    blobs.mkdir(parents=True, exist_ok=True)
    for name, etag in etags.items():
        blob = blobs / etag
        if not blob.exists():
            shutil.copyfile(folder / name, blob)
        pointer = snapshot / name
        pointer.parent.mkdir(parents=True, exist_ok=True)
        if pointer.exists() or pointer.is_symlink():
            pointer.unlink()
        try:
            pointer.symlink_to(os.path.relpath(blob, pointer.parent))
        except OSError:  # no symlinks (Windows without developer mode): huggingface_hub copies too
            shutil.copyfile(blob, pointer)
    (repo_dir / "refs").mkdir(exist_ok=True)
    (repo_dir / "refs" / revision).write_text(commit_hash)
    return snapshot


def make_hf_cache(model_dir: str | os.PathLike, repo_id: str, cache_dir: str | os.PathLike) -> Path:
    """Export `model_dir` for `repo_id` and lay it out in the Hub cache `cache_dir`; returns the snapshot folder."""
    with tempfile.TemporaryDirectory(prefix="hf_structure_cache_") as folder:
        export_model_folder(model_dir, folder, repo_id=repo_id)
        return populate_cache(folder, repo_id, cache_dir)


__all__ = [
    "EVAL_RESULTS_FILE",
    "TRAINING_FILE",
    "check_export",
    "eval_results_list",
    "export_model_folder",
    "file_etag",
    "load_eval_results",
    "load_training",
    "make_hf_cache",
    "populate_cache",
    "push_model",
    "render_model_card",
    "results_table",
]
