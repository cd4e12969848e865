"""Static checks of the teaching conventions on every chapter and section page of Parts I and II
(``book/part1``, ``book/part2``; the conventions are in ``book/README.md``).

* The title cell (the first markdown cell, ``# Title``) holds the overview box: an
  ``{admonition} Overview`` with ``:class: overview``, **Objectives.** with 3 to 5 bullets,
  **Prerequisites.** and **Key idea.**
* Exactly one heading "Summary" per page, written ``## Summary``, before ``## Exercises``.
* Every exercise title starts with its difficulty, ★, ★★ or ★★★; an "Open problem:" or
  "Project:" is ★★★.
* Every chapter (01 to 15) has at least one "Implement:" exercise; section pages (``04b``,
  ``13b``, ``15b``: a file number with a letter) are exempt, as part of their chapter.
* Chapters 9, 14 and 15 have an "Open problem:" or "Project:" exercise.
* No provenance talk in the pages (the Part overviews' "Sources and limits" hold it).
* A CI comparison cell (``experiments.compare(...)``) has the tag ``hide-input``.
* A reference to a cited theorem of the papers names it in its text,
  ``{prf:ref}`Theorem 2 of the paper <thm-hg-one-step>```: a bare ``{prf:ref}`thm-hg-one-step```
  shows the site's number for the overview's statement ("Theorem 1"), not the paper's.

``SXOR_TEACHING_ROOT=/path/to/checkout`` runs the page checks on another checkout's ``book/``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(os.environ.get("SXOR_TEACHING_ROOT") or Path(__file__).resolve().parents[1])
PAGES = sorted(
    p for part in ("part1", "part2") for p in (ROOT / "book" / part).glob("[0-9][0-9]*.ipynb")
)
#: Phrases of provenance talk, which belongs on the Part overviews, not in the chapters.
BANNED = ("not available to us", "machine-written", "pith.science", "our inference")
#: Chapters that must pose an open problem or a project.
OPEN_CHAPTERS = {9, 14, 15}
STARS = re.compile(r"^(★{1,3})(?!★)\s+(?P<rest>\S.*)$")
EXERCISE = re.compile(
    r"^\s{0,3}(`{3,}|:{3,})\{exercise(?:-start)?\}[ \t]*(?P<title>.*)$", re.MULTILINE
)
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.MULTILINE)
#: Labels of the papers' results on the Part overviews.
CITED = (
    "thm-hg-one-step",
    "cor-hg-finite-samples",
    "thm-afz-hardmax",
    "thm-afz-softmax",
    "thm-afz-training",
)


def page_number(path: Path) -> tuple[int, bool]:
    """The chapter number of a page and whether it is a section page (``04b_...``)."""
    match = re.match(r"(\d+)([a-z]?)_", path.name)
    return int(match[1]), bool(match[2])


def markdown(nb: nbformat.NotebookNode) -> list[str]:
    return [cell.source for cell in nb.cells if cell.cell_type == "markdown"]


def exercise_titles(nb: nbformat.NotebookNode) -> list[str]:
    return [m["title"].strip() for text in markdown(nb) for m in EXERCISE.finditer(text)]


def overview_problems(nb: nbformat.NotebookNode) -> list[str]:
    """What is wrong with the title cell's overview box (empty if nothing)."""
    texts = markdown(nb)
    if not texts or not texts[0].lstrip().startswith("# "):
        return ["the first markdown cell is not the title cell '# Title'"]
    title = texts[0]
    box = re.search(
        r"^(`{3,}|:{3,})\{admonition\}\s*Overview\s*\n(?P<body>.*?)^\1[ \t]*$",
        title,
        re.MULTILINE | re.DOTALL,
    )
    if not box:
        return ["no ```{admonition} Overview box in the title cell"]
    body = box["body"]
    problems = []
    if not re.search(r"^:class:.*\boverview\b", body, re.MULTILINE):
        problems.append("the Overview box lacks ':class: overview'")
    parts = {}
    for name in ("Objectives", "Prerequisites", "Key idea"):
        found = re.search(rf"\*\*{name}\.\*\*", body)
        if not found:
            problems.append(f"the Overview box lacks **{name}.**")
        else:
            parts[name] = found.start()
    if len(parts) == 3:
        if not parts["Objectives"] < parts["Prerequisites"] < parts["Key idea"]:
            problems.append("Objectives, Prerequisites and Key idea are not in this order")
        objectives = body[parts["Objectives"] : parts["Prerequisites"]]
        bullets = re.findall(r"^\s*[-*+]\s+\S", objectives, re.MULTILINE)
        if not 3 <= len(bullets) <= 5:
            problems.append(f"Objectives has {len(bullets)} bullets, not 3 to 5")
        key = body[parts["Key idea"] :].replace("**Key idea.**", "").strip()
        if not key:
            problems.append("the key idea is empty")
    return problems


