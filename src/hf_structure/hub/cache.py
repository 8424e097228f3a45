"""An offline Hub cache: a model folder laid out exactly as `hf_hub_download` would have stored it."""

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

# Files the Hub stores with Git LFS (its default .gitattributes), whose etag is the sha256 of the content; every
# other file's etag is its git blob sha1.
LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".onnx", ".npy", ".npz", ".zip")
LFS_MIN_SIZE = 10 * 1024 * 1024


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
        from .export import export_model_folder

        export_model_folder(model_dir, folder, repo_id=repo_id)
        return populate_cache(folder, repo_id, cache_dir)
