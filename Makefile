# principal-protocols: the two commands are `make demo` and `make test`.
# Everything runs inside .venv, built here from pyproject.toml; nothing depends on
# what happens to be installed on the machine besides Python 3.11+ and make.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# pytest-xdist workers for make test / make test-floor: one more than the cores, since many
# tests wait on child processes, sockets and timeouts (on 2 cores under the same background
# load, 3 workers took 560 s where 2 took 680 s; unloaded, make test takes about 5 minutes). `make test PYTEST_WORKERS=0` runs serially; tests are
# written to run side by side (docs/testing.md).
PYTEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print((os.cpu_count() or 1) + 1)")
PYTEST_XDIST   := -n $(PYTEST_WORKERS)

.PHONY: test test-floor dist docs demo tour lint typecheck vectors vectors-check pytest bench fuzz clean help

help:
	@echo "make demo     the library's main job: one errand across all four protocols (examples/errand.py)"
	@echo "make tour     each protocol's own walk-through (examples/tour.py)"
	@echo "make test     set up, then lint, format check, mypy --strict, vector drift check, pytest"
	@echo "make test-floor  run the tests with every runtime dependency at its declared floor"
	@echo "make dist     build the wheel, the sdist and ppcheck.pyz into dist/"
	@echo "make docs     build the API reference from the docstrings into build/docs"
	@echo "make lint     ruff check + ruff format --check + mypy --strict src examples"
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
	$(BIN)/mypy --strict examples
	$(BIN)/python tools/gen_vectors.py --check
	$(BIN)/python tools/gen_code_docs.py --check
	CI=$${CI:-true} $(BIN)/python -m pytest -W error -p no:cacheprovider $(PYTEST_XDIST)

# The declared dependency floors, proven: a separate environment where every runtime
# dependency is pinned at the floor pyproject.toml names (test tools at their newest
# compatible versions), then the whole test suite.
FLOOR_VENV  := .venv-floor
FLOOR_STAMP := $(FLOOR_VENV)/.installed

$(FLOOR_STAMP): pyproject.toml tools/floor_constraints.py
	rm -rf $(FLOOR_VENV)
	$(PYTHON) -m venv $(FLOOR_VENV)
	$(FLOOR_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PYTHON) tools/floor_constraints.py > $(FLOOR_VENV)/constraints.txt
	$(FLOOR_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		-c $(FLOOR_VENV)/constraints.txt -e '.[test,mcp,http,postgres]'
	touch $(FLOOR_STAMP)

test-floor: $(FLOOR_STAMP)
	$(FLOOR_VENV)/bin/python -m pip list --disable-pip-version-check 2>/dev/null \
		| grep -iE '^(cryptography|rfc8785|joserfc|jsonschema) '
	CI=$${CI:-true} $(FLOOR_VENV)/bin/python -m pytest -W error -p no:cacheprovider -q $(PYTEST_XDIST)

# The wheel and sdist (what `pip install` takes), and ppcheck.pyz: the conformance runner
# for ports as one file that any Python 3.11+ runs with nothing installed.
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --quiet --wheel --sdist --outdir dist .
	$(BIN)/python tools/build_pyz.py dist/ppcheck.pyz
	@ls -l dist

# The API reference, generated from the docstrings (pdoc), one page per package.
docs: $(STAMP)
	rm -rf build/docs
	$(BIN)/pdoc --docformat restructuredtext -o build/docs pxp handoff vxp parley ppcheck ppbind ppstore
	@echo "API reference: build/docs/index.html"

lint: $(STAMP)
	$(BIN)/ruff check src tests tools bench examples
	$(BIN)/ruff format --check src tests tools bench examples
	$(BIN)/mypy --strict src
	$(BIN)/mypy --strict examples

demo: $(STAMP)
	$(BIN)/python examples/errand.py --out build/errand

tour: $(STAMP)
	$(BIN)/python examples/tour.py

vectors: $(STAMP)
	$(BIN)/python tools/gen_vectors.py

bench: $(STAMP)
	@for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -p no:cacheprovider -m "not slow" -q

clean:
	rm -rf $(VENV) $(FLOOR_VENV) build dist .pytest_cache .mypy_cache .ruff_cache .hypothesis
