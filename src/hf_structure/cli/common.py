"""What the `hf-structure` commands share: a failure in one line, the model a command names, its argument types,
the device it runs on and its progress bar."""

from __future__ import annotations

import argparse
import sys

from ..bundled import resolve_model_path


class CommandParser(argparse.ArgumentParser):
    """A command's parser, some of whose options are added only when it parses or prints its help (`defer`): the
    top-level `hf-structure --help` lists the commands without them. Options that the registered models declare, or
    whose choices live beside torch code, are added so; the models are registered then (`hf_structure.register`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._deferred: list = []

    def defer(self, add_options) -> None:
        """Call `add_options(self)` before this parser first parses or prints its help."""
        self._deferred.append(add_options)

    def _add_deferred(self) -> None:
        while self._deferred:
            self._deferred.pop(0)(self)

    def parse_known_args(self, args=None, namespace=None):
        self._add_deferred()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._add_deferred()
        return super().format_usage()

    def format_help(self) -> str:
        self._add_deferred()
        return super().format_help()


def fail(command: str, message: str) -> SystemExit:
    return SystemExit(f"hf-structure {command}: {message}")


def resolved_model_path(command: str, name: str) -> str:
    """The folder or Hub id that `--model` names. An unknown bare name is a wrong option value, so it ends as
    argparse ends those: one line on stderr and exit status 2."""
    try:
        return resolve_model_path(name)
    except ValueError as error:
        print(f"hf-structure {command}: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def load_or_fail(command: str, loader, model_path: str):
    """`loader(model_path)`, or one line naming what could not be loaded: a model folder's problem
    (`check_model_folder`), or transformers' error for a Hub id or a file it cannot read (an OSError, or a ValueError
    such as a Hub model's custom code that the command does not run), folded onto one line. transformers' bar for
    loading the weights is turned off: on stderr it sat among the command's own progress and errors."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    try:
        return loader(model_path)
    except (ValueError, OSError) as error:  # ModelFolderError is a ValueError
        message = " ".join(str(error).split())
        raise fail(command, message if model_path in message else f"cannot load {model_path}: {message}") from None


# `pipelines.quantization.QUANTIZATIONS`, which imports torch (the CLI loads it only to parse); a test checks both.
QUANTIZATIONS = ("int8",)
QUANTIZE_HELP = (
    "int8: the encoder's linear layers on int8 while parsing, on the CPU (the dependency parsers; EWT scores within "
    "0.1 of float32; speed: docs/benchmarks.md); the model's files are not changed"
)


def quantize_or_fail(command: str, quantize: str | None, loader):
    """`loader`, but a refused `--quantize` (`QuantizationError`: another device, a model without int8 modules) is
    one line naming the flag rather than the model folder."""

    def load(model_path: str):
        from ..pipelines.quantization import QuantizationError

        try:
            return loader(model_path)
        except QuantizationError as error:
            raise fail(command, f"--quantize {quantize}: {error.reason}") from None

    return load


def count_argument(text: str, least: int = 1) -> int:
    """An argparse type for counts such as `--batch-size`: an integer of at least `least` (1)."""
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least {least}, got {text!r}")
    return value


def count_or_zero_argument(text: str) -> int:
    return count_argument(text, least=0)


THREADS_HELP = (
    "torch's CPU threads for the model (default: one per core that other processes leave free, at most "
    "torch's default: README, Speed and threads)"
)


def check_device(command: str, name: str):
    """`--device` as torch names it, or one line saying that torch here cannot use it and what it can use."""
    import torch

    try:
        device = torch.device(name)
        torch.empty(0, device=device)  # what the model's weights will need
        return device
    except (RuntimeError, AssertionError, ValueError) as error:
        usable = ["cpu"] + [f"cuda:{index}" for index in range(torch.cuda.device_count())]
        if torch.backends.mps.is_available():
            usable.append("mps")
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise fail(
            command,
            f"--device {name}: torch {torch.__version__} cannot use it here ({reason}); "
            f"devices here: {', '.join(usable)}",
        ) from None


def progress_bar(args, total: int | None, unit: str, command: str = "parse"):
    """A progress bar on standard error for `parse --input` and `evaluate`: shown where standard error is a terminal
    (tqdm's own choice), always with --progress, never with --no-progress or for sentences given as arguments."""
    from tqdm import tqdm

    show = args.progress if command == "evaluate" or args.input else False
    return tqdm(
        total=total,
        unit=unit,
        desc=f"hf-structure {command}",
        file=sys.stderr,
        dynamic_ncols=True,
        disable=None if show is None else not show,
    )
