#!/usr/bin/env python
"""Publish a checkpoint of any hf_structure model on the Hugging Face Hub.

The checkpoint folder (or a bundled model name such as `structformer-ptb`) must hold `hf_structure_eval.json` and
`hf_structure_training.json` (see `hf_structure.hub.records`). The uploaded folder has the weights, config.json with
`auto_map` and `custom_pipelines`, the model and pipeline code, the tokenizer and a README.md model card whose
numbers all come from those two files.

    python scripts/push_to_hub.py --model structformer-ptb --repo-id my-org/structformer-ptb
    python scripts/push_to_hub.py --model structformer-ptb --repo-id my-org/structformer-ptb --dry-run /tmp/upload

`--dry-run OUTDIR` writes exactly the folder that would be uploaded into OUTDIR and contacts nothing.
"""

import argparse

from hf_structure.hub import push_model


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="checkpoint folder or bundled model name")
    parser.add_argument("--repo-id", required=True, help="Hub repository, e.g. my-org/structformer-ptb")
    parser.add_argument("--private", action="store_true", help="create the repository as private")
    parser.add_argument("--dry-run", metavar="OUTDIR", help="write the folder that would be uploaded; upload nothing")
    parser.add_argument("--token", help="Hub token (default: the HF_TOKEN variable or the saved login)")
    args = parser.parse_args(argv)
    result = push_model(args.model, args.repo_id, private=args.private, dry_run_dir=args.dry_run, token=args.token)
    if args.dry_run:
        print(f"dry run: wrote the folder for {args.repo_id} to {result}; nothing was uploaded")
    else:
        print(f"uploaded to https://huggingface.co/{args.repo_id} ({getattr(result, 'oid', result)})")


if __name__ == "__main__":
    main()
