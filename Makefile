# fqa-eval: two commands do everything on a fresh machine.
#   make book   build the Jupyter Book into _build/html (installs, fetches the data first)
#   make test   ruff, mypy, pytest (unit + doctests), the pipeline smoke test, nbval over book/,
#               and the book with -W (from the outputs nbval has just checked)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# A local mirror of the data (this machine has no internet); elsewhere `fqa data fetch` downloads.
DATA_MIRROR ?= ../shared/data/feedbackqa
FETCH_FROM := $(if $(wildcard $(DATA_MIRROR)/MANIFEST.json),--from $(DATA_MIRROR),)
export PYTHONHASHSEED := 0

.PHONY: book test test-book venv data lint unit smoke nbval notebooks screenshot clean

BOOK_BUILD = $(BIN)/jupyter-book build . --all -W -n --keep-going

book: data
	rm -rf _build/html
	$(BOOK_BUILD)
	@echo "book: $(CURDIR)/_build/html/index.html"

test: lint unit smoke nbval test-book

# The book as `make book` builds it, but rendered from the notebooks' stored outputs: nbval has
# just re-executed every notebook and checked its outputs against the stored ones, so executing
# them a second time would repeat that work (about 3 minutes of CI). `make book` always
# re-executes (execute_notebooks: force in _config.yml).
TEST_CONFIG := _build/_config.stored-outputs.yml
test-book: data
	rm -rf _build/html
	mkdir -p _build
	sed 's/^  execute_notebooks: force$$/  execute_notebooks: "off"/' _config.yml > $(TEST_CONFIG)
	grep -q '^  execute_notebooks: "off"$$' $(TEST_CONFIG)
	$(BOOK_BUILD) --config $(TEST_CONFIG)
	@echo "book (stored outputs): $(CURDIR)/_build/html/index.html"
	$(BIN)/python tools/book_budget.py

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

venv: $(STAMP)

data: $(STAMP)
	$(BIN)/fqa data fetch $(FETCH_FROM)
	$(BIN)/fqa data check

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/python -m pytest

# Every `fqa run` stage with --subset end to end on the real data, in a temporary folder (about
# 10 minutes on 2 cores), plus two ablation notebooks run on its results.
smoke: data
	$(BIN)/python -m pytest -o addopts=-q -p no:cacheprovider tests_smoke

# Two workers (pytest-xdist), each running whole notebooks (--dist loadscope keeps a notebook's
# cells in one kernel, in order): the notebooks are single-threaded, so this halves the step.
# The notebooks run on a copy of results/ whose tables have their rows shuffled and are listed in
# reverse (tools/shuffled_results.py): outputs equal to the stored ones show that no page depends on
# the order a stage wrote its rows in or a filesystem lists them in.
SHUFFLED := _build/shuffled_results
nbval: data
	$(BIN)/python tools/shuffled_results.py results $(SHUFFLED)
	FQA_RESULTS_DIR=$(CURDIR)/$(SHUFFLED) $(BIN)/python -m pytest --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg -o addopts=-q -n 2 --dist loadscope book/

# The notebooks' sources are the jupytext files book/*.py and book/appendix/*.py (py:percent), each
# paired with its .ipynb.
# Format the sources, sync them into the notebooks, re-execute and store the outputs (commit both:
# nbval compares against the stored outputs; tests/test_notebook_pairs.py checks the pairs agree).
notebooks: data
	$(BIN)/ruff format -q book/*.py book/appendix/*.py
	$(BIN)/jupytext --quiet --sync book/*.py book/appendix/*.py
	$(BIN)/python tools/execute_notebooks.py book/*.ipynb book/appendix/*.ipynb

# Headless Chromium screenshots of the built book (Debian package `chromium`), then the layout
# check: no table scrolls sideways and no number wraps at 1280 px (tools/check_layout.py).
screenshot: book
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	mkdir -p screenshots
	for page in intro data retrieval reranking ablation_score ablation_loss rerun explanations explain_rate beyond_scoring beyond_feedback appendix/protocol appendix/retrieval appendix/reranking; do \
		chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
			--disable-background-networking --disable-component-update --disable-sync \
			--user-data-dir=$$(mktemp -d) --hide-scrollbars --window-size=1280,14000 \
			--screenshot=screenshots/$$(echo $$page | tr / _).png file://$(CURDIR)/_build/html/book/$$page.html; \
	done
	@ls -l screenshots
	$(BIN)/python tools/check_layout.py _build/html/book/*.html _build/html/book/appendix/*.html

clean:
	rm -rf _build screenshots .pytest_cache .mypy_cache .ruff_cache
