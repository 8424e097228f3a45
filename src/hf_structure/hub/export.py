"""The folder that goes to the Hub, and the upload.

The folder holds the weights, `config.json` (with `auto_map` and `custom_pipelines`), the model's code and the
pipeline's code (each self-contained, so it loads with `trust_remote_code=True` where hf_structure is not
installed), the tokenizer, both records (`hf_structure.hub.records`) and the rendered model card; with `space`, also
what makes it a Gradio Space (`hf_structure.hub.space`).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from ..configuration_utils import PIPELINE_FILES, PIPELINE_TASK
from ..file_modes import with_default_mode
from .cards import card_eval_record, folder_model_spec, render_model_card
from .records import EVAL_RECORD, TRAINING_RECORD, load_training_record, read_json, write_json
from .space import SPACE_FILES, write_space_files

TASK = PIPELINE_TASK
REQUIRED_FILES = (
    "config.json",
    "model.safetensors",
    "tokenizer_config.json",
    "README.md",
    EVAL_RECORD,
    TRAINING_RECORD,
    *PIPELINE_FILES,
)


def export_model_folder(
    model_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    repo_id: str | None = None,
    space: bool = False,
    space_id: str | None = None,
) -> Path:
    """Write the folder that goes to the Hub: weights, config (auto_map + custom_pipelines), modeling, configuration
    and pipeline code, tokenizer, README.md model card and the two records. `model_dir` is a checkpoint folder or a
    bundled model name. Returns `out_dir`, which must be absent or empty. `space`: the folder is a Gradio Space as
    well (`app.py`, `requirements.txt`, the Space's settings in the card); `space_id`: the Space it is meant for,
    which the card links (it implies `space`).

    The folder is written beside `out_dir` and renamed into place when whole: a full disk or a read-only folder is an
    `ExportWriteError` naming `out_dir`, and leaves nothing behind that would block the next export."""
    from safetensors import SafetensorError
    from transformers import pipeline

    from ..bundled import load_model_and_tokenizer, resolve_model_path

    model_dir = Path(resolve_model_path(str(model_dir)))
    if not (model_dir / "config.json").is_file():
        raise FileNotFoundError(f"{model_dir} is not a checkpoint folder (no config.json) nor a bundled model name")
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir} is not empty")
    # Read the records first: a checkpoint without them is not published.
    spec = folder_model_spec(model_dir)
    card_eval_record(model_dir, spec)
    load_training_record(model_dir)

    model, tokenizer = load_model_and_tokenizer(str(model_dir))
    # transformers' overloads of `pipeline` name only its own tasks, not one registered in its PIPELINE_REGISTRY.
    parser = pipeline(TASK, model=model, tokenizer=tokenizer)  # type: ignore[call-overload]
    target = Path(os.path.abspath(out_dir))  # a name and a parent folder even for `.` or `a/..`
    scratch = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # On the target's file system, so that the rename is atomic; the folder inside it gets the umask's mode.
        scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
        _write_export(parser, model_dir, scratch / target.name, repo_id, space_id, space or space_id is not None)
        os.replace(scratch / target.name, target)  # onto an absent or empty folder
    except (OSError, SafetensorError) as error:  # safetensors reports its own I/O errors (ENOSPC) as SafetensorError
        raise ExportWriteError(f"cannot write {out_dir}: {_reason(error)}") from error
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return out_dir


def _write_export(
    parser, model_dir: Path, out_dir: Path, repo_id: str | None, space_id: str | None, space: bool
) -> None:
    """Write the export of `model_dir` (loaded in `parser`) to `out_dir`, which it creates."""
    parser.save_pretrained(out_dir)  # model + code files + custom_pipelines + the pipeline file + tokenizer
    keep_stored_precision(model_dir / "model.safetensors", out_dir / "model.safetensors")
    with_default_mode(out_dir)

    config = read_json(out_dir / "config.json")
    task_info = config.get("custom_pipelines", {}).get(TASK)
    if task_info is None:
        raise RuntimeError(f"the saved config.json has no custom_pipelines entry for {TASK!r}")
    # The registered default names the bundled folder on this machine; on the Hub the repo is its own default.
    if repo_id:
        task_info["default"] = {"model": [repo_id, None]}
    else:
        task_info.pop("default", None)
    write_json(out_dir / "config.json", config, sort_keys=True)

    # transformers 5 saves how this process loaded the tokenizer (`is_local`, `local_files_only`, which follows
    # HF_HUB_OFFLINE); that is state of this machine, not of the tokenizer, so it is left out of the upload.
    tokenizer_config = read_json(out_dir / "tokenizer_config.json")
    for key in ("is_local", "local_files_only"):
        tokenizer_config.pop(key, None)
    write_json(out_dir / "tokenizer_config.json", tokenizer_config)

    for name in (EVAL_RECORD, TRAINING_RECORD):
        shutil.copyfile(model_dir / name, out_dir / name)
    render_model_card(model_dir, repo_id=repo_id, space=space, space_id=space_id).save(out_dir / "README.md")
    if space:
        write_space_files(out_dir)
    check_export(out_dir, space=space)


def _reason(error: Exception) -> str:
    """The system's words for a write error: an OSError's `strerror`; safetensors' message ends in `(os error N)`."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    code = re.search(r"\(os error (\d+)\)", str(error))
    return os.strerror(int(code.group(1))) if code else str(error)


class ExportWriteError(OSError):
    """The export folder could not be written (a full disk, a read-only folder); the message names it and why."""


def keep_stored_precision(source: Path, exported: Path) -> None:
    """Store each tensor of `exported` in the dtype `source` stores it in. A folder saved in half precision (the
    bundled parsers, `scripts/export_half.py`) loads in float32, the config's dtype, and `save_pretrained` writes what
    it loaded: the upload would be twice the size for no gain. A tensor `source` lacks (a name the loading renamed)
    takes the one dtype of all `source`'s floating tensors when they share one, else stays as saved."""
    from safetensors.torch import load_file, save_file

    if not source.is_file():  # a sharded or .bin checkpoint: saved as loaded
        return
    stored = {name: tensor.dtype for name, tensor in load_file(source).items()}
    floating = {dtype for dtype in stored.values() if dtype.is_floating_point}
    only_dtype = floating.pop() if len(floating) == 1 else None
    tensors = load_file(exported)
    wanted = {
        name: stored.get(name, only_dtype) if tensor.is_floating_point() else tensor.dtype
        for name, tensor in tensors.items()
    }
    if all(wanted[name] in (None, tensor.dtype) for name, tensor in tensors.items()):
        return
    save_file(
        {name: tensor.to(wanted[name] or tensor.dtype) for name, tensor in tensors.items()},
        exported,
        metadata={"format": "pt"},
    )


def check_export(folder: str | os.PathLike, space: bool = False) -> None:
    """Raise when an exported folder lacks a file or config entry that loading from the Hub needs (and, with
    `space`, a file that running it as a Space needs)."""
    folder = Path(folder)
    missing = [name for name in (*REQUIRED_FILES, *(SPACE_FILES if space else ())) if not (folder / name).is_file()]
    if missing:
        raise RuntimeError(f"{folder} lacks {missing}")
    config = read_json(folder / "config.json")
    auto_map = config.get("auto_map", {})
    spec = folder_model_spec(folder)
    for auto_class in ("AutoConfig", *spec.auto_classes):
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
    commit_message: str = "Upload model (hf_structure)",
    space_id: str | None = None,
):
    """Export `model_dir` and upload it to `repo_id` (created if needed); with `space_id`, the folder is a Gradio
    Space as well (`export_model_folder`) and goes to that Space too, after the model. With `dry_run_dir`, write the
    folder that would be uploaded there and contact nothing (returns that path); otherwise returns the model's
    `upload_folder` result."""
    if dry_run_dir is not None:
        return export_model_folder(model_dir, dry_run_dir, repo_id=repo_id, space_id=space_id)
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi(token=token)
    HTTPError: type[Exception]
    try:
        from huggingface_hub.utils import httpx  # huggingface_hub 2: its HTTP client, httpx2, under this name

        HTTPError = httpx.HTTPError
    except ImportError:  # huggingface_hub 1, whose HTTP client is httpx
        from httpx import HTTPError
    with tempfile.TemporaryDirectory(prefix="hf_structure_push_") as folder:
        export_model_folder(model_dir, folder, repo_id=repo_id, space_id=space_id)
        uploads: list[tuple[str, str, dict]] = [(repo_id, "model", {})]
        if space_id:
            uploads.append((space_id, "space", {"space_sdk": "gradio"}))
        results = []
        for target, repo_type, settings in uploads:
            try:
                api.create_repo(target, repo_type=repo_type, private=private, exist_ok=True, **settings)
                results.append(
                    api.upload_folder(
                        repo_id=target, folder_path=folder, repo_type=repo_type, commit_message=commit_message
                    )
                )
            # HTTPError: the client's own errors (no network, a refused connection, a timeout), which
            # huggingface_hub passes on as they are, and its HfHubHTTPError (the Hub's refusal); OSError: no token
            # saved, offline mode.
            except (HTTPError, OSError) as error:
                reason = " ".join(str(error).split()) or type(error).__name__
                done = f" (the model was uploaded to {repo_id})" if results else ""
                raise HubUploadError(f"could not upload to {target}: {reason}{done}") from error
        return results[0]


class HubUploadError(RuntimeError):
    """The Hub could not be reached, or refused the upload; the message says which repository and why."""