def summary_problems(nb: nbformat.NotebookNode) -> list[str]:
    """Exactly one heading "Summary", written '## Summary', before '## Exercises'."""
    headings = [
        (len(m[1]), m[2]) for text in markdown(nb) for m in HEADING.finditer(strip_fences(text))
    ]
    summaries = [i for i, (_, text) in enumerate(headings) if text.lower() == "summary"]
    exercises = [i for i, (level, text) in enumerate(headings) if (level, text) == (2, "Exercises")]
    problems = []
    if len(summaries) != 1:
        problems.append(f"{len(summaries)} headings 'Summary', not exactly one")
    elif headings[summaries[0]][0] != 2:
        problems.append("the Summary heading is not '## Summary'")
    if len(exercises) != 1:
        problems.append(f"{len(exercises)} headings '## Exercises', not exactly one")
    if len(summaries) == 1 and len(exercises) == 1 and summaries[0] > exercises[0]:
        problems.append("'## Summary' comes after '## Exercises'")
    return problems


def strip_fences(text: str) -> str:
    """The lines of ``text`` outside every fenced block (code or directive): a ``#`` line inside
    one is a comment or directive content, not a heading of the page."""
    kept, fence = [], None
    for line in text.split("\n"):
        match = re.match(r"^\s{0,3}(`{3,}|~{3,}|:{3,})(.*)$", line)
        if fence is None:
            if match:
                fence = (match[1][0], len(match[1]))
            else:
                kept.append(line)
        elif (
            match
            and set(match[1]) == {fence[0]}
            and len(match[1]) >= fence[1]
            and not match[2].strip()
        ):
            fence = None
    return "\n".join(kept)


def exercise_problems(nb: nbformat.NotebookNode, number: int, section: bool) -> list[str]:
    """Difficulty marks, and the kinds of exercise the chapter must have."""
    titles = exercise_titles(nb)
    problems = []
    rests = []
    for title in titles:
        match = STARS.match(title)
        if not match:
            problems.append(f"exercise title without ★/★★/★★★ first: {title!r}")
            continue
        rests.append((match[1], match["rest"]))
        if match["rest"].startswith(("Open problem:", "Project:")) and match[1] != "★★★":
            problems.append(f"an open problem or project must be ★★★: {title!r}")
    if not section and not any(rest.startswith("Implement:") for _, rest in rests):
        problems.append("no 'Implement:' exercise")
    if (
        not section
        and number in OPEN_CHAPTERS
        and not any(rest.startswith(("Open problem:", "Project:")) for _, rest in rests)
    ):
        problems.append("no 'Open problem:' or 'Project:' exercise")
    return problems


def provenance_problems(nb: nbformat.NotebookNode) -> list[str]:
    text = "\n".join(cell.source for cell in nb.cells).lower()
    return [f"provenance phrase {phrase!r}" for phrase in BANNED if phrase in text]


def comparison_cell_problems(nb: nbformat.NotebookNode) -> list[str]:
    return [
        f"cell {number}: a CI comparison cell without the tag hide-input"
        for number, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        and "experiments.compare(" in cell.source
        and "hide-input" not in cell.metadata.get("tags", [])
    ]


def cited_reference_problems(nb: nbformat.NotebookNode) -> list[str]:
    text = "\n".join(markdown(nb))
    return [
        f"bare reference {{prf:ref}}`{label}`: write {{prf:ref}}`Theorem ... of the paper <{label}>`"
        for label in CITED
        if f"{{prf:ref}}`{label}`" in text
    ]


def page_problems(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    number, section = page_number(path)
    return (
        overview_problems(nb)
        + summary_problems(nb)
        + exercise_problems(nb, number, section)
        + provenance_problems(nb)
        + comparison_cell_problems(nb)
        + cited_reference_problems(nb)
    )


def test_every_chapter_has_a_page():
    numbers = {page_number(p)[0] for p in PAGES if not page_number(p)[1]}
    assert numbers == set(range(1, 16))


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_page_follows_the_teaching_conventions(path):
    problems = page_problems(path)
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


# The checks themselves, on a small page that follows every convention, and on broken copies.

GOOD_TITLE = """# A chapter

```{admonition} Overview
:class: overview

**Objectives.** After this chapter you will be able to
- derive the loss;
- compute its gradient;
- implement one step.

**Prerequisites.** {doc}`../part1/02_population_gradient`; background: calculus.

**Key idea.** One step is enough.
```

Motivation."""

GOOD_END = """```{prf:remark} A remark
## not a heading either
```

## Summary

- It works.

## Exercises

```{exercise} ★ Routine
:label: ex-x-1

Show it.
```

```{exercise} ★★ Implement: the step in NumPy
:label: ex-x-2

Write it.
```

```{exercise} ★★★ Open problem: three bits
:label: ex-x-3

Find it.
```"""


def page(
    title: str = GOOD_TITLE, end: str = GOOD_END, code: str = "x = 1", tags=()
) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(code)
    cell.metadata["tags"] = list(tags)
    return nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("# Colab cell"),
            nbformat.v4.new_markdown_cell(title),
            cell,
            nbformat.v4.new_markdown_cell("## Mathematics\n\n```python\n# not a heading\n```"),
            nbformat.v4.new_markdown_cell(end),
        ]
    )


