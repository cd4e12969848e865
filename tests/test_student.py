"""The student edition (``make student``, ``tools/student.py``): every notebook is produced, no
solution remains, every exercise does, and the produced notebooks still execute.

Executing a student notebook checks that no later cell uses a variable defined in a removed
solution. A student notebook whose code cells are exactly the original's (only markdown solutions
were removed) runs exactly as the original, which nbval executes; it is checked for that identity
instead. The others are executed here, top to bottom in a fresh kernel (a few minutes in all).
``SXOR_STUDENT_NOTEBOOKS=01_sparse_xor_model,02_population_gradient`` restricts the execution to
those notebooks (for a quick local run); every other check always covers every notebook.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tools.student import (
    BOOK,
    ROOT,
    book_notebooks,
    exercise_labels,
    quiz_answer_count,
    quiz_pages,
    solution_labels,
    strip_solutions,
    student_notebook,
    student_page,
    write_student_edition,
)

NOTEBOOKS = book_notebooks()
#: Any line that opens a solution directive, in either fence style.
SOLUTION_LINE = re.compile(r"^\s*(`{3,}|:{3,})\{solution(-start|-end)?\}", re.MULTILINE)


@pytest.fixture(scope="module")
def edition(tmp_path_factory) -> Path:
    """The student edition of every notebook, written once for this module, by the command line
    that ``make student`` runs."""
    out = tmp_path_factory.mktemp("student")
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "student.py"), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,  # asserted below, with the script's stderr
    )
    assert result.returncode == 0, result.stderr
    assert f"wrote {len(NOTEBOOKS)} student notebooks" in result.stdout
    assert f"and {len(quiz_pages())} pages" in result.stdout
    return out


def student_of(edition: Path, path: Path) -> nbformat.NotebookNode:
    return nbformat.read(edition / path.relative_to(BOOK), as_version=4)


def code_sources(nb: nbformat.NotebookNode) -> list[str]:
    return [cell.source for cell in nb.cells if cell.cell_type == "code"]


def exercise_blocks(nb: nbformat.NotebookNode) -> list[str]:
    """The full text of every ``{exercise}`` block of the markdown cells (opening to closing
    fence), found independently of ``tools/student.py``."""
    blocks = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            blocks += [
                m.group(0)
                for m in re.finditer(
                    r"^(`{3,}|:{3,})\{exercise\}.*?^\1[ \t]*$",
                    cell.source,
                    re.MULTILINE | re.DOTALL,
                )
            ]
    return blocks


def test_every_notebook_is_produced(edition):
    produced = sorted(p.relative_to(edition) for p in edition.rglob("*.ipynb"))
    assert produced == sorted(p.relative_to(BOOK) for p in NOTEBOOKS)


def test_the_book_has_exercises_with_solutions():
    # Guards the checks below against passing on a book whose solutions were never recognised.
    assert sum(len(solution_labels(nbformat.read(p, as_version=4))) for p in NOTEBOOKS) >= 30


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_solution_remains_and_every_exercise_does(edition, path):
    original = nbformat.read(path, as_version=4)
    student = student_of(edition, path)
    for number, cell in enumerate(student.cells):
        assert not SOLUTION_LINE.search(cell.source), (
            f"{path.name}: a solution remains in cell {number}"
        )
    assert exercise_labels(student) == exercise_labels(original)
    blocks = exercise_blocks(original)
    text = "\n".join(cell.source for cell in student.cells if cell.cell_type == "markdown")
    for block in blocks:
        assert block in text, f"{path.name}: exercise text changed: {block[:80]!r}"
    # Every exercise that has a solution in the book lost it, and nothing else disappeared.
    assert set(solution_labels(original)) <= set(exercise_labels(original)), (
        f"{path.name}: a solution without its exercise"
    )
    assert len(student.cells) <= len(original.cells)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_student_notebook_executes(edition, path):
    student = student_of(edition, path)
    original = nbformat.read(path, as_version=4)
    if code_sources(student) == code_sources(original):
        return  # the same code as the original, which nbval executes
    only = os.environ.get("SXOR_STUDENT_NOTEBOOKS")
    if only and path.stem not in only.split(","):
        pytest.skip("SXOR_STUDENT_NOTEBOOKS excludes it")
    for cell in student.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    os.environ["TQDM_DISABLE"] = "1"
    NotebookClient(
        student,
        timeout=300,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(edition / path.relative_to(BOOK).parent)}},
    ).execute()  # raises CellExecutionError, naming the cell, if any cell fails
    errors = [
        o
        for c in student.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "error"
    ]
    assert not errors


# The tool itself, on a small notebook holding every format the book's conventions allow.


def synthetic() -> nbformat.NotebookNode:
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    return nbformat.v4.new_notebook(
        cells=[
            md("# Title"),
            code("x = 1"),
            md(
                "## Exercises\n\n```{exercise} ★ First\n:label: ex-a\n\nShow it.\n```\n\n"
                "```{solution} ex-a\n:class: dropdown\n\nIt is so.\n```\n\nBetween the two."
            ),
            md("````{exercise} ★★ Implement: second\n:label: ex-b\n\n```python\ny = x\n```\n````"),
            md("```{solution-start} ex-b\n:class: dropdown\n```"),
            code("secret = x + 1"),
            md("More of the solution."),
            code("print(secret)"),
            md("```{solution-end}\n```\n\nKept after the end."),
            md("Text before a gate.\n\n```{solution-start} ex-c\n```\nhidden"),
            code("hidden = 2"),
            md("```{solution-end}\n```"),
            code("print(x)"),
        ]
    )


def test_student_notebook_removes_exactly_the_solutions():
    nb = synthetic()
    student = student_notebook(nb)
    sources = [cell.source for cell in student.cells]
    assert sources == [
        "# Title",
        "x = 1",
        "## Exercises\n\n```{exercise} ★ First\n:label: ex-a\n\nShow it.\n```\n\nBetween the two.",
        "````{exercise} ★★ Implement: second\n:label: ex-b\n\n```python\ny = x\n```\n````",
        "Kept after the end.",
        "Text before a gate.",
        "print(x)",
    ]
    assert exercise_labels(student) == ["ex-a", "ex-b"]
    assert solution_labels(nb) == ["ex-a", "ex-b", "ex-c"] and solution_labels(student) == []
    assert len(nb.cells) == 13, "the input notebook is not modified"


def test_longer_fences_and_colon_fences():
    text = "A\n\n````{solution} ex-a\n```python\nz = 1\n```\n````\n\nB\n\n:::{solution} ex-b\nC\n:::\nD"
    assert strip_solutions(text) == ("A\n\nB\n\nD", False)


@pytest.mark.parametrize(
    "cells, message",
    [
        (["```{solution-start} ex-a\n```", "never ends"], "never closed"),
        (["```{solution-end}\n```"], "without a"),
        (["```{solution} ex-a\nno closing fence"], "unclosed"),
        (["```{solution-start} ex-a\n```", "```{solution-start} ex-b\n```"], "inside a gated"),
    ],
)
def test_malformed_solutions_are_refused(cells, message):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(c) for c in cells])
    with pytest.raises(ValueError, match=message):
        student_notebook(nb, "bad.ipynb")


def test_a_notebook_outside_the_book_is_refused(tmp_path):
    path = tmp_path / "elsewhere.ipynb"
    nbformat.write(synthetic(), path)
    with pytest.raises(ValueError, match="not under"):
        write_student_edition([path], tmp_path / "out")


# Quiz answers: folded on the website, removed from the student edition.

QUIZ = (
    "**1.** What is two plus two?\n\n"
    "```{admonition} Answer\n:class: dropdown quiz-answer\n\nFour.\n```\n\n"
    "**2.** And with a code block in the answer?\n\n"
    "````{admonition} Answer\n:class: quiz-answer dropdown\n\n```python\n2 + 2\n```\n````\n\n"
    "```{admonition} A note that stays\n:class: dropdown\n\nKept.\n```\n"
)


def test_quiz_answers_are_removed_and_questions_and_other_folds_kept():
    assert quiz_answer_count(QUIZ) == 2
    cleaned = student_page(QUIZ, "quiz.md")
    assert "Four" not in cleaned and "2 + 2" not in cleaned and quiz_answer_count(cleaned) == 0
    assert "**1.** What is two plus two?" in cleaned
    assert "**2.** And with a code block in the answer?" in cleaned
    assert "```{admonition} A note that stays\n:class: dropdown\n\nKept.\n```" in cleaned


def test_quiz_answers_in_a_notebook_cell_are_removed():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(QUIZ)])
    text = student_notebook(nb).cells[0].source
    assert quiz_answer_count(text) == 0 and "**2.**" in text and "Kept." in text


def test_the_quizzes_of_the_book_lose_their_answers_in_the_edition(edition):
    pages = quiz_pages()
    assert BOOK / "instructors.md" in pages
    for page in pages:
        original = page.read_text()
        student = (edition / page.relative_to(BOOK)).read_text()
        questions = re.findall(r"^\*\*\d+\.\*\* .*$", original, re.MULTILINE)
        assert quiz_answer_count(student) == 0, f"{page.name}: a quiz answer remains"
        assert re.findall(r"^\*\*\d+\.\*\* .*$", student, re.MULTILINE) == questions
    # Ten questions per Part, each with its answer, on the instructors' page.
    text = (BOOK / "instructors.md").read_text()
    assert quiz_answer_count(text) == 20
    assert len(re.findall(r"^\*\*\d+\.\*\* ", text, re.MULTILINE)) == 20


def test_the_graders_key_is_folded_on_the_site_and_removed_from_the_edition(edition):
    original = (BOOK / "instructors.md").read_text()
    student = (edition / "instructors.md").read_text()
    assert ":class: dropdown instructor-only" in original
    assert "what earns the points" in original and "what earns the points" not in student
    key = "{ref}`ex-14-implement` (20)"
    assert key in original and key not in student
    assert "### Grader's key" in student  # the heading stays, so the page's outline is the same


def test_an_unclosed_quiz_answer_is_refused():
    with pytest.raises(ValueError, match=r"quiz\.md: unclosed"):
        student_page("```{admonition} Answer\n:class: quiz-answer\nno end", "quiz.md")
