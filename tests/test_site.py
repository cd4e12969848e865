"""What a reader sees of the committed notebooks, checked before the website is built.

The book shows the stored outputs as they are, so these checks read the notebook files:

* no stored text output line is longer than :data:`MAX_LINE` characters (longer lines are
  clipped on the page at 1400 px), and no visible code line either;
* every image output is a numbered figure: its cell carries ``mystnb.figure.caption`` and a
  unique ``mystnb.figure.name``, the cell shows one image, and the text refers to it with
  ``{numref}``;
* a notebook without widget outputs carries no widget state (it would make the page load the
  widget scripts from the internet);
* the page title is the first markdown cell, plain text, before any visible code; headings are
  not numbered by hand (the book numbers them);
* the mathematics is in ``sphinx-proof`` environments (no bold "**Lemma**" paragraphs) and each
  chapter has at least two exercises, each with a solution;
* chapters refer to each other by links, not by "Chapter 3" in plain text.

``tools/check_site.py`` checks the built website for the same things and more.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").rglob("*.ipynb"))
#: Chapters (``book/partN/NN_name.ipynb``); appendix notebooks need no exercises.
CHAPTERS = [
    p for p in NOTEBOOKS if re.fullmatch(r"\d\d_.*", p.stem) and p.parent.name.startswith("part")
]
MARKDOWN_PAGES = sorted((ROOT / "book").rglob("*.md"))
#: The longest output or code line that fits the page at 1400 px without clipping.
MAX_LINE = 100
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
HIDDEN = {"remove-cell", "remove-output", "remove_cell", "remove_output"}
HIDDEN_INPUT = {"remove-cell", "remove-input", "remove_cell", "remove_input"}
ROLE = re.compile(r"\{[a-z:-]+\}`[^`]*`")


def ids(path: Path) -> str:
    return path.name


@cache
def read(path: Path):
    """The notebook at ``path``, read once per test session (the tests only look at it)."""
    return nbformat.read(path, as_version=4)


def tags(cell) -> set[str]:
    return set(cell.metadata.get("tags", []))


def text_outputs(cell):
    """Every stored text a reader sees below ``cell``: streams and ``text/plain`` results that
    are not the fallback of an image (``<Figure size 640x480 with 1 Axes>`` is never shown)."""
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            yield output.text
        elif output.output_type in ("execute_result", "display_data"):
            data = output.get("data", {})
            if (
                not any(key.startswith("image/") or key == WIDGET_MIME for key in data)
                and "text/html" not in data
                and "text/latex" not in data
            ):
                yield data.get("text/plain", "")


def image_outputs(cell) -> int:
    return sum(
        any(key.startswith("image/") for key in output.get("data", {}))
        for output in cell.get("outputs", [])
    )


def long_lines(text: str) -> list[str]:
    # A carriage return (progress bars) overwrites the line: only the last part is shown.
    return [line for line in text.splitlines() if len(line.split("\r")[-1]) > MAX_LINE]


def markdown_of(path: Path) -> str:
    if path.suffix == ".md":
        return path.read_text()
    return "\n\n".join(cell.source for cell in read(path).cells if cell.cell_type == "markdown")


def strip_fences(text: str) -> str:
    """Markdown without its code blocks (```python ... ```) and inline code."""
    text = re.sub(
        r"^```+\s*(python|py|text|bash|sh|console|ipython3?)?\s*\n.*?^```+\s*$",
        "",
        text,
        flags=re.DOTALL | re.MULTILINE,
    )
    return text


# --- outputs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_no_stored_output_line_is_clipped(path):
    bad = []
    for index, cell in enumerate(read(path).cells):
        if cell.cell_type != "code" or tags(cell) & HIDDEN:
            continue
        for text in text_outputs(cell):
            bad += [f"cell {index}: {len(line)} chars: {line[:60]}..." for line in long_lines(text)]
    assert not bad, f"{path.name}: {len(bad)} output line(s) longer than {MAX_LINE}:\n" + "\n".join(
        bad[:10]
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_no_visible_code_line_is_clipped(path):
    bad = []
    for index, cell in enumerate(read(path).cells):
        if cell.cell_type != "code" or tags(cell) & HIDDEN_INPUT:
            continue
        bad += [
            f"cell {index}: {len(line)} chars: {line[:60]}..." for line in long_lines(cell.source)
        ]
    assert not bad, f"{path.name}: {len(bad)} code line(s) longer than {MAX_LINE}:\n" + "\n".join(
        bad[:10]
    )


def figures():
    """``(path, cell index, cell)`` of every cell that shows an image."""
    for path in NOTEBOOKS:
        for index, cell in enumerate(read(path).cells):
            if cell.cell_type == "code" and not tags(cell) & HIDDEN and image_outputs(cell):
                yield path, index, cell


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_every_figure_is_captioned_named_and_referenced(path):
    text = markdown_of(path)
    bad = []
    for _, index, cell in (f for f in figures() if f[0] == path):
        figure = cell.metadata.get("mystnb", {}).get("figure", {})
        caption, name = figure.get("caption", ""), figure.get("name", "")
        if not str(caption).strip():
            bad.append(f"cell {index}: no caption (metadata mystnb.figure.caption)")
        if not re.fullmatch(r"fig-[a-z0-9][a-z0-9-]*", str(name)):
            bad.append(
                f"cell {index}: no name 'fig-NN-...' (metadata mystnb.figure.name), got {name!r}"
            )
        elif not re.search(r"\{numref\}`([^`<]*<)?" + re.escape(name) + r">?`", text):
            bad.append(f"cell {index}: {name} is never referenced with {{numref}}")
        if image_outputs(cell) > 1:
            bad.append(
                f"cell {index}: {image_outputs(cell)} images under one caption (one figure per cell)"
            )
    assert not bad, f"{path.name}:\n" + "\n".join(bad)


#: Widest PNG (pixels) that the text column at 1400 px shows at two thirds of its size or more.
MAX_FIGURE_PX = 1200


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_figures_are_not_shrunk_until_unreadable(path):
    import base64

    bad = []
    for _, index, cell in (f for f in figures() if f[0] == path):
        for output in cell.outputs:
            data = output.get("data", {}).get("image/png")
            if data:
                width = int.from_bytes(base64.b64decode(data[:44])[16:20], "big")
                if width > MAX_FIGURE_PX:
                    bad.append(f"cell {index}: {width} px wide")
    assert not bad, (
        f"{path.name}: figures wider than {MAX_FIGURE_PX} px are shrunk below 2/3 on the "
        f"page (at most two panels side by side, or stack them): {bad}"
    )


def test_figure_names_are_unique_across_the_book():
    seen: dict[str, str] = {}
    for path, _index, cell in figures():
        name = cell.metadata.get("mystnb", {}).get("figure", {}).get("name")
        if name:
            assert name not in seen, f"{name} used in {seen[name]} and {path.name}"
            seen[name] = path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_no_widget_state_without_widgets(path):
    nb = read(path)
    has_widgets = any(
        WIDGET_MIME in output.get("data", {})
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
    if not has_widgets:
        assert "widgets" not in nb.metadata, (
            f"{path.name}: widget state stored but no cell shows a widget "
            "(re-run tools/execute_notebooks.py, which strips it)"
        )


def test_execute_tool_strips_unused_widget_state():
    from tools.execute_notebooks import strip_unused_widget_state

    plain = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
    plain.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    assert strip_unused_widget_state(plain) and "widgets" not in plain.metadata
    shown = nbformat.v4.new_output("display_data", data={WIDGET_MIME: {"model_id": "x"}})
    widget = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("w", outputs=[shown])])
    widget.metadata["widgets"] = {"state": {}}
    assert not strip_unused_widget_state(widget) and "widgets" in widget.metadata


# --- structure ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_title_first_in_plain_text(path):
    visible = [
        c for c in read(path).cells if not (c.cell_type == "code" and tags(c) & {"remove-cell"})
    ]
    first = visible[0]
    assert first.cell_type == "markdown", (
        f"{path.name}: the first visible cell is code, not the title"
    )
    title = first.source.lstrip().splitlines()[0]
    assert re.fullmatch(r"# [^#].*", title), (
        f"{path.name}: first cell must start with '# Title', got {title!r}"
    )
    assert not re.search(r"[$\\{}`]", title), (
        f"{path.name}: page title must be plain text, got {title!r}"
    )


@pytest.mark.parametrize("path", NOTEBOOKS + MARKDOWN_PAGES, ids=ids)
def test_headings_are_not_numbered_by_hand(path):
    text = strip_fences(markdown_of(path))
    bad = re.findall(r"^#{1,6}\s+(?:§\s*)?\d+(?:\.\d+)*\.?\s.*$", text, flags=re.MULTILINE)
    assert not bad, f"{path.name}: hand-numbered headings (the book numbers them): {bad}"


BOLD_ENVIRONMENT = re.compile(
    r"\*\*\s*(Lemma|Theorem|Proposition|Corollary|Definition|Proof|Claim)\b[^*]{0,80}\*\*",
    re.IGNORECASE,
)


@pytest.mark.parametrize("path", CHAPTERS, ids=ids)
def test_mathematics_is_in_proof_environments(path):
    text = strip_fences(markdown_of(path))
    bad = BOLD_ENVIRONMENT.findall(text)
    assert not bad, f"{path.name}: bold paragraphs {bad}: use {{prf:lemma}} etc. (sphinx-proof)"


@pytest.mark.parametrize("path", CHAPTERS, ids=ids)
def test_at_least_two_exercises_each_with_a_solution(path):
    text = markdown_of(path)
    exercises = re.findall(
        r"^(?:```+|:::+)\{exercise(?:-start)?\}[^\n]*\n(?::[a-z-]+:[^\n]*\n)*?:label: *(\S+)",
        text,
        re.MULTILINE,
    )
    solutions = set(re.findall(r"^(?:```+|:::+)\{solution(?:-start)?\} *(\S+)", text, re.MULTILINE))
    assert len(exercises) >= 2, (
        f"{path.name}: {len(exercises)} labelled exercise(s), want at least 2"
    )
    missing = [label for label in exercises if label not in solutions]
    assert not missing, f"{path.name}: exercises without a solution: {missing}"
    starts = len(re.findall(r"^(?:```+|:::+)\{solution-start\}", text, re.MULTILINE))
    ends = len(re.findall(r"^(?:```+|:::+)\{solution-end\}", text, re.MULTILINE))
    assert starts == ends, f"{path.name}: {starts} solution-start but {ends} solution-end"


@pytest.mark.parametrize("path", NOTEBOOKS + MARKDOWN_PAGES, ids=ids)
def test_chapters_are_referred_to_by_links(path):
    text = ROLE.sub("", strip_fences(markdown_of(path)))
    text = re.sub(r"\[[^\]]*\]\([^)]*\)", "", text)  # [text](link) is a link too
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code is not prose
    bad = re.findall(r"\b[Cc]hapters? \d+\b", text)
    assert not bad, (
        f"{path.name}: plain-text chapter references {bad}: use {{doc}}`../part1/03_...`"
    )


# --- API reference ------------------------------------------------------------------------------

API_PAGES = sorted((ROOT / "book" / "appendix").glob("api*.md"))


def documented_modules() -> list[str]:
    names = []
    for page in API_PAGES:
        names += re.findall(r"^\.\. automodule:: (\S+)", page.read_text(), re.MULTILINE)
    return names


def test_every_module_of_sxor_has_its_place_in_the_api_reference():
    import pkgutil

    import sxor

    modules = {"sxor"} | {
        info.name
        for info in pkgutil.walk_packages(sxor.__path__, "sxor.")
        if not info.name.split(".")[-1].startswith("_")
    }
    documented = documented_modules()
    missing = sorted(modules - set(documented))
    stale = sorted(set(documented) - modules)
    assert not missing, (
        f"modules missing from book/appendix/api_*.md (add an automodule): {missing}"
    )
    assert not stale, f"book/appendix/api_*.md documents modules that do not exist: {stale}"
    twice = sorted({name for name in documented if documented.count(name) > 1})
    assert not twice, f"modules documented twice: {twice}"


# --- the website check itself (tools/check_site.py) ---------------------------------------------


def site_check():
    from tools import check_site

    return check_site


PAGE = """<html><head><title>{title}</title></head><body>
<div class="bd-sidebar-primary"><nav><a href="page.html">{nav}</a></nav></div>
<article class="bd-article">{body}</article></body></html>"""


def problems_of(tmp_path, title="1. Plain", nav="1. Plain", body=""):
    check_site = site_check()
    page = tmp_path / "page.html"
    page.write_text(PAGE.format(title=title, nav=nav, body=body))
    (tmp_path / "fig.png").write_bytes(b"")
    problems: list[str] = []
    check_site.check_page(page, tmp_path, problems)
    return problems


def test_site_check_passes_a_clean_page(tmp_path):
    body = (
        '<figure><img src="fig.png"/><figcaption><span class="caption-number">Fig. 1.1 </span>'
        "</figcaption></figure><pre>" + "x" * 100 + "</pre>"
        '<div class="pst-scrollable-table-container"><table></table></div>'
        '<div class="math">\\[ y = -x_{i^*}x_{j^*} \\]</div>'
    )
    assert problems_of(tmp_path, body=body) == []


def test_site_check_finds_each_kind_of_problem(tmp_path):
    assert any("<title>" in p for p in problems_of(tmp_path, title="5. Against \\(d\\)"))
    assert any("sidebar" in p for p in problems_of(tmp_path, nav="5. Against $d$"))
    assert any(
        "bibliography" in p
        for p in problems_of(
            tmp_path, body='<div class="citation">Kou. Lower bound for $k$-sparse parity.</div>'
        )
    )
    assert any("numbered caption" in p for p in problems_of(tmp_path, body='<img src="fig.png"/>'))
    assert any(
        "longer than 100" in p for p in problems_of(tmp_path, body="<pre>" + "x" * 101 + "</pre>")
    )
    assert any(
        "table" in p for p in problems_of(tmp_path, body="<table><tr><td>1</td></tr></table>")
    )
    assert any(
        "wider than a phone" in p
        for p in problems_of(tmp_path, body='<div style="width: 1200px">x</div>')
    )
    long_equation = "\\[" + " + ".join(f"\\frac{{a_{k}}}{{b_{k}}}" for k in range(40)) + "\\]"
    assert any(
        "display equation" in p
        for p in problems_of(tmp_path, body=f'<div class="math">{long_equation}</div>')
    )
    assert any(
        "broken link" in p for p in problems_of(tmp_path, body='<a href="missing.html">x</a>')
    )
    import struct
    import zlib

    def png(width):  # a valid PNG header is all the check reads
        ihdr = struct.pack(">IIBBBBB", width, 10, 8, 2, 0, 0, 0)
        return (
            b"\x89PNG\r\n\x1a\n"
            + struct.pack(">I", 13)
            + b"IHDR"
            + ihdr
            + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
        )

    captioned = (
        '<figure><img src="wide.png"/><figcaption><span class="caption-number">Fig. 1 </span>'
        "</figcaption></figure>"
    )
    (tmp_path / "wide.png").write_bytes(png(2000))
    assert any("2000 px wide" in p for p in problems_of(tmp_path, body=captioned))
    (tmp_path / "wide.png").write_bytes(png(1000))
    assert problems_of(tmp_path, body=captioned) == []


def test_equation_width_estimate_grows_with_the_equation():
    tex_width_em = site_check().tex_width_em
    short, long = r"y = -x_{i^*}x_{j^*}", r"y = -x_{i^*}x_{j^*},\qquad " * 6
    assert 0 < tex_width_em(short) < 10 < tex_width_em(long)
    assert tex_width_em(r"\frac{a}{b}") < tex_width_em("ab")  # stacked, not side by side
    assert tex_width_em(r"a \\ b") == tex_width_em("a")  # the widest line counts


def test_execute_tool_shortens_widget_fallbacks():
    from tools.execute_notebooks import WIDGET_FALLBACK, shorten_widget_fallbacks

    shown = nbformat.v4.new_output(
        "display_data",
        data={WIDGET_MIME: {"model_id": "x"}, "text/plain": "interactive(" + "x" * 200 + ")"},
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("w", outputs=[shown])])
    assert shorten_widget_fallbacks(nb) == 1 and shorten_widget_fallbacks(nb) == 0
    assert (
        nb.cells[0].outputs[0]["data"]["text/plain"] == WIDGET_FALLBACK
        and len(WIDGET_FALLBACK) <= 100
    )


# --- offline: nothing fetched from another host (tools/check_site.py check_offline) -------------


def test_site_check_fails_on_anything_loaded_from_another_host(tmp_path):
    check_site = site_check()
    loads = {
        '<script src="https://cdn.jsdelivr.net/npm/x/embed-amd.js"></script>': "embed-amd",
        '<script src="//cdnjs.cloudflare.com/require.min.js"></script>': "require.min",
        '<link rel="stylesheet" href="https://fonts.example.org/a.css"/>': "a.css",
        '<img src="http://example.org/fig.png"/>': "fig.png",
        '<img srcset="fig.png 1x, https://example.org/fig2.png 2x"/>': "fig2.png",
        '<div style="background: url(https://example.org/bg.png)">x</div>': "bg.png",
        '<style>@import "https://example.org/more.css";</style>': "more.css",
    }
    for html, name in loads.items():
        page = tmp_path / "page.html"
        page.write_text(PAGE.format(title="t", nav="t", body=html))
        problems: list[str] = []
        check_site.check_offline(page, tmp_path, problems)
        assert len(problems) == 1 and name in problems[0] and "another host" in problems[0], (
            html,
            problems,
        )


def test_site_check_allows_links_and_local_assets(tmp_path):
    check_site = site_check()
    body = (
        '<a href="https://arxiv.org/abs/2502.07553v2">paper</a>'
        '<script src="../_static/mathjax/tex-chtml.js"></script>'
        '<link rel="stylesheet" href="_static/sxor.css"/><link rel="canonical" href="https://x.org/"/>'
        '<img src="fig.png"/><script>const URL = "https://unpkg.com/thebe/lib/index.js";</script>'
    )
    page = tmp_path / "page.html"
    page.write_text(PAGE.format(title="t", nav="t", body=body))
    problems: list[str] = []
    check_site.check_offline(page, tmp_path, problems)
    assert problems == []


def test_requested_urls_keeps_the_pages_requests_only(tmp_path):
    import json

    check_site = site_check()
    log = {
        "constants": {"logEventTypes": {"URL_REQUEST_START_JOB": 7, "OTHER": 1}},
        "events": [
            {
                "type": 7,
                "params": {
                    "url": "https://cdn.example.org/a.js",
                    "initiator": "null",
                    "network_isolation_key": "file:// file://",
                },
            },
            {
                "type": 7,
                "params": {
                    "url": "https://update.example.com/u",
                    "initiator": "not an origin",
                    "network_isolation_key": "null null",
                },
            },
            {"type": 1, "params": {"url": "https://other.example.org/b.js", "initiator": "null"}},
            {"type": 7, "params": {"url": "file:///tmp/x.html", "initiator": "null"}},
        ],
    }
    path = tmp_path / "net.json"
    path.write_text(json.dumps(log)[:-2] + ",")  # Chromium killed mid-write leaves the log open
    assert check_site.requested_urls(path) == {"https://cdn.example.org/a.js"}
    assert check_site.requested_urls(tmp_path / "missing.json") == set()


def test_script_errors_are_read_from_the_console_log():
    log = (
        "[1:1:1201/1.2:INFO:CONSOLE:65] \"Uncaught SyntaxError: Identifier 'THEBE_JS_URL' has already been "
        'declared", source: file:///x.html (65)\n'
        '[1:1:1201/1.3:INFO:CONSOLE:1] "[PST]: Changed to auto mode", source: file:///y.js (1)\n'
        '[1:1:1201/1.4:INFO:CONSOLE(12)] "Uncaught ReferenceError: x is not defined", source: z (12)\n'
    )
    assert site_check().script_errors(log) == [
        "Uncaught SyntaxError: Identifier 'THEBE_JS_URL' has already been declared",
        "Uncaught ReferenceError: x is not defined",
    ]


CHROMIUM = site_check().find_chromium()


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on the PATH (apt-get install chromium)")
def test_browser_check_measures_clipped_math_small_figures_and_requests(tmp_path):
    """A real page in headless Chromium: an inline formula wider than a phone, a figure shrunk
    to a third on a phone and a script from another host are each reported; the same page with
    the book's CSS rule for inline math and a single-panel figure is clean."""
    import shutil
    import struct
    import zlib

    check_site = site_check()

    def png(width, height=40):
        raw = b"".join(b"\x00" + b"\xff\xff\xff" * width for _ in range(height))
        ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)

        def chunk(kind, data):
            return (
                struct.pack(">I", len(data))
                + kind
                + data
                + struct.pack(">I", zlib.crc32(kind + data))
            )

        return (
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b"")
        )

    (tmp_path / "wide.png").write_bytes(png(1200))
    (tmp_path / "medium.png").write_bytes(png(900))
    (tmp_path / "narrow.png").write_bytes(png(600))
    css = (ROOT / "_static" / "sxor.css").read_text()
    # a stand-in for MathJax's inline box: an inline-block formula as wide as MathJax draws it
    math = '<mjx-container jax="CHTML"><span style="display:inline-block;width:700px">f(x)</span></mjx-container>'
    template = (
        "<html><head><style>article.bd-article{{overflow:hidden}} figure img{{max-width:100%}}"
        "{css}</style></head><body>"
        '<article class="bd-article"><p>Text {math} text.</p>'
        '<div class="math"><mjx-container display="true" jax="CHTML" style="display:block;'
        'overflow-x:auto"><mjx-math style="display:inline-block;width:600px">g</mjx-math>'
        "</mjx-container></div>"
        '<figure><img src="{img}"/></figure>{script}</article></body></html>'
    )
    bad = tmp_path / "bad.html"
    bad.write_text(
        template.format(
            css="",
            math=math,
            img="wide.png",
            script='<script src="https://cdn.example.org/a.js"></script>'
            "<script>const A = 1;</script><script>const A = 2;</script>",
        )
    )
    good = tmp_path / "good.html"
    # the book's CSS and script: the formula scrolls in its box, the wide figure in its figure box
    shutil.copy(ROOT / "_static" / "sxor.js", tmp_path / "sxor.js")
    good.write_text(
        template.format(
            css=css, math=math, img="medium.png", script='<script src="sxor.js"></script>'
        )
    )
    narrow = tmp_path / "narrow.html"
    narrow.write_text(template.format(css=css, math=math, img="narrow.png", script=""))
    counts: dict = {}
    problems = check_site.browser_check(tmp_path, [bad], counts=counts)
    assert any("inline math clipped" in p and "390 px" in p for p in problems), problems
    assert any("figure shown at" in p for p in problems), problems
    assert any("requested https://cdn.example.org/a.js" in p for p in problems), problems
    assert any("script error: Uncaught SyntaxError" in p for p in problems), problems
    assert counts["external"] == 1 and counts["clipped"][390] >= 2
    assert counts["phone"]["wide_equation"] == 1 and counts["phone"]["no_cue"] == 1
    counts = {}
    assert check_site.browser_check(tmp_path, [good, narrow], counts=counts) == []
    assert counts["phone"]["wide_equation"] == 2 and counts["phone"]["no_cue"] == 0, (
        "the book's CSS draws a shadow at the edge of an equation that scrolls"
    )


