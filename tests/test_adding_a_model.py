"""CONTRIBUTING's "How to add a model", followed literally for a toy model in a copy of the repository: each numbered
step is done as it says, in the toy's two folders only (`src/hf_structure/models/toy/`, `tests/models/toy/`); then the
contract tests and the toy's own run on the copy, in a fresh interpreter, and nothing else in the copy has changed.
The copy's documentation site then builds (`mkdocs build --strict`) with a page for the toy, made from its folder, in
its navigation and a row for it in the models table; the README's table needs no edit. Without step 6 (a recipe is
optional) the toy still registers, parses and has its page, and the training entry says it has no recipe.

It fails if CONTRIBUTING lacks a step the toy needs (a step does not say what the test does for it, or says more
steps than the test follows), if a contract test fails for the toy or does not run for it (a shared test file would
need editing), if adding the toy changed a file outside its folders, or if the toy is missing from the documentation
without an edit there."""

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.model_tests import package_model_types
from tests.helpers.paths import ROOT

NAME = "toy"
COPIED = (
    "src",
    "scripts",
    "tests",
    "pyproject.toml",
    "CONTRIBUTING.md",
    "README.md",
    "mkdocs.yml",
    "docs",
    "modeling_cards",
    "records",
)
CONTRACT_TESTS = (
    "tests/pipelines/test_parse_options.py",
    "tests/test_model_contract.py",
    "tests/models/test_output_conventions.py",
    "tests/pipelines/test_odd_words_and_long_items.py",
    "tests/test_spacy_component.py",
)
# The package's model types, before the toy: a contract test that runs for each of them must run for the toy.
MODEL_TYPES = package_model_types()
TOY_FILES = {
    *(
        f"src/hf_structure/models/{NAME}/{file}"
        for file in (
            f"modular_{NAME}.py",
            f"configuration_{NAME}.py",
            f"modeling_{NAME}.py",
            "model_card.md",
            "__init__.py",
            f"training_{NAME}.py",
        )
    ),
    f"tests/models/{NAME}/__init__.py",
    f"tests/models/{NAME}/test_{NAME}.py",
}

# What each numbered step of CONTRIBUTING must say for the test to do what it does for that step.
STEPS = {
    1: (
        "`models/<name>/`",
        "`modular_<name>.py`",
        "`<Name>Config(StructureConfig)`",
        "`default_auto_map`",
        "`python scripts/modular_converter.py --fix`",
        "`@can_return_tuple`",
        "`return_dict=True`",
    ),
    2: ("`parse(sentences, tokenizer, **options)`", "`parse_options`", "`parse_outputs`", "`ValueError`"),
    3: ("`punctuation_policy`",),
    4: ("`models/<name>/model_card.md`",),
    5: (
        "`MODEL_SPEC = ModelSpec(...)`",
        "`models/<name>/__init__.py`",
        "`tiny_models=`",
        "`hf_structure.registry.TinyModel`",
    ),
    6: ("`models/<name>/training_<name>.py`", "`TRAINING`", "`ParserTraining`", "`training=`"),
    7: ("`tests/models/<name>/`", "`TRAINING_TARGETS`"),
}

