# Two commands on a fresh machine (each sets up .venv first):
#   make site   build the book into _build/html (warnings are errors)
#   make test   run every test: unit tests, notebooks (nbval), claims for seeds 0-9,
#               the site build and the browser checks
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export COURSE_STATIC_BUILD := 1

.PHONY: site test test-fast lint benchmark student lab serve clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

site: $(STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -ra --nbval-lax --nbval-cell-timeout=300 tests book

test-fast: $(STAMP)   ## everything but the slow tests (seed sweep, site build, browser)
	$(BIN)/python -m pytest -ra -m "not slow" --nbval-lax --nbval-cell-timeout=300 tests book

lint: $(STAMP)
	$(BIN)/ruff check .

benchmark: $(STAMP)   ## cold execution time of every notebook (the budget is 60 s each)
	$(BIN)/python tools/run_notebooks.py

student: $(STAMP)     ## the student edition: notebooks without solutions
	$(BIN)/python -m helpers.student student-edition

lab: $(STAMP)
	env -u COURSE_STATIC_BUILD $(BIN)/jupyter lab book

serve:
	$(PYTHON) -m http.server --directory _build/html 8000

clean:
	rm -rf _build student-edition .pytest_cache
