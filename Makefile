# Two commands do all the set-up on a fresh clone (only Python >= 3.11 needed):
#   make run    install into .venv and run the main job (simrec run quickstart)
#   make test   install into .venv and run the test suite (python -m pytest -n auto; slow tests excluded)
#   make test-all  the whole suite, slow tests included (CI runs both)
#               Both spread the tests over every core with pytest-xdist (TEST_JOBS=0: one process,
#               TEST_JOBS=N: N workers); each worker is its own process (its own Ray cluster, cache entries
#               written atomically), so the suites pass alike in one process and in several.
#   make docs   install the docs extra and build the site into docs/_build/html (warnings are errors)
#   make lint   ruff: pyflakes, pycodestyle, import order, no private imports in simrec/; ruff format --check;
#               mypy: the type check of simrec/ (its scope: [tool.mypy] in pyproject.toml)
# PyTorch (needed by LensKit) is installed first, pinned to the CPU build
# torch==2.13.0, so pip does not resolve a multi-GB CUDA build.

PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
OUT    ?= runs/quickstart
PYTEST_ARGS ?=
TEST_JOBS ?= auto

.PHONY: install run test test-all lint docs clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[test,ray]'
	touch $@

install: $(BIN)/.installed

run: install
	$(BIN)/simrec run quickstart --out $(OUT)

test: install
	@$(BIN)/python -m pytest -n $(TEST_JOBS) $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; fi; exit $$rc

test-all: install
	@$(BIN)/python -m pytest -m "slow or not slow" -n $(TEST_JOBS) $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; fi; exit $$rc

$(BIN)/.docs-installed: $(BIN)/.installed
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $@

# -E: every page re-read (an incremental build would not repeat an unchanged page's warnings);
# -W: every warning fails the build; -n: so does every cross-reference that does not resolve;
# --keep-going: all of them are listed before it fails.
docs: $(BIN)/.docs-installed
	$(BIN)/python -m sphinx -b html -E -W --keep-going -n -q docs docs/_build/html
	@echo "docs/_build/html/index.html"

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m mypy

clean:
	rm -rf $(VENV) runs .pytest_cache docs/_build docs/api/generated