# Step 1: the model, as transformers' modular files are written. Steps 2 and 3 are what it holds: the parse contract
# and `parse` of its model class (which refuses a sentence too long with a ValueError), and its punctuation policy.
MODULAR = '''\
"""A toy dependency parser: a bilinear score of every (dependent, head) pair of word embeddings, and each word's
best head on one side of it (`head_direction`), so that its heads always make a tree."""

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import TokenClassifierOutput
from transformers.utils import can_return_tuple

from ...configuration_utils import StructureConfig


class ToyConfig(StructureConfig):
    model_type = "toy"
    default_auto_map = {
        "AutoConfig": "configuration_toy.ToyConfig",
        "AutoModel": "modeling_toy.ToyForParsing",
    }

    def __init__(self, vocab_size=100, hidden_size=8, max_parse_words=64, punctuation_policy="keep", **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_parse_words = max_parse_words
        super().__init__(punctuation_policy=punctuation_policy, **kwargs)


class ToyPreTrainedModel(PreTrainedModel):
    config_class = ToyConfig
    base_model_prefix = "toy"


class ToyForParsing(ToyPreTrainedModel):
    parse_options = {"head_direction": ("left", "right")}
    parse_outputs = ("heads", "deprels")

    def __init__(self, config):
        super().__init__(config)
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.arc = nn.Bilinear(config.hidden_size, config.hidden_size, 1)
        self.post_init()

    @property
    def max_parse_words(self) -> int:
        return self.config.max_parse_words

    @can_return_tuple
    def forward(self, input_ids, labels=None, **kwargs) -> TokenClassifierOutput:
        """`logits`: `(B, L, L)` scores of word j heading word i; with `labels` (gold heads, 1-based, -100 at pads),
        also `loss`, the cross-entropy of each head on the left among the words before its dependent."""
        hidden = self.embeddings(input_ids)
        length = input_ids.size(1)
        dependents = hidden[:, :, None].expand(-1, -1, length, -1).contiguous()
        heads = hidden[:, None].expand(-1, length, -1, -1).contiguous()
        scores = self.arc(dependents, heads).squeeze(-1)
        loss = None
        if labels is not None:
            before = torch.ones(length, length, dtype=torch.bool, device=scores.device).tril(-1)
            on_the_left = (labels > 0) & (labels - 1 < torch.arange(length, device=labels.device))
            masked = scores.masked_fill(~before, torch.finfo(scores.dtype).min)
            loss = nn.functional.cross_entropy(masked[on_the_left], (labels - 1)[on_the_left])
        return TokenClassifierOutput(loss=loss, logits=scores)

    @torch.no_grad()
    def parse(self, sentences, tokenizer, head_direction="left"):
        """Each word's best head before it (`"left"`: the first word heads the sentence) or after it (`"right"`:
        the last word does)."""
        for number, words in enumerate(sentences):
            if len(words) > self.max_parse_words:
                raise ValueError(
                    f"sentence {number}: {len(words)} words; this model parses at most {self.max_parse_words}"
                )
        batch = [list(words) for words in sentences]
        encoded = tokenizer(batch, is_split_into_words=True, padding=True, return_tensors="pt")
        scores = self(encoded["input_ids"], return_dict=True).logits
        parses = []
        for b, words in enumerate(sentences):
            n = len(words)
            if head_direction == "left":
                heads = [0] + [int(scores[b, i, :i].argmax()) + 1 for i in range(1, n)]
            else:
                heads = [int(scores[b, i, i + 1 : n].argmax()) + i + 2 for i in range(n - 1)] + [0]
            deprels = ["dep" if head else "root" for head in heads]
            parses.append({"words": list(words), "heads": heads, "deprels": deprels})
        return parses
'''

CARD = """\
---
{{ card_data }}
---

# {{ model_name }}

A toy dependency parser. Load it with `AutoModel.from_pretrained("{{ repo_id }}", trust_remote_code=True)`.

{{ results_table }}

Trained with `{{ training.command }}` in {{ wall_time }}.
"""

TRAINING_MODULE = f'    training="hf_structure.models.{NAME}.training_{NAME}",\n'
SPEC = """\
from ...hub.card_metrics import ATTACHMENT
from ...registry import ModelSpec, TinyModel
from .configuration_toy import ToyConfig
from .modeling_toy import ToyForParsing, ToyPreTrainedModel

MODEL_SPEC = ModelSpec(
    config_class=ToyConfig,
    auto_classes={"AutoModel": ToyForParsing},
    parsing_class="AutoModel",
    card_metrics=ATTACHMENT,
    card_tags=("dependency-parsing",),
    training="hf_structure.models.toy.training_toy",
    tiny_models=(
        TinyModel(
            "toy",
            config={"vocab_size": 32, "hidden_size": 8},
            accepted_options={
                "structures": ("dependency",),
                "return_scores": (False,),
                "keep_punctuation": (True,),
                "head_direction": ("left", "right"),
            },
            refused_options={"head_direction": "up"},
        ),
    ),
)

__all__ = ["MODEL_SPEC", "ToyConfig", "ToyForParsing", "ToyPreTrainedModel"]
"""

