# Two commands on a fresh machine (only python3 and make needed):
#   make demo   the main job
#   make test   the test suite (what CI runs)
#   make docs   the documentation site (API reference, results pages), into site/ (CI builds it too)
# Each bootstraps .venv and installs the package on first use.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DOCS_STAMP := $(VENV)/.docs-installed

.PHONY: demo ntm-demo test docs bench-kernels clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The main job: train PANM on Copy (configs/demo.toml), evaluate it at every test
# length, print the table and write runs/demo/accuracy.png. Rerunning resumes.
demo: $(STAMP)
	$(BIN)/panm-jax train --config configs/demo.toml --workdir runs/demo

# The NTM kernel driven through a hand-set program (no training, a few seconds).
ntm-demo: $(STAMP)
	$(BIN)/python examples/ntm_program.py

# Two pytest workers (pytest-xdist), one per core of a 2-core machine; a module's
# tests stay on one worker (--dist loadfile), so its module-scoped fixtures are built once.
# TEST_WORKERS=0 runs everything in one process. A worker that crashes is not replaced
# (--max-worker-restart 0): a replaced worker under --dist loadfile can leave pytest-xdist
# waiting for ever. tests/suite.py runs pytest; when a run's only failures are crashed
# workers, the tests that did not finish run once more in fresh workers.
TEST_WORKERS ?= 2

test: $(STAMP)
	$(BIN)/python -m tests.suite -n $(TEST_WORKERS) --dist loadfile --max-worker-restart 0 tests

# The documentation site (mkdocs.yml) into site/: the API reference from the docstrings,
# the results pages rendered from benchmarks/results/ (benchmarks/pages). --strict: a
# warning (a broken link, a docstring griffe cannot parse) fails the build.
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

bench-kernels: $(STAMP)
	$(BIN)/python -m benchmarks.speed.kernels

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache site
