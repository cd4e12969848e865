# Two commands for readers (see README.md):
#   make book   build the website into _build/html
#   make test   every check: lint, unit tests, nbval over every notebook, strict book build
#   make lint   ruff (lint and format), mypy and codespell: the code's own checks, in seconds
#   make student  the notebooks without their solutions, into STUDENT_DIR (default _build/student)
#   make pdf    the book as one PDF handout, _build/pdf/book.pdf (needs Chromium: apt-get install
#               chromium); make pdf API=1 adds the API reference
#   make release  every edition of this version in _build/release/, packed and verified (README.md)
#   make reader-check  every notebook from a built wheel with the newest torch, numpy, matplotlib
#   make nightly  the tests and the strict build with the newest release of every package
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

.PHONY: book test lint pytest strict-book execute mutate pdf clean student release check-tag \
	colab-branches push-colab reader-check nightly

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
# runs the same commands before each commit. actionlint checks every workflow of the hosting
# platform (.github/workflows), with shellcheck on their run: steps (both from the venv).
LINT_PATHS := sxor tools tests benchmarks _ext book
WORKFLOWS := $(sort $(wildcard .github/workflows/*.yml))
lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)
	$(VENV)/bin/mypy
	$(VENV)/bin/codespell $(LINT_PATHS) README.md CHANGELOG.md
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/actionlint $(WORKFLOWS)

# Two pytest workers; --dist loadfile keeps each notebook in one worker (one kernel, cells in order).
test: $(STAMP)
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory pytest
	$(MAKE) --no-print-directory strict-book

# Unit tests and nbval over every notebook (the middle of `make test`).
pytest: $(STAMP)
	TQDM_DISABLE=1 timeout 2100 $(PY) -m pytest --nbval --nbval-current-env \
	  --nbval-cell-timeout=300 --nbval-sanitize-with tests/nbval_sanitize.cfg -q \
	  -n 2 --dist loadfile

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

# The release bundle (tools/release.py): the website strictly built and checked, the PDF, the
# student notebooks and the two Colab editions (`make colab`: _build/colab/full and
# _build/colab/student), packed into _build/release/ with manifest.json and SHA256SUMS, then
# verified as a reader receives it (the HTML tarball unpacked and site-checked offline). A tag in
# the environment (RELEASE_TAG, or GITHUB_REF_NAME starting with v) must be v + sxor/_version.py.
RELEASE_DIR ?= _build/release
COLAB_FULL ?= $(COLAB_DIR)/full
COLAB_STUDENT ?= $(COLAB_DIR)/student
release: $(STAMP)
	$(PY) tools/release.py check-tag
	$(MAKE) --no-print-directory strict-book
	$(MAKE) --no-print-directory pdf
	rm -rf $(STUDENT_DIR)
	$(MAKE) --no-print-directory student
	$(MAKE) --no-print-directory colab
	$(PY) tools/release.py pack --html _build/html --pdf _build/pdf/book.pdf \
	  --student $(STUDENT_DIR) --colab-full $(COLAB_FULL) --colab-student $(COLAB_STUDENT) \
	  --out $(RELEASE_DIR)
	$(PY) tools/release.py verify $(RELEASE_DIR)
	$(PY) tools/release.py notes $(RELEASE_DIR) > _build/release-notes.md

# The first step of the publish workflow: the tag it runs for names this version.
check-tag:
	$(PYTHON) tools/release.py check-tag

# The Colab editions as one-commit repositories on the branches colab and colab-student
# (tools/colab_branches.py); push-colab force-pushes them to COLAB_REMOTE (publish workflow).
COLAB_BRANCHES_DIR ?= _build/colab-branches
COLAB_REMOTE ?= origin
colab-branches:
	$(PYTHON) tools/colab_branches.py prepare --out $(COLAB_BRANCHES_DIR) \
	  colab=$(COLAB_FULL) colab-student=$(COLAB_STUDENT)

push-colab: colab-branches
	$(PYTHON) tools/colab_branches.py push --remote $(COLAB_REMOTE) $(COLAB_BRANCHES_DIR)

# A reader's runtime (tools/reader_check.py): a wheel of the package installed with the newest
# torch, numpy and matplotlib into a fresh venv outside the checkout, every notebook under nbval
# there. The weekly workflow runs it with Python 3.13 (Colab's) and TORCH_INDEX=cpu. Not part of
# `make test`: it downloads the newest releases.
READER_REPORT ?= _build/reader-check.txt
reader-check:
	nice -n 10 $(PYTHON) tools/reader_check.py --report $(READER_REPORT) \
	  $(if $(strip $(TORCH_INDEX_URL)),--index-url $(strip $(TORCH_INDEX_URL)),)

# The book with the newest release of every package (tools/loose_requirements.py drops the pins
# of requirements.txt): its own venv, then the unit tests, nbval and the strict build. The
# nightly workflow runs it; lint stays with the pinned linters.
NIGHTLY_DIR ?= _build/nightly
nightly:
	rm -rf $(NIGHTLY_DIR)
	mkdir -p $(NIGHTLY_DIR)
	$(PYTHON) tools/loose_requirements.py requirements.txt > $(NIGHTLY_DIR)/requirements.txt
	$(PYTHON) -m venv $(NIGHTLY_DIR)/venv
	timeout 1800 $(NIGHTLY_DIR)/venv/bin/pip install -q --disable-pip-version-check \
	  $(PIP_INDEX_ARGS) -r $(NIGHTLY_DIR)/requirements.txt
	$(NIGHTLY_DIR)/venv/bin/pip freeze --exclude-editable > $(NIGHTLY_DIR)/freeze.txt
	touch $(NIGHTLY_DIR)/venv/.installed $(NIGHTLY_DIR)/venv/.installed-extra-index
	$(MAKE) --no-print-directory pytest strict-book VENV=$(NIGHTLY_DIR)/venv

clean:
	rm -rf _build

# The Colab editions (tools/colab.py): every notebook in plain Markdown and LaTeX with the website's
# numbers, into _build/colab/full (solutions included) and _build/colab/student (exercises only).
# Numbers and anchors come from tools/colab_targets.json; `make colab-targets` refreshes it from a
# fresh build of the website (commit the result). `make colab-check` runs the full edition under
# nbval in a folder outside the checkout, with the installed package (about 10 min on 2 cores).
COLAB_DIR ?= _build/colab
.PHONY: colab colab-targets colab-check
colab: $(STAMP)
	rm -rf $(COLAB_DIR)
	$(PY) tools/colab.py build --out $(COLAB_DIR)

colab-targets: $(STAMP)
	rm -rf _build/html _build/.doctrees
	timeout 900 $(VENV)/bin/jupyter-book build . --keep-going
	$(PY) tools/colab_targets.py _build/.doctrees/environment.pickle

colab-check: colab
	TQDM_DISABLE=1 timeout 1800 $(PY) tools/colab_check.py $(COLAB_DIR)/full