RECIPE = '''\
"""The toy parser's training recipe: a word vocabulary of the training sentences, and their heads to learn."""

from dataclasses import dataclass, field

import torch

from ...data.tokenization import build_word_tokenizer
from ...training import ParserTraining
from .configuration_toy import ToyConfig


@dataclass
class ToyTrainingArguments:
    toy_width: int = field(default=8, metadata={"help": "New toy parser: the word embeddings' width."})


def new_config(arguments: ToyTrainingArguments, sentences: list[dict], deprels: list[str]):
    tokenizer = build_word_tokenizer(" ".join(sentence["words"]) for sentence in sentences)
    return ToyConfig(vocab_size=len(tokenizer), hidden_size=arguments.toy_width), tokenizer


def examples(model, sentences: list[dict], tokenizer, arguments: ToyTrainingArguments) -> list[dict]:
    encoded = tokenizer([sentence["words"] for sentence in sentences], is_split_into_words=True)
    return [{"input_ids": ids, "labels": sentence["heads"]} for ids, sentence in zip(encoded["input_ids"], sentences)]


def collator(model, tokenizer, arguments: ToyTrainingArguments):
    def pad(examples: list[dict]) -> dict:
        def padded(key, value):
            rows = [torch.tensor(example[key]) for example in examples]
            return torch.nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=value)

        return {"input_ids": padded("input_ids", 0), "labels": padded("labels", -100)}

    return pad


TRAINING = ParserTraining(
    arguments=ToyTrainingArguments,
    new_config=new_config,
    examples=examples,
    collator=collator,
    epoch="every sentence once an epoch",
)
'''

# Step 7: its own tests' package, declaring what the shared tests need of it, then its own behaviour.
OWN_TESTS_PACKAGE = '''\
"""The toy parser's own tests."""

# The argument of its forward that only adds a loss (the shared tests run it with and without it).
TRAINING_TARGETS = ("labels",)
'''

OWN_TESTS = '''\
"""The toy parser's own behaviour: heads on the side `head_direction` names, and a ValueError for a sentence longer
than it parses."""

import pytest

from tests.helpers.tiny_models import new_declared_tiny_model

WORDS = ["the", "old", "man", "sat", "on", "the", "bench"]


def test_each_word_s_head_lies_on_the_side_head_direction_names():
    model, tokenizer = new_declared_tiny_model("toy")
    (left,) = model.parse([WORDS], tokenizer)
    (right,) = model.parse([WORDS], tokenizer, head_direction="right")
    assert left["heads"][0] == 0 and all(1 <= head <= i for i, head in enumerate(left["heads"][1:], 1))
    assert right["heads"][-1] == 0 and all(i + 2 <= head <= len(WORDS) for i, head in enumerate(right["heads"][:-1]))


def test_a_sentence_longer_than_it_parses_is_a_value_error_naming_it():
    model, tokenizer = new_declared_tiny_model("toy", max_parse_words=3)
    with pytest.raises(ValueError, match="sentence 1: 4 words; this model parses at most 3"):
        model.parse([["a"], ["a"] * 4], tokenizer)
'''


def contributing_steps(repository) -> dict[int, str]:
    """The numbered steps of CONTRIBUTING's "How to add a model", each as one line of text."""
    section = (repository / "CONTRIBUTING.md").read_text().split("## How to add a model\n", 1)[1]
    steps: dict[int, list[str]] = {}
    for line in section.strip().splitlines():
        numbered = re.match(r"(\d+)\. ", line)
        if numbered:
            steps[int(numbered.group(1))] = [line[numbered.end() :]]
        elif steps and line.startswith(" "):
            steps[max(steps)].append(line.strip())
        else:
            break  # the list ends at the first paragraph after it
    return {number: " ".join(lines) for number, lines in steps.items()}


def files_of(repository) -> dict[str, str]:
    """Relative path -> digest of every file of the copy (the bundled checkpoints, a link, left out)."""
    found = {}
    for folder, folders, names in os.walk(repository):
        folders[:] = [name for name in folders if name != "__pycache__"]
        for name in names:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, repository)] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return found


