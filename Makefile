# Two commands for readers (see README.md):
#   make book   build the website into _build/html
#   make test   every check: unit tests, nbval over every notebook, strict book build
#   make student  the notebooks without their solutions, into STUDENT_DIR (default _build/student)
# Both create .venv from requirements.txt first when it is missing or out of date.

SHELL := /bin/bash
PYTHON ?= python3
VENV  ?= .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NOTEBOOKS := $(shell find book -name '*.ipynb' -not -path '*/.ipynb_checkpoints/*' | sort)
NB    ?= $(NOTEBOOKS)
STUDENT_DIR ?= _build/student

.PHONY: book test unit nbval strict-book execute mutate clean student

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	timeout 1200 $(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt
	touch $(STAMP)

book: $(STAMP)
	rm -rf _build/html
	timeout 900 $(VENV)/bin/jupyter-book build . --keep-going
	@test -f _build/html/index.html
	@$(PY) tools/set_repository.py --check
	@echo "Open file://$(CURDIR)/_build/html/index.html"

# Two pytest workers; --dist loadfile keeps each notebook in one worker (one kernel, cells in order).
test: $(STAMP)
	TQDM_DISABLE=1 timeout 1500 $(PY) -m pytest --nbval --nbval-current-env \
	  --nbval-cell-timeout=300 --nbval-sanitize-with tests/nbval_sanitize.cfg -q \
	  -n 2 --dist loadfile
	$(MAKE) --no-print-directory strict-book

strict-book: $(STAMP)
	rm -rf _build/html
	timeout 900 $(VENV)/bin/jupyter-book build . -W -n --keep-going
	timeout 120 $(PY) tools/check_site.py _build/html

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