def test_fallbacks_only_rewrites_stored_widget_lines(tmp_path):
    from tools.execute_notebooks import WIDGET_FALLBACK, rewrite_fallbacks

    shown = nbformat.v4.new_output(
        "display_data", data={WIDGET_MIME: {"model_id": "x"}, "text/plain": "old"}
    )
    path = tmp_path / "w.ipynb"
    nbformat.write(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("w", outputs=[shown])]), path
    )
    assert rewrite_fallbacks(path) == 1 and rewrite_fallbacks(path) == 0
    assert (
        nbformat.read(path, as_version=4).cells[0].outputs[0]["data"]["text/plain"]
        == WIDGET_FALLBACK
    )
    assert "Colab" in WIDGET_FALLBACK


def test_the_website_renders_no_widget_and_loads_no_widget_script():
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]
    assert config["nb_ipywidgets_js"] == {}, (
        "myst-nb would load require.js and the widget manager from CDNs"
    )
    assert ["*", WIDGET_MIME, None] in config["nb_mime_priority_overrides"]


def test_equation_width_estimate_accepts_a_backslash_before_a_newline_or_at_the_end():
    tex_width_em = site_check().tex_width_em
    # "\<newline>" is a control space in TeX; a lone trailing backslash must not crash the check
    assert tex_width_em("a\\\nb") > tex_width_em("a")
    assert tex_width_em("a\\") >= tex_width_em("a")
    assert tex_width_em("\\frac{a}{\\") > 0


