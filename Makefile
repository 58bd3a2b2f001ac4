# principal-protocols: the two commands are `make demo` and `make test`.
# Everything runs inside .venv, built here from pyproject.toml; nothing depends on
# what happens to be installed on the machine besides Python 3.11+ and make.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test demo lint typecheck vectors vectors-check pytest bench fuzz clean help

help:
	@echo "make demo     set up and run the library end to end (examples/demo.py)"
	@echo "make test     set up, then lint, format check, mypy --strict, vector drift check, pytest"
	@echo "make lint     ruff check + ruff format --check + mypy --strict src"
	@echo "make vectors  regenerate vectors/ with tools/gen_vectors.py"
	@echo "make bench    run the benchmarks in bench/ (prints ratios)"
	@echo "make fuzz     long hypothesis runs (not part of make test)"

# (Re)create the virtual environment when it is missing or pyproject.toml changed.
$(STAMP): pyproject.toml
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/ruff check src tests tools bench examples
	$(BIN)/ruff format --check src tests tools bench examples
	$(BIN)/mypy --strict src
	$(BIN)/python tools/gen_vectors.py --check
	CI=$${CI:-true} $(BIN)/python -m pytest -W error -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check src tests tools bench examples
	$(BIN)/ruff format --check src tests tools bench examples
	$(BIN)/mypy --strict src

demo: $(STAMP)
	$(BIN)/python examples/demo.py

vectors: $(STAMP)
	$(BIN)/python tools/gen_vectors.py

bench: $(STAMP)
	@for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -p no:cacheprovider -m "not slow" -q

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache .hypothesis
