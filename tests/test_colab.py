"""The Colab editions (``make colab``, ``tools/colab.py``): every notebook in both editions, no
MyST left in any markdown cell once rendered as CommonMark, math delimiters intact, no solution
in the student edition, and the website's numbers.

The numbers come from ``tools/colab_targets.json`` (read from a build of the website by
``tools/colab_targets.py``). It is checked here against the notebooks (every label they define is
in it, numbered in the order they define it) and, when a build of the website is present, against
the website itself (every number, from the built HTML; and the whole file, from the build's
environment when that build is newer than every page).
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from markdown_it import MarkdownIt

from tools.colab import (
    BRANCHES,
    Converter,
    colab_notebook,
    colab_url,
    pin_install_cell,
    release_tag,
    site_url,
)
from tools.colab_targets import ENVIRONMENT, TARGETS, load_targets, read_environment
from tools.student import OPENING, ROOT, book_notebooks, solution_labels

NOTEBOOKS = book_notebooks()
TARGET_MAP = load_targets(TARGETS)
EDITIONS = ("full", "student")
COMMONMARK = MarkdownIt("commonmark")
SITE = ROOT / "_build" / "html"


def docname(path: Path) -> str:
    return path.relative_to(ROOT).with_suffix("").as_posix()


@pytest.fixture(scope="module")
def editions(tmp_path_factory) -> Path:
    """Both editions of every notebook, written once by the command line ``make colab`` runs."""
    out = tmp_path_factory.mktemp("colab")
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "colab.py"), "build", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,  # asserted below, with the script's stderr
    )
    assert result.returncode == 0, result.stderr
    for edition in EDITIONS:
        assert f"wrote {len(NOTEBOOKS)} {edition} Colab notebooks" in result.stdout
    return out


def edition_of(editions: Path, edition: str, path: Path) -> nbformat.NotebookNode:
    return nbformat.read(editions / edition / path.relative_to(ROOT / "book"), as_version=4)


def markdown_of(nb: nbformat.NotebookNode) -> list[str]:
    return [cell.source for cell in nb.cells if cell.cell_type == "markdown"]


# --- what a CommonMark renderer sees -------------------------------------------------------------

#: MyST syntax in rendered text: a colon fence, a target, a directive option line, a gated
#: solution, an equation label, a substitution.
MYST_TEXT = re.compile(
    r"(^|\n)\s*:::"
    r"|(^|\n)\s*\([\w.:-]+\)=\s*($|\n)"
    r"|(^|\n)\s*:(label|class|name|nonumber|enumerated|hidden|width|align|figwidth):"
    r"|solution-(start|end)"
    r"|\$\$[ \t]*\([\w.:-]+\)[ \t]*($|\n)"
)


def myst_left(markdown: str) -> list[str]:
    """Every piece of MyST in ``markdown`` as CommonMark renders it (empty when there is none)."""
    found = []
    for token in COMMONMARK.parse(markdown):
        if token.type == "fence" and token.info.strip().startswith("{"):
            found.append(f"directive fence ```{token.info.strip()}")
        if token.type in ("html_block", "code_block") and MYST_TEXT.search(token.content):
            found.append(f"MyST in a block: {token.content[:60]!r}")
        if token.type != "inline":
            continue
        children = token.children or []
        for index, child in enumerate(children):
            if child.type == "text" and MYST_TEXT.search(child.content):
                found.append(f"MyST text: {child.content[:60]!r}")
            if (
                child.type == "text"
                and re.search(r"\{[a-z][\w:-]*\}$", child.content)
                and index + 1 < len(children)
                and children[index + 1].type == "code_inline"
            ):
                found.append(f"role {child.content[-20:]}`{children[index + 1].content}`")
        if MYST_TEXT.search(token.content):
            found.append(f"MyST in a paragraph: {token.content[:60]!r}")
    return found


def math_problems(markdown: str) -> list[str]:
    """Unbalanced math delimiters outside code: ``$$`` pairs, then ``$`` pairs per paragraph."""
    text = re.sub(r"^(`{3,}|~{3,}).*?^\1\s*$", "", markdown, flags=re.MULTILINE | re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text).replace(r"\$", "")
    problems = []
    if text.count("$$") % 2:
        problems.append("odd number of $$")
    inline = re.sub(r"\$\$.*?\$\$", "", text, flags=re.DOTALL)
    for paragraph in re.split(r"\n\s*\n", inline):
        if paragraph.count("$") % 2:
            problems.append(f"odd number of $ in: {paragraph.strip()[:80]!r}")
    outside = re.sub(r"\$\$.*?\$\$", "", text, flags=re.DOTALL)
    if "\\tag{" in outside:
        problems.append("\\tag outside display math")
    return problems


def test_the_detectors_find_what_they_look_for():
    # Guards the checks below against passing because the detectors never fire.
    assert myst_left("```{prf:proof}\nx\n```")
    assert myst_left("See {prf:ref}`thm-x` here.")
    assert myst_left("(sec-a)=\n## A")
    assert myst_left(":::{note}\nx\n:::")
    assert myst_left("```{exercise} T\n:label: ex-a\n```")
    assert myst_left("$$\nx\n$$ (eq-a)")
    assert not myst_left("**Lemma 2.1** (title) with $\\{x\\}$ and `code` and [a](b).")
    assert math_problems("a $x$ and $y")
    assert math_problems("$$\nx\n")
    assert not math_problems("a $x$, `$` in code, \\$5 and\n\n$$\nx\n\\tag{2.1}\n$$")


def test_every_notebook_is_in_both_editions_with_an_index(editions):
    for edition in EDITIONS:
        produced = sorted(
            p.relative_to(editions / edition) for p in (editions / edition).rglob("*.ipynb")
        )
        assert produced == sorted(p.relative_to(ROOT / "book") for p in NOTEBOOKS)
        index = (editions / edition / "README.md").read_text()
        for path in NOTEBOOKS:
            assert colab_url(edition, docname(path)) in index, f"{edition} index lacks {path.name}"


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_myst_left_and_math_intact(editions, edition, path):
    nb = edition_of(editions, edition, path)
    for number, source in enumerate(markdown_of(nb)):
        assert not myst_left(source), (
            f"{edition}/{path.name}, markdown cell {number}: {myst_left(source)}"
        )
        assert not math_problems(source), (
            f"{edition}/{path.name}, markdown cell {number}: {math_problems(source)}"
        )
        assert "](" not in re.sub(r"\]\((https://|data:)", "", source), (
            f"{edition}/{path.name}: a relative link, which Colab cannot follow"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_and_outputs_are_the_books(editions, path):
    original = nbformat.read(path, as_version=4)
    full = edition_of(editions, "full", path)
    code = [c for c in original.cells if c.cell_type == "code"]
    converted = [c for c in full.cells if c.cell_type == "code"]
    assert len(code) == len(converted)
    assert [c.outputs for c in code] == [c.outputs for c in converted]
    assert [c.metadata.get("tags", []) for c in code] == [
        c.metadata.get("tags", []) for c in converted
    ]
    # Only the install cell may differ (the converter pins it to the release).
    assert [c.source for c in code[1:]] == [c.source for c in converted[1:]]
    assert f"@{release_tag()}" in converted[0].source and "google.colab" in converted[0].source
    assert 'os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")' in converted[0].source


def solution_parts(nb: nbformat.NotebookNode) -> tuple[list[str], list[str]]:
    """The markdown lines and the code of every solution of a full-edition notebook: from a
    ``**Solution to`` heading to the rule that closes its box (across cells for a gated one)."""
    lines, code, inside = [], [], False
    for cell in nb.cells:
        if cell.cell_type == "code":
            if inside:
                code.append(cell.source)
            continue
        for line in cell.source.split("\n"):
            if line.startswith("**Solution to "):
                inside = True
            elif inside and line.strip() == "---":
                inside = False
            elif inside and len(line.strip()) >= 30:
                lines.append(line.strip())
    return lines, code


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_student_edition_has_no_solution_and_every_exercise(editions, path):
    original = nbformat.read(path, as_version=4)
    full = edition_of(editions, "full", path)
    student = edition_of(editions, "student", path)
    full_text = "\n".join(markdown_of(full))
    student_text = "\n".join(markdown_of(student))
    assert full_text.count("**Solution to ") == len(solution_labels(original))
    assert "Solution to" not in student_text
    lines, code = solution_parts(full)
    assert len(lines) + len(code) >= min(1, len(solution_labels(original)))
    for line in lines:
        assert line not in student_text, (
            f"{path.name}: solution text in the student edition: {line!r}"
        )
    student_code = [c.source for c in student.cells if c.cell_type == "code"]
    for source in code:
        assert source not in student_code, f"{path.name}: solution code in the student edition"
    exercises = re.findall(r"^\*\*Exercise [\d.]+\*\*.*$", full_text, re.MULTILINE)
    assert exercises == re.findall(r"^\*\*Exercise [\d.]+\*\*.*$", student_text, re.MULTILINE)


def test_the_book_has_solutions_to_remove():
    assert sum(len(solution_labels(nbformat.read(p, as_version=4))) for p in NOTEBOOKS) >= 30


# --- numbers -------------------------------------------------------------------------------------

#: As the website shows them (read from its pages when these lines were written).
KNOWN = {
    "part1/02_population_gradient.ipynb": [
        "**Lemma 2.1** (Rademacher fourth moments)",
        "**Corollary 2.1** (Parseval form)",
        "**Exercise 2.3** (★ Where the error bound is attained)",
        "**Fig. 2.1** Monte Carlo estimates",
        "\\tag{2.2}",
        "## 2.1. Fourth moments of Rademacher variables",
        "[(2.1)](" + site_url() + "book/part1/02_population_gradient.html#equation-eq-closed-loss)",
    ],
    "part1/04b_smallest_m.ipynb": [
        "**Fig. 4.6**",
        "**Exercise 4.5** (★ The tail of the Cauchy law)",
    ],
    "part2/14_cost.ipynb": [
        "[Exercise 14.1](" + site_url() + "book/part2/14_cost.html#ex-14-one-move)"
    ],
}


def test_known_numbers_are_the_websites(editions):
    for edition in EDITIONS:
        for relative, expected in KNOWN.items():
            nb = nbformat.read(editions / edition / relative, as_version=4)
            text = "\n".join(markdown_of(nb))
            for item in expected:
                assert item in text, f"{edition}/{relative}: {item!r} missing"


def defined_labels(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """``(kind, label)`` of every numbered thing a notebook defines, in order: theorem-like
    statements and exercises (``:label:``), figures (cell metadata), labelled equations."""
    found = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            name = cell.metadata.get("mystnb", {}).get("figure", {}).get("name")
            if name:
                found.append(("figure", name))
            continue
        lines = cell.source.split("\n")
        for index, line in enumerate(lines):
            opening = OPENING.match(line)
            if (
                opening
                and opening["name"] != "prf:proof"
                and (opening["name"].startswith("prf:") or opening["name"] == "exercise")
            ):
                for option in lines[index + 1 :]:
                    if not option.startswith(":"):
                        break
                    if option.startswith(":label:"):
                        kind = opening["name"].removeprefix("prf:")
                        found.append((kind, option.removeprefix(":label:").strip()))
            equation = re.search(r"\$\$\s*\(([^)\s]+)\)\s*$", line)
            if equation:
                found.append(("equation", equation.group(1)))
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_numbers_map_follows_the_notebooks(path):
    """Every numbered label of the notebook is in ``tools/colab_targets.json`` on this page,
    and each kind is numbered 1, 2, 3, ... (after the chapter's prefix) in the notebook's order:
    a statement added, removed or moved without refreshing the map fails here."""
    page = docname(path)
    numbers: dict[str, list[str]] = {}
    for kind, label in defined_labels(nbformat.read(path, as_version=4)):
        table = TARGET_MAP["equations"] if kind == "equation" else TARGET_MAP["labels"]
        hint = "refresh it: make colab-targets"
        assert label in table, f"{path.name}: {label} is not in tools/colab_targets.json; {hint}"
        assert table[label]["doc"] == page, f"{path.name}: {label} is on another page; {hint}"
        if kind != "equation":
            assert table[label]["kind"] == kind, f"{path.name}: {label} is not a {kind}; {hint}"
        numbers.setdefault(kind, []).append(table[label]["number"])
    for kind, sequence in numbers.items():
        last = [int(number.rsplit(".", 1)[-1]) for number in sequence]
        assert last == list(range(last[0], last[0] + len(last))), (
            f"{path.name}: {kind} numbers {sequence} are not in the notebook's order; "
            "refresh tools/colab_targets.json: make colab-targets"
        )


def site_number(page: str, anchor: str) -> str | None:
    """The number the built website shows at ``anchor`` of ``page`` (None if it shows none)."""
    text = (SITE / f"{page}.html").read_text()
    start = text.find(f'id="{anchor}"')
    if start < 0:
        return None
    window = text[start : start + 4000]
    match = re.search(r'class="(caption-number|eqno)">\s*([^<]*?)\s*<', window)
    return html.unescape(match.group(2)).strip() if match else None


@pytest.mark.skipif(not (SITE / "index.html").is_file(), reason="no built website in _build/html")
def test_every_number_is_the_built_websites():
    checked = 0
    for label, info in TARGET_MAP["labels"].items():
        if info.get("number") and (SITE / f"{info['doc']}.html").is_file():
            shown = site_number(info["doc"], info["anchor"])
            assert shown is not None and shown.lower() == info["text"].lower(), (label, shown)
            checked += 1
    for label, info in TARGET_MAP["equations"].items():
        assert site_number(info["doc"], info["anchor"]) == f"({info['number']})", label
        checked += 1
    assert checked >= 150


def sources_newer_than(path: Path) -> bool:
    built = path.stat().st_mtime
    pages = [*NOTEBOOKS, *(ROOT / "book").rglob("*.md"), ROOT / "_toc.yml", ROOT / "references.bib"]
    return any(page.stat().st_mtime > built for page in pages)


@pytest.mark.skipif(
    not ENVIRONMENT.is_file() or sources_newer_than(ENVIRONMENT),
    reason="no build of the website newer than every page",
)
def test_the_numbers_map_is_the_latest_builds():
    assert read_environment(ENVIRONMENT) == TARGET_MAP, "refresh it: make colab-targets"


# --- the converter on its own --------------------------------------------------------------------


def convert(text: str) -> str:
    return Converter("book/part1/02_population_gradient", TARGET_MAP).markdown(text)


def test_directives_roles_and_targets():
    out = convert(
        "(sec-x)=\n## The gradient\n\n"
        "```{prf:lemma} Rademacher fourth moments\n:label: lem-02-fourth-moment\n\nText.\n```\n\n"
        "````{exercise} ★ A lower bound\n:label: ex-02-parseval-bound\n\n```python\n"
        "print({prf:ref}`no`)\n```\n````\n\n"
        "{prf:ref}`the lemma <lem-02-fourth-moment>`, {eq}`eq-parseval`, {cite:t}`han2025sparsexor`"
        ", {math}`x^2`, {numref}`Figure {number} <fig-02-cost>`.\n\n$$\nL\n$$ (eq-parseval)"
    )
    assert "(sec-x)=" not in out and "## 2.3. The gradient" in out
    assert "**Lemma 2.1** (Rademacher fourth moments)" in out
    assert "**Exercise 2.1** (★ A lower bound)" in out
    assert "```python\nprint({prf:ref}`no`)\n```" in out  # code is code
    assert (
        f"[the lemma]({site_url()}book/part1/02_population_gradient.html#lem-02-fourth-moment)"
        in out
    )
    assert "[(2.2)](" in out and "$x^2$" in out and "[Figure 2.2](" in out
    assert "Han and Ghoshdastidar (2025b)" in out
    assert out.endswith("$$\nL\n\\tag{2.2}\n$$")


def test_relative_links_go_to_the_website_or_the_repository():
    out = convert("[next](03_antisymmetric_init.ipynb#sec), [a](../../tools/x.py), [b](#here)")
    assert f"[next]({site_url()}book/part1/03_antisymmetric_init.html#sec)" in out
    assert f"sxor-book/blob/{release_tag()}/tools/x.py)" in out
    assert f"[b]({site_url()}book/part1/02_population_gradient.html#here)" in out


def test_figure_directive_and_admonitions():
    out = convert(
        "```{figure} plot.png\n:name: fig-02-cost\n\nThe caption.\n```\n\n```{note}\nSay.\n```"
    )
    assert "**Fig. 2.2** The caption." in out and "/book/part1/plot.png)" in out
    assert "**Note**\n\nSay." in out and not myst_left(out)


def test_unknown_markup_is_refused():
    with pytest.raises(ValueError, match=r"directive \{sidebar\}"):
        convert("```{sidebar} x\ny\n```")
    with pytest.raises(ValueError, match=r"role \{kbd\}"):
        convert("{kbd}`x`")
    with pytest.raises(ValueError, match="unknown label"):
        convert("{prf:ref}`nowhere`")
    with pytest.raises(ValueError, match="no :label:"):
        convert("```{prf:lemma} x\ny\n```")


def test_install_cell_pins_the_release():
    cell = (
        'import sys\nif "google.colab" in sys.modules:\n'
        '    %pip install -q "sxor @ git+https://github.com/a/b@main"'
    )
    assert pin_install_cell(cell, "v9.9.9").endswith('git+https://github.com/a/b@v9.9.9"')
    assert re.fullmatch(r"v\d+\.\d+\.\d+\S*", release_tag())


def test_the_same_book_gives_the_same_files():
    path = ROOT / "book" / "part1" / "02_population_gradient.ipynb"
    nb = nbformat.read(path, as_version=4)
    page = docname(path)
    for edition in EDITIONS:
        first = colab_notebook(nb, page, edition, TARGET_MAP)
        assert nbformat.writes(first) == nbformat.writes(
            colab_notebook(nb, page, edition, TARGET_MAP)
        )
        ids = [cell.id for cell in first.cells]
        assert len(ids) == len(set(ids)), "cell ids repeat"


def test_editions_are_refused_for_unknown_pages():
    nb = nbformat.v4.new_notebook()
    with pytest.raises(ValueError, match="not a page"):
        colab_notebook(nb, "book/part1/nope", "full", TARGET_MAP)
    with pytest.raises(ValueError, match="edition"):
        colab_notebook(nb, "book/part1/02_population_gradient", "teacher", TARGET_MAP)


# --- the website's buttons -----------------------------------------------------------------------


def site_extension():
    import importlib.util

    spec = importlib.util.spec_from_file_location("sxor_site", ROOT / "_ext" / "sxor_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launch_context():
    colab = {
        "type": "link",
        "text": "Colab",
        "icon": "logo.png",
        "url": "https://x/blob/main/book/a",
    }
    return {"header_buttons": [{"label": "launch-buttons", "buttons": [colab]}]}


def test_colab_button_opens_the_full_edition_and_chapters_link_the_student_one():
    ext = site_extension()
    page = "book/part1/02_population_gradient"
    registry = {"ex": {"docname": page, "type": "exercise"}}
    app = SimpleNamespace(env=SimpleNamespace(sphinx_exercise_registry=registry))
    context = launch_context()
    ext.colab_editions(app, page, "page.html", context, None)
    buttons = context["header_buttons"][0]["buttons"]
    assert [b["url"] for b in buttons] == [colab_url("full", page), colab_url("student", page)]
    assert buttons[1]["text"] == "exercises only (Colab)"
    owner_name = "/".join(site_url().removeprefix("https://").split("/")[:2])
    assert f"/blob/{BRANCHES['full']}/part1/02_population_gradient.ipynb" in buttons[0]["url"]
    assert buttons[0]["url"].startswith("https://colab.research.google.com/github/")
    assert owner_name.split(".")[0] in buttons[0]["url"].lower()
    # a page without exercises: the full edition only
    context = launch_context()
    ext.colab_editions(app, "book/appendix/performance", "page.html", context, None)
    assert [b["text"] for b in context["header_buttons"][0]["buttons"]] == ["Colab"]


@pytest.mark.skipif(not (SITE / "index.html").is_file(), reason="no built website in _build/html")
def test_built_chapter_pages_carry_both_links():
    page = "book/part1/02_population_gradient"
    text = (SITE / f"{page}.html").read_text()
    assert f'href="{colab_url("full", page)}"' in text
    assert f'href="{colab_url("student", page)}"' in text and "exercises only (Colab)" in text
