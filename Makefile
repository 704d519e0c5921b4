# Two commands on a fresh machine (each sets up .venv first):
#   make site   build the book into _build/html (warnings are errors)
#   make test   run every test for seed 0: lint, unit tests, every notebook's claims, the site
#               build, the browser checks and a learner's Run All in JupyterLab
# and what CI adds (.ci/run):
#   make sweep-changed  every notebook's claims for seeds 1-9, except those benchmarks/sweep.json
#               vouches for (unchanged since their seeds held); make sweep runs them all
#               (CHAPTER=N for one chapter, NOTEBOOK=text for the notebooks whose name contains it, SEEDS=1-9)
#   make test-coursework-changed  a graded class, the student edition, the PDF, the site without
#               solutions: each test that benchmarks/coursework.json cannot vouch for (unchanged since it
#               passed); make test-coursework runs them all and records them
#   make test-install  the student edition installed into a clean venv and run (about 2 minutes)
#
# Each notebook is executed once per seed: in `make test` nbval runs them (tools/nbval_cache.py),
# in `make site` tools/execute.py does, side by side into _build/.jupyter_cache, and the site
# build reads them from there. A notebook runs again only when its code cells, or a helpers file that its last run
# loaded, or the pins change (tools/fingerprints.py).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export COURSE_STATIC_BUILD := 1
CHAPTER ?=
NOTEBOOK ?=
SEEDS ?= 1-9
# the sweep and the coursework tests write their records (benchmarks/*.json) unless RECORD=0 (CI)
RECORD ?= 1
PYTEST := $(BIN)/python -m pytest -ra
# PyTorch comes first, from TORCH_INDEX: on Linux, PyTorch's CPU index (about 200 MB; PyPI's Linux
# wheel of the pin is the CUDA build, about 3 GB with its nvidia-* wheels, which the course does not
# use). TORCH_INDEX=https://download.pytorch.org/whl/cu128 (say) takes a CUDA build, TORCH_INDEX= PyPI's.
# Elsewhere PyPI's wheel is the CPU build. PIP_ARGS go to every pip install.
ifeq ($(shell uname -s),Linux)
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
endif
TORCH_PIN := $(shell grep -m1 '^torch==' requirements.txt)
PIP_ARGS ?=

.PHONY: site release notebooks site-no-solutions audit test sweep sweep-changed speed test-fast test-coursework test-coursework-changed test-install lint benchmark pdf student predictions grade lab lab-source serve clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# torch alone from its index; its dependencies come from PyPI with the pins
	$(BIN)/python -m pip install --quiet --no-deps "$(TORCH_PIN)" $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) $(PIP_ARGS)
	$(BIN)/python -m pip install --quiet -r requirements.txt $(PIP_ARGS)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@# nbgrader grades from the command line (make grade); its JupyterLab menus stay out of a learner's way
	$(BIN)/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader >/dev/null 2>&1
	for e in formgrader validate_assignment assignment_list course_list; do \
	  $(BIN)/jupyter server extension disable --sys-prefix nbgrader.server_extensions.$$e >/dev/null 2>&1; done
	touch $(STAMP)

site: $(STAMP)
	$(BIN)/python -m tools.execute --build

test: $(STAMP)
	$(BIN)/ruff check .
	@# nbval runs every notebook of _toc.yml for seed 0, side by side; each run that passes is the
	@# execution the site build and the tests below read (tools/nbval_cache.py)
	$(PYTEST) -p tools.nbval_cache --nbval-lax --nbval-cell-timeout=600 -n auto --dist loadfile book
	@# then the tests, a file at a time side by side (the site's build and browser checks on one
	@# core, the rest on the other); every notebook is in the cache by now, so none runs again
	$(PYTEST) -n auto --dist loadfile -m "not sweep and not coursework" tests

sweep: $(STAMP)       ## the claims of every notebook (or CHAPTER=N's, or NOTEBOOK=text's) for SEEDS (default 1-9); records them
	COURSE_RECORD=$(RECORD) CHAPTER=$(CHAPTER) NOTEBOOK=$(NOTEBOOK) SEEDS=$(SEEDS) $(PYTEST) -s -m sweep tests

sweep-changed: $(STAMP) ## as sweep, but takes from benchmarks/sweep.json every notebook unchanged since its seeds held (CI)
	COURSE_RECORD=$(RECORD) CHANGED=1 CHAPTER=$(CHAPTER) NOTEBOOK=$(NOTEBOOK) SEEDS=$(SEEDS) $(PYTEST) -s -m sweep tests

test-fast: $(STAMP)   ## unit tests only (no notebook execution, site build or browser)
	$(PYTEST) -m "not slow and not sweep and not coursework" tests

