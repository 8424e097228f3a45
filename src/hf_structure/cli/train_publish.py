"""The `hf-structure` commands that train and publish models: `train-lm`, `train-parser`, `export` and `push`.

`train-lm` and `train-parser` hand every argument after them, unparsed, to the training entries
(`hf_structure.training.language_model.main`, `hf_structure.training.parser.main`, which `scripts/run_mlm.py` and
`scripts/run_parser.py` also call): their `HfArgumentParser` owns the options, `--help` included. Training needs the
`train` extra; without it the command ends with one line saying what to install.
"""

import importlib

# command -> (training entry module, model type of a new model when the arguments name none)
TRAINING_COMMANDS = {
    "train-lm": ("hf_structure.training.language_model", "structformer"),
    "train-parser": ("hf_structure.training.parser", "g2gtr"),
}
TRAINING_HELP = {
    "train-lm": "train or fine-tune a language-model parser (StructFormer, R2D2) with Trainer; `train-lm --help` "
    "lists its options (needs hf_structure[train])",
    "train-parser": "train or fine-tune a supervised dependency parser (G2GTr, arc-hybrid) on CoNLL-U with Trainer; "
    "`train-parser --help` lists its options (needs hf_structure[train])",
}


def train(command: str, arguments: list[str]):
    """Run the training entry of `command` on `arguments`; returns its Trainer."""
    from ..extras import MissingExtraError

    module, default_model_type = TRAINING_COMMANDS[command]
    try:
        entry = importlib.import_module(module)
    except MissingExtraError as error:
        raise SystemExit(f"hf-structure {command}: {error}") from None
    from ..training.trainer import one_line_failures

    with one_line_failures(f"hf-structure {command}"):
        return entry.main(arguments, default_model_type, prog=f"hf-structure {command}")


def _export(args) -> None:
    from ..hub import export_model_folder

    try:
        folder = export_model_folder(
            args.model, args.output, repo_id=args.repo_id, space=args.space is not None, space_id=args.space or None
        )
    # no such folder, a non-empty output, a record missing or incomplete, an output that cannot be written
    except (OSError, ValueError) as error:
        raise SystemExit(f"hf-structure export: {error}") from None
    space = "; `python app.py` in it serves it as a Space" if args.space is not None else ""
    print(f"wrote the Hub folder of {args.model} to {folder}{space}")


def _push(args) -> None:
    from ..hub import push_model
    from ..hub.export import ExportWriteError, HubUploadError
    from ..hub.space import SPACE_URL

    try:
        result = push_model(
            args.model,
            args.repo_id,
            private=args.private,
            dry_run_dir=args.dry_run,
            token=args.token,
            space_id=args.space,
        )
    # the folder's problems, or no room to write its export, before any upload
    except (FileNotFoundError, FileExistsError, ValueError, ExportWriteError) as error:
        raise SystemExit(f"hf-structure push: {error}") from None
    except HubUploadError as error:  # the network's or the Hub's, after the export
        raise SystemExit(f"hf-structure push: {error}") from None
    if args.dry_run:
        print(f"dry run: wrote the folder for {args.repo_id} to {result}; nothing was uploaded")
    else:
        print(f"uploaded to https://huggingface.co/{args.repo_id} ({getattr(result, 'oid', result)})")
        if args.space:
            print(f"and to the Space {SPACE_URL.format(args.space)}")


def add_train_publish_commands(commands) -> None:
    """Add the four commands to the `hf-structure` subparsers `commands`. The training ones are listed here for
    `hf-structure --help` only: `main` hands their arguments to the training entries before argparse sees them."""
    for command, help_text in TRAINING_HELP.items():
        commands.add_parser(command, help=help_text, add_help=False)

    export = commands.add_parser(
        "export",
        help="write a saved model as the folder that goes to the Hub: weights in "
        "their stored precision, config with auto_map, the model and pipeline code (loads "
        "with trust_remote_code=True without hf_structure), tokenizer, records, model card",
    )
    export.add_argument(
        "--model",
        required=True,
        help="model folder (with hf_structure_eval.json and hf_structure_training.json) or bundled name",
    )
    export.add_argument("--output", required=True, help="folder to write (absent or empty)")
    export.add_argument(
        "--repo-id",
        help="the Hub repository the folder is meant for (org/name): the model card and "
        "the pipeline's default model name it",
    )
    export.add_argument(
        "--space",
        nargs="?",
        const="",
        metavar="SPACE_ID",
        help="make the folder a Gradio Space as well: app.py (the page of `hf-structure demo` for this model; runs "
        "without hf_structure) and requirements.txt; with SPACE_ID (org/name), the model card links that Space",
    )

    push = commands.add_parser("push", help="export a saved model (as `export` does) and upload it to the Hub")
    push.add_argument("--model", required=True, help="model folder or bundled name")
    push.add_argument("--repo-id", required=True, help="Hub repository, e.g. my-org/structformer-ptb")
    push.add_argument("--private", action="store_true", help="create the repository as private")
    push.add_argument("--dry-run", metavar="OUTDIR", help="write the folder that would be uploaded; upload nothing")
    push.add_argument("--token", help="Hub token (default: the HF_TOKEN variable or the saved login)")
    push.add_argument(
        "--space",
        metavar="SPACE_ID",
        help="also a Gradio Space (as `export --space`): the folder goes to this Space too, which the card links",
    )
    export.set_defaults(run=_export)
    push.set_defaults(run=_push)
