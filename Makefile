# Two commands do all the set-up on a fresh clone (only Python >= 3.11 needed):
#   make run    install into .venv and run the main job (simrec run quickstart)
#   make test   install into .venv and run the test suite (python -m pytest; slow tests excluded)
#   make test-all  the whole suite, slow tests included (CI runs both)
#   make lint   ruff: pyflakes, pycodestyle, import order, no private imports in simrec/; ruff format --check
# PyTorch (needed by LensKit) is installed first, pinned to the CPU build
# torch==2.13.0, so pip does not resolve a multi-GB CUDA build.

PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
OUT    ?= runs/quickstart
PYTEST_ARGS ?=

.PHONY: install run test test-all lint clean

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
	@$(BIN)/python -m pytest $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; fi; exit $$rc

test-all: install
	@$(BIN)/python -m pytest -m "slow or not slow" $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; fi; exit $$rc

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) runs .pytest_cache
