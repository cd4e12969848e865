# Two commands for readers (see README.md):
#   make book   build the website into _build/html
#   make test   every check: lint, unit tests, nbval over every notebook, strict book build
#   make lint   ruff (lint and format), mypy and codespell: the code's own checks, in seconds
#   make student  the notebooks without their solutions, into STUDENT_DIR (default _build/student)
#   make pdf    the book as one PDF handout, _build/pdf/book.pdf (needs Chromium: apt-get install
#               chromium); make pdf API=1 adds the API reference
# They create .venv from requirements.txt first when it is missing or out of date.
#
# On Linux without a GPU, `make test TORCH_INDEX=cpu` (or `make book TORCH_INDEX=cpu`) installs
# PyTorch's CPU-only wheel from PyTorch's own index instead of PyPI's CUDA build and its nvidia-*
# wheels (README.md quotes both downloads). TORCH_INDEX_URL=<index> passes any other index.
# The default asks no index but PyPI (pip's own configuration still applies).

SHELL := /bin/bash
PYTHON ?= python3
VENV  ?= .venv
PY    := $(VENV)/bin/python
TORCH_INDEX ?=
TORCH_INDEX_URL ?= $(if $(filter cpu,$(TORCH_INDEX)),https://download.pytorch.org/whl/cpu,)
PIP_INDEX_ARGS := $(if $(strip $(TORCH_INDEX_URL)),--extra-index-url $(strip $(TORCH_INDEX_URL)),)
# One stamp per index, so that asking for the CPU index once installs from it.
STAMP := $(VENV)/.installed$(if $(strip $(TORCH_INDEX_URL)),-extra-index,)
NOTEBOOKS := $(shell find book -name '*.ipynb' -not -path '*/.ipynb_checkpoints/*' | sort)
NB    ?= $(NOTEBOOKS)
STUDENT_DIR ?= _build/student

.PHONY: book test lint unit nbval strict-book execute mutate pdf clean student

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	timeout 1200 $(VENV)/bin/pip install -q --disable-pip-version-check $(PIP_INDEX_ARGS) -r requirements.txt
	touch $(STAMP)

book: $(STAMP)
	rm -rf _build/html
	timeout 900 $(VENV)/bin/jupyter-book build . --keep-going
	@test -f _build/html/index.html
	@$(PY) tools/set_repository.py --check
	@echo "Open the site with a local server (search needs one; over file:// it lists titles only):"
	@echo "  python3 -m http.server -d _build/html 8000   then open http://localhost:8000"

# The code's own checks (book/appendix/contributing.md says what each guards); .pre-commit-config.yaml
# runs the same commands before each commit.
LINT_PATHS := sxor tools tests benchmarks _ext book
lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)
	$(VENV)/bin/mypy
	$(VENV)/bin/codespell $(LINT_PATHS) README.md

# Two pytest workers; --dist loadfile keeps each notebook in one worker (one kernel, cells in order).
test: $(STAMP)
	$(MAKE) --no-print-directory lint
	TQDM_DISABLE=1 timeout 1500 $(PY) -m pytest --nbval --nbval-current-env \
	  --nbval-cell-timeout=300 --nbval-sanitize-with tests/nbval_sanitize.cfg -q \
	  -n 2 --dist loadfile
	$(MAKE) --no-print-directory strict-book

strict-book: $(STAMP)
	rm -rf _build/html
	timeout 900 $(VENV)/bin/jupyter-book build . -W -n --keep-going
	timeout 900 $(PY) tools/check_site.py _build/html --browser-if-available

# One PDF handout of the book: the single-page HTML build printed by headless Chromium
# (tools/make_pdf.py): A4, page numbers, contents with pages, bookmarks; numbered theorems,
# figures, equations and exercises; no solutions. The API reference is left out unless API=1.
API ?=
pdf: $(STAMP)
	rm -rf _build/singlehtml _build/pdf
	timeout 900 $(VENV)/bin/jupyter-book build . --builder singlehtml --keep-going
	timeout 1500 $(PY) tools/make_pdf.py _build/singlehtml/index.html _build/pdf/book.pdf $(if $(filter 1 yes true,$(API)),--api,)

# The student edition: every notebook with its solutions removed (exercise text kept);
# tests/test_student.py checks it.
student: $(STAMP)
	$(PY) tools/student.py --out $(STUDENT_DIR)

execute: $(STAMP)
	timeout 1800 $(PY) tools/execute_notebooks.py $(NB)

# Mutation testing over tools/mutations.json (unit tests only, each mutant in a temporary copy).
# Not part of `make test`: it takes about half an hour on 2 cores (book/appendix/contributing.md).
mutate: $(STAMP)
	TQDM_DISABLE=1 $(PY) tools/mutate.py $(MUTATE_ARGS)

clean:
	rm -rf _build
