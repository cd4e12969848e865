"""Write the student edition: every notebook of the book with its solutions removed.

Usage: ``python tools/student.py [--out DIR] [PAGE ...]`` (``make student`` runs it on every
notebook, and on every markdown page that holds quiz answers, into ``STUDENT_DIR``, default
``_build/student``). Each page ``book/<path>`` (a notebook or a markdown page) is written to
``DIR/<path>``; exercise text, narrative, code and stored outputs are kept.

Three formats are removed (the book's conventions, ``book/README.md``):

* a whole ``{solution}`` block, ```` ```{solution} ex-label ```` ... closing fence, inside a
  markdown cell; the rest of that cell is kept;
* a gated solution: the ``{solution-start}`` block, everything after it (the rest of its cell and
  every following cell) up to the ``{solution-end}`` block, and that block itself. Text after the
  end block, in the same cell, is kept;
* a quiz answer: any directive whose ``:class:`` option names ``quiz-answer`` (the instructors'
  page folds its answers in ```` ```{admonition} Answer ```` with ``:class: dropdown quiz-answer``),
  and anything for instructors only, class ``instructor-only`` (the grader's key),
  in a notebook's markdown cell or in a markdown page.

A markdown cell left empty is dropped. A gated solution that never ends, or an end without a
start, raises :class:`ValueError` naming the notebook and the cell.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"

#: The opening line of a MyST directive: a fence of 3 or more backticks or colons, then ``{name}``.
OPENING = re.compile(
    r"^\s{0,3}(?P<fence>`{3,}|:{3,})\{(?P<name>[A-Za-z0-9_:-]+)\}(?P<argument>.*)$"
)
#: Directives this tool removes, and the ones whose text it must keep.
SOLUTION, SOLUTION_START, SOLUTION_END = "solution", "solution-start", "solution-end"
EXERCISES = ("exercise", "exercise-start")
#: The class that marks a directive as a quiz answer, removed from the student edition.
QUIZ_ANSWER = "quiz-answer"
#: The class that marks a directive for instructors only (the grader's key), removed as well.
INSTRUCTOR_ONLY = "instructor-only"


def directive_classes(lines: list[str], start: int) -> list[str]:
    """The classes named by the ``:class:`` option of the directive opened at ``lines[start]``
    (its option lines follow the opening line directly)."""
    classes: list[str] = []
    for option in lines[start + 1 :]:
        if not option.startswith(":"):
            break
        if option.startswith(":class:"):
            classes += option.removeprefix(":class:").split()
    return classes


def block_end(lines: list[str], start: int, fence: str) -> int:
    """Index of the line that closes the fenced block opened at ``lines[start]``.

    A closing fence is a line holding only the fence character, at least as many times as the
    opening fence (CommonMark), so shorter fences nested inside do not close the block.

    Raises
    ------
    ValueError
        If the block is never closed.
    """
    char, length = fence[0], len(fence)
    for index in range(start + 1, len(lines)):
        stripped = lines[index].strip()
        if len(stripped) >= length and set(stripped) == {char}:
            return index
    raise ValueError(f"unclosed {fence} block opened on line {start + 1}: {lines[start].strip()!r}")


def strip_solutions(text: str, gated: bool = False) -> tuple[str, bool]:
    """Remove the solutions from the text of one markdown cell.

    Parameters
    ----------
    text
        The cell's source.
    gated
        True if the cell starts inside a gated solution (a ``{solution-start}`` earlier in the
        notebook, not yet ended).

    Returns
    -------
    tuple[str, bool]
        The text without solutions, and whether the cell ends inside a gated solution.

    Raises
    ------
    ValueError
        On a ``{solution-end}`` outside a gated solution, a ``{solution-start}`` inside one, or an
        unclosed fence of a solution directive.
    """
    lines = text.split("\n")
    kept: list[str] = []
    index = 0
    while index < len(lines):
        match = OPENING.match(lines[index])
        name = match["name"] if match else None
        if gated:
            if name == SOLUTION_END:
                index = block_end(lines, index, match["fence"]) + 1
                gated = False
                continue
            if name == SOLUTION_START:
                raise ValueError(
                    f"{{solution-start}} inside a gated solution: {lines[index].strip()!r}"
                )
            index += 1  # a line of the solution
            continue
        hidden = match and {QUIZ_ANSWER, INSTRUCTOR_ONLY} & set(directive_classes(lines, index))
        if name == SOLUTION or hidden:
            index = block_end(lines, index, match["fence"]) + 1
        elif name == SOLUTION_START:
            index = block_end(lines, index, match["fence"]) + 1
            gated = True
        elif name == SOLUTION_END:
            raise ValueError(
                f"{{solution-end}} without a {{solution-start}}: {lines[index].strip()!r}"
            )
        else:
            kept.append(lines[index])
            index += 1
    cleaned = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip("\n")
    return cleaned, gated


def student_notebook(nb: nbformat.NotebookNode, name: str = "notebook") -> nbformat.NotebookNode:
    """A copy of ``nb`` without its solutions (see the module docstring).

    Parameters
    ----------
    nb
        A notebook (nbformat 4).
    name
        How error messages name the notebook.

    Returns
    -------
    nbformat.NotebookNode
        The student version; ``nb`` is not modified.

    Raises
    ------
    ValueError
        If a gated solution is not closed by the end of the notebook, or on a malformed solution
        (see :func:`strip_solutions`), naming the notebook and the cell.
    """
    student = copy.deepcopy(nb)
    cells = []
    gated = False
    for number, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            if not gated:
                cells.append(copy.deepcopy(cell))
            continue
        try:
            text, gated = strip_solutions(cell.source, gated)
        except ValueError as error:
            raise ValueError(f"{name}, cell {number}: {error}") from None
        if text.strip():
            kept = copy.deepcopy(cell)
            kept.source = text
            cells.append(kept)
    if gated:
        raise ValueError(f"{name}: a {{solution-start}} is never closed by a {{solution-end}}")
    student.cells = cells
    return student


def directive_labels(nb: nbformat.NotebookNode, names: tuple[str, ...]) -> list[str]:
    """The ``:label:`` of every directive called one of ``names`` in the markdown cells of ``nb``
    (for solutions, the argument: ```` ```{solution} ex-label ````), in order."""
    labels = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.split("\n")
        for index, line in enumerate(lines):
            match = OPENING.match(line)
            if not match or match["name"] not in names:
                continue
            label = match["argument"].strip()
            for option in lines[index + 1 :]:
                if not option.startswith(":"):
                    break
                if option.startswith(":label:"):
                    label = option.removeprefix(":label:").strip()
            labels.append(label)
    return labels


def exercise_labels(nb: nbformat.NotebookNode) -> list[str]:
    """Labels of the exercises of ``nb``, in order."""
    return directive_labels(nb, EXERCISES)


def solution_labels(nb: nbformat.NotebookNode) -> list[str]:
    """The exercise labels that the solutions of ``nb`` answer, in order."""
    return directive_labels(nb, (SOLUTION, SOLUTION_START))


def book_notebooks() -> list[Path]:
    """Every notebook under ``book/``, sorted."""
    return sorted(p for p in BOOK.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def quiz_answer_count(text: str) -> int:
    """How many quiz answers (directives of class ``quiz-answer``) ``text`` holds."""
    lines = text.split("\n")
    return sum(
        1
        for index, line in enumerate(lines)
        if OPENING.match(line) and QUIZ_ANSWER in directive_classes(lines, index)
    )


def quiz_pages() -> list[Path]:
    """Every markdown page under ``book/`` that holds a quiz answer, sorted."""
    return sorted(p for p in BOOK.rglob("*.md") if quiz_answer_count(p.read_text()))


def student_page(text: str, name: str = "page") -> str:
    """The text of a markdown page without its solutions and quiz answers.

    Raises
    ------
    ValueError
        On a malformed solution (see :func:`strip_solutions`), naming the page.
    """
    try:
        cleaned, gated = strip_solutions(text)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    if gated:
        raise ValueError(f"{name}: a {{solution-start}} is never closed by a {{solution-end}}")
    return cleaned + "\n"


def write_student_edition(notebooks: list[Path], out: Path) -> list[Path]:
    """Write the student version of each notebook or markdown page (under ``book/``) to ``out``,
    keeping its path relative to ``book/``; return the written paths.

    Raises
    ------
    ValueError
        If a page lies outside ``book/`` or holds a malformed solution.
    """
    written = []
    for given in notebooks:
        path = Path(given).resolve()
        if BOOK not in path.parents:
            raise ValueError(f"notebooks: {path} is not under {BOOK}")
        target = Path(out) / path.relative_to(BOOK)
        if path.suffix == ".md":
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(student_page(path.read_text(), path.name))
            written.append(target)
            continue
        nb = nbformat.read(path, as_version=4)
        student = student_notebook(nb, path.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(student, target)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "_build" / "student",
        help="folder for the student notebooks (default: _build/student)",
    )
    parser.add_argument(
        "notebooks",
        nargs="*",
        type=Path,
        help="notebooks or markdown pages under book/ (default: every notebook and every page "
        "with quiz answers)",
    )
    args = parser.parse_args(argv)
    pages = args.notebooks or book_notebooks() + quiz_pages()
    write_student_edition(pages, args.out)
    notebooks = [p for p in pages if Path(p).suffix != ".md"]
    markdown = [p for p in pages if Path(p).suffix == ".md"]
    removed = sum(len(solution_labels(nbformat.read(p, as_version=4))) for p in notebooks)
    answers = sum(quiz_answer_count(Path(p).read_text()) for p in markdown)
    print(
        f"wrote {len(notebooks)} student notebooks to {args.out} ({removed} solutions removed)"
        f" and {len(markdown)} pages ({answers} quiz answers removed)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