def write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def run(arguments, repository, timeout=300, env=None):
    """`arguments` run by this Python in `repository`, offline, on one thread; `env` adds to its environment."""
    base = {key: value for key, value in os.environ.items() if not key.startswith(("HF_", "PYTHON"))}
    base.update(HF_HUB_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1", **(env or {}))
    return subprocess.run(
        [sys.executable, *arguments], cwd=repository, env=base, capture_output=True, text=True, timeout=timeout
    )


def ran_for(function: str, name: str, test_ids) -> bool:
    """Whether one of `test_ids` is `function` run for model `name` (a parameter id naming it)."""
    return any(test_id.startswith(function + "[") and name in test_id[len(function) :] for test_id in test_ids)


def copy_of_the_repository(folder) -> Path:
    """A copy of what adding a model may touch, its bundled checkpoints linked (they are read, never written)."""
    repository = folder / "repository"
    for name in COPIED:
        if (ROOT / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "checkpoints")
            shutil.copytree(ROOT / name, repository / name, ignore=ignore)
        else:
            shutil.copy(ROOT / name, repository / name)
    os.symlink(ROOT / "src/hf_structure/checkpoints", repository / "src/hf_structure/checkpoints")
    return repository


def add_the_toy(repository, recipe: bool = True) -> None:
    """CONTRIBUTING's steps for the toy, done in `repository`; without `recipe`, all but step 6 (its spec names no
    training module)."""
    model_folder = repository / "src/hf_structure/models" / NAME
    # 1. The folder and its modular file (with step 2's `parse` and step 3's `punctuation_policy`), then the converter.
    write(model_folder / f"modular_{NAME}.py", MODULAR)
    converted = run(["scripts/modular_converter.py", "--fix"], repository)
    assert converted.returncode == 0, converted.stderr
    assert converted.stdout.splitlines() == [
        f"modular_converter: wrote src/hf_structure/models/{NAME}/configuration_{NAME}.py",
        f"modular_converter: wrote src/hf_structure/models/{NAME}/modeling_{NAME}.py",
    ]
    # 4. The card template.
    write(model_folder / "model_card.md", CARD)
    # 5. The spec, with the tiny models the shared tests build; 6. the training recipe, which the spec names.
    assert TRAINING_MODULE in SPEC
    if recipe:
        write(model_folder / "__init__.py", SPEC)
        write(model_folder / f"training_{NAME}.py", RECIPE)
    else:
        write(model_folder / "__init__.py", SPEC.replace(TRAINING_MODULE, ""))
    # 7. Its own tests.
    write(repository / "tests/models" / NAME / "__init__.py", OWN_TESTS_PACKAGE)
    write(repository / "tests/models" / NAME / f"test_{NAME}.py", OWN_TESTS)


@pytest.fixture(scope="module")
def with_the_toy(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A copy of the repository with the toy added as CONTRIBUTING says, and the digests of its files before."""
    repository = copy_of_the_repository(tmp_path_factory.mktemp("adding"))
    before = files_of(repository)
    add_the_toy(repository)
    return repository, before


def test_contributing_says_what_each_step_of_adding_the_toy_does():
    steps = contributing_steps(ROOT)
    assert list(steps) == list(STEPS), f"CONTRIBUTING has steps {list(steps)}; this test follows {list(STEPS)}"
    for number, phrases in STEPS.items():
        missing = [phrase for phrase in phrases if phrase not in steps[number]]
        assert not missing, f"CONTRIBUTING's step {number} does not say {', '.join(missing)}"


def test_a_toy_model_added_as_contributing_says_passes_the_contract_tests_and_touches_no_other_file(
    with_the_toy, tmp_path
):
    repository, before = with_the_toy
    # The contract tests that run for each of the package's model types run, and pass, for the toy; so do its own.
    collected = run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only", *CONTRACT_TESTS], repository)
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    test_ids = [line for line in collected.stdout.splitlines() if "::" in line]
    functions = {test_id.split("[")[0] for test_id in test_ids}
    looping = {function for function in functions if all(ran_for(function, t, test_ids) for t in MODEL_TYPES)}
    tested = run(
        ["-m", "pytest", "-v", "-p", "no:cacheprovider", f"--basetemp={tmp_path / 'pytest'}", "-k", NAME]
        + [*CONTRACT_TESTS, f"tests/models/{NAME}"],
        repository,
        timeout=600,
    )
    assert tested.returncode == 0, tested.stdout[-5000:] + tested.stderr[-3000:]
    passed = [line.split(" PASSED")[0] for line in tested.stdout.splitlines() if " PASSED" in line]
    # A test that does not apply to the toy says so by skipping (no class with `sparse_prediction`, say).
    skipped = [line.split(" SKIPPED")[0] for line in tested.stdout.splitlines() if " SKIPPED" in line]
    assert looping and sorted(f for f in looping if not ran_for(f, NAME, passed + skipped)) == []
    assert sum(test_id.startswith(f"tests/models/{NAME}/") for test_id in passed) == 2

    after = files_of(repository)
    changed = {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}
    assert sorted(changed - TOY_FILES) == []
    assert changed == TOY_FILES


def test_the_toy_has_its_docs_page_and_table_row_without_an_edit_there(with_the_toy, tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra (MkDocs) is not installed")
    repository, _ = with_the_toy
    copy = {"PYTHONPATH": str(repository / "src")}  # the copy's hf_structure, with the toy
    site = tmp_path / "site"
    built = run(["-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], repository, env=copy)
    assert built.returncode == 0, built.stderr[-5000:]
    page = (site / "models" / NAME / "index.html").read_text(encoding="utf-8")
    description = MODULAR.split('"""')[1].split(",")[0]  # the modeling module's docstring, as far as its first comma
    assert description in page and f"its recipe is <code>hf_structure.models.{NAME}.training_{NAME}</code>" in page
    # In the navigation (of every page), and a row of the models table.
    assert f'href="models/{NAME}/"' in (site / "index.html").read_text(encoding="utf-8")
    models = (site / "models" / "index.html").read_text(encoding="utf-8")
    assert re.search(rf'<tr>\s*<td><a href="{NAME}/">[^<]+</a></td>\s*<td>none ships</td>', models)
    # It ships no checkpoint: the README's models table (the shipped checkpoints) is current as it is.
    checked = run(["scripts/render_model_docs.py"], repository, env=copy)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_without_its_recipe_the_toy_registers_parses_and_has_its_page_and_the_training_entry_says_so(tmp_path):
    repository = copy_of_the_repository(tmp_path)
    add_the_toy(repository, recipe=False)
    # The tests that run a recipe's batches skip it; the contract tests and its own pass.
    tested = run(
        ["-m", "pytest", "-v", "-p", "no:cacheprovider", f"--basetemp={tmp_path / 'pytest'}", "-k", NAME]
        + ["tests/models/test_output_conventions.py", "tests/test_model_contract.py", f"tests/models/{NAME}"],
        repository,
        timeout=600,
    )
    assert tested.returncode == 0, tested.stdout[-5000:] + tested.stderr[-3000:]
    assert f"{NAME} has no training recipe, whose collator makes the batch these tests run" in tested.stdout
    results = [line for line in tested.stdout.splitlines() if line.startswith("tests/") and "::" in line]
    conventions = [line for line in results if line.startswith("tests/models/test_output_conventions.py")]
    assert conventions and all(" SKIPPED" in line for line in conventions)
    assert sum(line.startswith(f"tests/models/{NAME}/") and " PASSED" in line for line in results) == 2
    assert any(line.startswith("tests/test_model_contract.py") and " PASSED" in line for line in results)
    # Its page says it has none.
    show = (
        "import importlib.util, sys; from pathlib import Path; "
        "spec = importlib.util.spec_from_file_location('render_model_docs', 'scripts/render_model_docs.py'); "
        "module = sys.modules[spec.name] = importlib.util.module_from_spec(spec); spec.loader.exec_module(module); "
        f"print(next(page.markdown for page in module.model_pages(Path('docs'))[0] if page.model_type == {NAME!r}))"
    )
    page = run(["-c", show], repository, env={"PYTHONPATH": str(repository / "src")})
    assert page.returncode == 0, page.stderr[-3000:]
    assert "it has no training recipe, so the training entries do not train it" in page.stdout
    # The training entry refuses it, saying why.
    trained = run(
        ["scripts/run_parser.py", "--model_type", NAME, "--train_file", "train.conllu", "--output_dir", "out"],
        repository,
        env={"PYTHONPATH": str(repository / "src")},
    )
    assert trained.returncode == 1 and trained.stderr.strip().splitlines() == [
        f"run_parser.py: model type '{NAME}' has no training recipe: this entry cannot train it"
    ]
