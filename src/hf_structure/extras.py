"""The optional extras of the package, and the one-line error of a command that needs one that is not installed.

Parsing (the pipeline, `hf-structure parse`, `evaluate` on a treebank) needs none of them: `pip install hf_structure`
is enough. Training needs `datasets` (the tokenised corpora), `accelerate` (which `transformers.Trainer` requires)
and `treebank` (the PTB LM text, the language models' default corpus); the `evaluate` metric modules
(`evaluation/evaluate_metrics`) need `evaluate`, and a perplexity on `ptb-test` / `ptb-valid` needs `treebank`;
`hf-structure demo` needs Gradio. Keep these names in step with `[project.optional-dependencies]` in pyproject.toml.
"""

import importlib.util
from collections.abc import Sequence

EXTRA_MODULES = {
    "train": ("datasets", "accelerate", "treebank"),
    "eval": ("evaluate", "treebank"),
    "demo": ("gradio",),
}


class MissingExtraError(ImportError):
    """A feature needs modules of an optional extra that are not installed; the message says what to install."""

    def __init__(self, purpose: str, extra: str, missing: Sequence[str]):
        self.extra, self.missing = extra, tuple(missing)
        super().__init__(
            f"{purpose} needs {', '.join(missing)}, which the plain install leaves out: "
            f"pip install 'hf_structure[{extra}]'"
        )


def require_extra(extra: str, purpose: str, modules: Sequence[str] | None = None) -> None:
    """Raise `MissingExtraError` unless the modules of `extra` (or only `modules`, some of them) can be imported.
    `purpose` names what needs them, e.g. "training"."""
    missing = [name for name in modules or EXTRA_MODULES[extra] if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtraError(purpose, extra, missing)
