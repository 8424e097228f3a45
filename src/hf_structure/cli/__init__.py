"""The `hf-structure` command: `parse` text into trees, `evaluate` parsers on a gold treebank, list the bundled
`models`, try them in a browser (`demo`), package them for spaCy (`package-spacy`), train, export and push them.

Works with any model of the package (it goes through the pipeline and the parsing contract only). One module per
command (`parse`, `evaluate`, `models`; training and publishing in `train_publish`), each adding its
subcommand (`add_command`) and running it (`run`); this module wires them and guards standard output.
"""

from __future__ import annotations

import argparse
import os
import sys

from .. import register
from ..bundled import quiet_weight_files
from ..version import __version__
from . import demo, evaluate, models, package_spacy, parse
from .common import CommandParser
from .train_publish import TRAINING_COMMANDS, add_train_publish_commands, train

COMMANDS = (parse, evaluate, models, demo, package_spacy)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hf-structure", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=CommandParser)
    for command in COMMANDS:
        command.add_command(commands)
    add_train_publish_commands(commands)
    return parser


# What an interrupted command leaves, said after "interrupted".
INTERRUPTED = {
    "parse": "; every result written is complete",
    "train-lm": "; the same command resumes from the last checkpoint in --output_dir, if one was saved",
    "train-parser": "; the same command resumes from the last checkpoint in --output_dir, if one was saved",
}


def main(argv: list[str] | None = None) -> None:
    """`hf-structure`: Ctrl-C (SIGINT) ends any command with one line and exit status 130, as shells expect; standard
    output that cannot be written (a full disk, /dev/full) ends it with one line and status 1, and a reader that
    stopped (`| head`) ends it quietly with status 1, as Unix tools do."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((word for word in argv if not word.startswith("-")), None)
    name = f"hf-structure {command}" if command else "hf-structure"
    stdout = sys.stdout
    sys.stdout = _StandardOutput(stdout)
    try:
        _run_command(argv)
        sys.stdout.flush()  # what is still buffered fails here, not in the interpreter's exit
    except KeyboardInterrupt:
        print(f"{name}: interrupted{INTERRUPTED.get(command or '', '')}", file=sys.stderr)
        raise SystemExit(130) from None
    except BrokenPipeError:
        _drop_standard_output(stdout)
        raise SystemExit(1) from None
    except StandardOutputError as error:
        _drop_standard_output(stdout)
        raise SystemExit(f"{name}: cannot write standard output: {error}") from None
    finally:
        sys.stdout = stdout


class StandardOutputError(Exception):
    """Standard output could not be written (not a closed pipe: that is a BrokenPipeError)."""


class _StandardOutput:
    """Standard output, whose write errors are told apart from those of the files a command writes."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        return self._guarded(self.stream.write, text)

    def flush(self) -> None:
        self._guarded(self.stream.flush)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)

    @staticmethod
    def _guarded(operation, *arguments):
        try:
            return operation(*arguments)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise StandardOutputError(error.strerror) from error


def _drop_standard_output(stdout) -> None:
    """Point standard output at the null device, so that the exit's own flush does not fail again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())


def _run_command(argv: list[str]) -> None:
    """Run the command; the models register (torch) only once the arguments ask for more than `--version` or
    `--help`, and transformers' weight-file bars are off while it runs."""
    if argv and argv[0] in TRAINING_COMMANDS:  # the training entry parses the rest, `--help` included
        register()
        with quiet_weight_files():
            train(argv[0], argv[1:])
        return
    args = build_parser().parse_args(argv)  # `--version` and `--help` end here
    register()
    with quiet_weight_files():
        args.run(args)
