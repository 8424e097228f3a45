# `make demo`: set up .venv and parse sentences with the bundled structformer-ptb (then score it on the gold
# sample when ../shared/data is present). `make test`: set up .venv and run the test suite. Both are idempotent.
VENV := .venv
PY := $(VENV)/bin/python
DATA ?= ../shared/data
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml packages/hf-structure-g2gtr-ewt/pyproject.toml packages/hf-structure-arc-hybrid-ewt/pyproject.toml packages/hf-structure-arc-hybrid-ewt-small/pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test,train,eval,spacy,docs,demo]'
	$(PY) -m pip install -q --no-deps -e packages/hf-structure-g2gtr-ewt
	$(PY) -m pip install -q --no-deps -e packages/hf-structure-arc-hybrid-ewt
	$(PY) -m pip install -q --no-deps -e packages/hf-structure-arc-hybrid-ewt-small
	touch $(STAMP)

# The same install at the low end of pyproject.toml's ranges (.ci/lowest-constraints.txt), for `make test-lowest`.
LOWEST := .venv-lowest
LOWEST_STAMP := $(LOWEST)/.installed

$(LOWEST_STAMP): pyproject.toml .ci/lowest-constraints.txt packages/hf-structure-g2gtr-ewt/pyproject.toml packages/hf-structure-arc-hybrid-ewt/pyproject.toml packages/hf-structure-arc-hybrid-ewt-small/pyproject.toml
	python3 -m venv $(LOWEST)
	$(LOWEST)/bin/python -m pip install -q -c .ci/lowest-constraints.txt --upgrade pip setuptools
	$(LOWEST)/bin/python -m pip install -q -c .ci/lowest-constraints.txt -e '.[test,train,eval,spacy]'
	$(LOWEST)/bin/python -m pip install -q --no-deps -e packages/hf-structure-g2gtr-ewt
	$(LOWEST)/bin/python -m pip install -q --no-deps -e packages/hf-structure-arc-hybrid-ewt
	$(LOWEST)/bin/python -m pip install -q --no-deps -e packages/hf-structure-arc-hybrid-ewt-small
	touch $(LOWEST_STAMP)

.PHONY: setup setup-lowest demo test test-lowest lint check bench
setup: $(STAMP)

setup-lowest: $(LOWEST_STAMP)

demo: $(STAMP)
	$(VENV)/bin/hf-structure parse --draw "The old man sat on the bench." "Stocks fell sharply after the report was released."
	@if [ -d $(DATA)/ptb-sample/dev ]; then \
		$(VENV)/bin/hf-structure evaluate --treebank $(DATA)/ptb-sample/dev; \
		for b in right-branching left-branching random; do \
			$(VENV)/bin/hf-structure evaluate --treebank $(DATA)/ptb-sample/dev --baseline $$b; done; \
	else echo "$(DATA)/ptb-sample/dev not found: skipping the scores"; fi

# The benchmarks' smoke runs (marker `benchmark`) take most of the time: they run second, with their own summary.
test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -m "not benchmark" tests
	$(PY) -m pytest -q -p no:cacheprovider -m benchmark tests

# The tests but the benchmarks' smoke runs, with the lowest versions.
test-lowest: $(LOWEST_STAMP)
	$(LOWEST)/bin/python -m pytest -q -p no:cacheprovider -m "not benchmark" tests

# ruff's rules and format, and mypy (all configured in pyproject.toml).
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests scripts benchmarks
	$(VENV)/bin/ruff format --check src tests scripts benchmarks
	$(VENV)/bin/mypy

# The generated files: the Hub code against its modular sources, the shipped checkpoints' cards against their
# records and templates, the README's models table against the records; then the documentation site, where any
# warning (a broken link, a docstring that does not render, a shipped checkpoint without a page) fails the build.
# It is written to site/ (ignored by git).
check: $(STAMP)
	$(PY) scripts/modular_converter.py
	$(PY) scripts/render_model_cards.py
	$(PY) scripts/render_model_docs.py
	$(VENV)/bin/mkdocs build --strict --site-dir site

bench: $(STAMP)
	$(PY) benchmarks/structformer_speed.py
	$(PY) benchmarks/pipeline_throughput.py