def all_problems(nb, number=9, section=False):
    return (
        overview_problems(nb)
        + summary_problems(nb)
        + exercise_problems(nb, number, section)
        + provenance_problems(nb)
        + comparison_cell_problems(nb)
        + cited_reference_problems(nb)
    )


def test_a_good_page_passes():
    assert all_problems(page()) == []


@pytest.mark.parametrize(
    "title, expected",
    [
        (GOOD_TITLE.replace(":class: overview\n", ""), "':class: overview'"),
        (GOOD_TITLE.replace("- implement one step.\n", ""), "2 bullets"),
        (GOOD_TITLE.replace("**Key idea.** One step is enough.", ""), "**Key idea.**"),
        (GOOD_TITLE.replace("**Prerequisites.**", "Prerequisites:"), "**Prerequisites.**"),
        (
            GOOD_TITLE.replace("```{admonition} Overview", "```{note}"),
            "no ```{admonition} Overview",
        ),
        ("Some text\n\n" + GOOD_TITLE, "not the title cell"),
    ],
)
def test_overview_box_problems_are_found(title, expected):
    assert any(expected in p for p in overview_problems(page(title=title)))


@pytest.mark.parametrize(
    "end, expected",
    [
        (GOOD_END.replace("## Summary", "## Summary and outlook"), "0 headings 'Summary'"),
        (GOOD_END + "\n\n## Summary\n\nAgain.", "2 headings 'Summary'"),
        (GOOD_END.replace("## Summary", "### Summary"), "not '## Summary'"),
        (
            GOOD_END.replace("## Summary\n\n- It works.\n\n", "") + "\n\n## Summary\n\n- Late.",
            "after '## Exercises'",
        ),
        (GOOD_END.replace("## Exercises", "## Problems"), "0 headings '## Exercises'"),
    ],
)
def test_summary_problems_are_found(end, expected):
    assert any(expected in p for p in summary_problems(page(end=end)))


@pytest.mark.parametrize(
    "end, number, section, expected",
    [
        (GOOD_END.replace("★ Routine", "Routine"), 9, False, "without ★"),
        (GOOD_END.replace("★ Routine", "★★★★ Routine"), 9, False, "without ★"),
        (GOOD_END.replace("★★ Implement:", "★★ Write"), 3, False, "no 'Implement:'"),
        (GOOD_END.replace("★★★ Open problem:", "★★★ Hard:"), 14, False, "no 'Open problem:'"),
        (GOOD_END.replace("★★★ Open problem:", "★★ Open problem:"), 1, False, "must be ★★★"),
    ],
)
def test_exercise_problems_are_found(end, number, section, expected):
    assert any(expected in p for p in exercise_problems(page(end=end), number, section))


def test_section_pages_are_exempt_from_the_kinds_of_exercise():
    end = GOOD_END.replace("★★ Implement:", "★★ Write").replace("★★★ Open problem:", "★★★ Hard:")
    assert exercise_problems(page(end=end), 15, section=True) == []
    assert page_number(Path("13b_pipeline.ipynb")) == (13, True)
    assert page_number(Path("15_regularised_training.ipynb")) == (15, False)


def test_provenance_and_comparison_cells_are_found():
    bad = page(title=GOOD_TITLE + "\n\nThe full text was not available to us.")
    assert provenance_problems(bad) == ["provenance phrase 'not available to us'"]
    assert provenance_problems(page(code="# see the Machine-written review")) == [
        "provenance phrase 'machine-written'"
    ]
    assert comparison_cell_problems(page(code="print(experiments.compare(a, b))")) != []
    assert (
        comparison_cell_problems(page(code="print(experiments.compare(a, b))", tags=["hide-input"]))
        == []
    )


def test_bare_references_to_the_cited_theorems_are_found():
    bare = page(title=GOOD_TITLE + "\n\nBy {prf:ref}`thm-hg-one-step`, one step suffices.")
    assert len(cited_reference_problems(bare)) == 1
    named = page(
        title=GOOD_TITLE + "\n\nBy {prf:ref}`Theorem 2 of the paper <thm-hg-one-step>`, it does."
    )
    assert cited_reference_problems(named) == []
