#!/usr/bin/env python
"""Lay a checkpoint out in a Hugging Face Hub cache, exactly as downloading it from `REPO_ID` would
(`models--org--name/blobs/<etag>`, `snapshots/<commit>/<file>` symlinks, `refs/main`), so that
`from_pretrained(REPO_ID)` and `pipeline(..., model=REPO_ID)` work offline (HF_HUB_OFFLINE=1) before or without an
upload. The files are those `scripts/push_to_hub.py` would upload; the commit hash is a stand-in derived from them.

    python scripts/make_hf_cache.py --model structformer-ptb --repo-id my-org/structformer-ptb \
        --cache-dir ~/.cache/huggingface/hub
"""

import argparse

from hf_structure.hub import make_hf_cache


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="checkpoint folder or bundled model name")
    parser.add_argument("--repo-id", required=True, help="the Hub id to lay the files out under, e.g. org/name")
    parser.add_argument("--cache-dir", required=True, help="Hub cache folder (what HF_HUB_CACHE points at)")
    args = parser.parse_args(argv)
    snapshot = make_hf_cache(args.model, args.repo_id, args.cache_dir)
    print(f"{args.repo_id} -> {snapshot}")


if __name__ == "__main__":
    main()