# --- one number per theorem: results cited from a paper carry the paper's number only ----------

CITED = re.compile(r"(Han and Ghoshdastidar|Alcalde, Fantuzzi and Zuazua)")
PROOF_FENCE = re.compile(
    r"```\{prf:(theorem|lemma|corollary|proposition)\}([^\n]*)\n((?::[\w-]+:[^\n]*\n)*)"
)


def book_sources() -> list[tuple[str, str]]:
    found = [(str(p.relative_to(ROOT)), p.read_text()) for p in sorted(ROOT.glob("book/**/*.md"))]
    for path in sorted(ROOT.glob("book/**/*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
        found.append((str(path.relative_to(ROOT)), text))
    return found


def test_cited_results_carry_the_paper_number_and_no_number_of_the_book():
    """A theorem box that states a paper's result has no book number (:nonumber:, class
    sxor-cited) and a title that starts with the paper's own number ("Theorem 2 of ..."), so a
    link's text ("Theorem 2 of the paper") never contradicts the box."""
    cited = []
    for name, text in book_sources():
        for match in PROOF_FENCE.finditer(text):
            kind, title, options = match.groups()
            if not CITED.search(title):
                continue
            cited.append(title)
            where = f"{name}: {kind} {title.strip()!r}"
            assert ":nonumber:" in options and "sxor-cited" in options, where
            assert re.match(r"\s*(The \w+ \w+|[A-Z][a-z]+ [\d.]+) of ", title), where
    assert len(cited) >= 5, cited


def test_cited_titles_lose_the_parentheses_of_sphinx_proof():
    import importlib.util

    from docutils import nodes

    spec = importlib.util.spec_from_file_location("sxor_site", ROOT / "_ext" / "sxor_site.py")
    site = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(site)
    box = nodes.container(classes=["proof", "theorem", "sxor-cited"])
    box += nodes.title(
        "", "", nodes.Text(" (Theorem 2 of "), nodes.emphasis("", "X"), nodes.Text(")")
    )
    plain = nodes.container(classes=["proof", "theorem"])
    plain += nodes.title("", "", nodes.Text(" (Mine)"))
    document = nodes.document(None, None)
    document += [box, plain]
    site.cited_titles(None, document)
    assert box[0].astext() == "Theorem 2 of X"
    assert plain[0].astext() == " (Mine)"