test-coursework: $(STAMP) ## what an instructor hands out or collects: a graded class, the student edition, the PDF, the site without solutions; records what passed
	COURSE_RECORD=$(RECORD) $(PYTEST) -m "coursework and not install" tests

test-coursework-changed: $(STAMP) ## as test-coursework, but skips each test that benchmarks/coursework.json vouches for (CI)
	COURSE_RECORD=$(RECORD) CHANGED=1 $(PYTEST) -m "coursework and not install" tests

test-install: $(STAMP) ## the student edition, installed with its README's command into a clean venv, runs
	$(PYTEST) -m install tests

speed: $(STAMP)       ## this machine's speed index (tools/speed_index.py): read timings against it
	$(BIN)/python -m tools.speed_index

lint: $(STAMP)
	$(BIN)/ruff check .

benchmark: $(STAMP)   ## time every notebook and every stage of `make test`; writes benchmarks/speed.json
	$(BIN)/python -m tools.benchmark $(BENCHMARK_ARGS)

site-no-solutions: $(STAMP)  ## the site without solutions, for a class: _build/no-solutions/_build/html [WITHHOLD=YYYY-MM-DD or always: the predictions' measurements]
	$(BIN)/python -m tools.execute
	$(BIN)/python -m tools.site_without_solutions $(if $(WITHHOLD),--withhold $(WITHHOLD))

release: student pdf  ## the release's files, named by its version, in _build/release/VERSION (tools/release.py); the site offers the PDF and the student edition on every page
	COURSE_RELEASE_FILES=_build/pdf/residual-connections-measured.pdf:student-edition/residual-course-student.zip \
	  $(BIN)/python -m tools.execute --build --all
	$(BIN)/python -m tools.release

notebooks: student   ## the notebooks launch buttons open, for REPOSITORY=https://github.com/OWNER/REPO: _build/notebooks, to push as its branch `notebooks` (tools/launch.py)
	@test -n "$(REPOSITORY)" || { echo "usage: make notebooks REPOSITORY=https://github.com/OWNER/REPO"; exit 2; }
	$(BIN)/python -m tools.launch student-edition/residual-course-student _build/notebooks --repository "$(REPOSITORY)"

pdf: $(STAMP)         ## the whole book as one PDF: _build/pdf/residual-connections-measured.pdf (needs Chromium)
	$(BIN)/python -m tools.execute
	$(BIN)/python -m tools.pdf

student: $(STAMP)     ## the student edition: student-edition/residual-course-student.zip
	$(BIN)/python -m tools.execute
	$(BIN)/python -m tools.student student-edition

predictions: $(STAMP) ## CHAPTER=N's first hand-in, its predictions before the measurement: _build/classroom/predictions/chN
	@test -n "$(CHAPTER)" || { echo "usage: make predictions CHAPTER=N"; exit 2; }
	$(BIN)/python -m tools.classroom predictions _build/classroom/predictions/ch$(CHAPTER) --chapter $(CHAPTER)

grade: $(STAMP)       ## grade SUBMISSIONS=folder for CHAPTER=N [SECTION=04] [PREDICTIONS=folder] [ROUND=2], in sandboxes: _build/classroom/grades.csv
	@test -n "$(SUBMISSIONS)" -a -n "$(CHAPTER)" || { echo "usage: make grade SUBMISSIONS=folder CHAPTER=N [SECTION=04] [PREDICTIONS=folder] [ROUND=2]"; exit 2; }
	$(BIN)/python -m tools.classroom grade "$(SUBMISSIONS)" --chapter $(CHAPTER) $(if $(SECTION),--section $(SECTION)) \
	  $(if $(PREDICTIONS),--predictions "$(PREDICTIONS)") $(if $(ROUND),--round $(ROUND))

lab: $(STAMP)         ## the learner's copy in JupyterLab: _build/lab, plain markdown, numbers from the last run (make site fills them)
	$(BIN)/python -m tools.lab_copy _build/lab
	env -u COURSE_STATIC_BUILD $(BIN)/jupyter lab _build/lab/preface.ipynb

lab-source: $(STAMP)  ## the book's own notebooks (MyST source) in JupyterLab, to edit the book
	env -u COURSE_STATIC_BUILD $(BIN)/jupyter lab book

audit: $(STAMP)       ## each page at 1280 px and 390 px: overflow, scroll cues, figure text, page weight
	$(BIN)/python -m tools.site_audit

serve:
	$(PYTHON) -m http.server --directory _build/html 8000

clean:
	rm -rf _build student-edition build .pytest_cache
