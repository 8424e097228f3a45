#!/usr/bin/env python
"""Publish a checkpoint of any hf_structure model on the Hugging Face Hub.

The checkpoint folder (or a bundled model name such as `structformer-ptb`) must hold `hf_structure_eval.json` and
`hf_structure_training.json` (see `hf_structure.hub.records`). The uploaded folder has the weights, config.json with
`auto_map` and `custom_pipelines`, the model and pipeline code, the tokenizer and a README.md model card whose
numbers all come from those two files.

    python scripts/push_to_hub.py --model structformer-ptb --repo-id my-org/structformer-ptb
    python scripts/push_to_hub.py --model structformer-ptb --repo-id my-org/structformer-ptb --dry-run /tmp/upload

`--dry-run OUTDIR` writes exactly the folder that would be uploaded into OUTDIR and contacts nothing. The same as
`hf-structure push` (the installed command); `hf-structure export` writes the folder without a repository.
"""

import sys

from hf_structure.cli import main

if __name__ == "__main__":
    main(["push", *sys.argv[1:]])
