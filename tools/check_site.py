"""Check the built website for what a reader would lose or stumble over.

Usage: ``python tools/check_site.py _build/html [--browser]``. Exit status 1 on any problem.
``make test`` runs it after the strict build. Checks, from the HTML files alone:

* every page of ``_toc.yml`` exists; no cell output shows a traceback; every relative link and
  image resolves; MathJax is served from the site itself (the book works offline);
* no raw TeX (``$``, ``\\(``, ``\\[``) in a page's ``<title>``, in the navigation sidebar
  (page titles come from the first heading: write it in plain text) or in a bibliography entry;
* every image in a page is a numbered figure (inside ``<figure>`` with a "Fig. N" caption), at
  most :data:`MAX_FIGURE_PX` pixels wide (wider ones are shrunk until their labels are unreadable);
* no line of a code cell, an output or a code block is longer than :data:`MAX_LINE` characters
  (it would be clipped at 1400 px);
* no MyST directive or role text is visible as prose (a fence such as ```` ```{prf:proof} ````, a
  role such as ``{prf:ref}`x```, an option line such as ``:label:``): the sign of a directive
  that did not parse (:func:`check_directive_text`); and no exercise has two solutions
  (:func:`check_solutions`);
* nothing forces the page wider than a phone's screen where that is visible in the HTML: a table
  outside a scrolling container, an element with a fixed width over :data:`PHONE_WIDTH` pixels,
  a display equation far too long for the page (estimated from its TeX, see
  :func:`tex_width_em`; ``--browser`` measures it).

With ``--browser`` (needs ``chromium`` on the PATH) it also opens every page in headless
Chromium at 1400 and 390 pixels and measures what the HTML cannot tell: the page's scroll width
and every ``pre``, display equation and figure that is wider than its box.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import yaml

#: The longest line of a code cell or an output that fits the page at 1400 px.
MAX_LINE = 100
#: Widest figure, in pixels of its PNG, shown at two thirds of its size or more in the text
#: column at 1400 px (about 800 px); a wider one has unreadable labels (3 panels or more side by
#: side, or a figure size over 12 inches at the book's 100 dpi).
MAX_FIGURE_PX = 1200
#: A phone's screen width in CSS pixels (iPhone 12-15).
PHONE_WIDTH = 390
#: Widest display equation, in the units of :func:`tex_width_em`, that passes the static check.
#: Calibrated in Chromium at 1400 px: every estimate above 43.8 was clipped (by 89 to 368 px),
#: and 42.1, 42.5 and 43.6 fitted; the estimate is rough (equations estimated at 39.7 to 42.7
#: were clipped by 8 to 57 px), so ``--browser`` is the precise check.
PAGE_EM = 43.8
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str], parent: "Node | None") -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self):
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()

    def ancestors(self):
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def find(self, tag: str | None = None, cls: str | None = None):
        return [
            n for n in self.iter()
            if (tag is None or n.tag == tag) and (cls is None or cls in n.classes)
        ]


class _Tree(HTMLParser):
    """A forgiving HTML-to-tree parser (Sphinx writes well-formed HTML)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.current = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(Node(tag, {k: v or "" for k, v in attrs}, self.current))

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def parse(text: str) -> Node:
    tree = _Tree()
    tree.feed(text)
    return tree.root


def toc_pages(toc: dict) -> list[str]:
    """Every ``file:`` entry of ``_toc.yml``, depth first."""
    pages = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                pages.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc.get("parts", toc.get("chapters", [])))
    return pages


def png_width(path: Path) -> int | None:
    """Width in pixels of the PNG at ``path`` (from its header), None for anything else."""
    try:
        head = path.resolve().read_bytes()[:24]
    except OSError:
        return None
    if head[:8] != b"\x89PNG\r\n\x1a\n" or len(head) < 24:
        return None
    return int.from_bytes(head[16:20], "big")


RAW_TEX = re.compile(r"\$|\\\(|\\\)|\\\[|\\[a-zA-Z]+\{")


def tex_width_em(tex: str) -> float:
    """A rough width, in em, of the widest line of a display equation written in TeX.

    Good enough to catch an equation far too long for the page, not to measure one: each
    visible symbol counts about 0.55 em, ``\\frac{a}{b}`` the wider of ``a`` and ``b``,
    sub- and superscripts 0.7 of their size, ``\\quad`` 1 em, ``\\qquad`` 2 em; lines are split
    at ``\\\\``, and only the widest cell of an ``aligned`` row counts once per row.
    """
    tex = re.sub(r"\\(begin|end)\{[a-z*]+\}(\{[^}]*\})?", " ", tex)
    tex = re.sub(r"\\(label|tag)\{[^}]*\}", "", tex)
    return max((_line_width(line) for line in re.split(r"\\\\", tex)), default=0.0)


def _group(tex: str, start: int) -> tuple[str, int]:
    """The braced group (or single token) at ``tex[start:]`` and the index after it."""
    while start < len(tex) and tex[start] == " ":
        start += 1
    if start >= len(tex):
        return "", start
    if tex[start] == "{":
        depth = 0
        for i in range(start, len(tex)):
            depth += tex[i] == "{"
            depth -= tex[i] == "}"
            if depth == 0:
                return tex[start + 1:i], i + 1
        return tex[start + 1:], len(tex)
    if tex[start] == "\\":
        match = re.match(r"\\([a-zA-Z]+|.)", tex[start:])
        return match.group(0), start + len(match.group(0))
    return tex[start], start + 1


SPACES = {"quad": 1.0, "qquad": 2.0, ",": 0.17, ";": 0.28, ":": 0.22, "!": -0.17, " ": 0.3}
ZERO = {"left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr", "displaystyle",
        "textstyle", "limits", "nolimits", "mathrm", "mathbb", "mathcal", "mathbf", "boldsymbol",
        "mathit", "operatorname", "text", "mbox", "hat", "tilde", "bar", "vec", "dot", "ddot",
        "overline", "underline", "widetilde", "widehat", "nonumber", "notag", "phantom"}


def _line_width(tex: str) -> float:
    width, i = 0.0, 0
    while i < len(tex):
        ch = tex[i]
        if ch == "\\":
            match = re.match(r"\\([a-zA-Z]+|.)", tex[i:])
            name = match.group(1)
            i += len(match.group(0))
            if name in ("frac", "dfrac", "tfrac", "binom", "tbinom", "dbinom"):
                top, i = _group(tex, i)
                bottom, i = _group(tex, i)
                scale = 0.75 if name.startswith("t") else 1.0
                width += scale * max(_line_width(top), _line_width(bottom)) + 0.3
            elif name in ("sqrt",):
                inner, i = _group(tex, i)
                width += _line_width(inner) + 0.8
            elif name in SPACES:
                width += SPACES[name]
            elif name in ("hspace", "phantom"):
                _, i = _group(tex, i)
            elif name in ZERO:
                if name in ("text", "mbox", "operatorname", "mathrm"):
                    inner, i = _group(tex, i)
                    width += 0.5 * len(inner) if name in ("text", "mbox") else _line_width(inner)
            else:
                width += 1.0  # a symbol: \alpha, \sum, \langle ...
        elif ch in "_^":
            inner, i = _group(tex, i + 1)
            width += 0.7 * _line_width(inner)
        elif ch in "{}&":
            i += 1
        elif ch.isspace():
            i += 1
        else:
            width += 0.55 if ch.isalnum() else 0.75
            i += 1
    return width


def check_page(page: Path, site: Path, problems: list[str], seen: set[str] | None = None) -> bool:
    """Append the problems of one page; return True when it contains typeset math.

    ``seen`` collects problems shared by every page (the sidebar), reported once."""
    seen = set() if seen is None else seen
    text = page.read_text(errors="replace")
    name = page.relative_to(site).as_posix()
    root = parse(text)
    if "Traceback (most recent call last)" in text:
        problems.append(f"{name}: a cell output shows a traceback")

    for title in root.find("title"):
        if RAW_TEX.search(title.text()):
            problems.append(f"{name}: raw TeX in <title>: {title.text().strip()!r}")
    for sidebar in root.find(cls="bd-sidebar-primary")[:1]:
        for link in sidebar.find("a"):
            if RAW_TEX.search(link.text()) and link.text().strip() not in seen:
                seen.add(link.text().strip())
                problems.append(f"raw TeX in the navigation sidebar (every page): {link.text().strip()!r}:"
                                " write the page's first heading in plain text")

    for node in root.iter():
        for key in ("href", "src"):
            target = node.attrs.get(key)
            if not target:
                continue
            url = urlparse(target)
            if url.scheme or target.startswith(("#", "mailto:", "//")) or not url.path:
                if node.tag == "script" and "mathjax" in target.lower() and url.scheme:
                    problems.append(f"{name}: MathJax loaded from the network ({target})")
                continue
            if not (page.parent / unquote(url.path)).resolve().exists():
                problems.append(f"{name}: broken link {target}")

    for citation in root.find("div", "citation"):
        if RAW_TEX.search(citation.text()):
            problems.append(f"{name}: raw TeX in a bibliography entry: {' '.join(citation.text().split())[:80]}"
                            " (write Unicode in references.bib)")

    articles = root.find("article", "bd-article")
    if not articles:
        return 'class="math' in text
    article = articles[0]
    check_directive_text(article, name, problems)
    check_solutions(article, name, problems)

    for img in article.find("img"):
        if "_static" in img.attrs.get("src", ""):
            continue
        figure = next((a for a in img.ancestors() if a.tag == "figure"), None)
        numbered = figure is not None and figure.find("span", "caption-number")
        if not numbered:
            problems.append(f"{name}: image without a numbered caption: {Path(img.attrs.get('src', '?')).name}"
                            " (cell metadata mystnb.figure.caption and .name)")
        width = png_width(page.parent / unquote(img.attrs.get("src", "")))
        if width is not None and width > MAX_FIGURE_PX:
            problems.append(f"{name}: figure {width} px wide, shrunk below 2/3 at 1400 px: at most two panels "
                            f"side by side ({Path(img.attrs['src']).name})")

    clipped = []
    for pre in article.find("pre"):
        where = "output" if any("cell_output" in a.classes for a in pre.ancestors()) else "code"
        for line in pre.text().splitlines():
            if len(line) > MAX_LINE:
                clipped.append(f"{where} line of {len(line)} chars: {line.strip()[:50]}...")
    if clipped:
        problems.append(f"{name}: {len(clipped)} line(s) longer than {MAX_LINE} characters, clipped "
                        f"at 1400 px; first: {clipped[0]}")

    for table in article.find("table"):
        if table.classes & {"indextable", "modindextable"}:
            continue  # the general and module indexes: short entries that wrap
        scrolls = any(
            a.classes & {"pst-scrollable-table-container", "table-wrapper", "output_html"}
            or "overflow" in a.attrs.get("style", "")
            for a in table.ancestors()
        )
        if not scrolls:
            problems.append(f"{name}: a table outside a scrolling container widens the page on a phone")
    for node in article.iter():
        style = node.attrs.get("style", "")
        for match in re.finditer(r"(?<![-\w])(min-)?width:\s*(\d+(?:\.\d+)?)px", style):
            if float(match.group(2)) > PHONE_WIDTH and "max-width" not in style:
                problems.append(f"{name}: <{node.tag}> fixed at {match.group(2)} px, wider than a phone")
        if node.tag == "img" and node.attrs.get("width", "").isdigit() and "style" not in node.attrs:
            pass  # the theme caps images at 100% width

    for div in article.find("div", "math"):
        tex = div.text().strip()
        tex = re.sub(r"^\\\[|\\\]$", "", tex).strip()
        width = tex_width_em(tex)
        if width > PAGE_EM:
            first = " ".join(tex.split())[:60]
            problems.append(f"{name}: display equation about {width:.0f} em wide, the page has "
                            f"{PAGE_EM:.0f}: split it (aligned): {first}...")
    return 'class="math' in text


#: MyST syntax that must never reach a reader as text: a directive fence, a role, an option line.
DIRECTIVE_TEXT = re.compile(
    r"(`{3,}|~{3,}|:{3,})\{[\w:-]+\}"          # ```{prf:proof}, :::{note}
    r"|\{[a-z][\w-]*(:[\w-]+)*\}`"                # {prf:ref}`...`, {ref}`...`, {doc}`...`
    r"|(^|\n)[ \t]*:(label|class|name|nonumber|enumerated|hidden|width|align|figwidth):[ \t]"
)
#: Elements whose text shows code on purpose (directive syntax there is an example, not a bug).
CODE_TAGS = {"pre", "code", "script", "style", "kbd", "samp"}


def visible_prose(node: Node) -> str:
    """The text of ``node`` outside code elements and highlighted blocks, as a reader sees it."""
    if isinstance(node, str):
        return node
    if node.tag in CODE_TAGS or node.classes & {"highlight", "cell_input", "cell_output"}:
        return " "
    return "".join(c if isinstance(c, str) else visible_prose(c) for c in node.children)


def check_directive_text(article: Node, name: str, problems: list[str]) -> None:
    """Directive or role syntax visible as prose in the page (it failed to parse)."""
    prose = visible_prose(article)
    for match in list(DIRECTIVE_TEXT.finditer(prose))[:3]:
        at = match.start()
        context = " ".join(prose[max(0, at - 20): at + 50].split())
        problems.append(f"{name}: MyST syntax shown as text ({match.group(0).strip()!r}): ...{context}... "
                        "(a directive or role that did not parse: check its fence and info string)")


def check_solutions(article: Node, name: str, problems: list[str]) -> None:
    """An exercise (sphinx-exercise) with more than one solution on the page."""
    counts: dict[str, int] = {}
    for div in article.find("div", "solution"):
        titles = [p for p in div.find("p", "admonition-title")][:1]
        links = titles[0].find("a") if titles else []
        target = links[0].attrs.get("href", "?") if links else "?"
        counts[target] = counts.get(target, 0) + 1
    for target, count in sorted(counts.items()):
        if count > 1:
            problems.append(f"{name}: {count} solutions to the exercise {target}: keep one")


BROWSER_PAGE = """<!DOCTYPE html><html><body><div id="out">pending</div>
<iframe id="f" src="{src}" style="width:{width}px;height:900px;border:0"></iframe>
<script>
const f = document.getElementById("f");
f.onload = () => {{
  const w = f.contentWindow, d = f.contentDocument;
  const measure = () => {{
    const bad = [];
    const page = d.documentElement.scrollWidth;
    if (page > {width} + 1) bad.push("page scrolls sideways: " + page + " px wide");
    // On a phone a long code line or equation may scroll inside its own box; only the page may not.
    if ({width} <= {phone}) {{ document.getElementById("out").textContent = "RESULT" + JSON.stringify(bad) + "END"; return; }}
    for (const el of d.querySelectorAll("article pre, article mjx-container[display=true], article figure img, article table")) {{
      if (!el.getClientRects().length || !el.clientWidth) continue;  // collapsed (hidden input)
      const box = el.tagName === "IMG" ? el : (el.closest(".pst-scrollable-table-container") || el);
      if (el.scrollWidth > box.clientWidth + 2)
        bad.push(el.tagName.toLowerCase() + " clipped by " + (el.scrollWidth - box.clientWidth) +
                 " px: " + (el.textContent || el.getAttribute("src") || "").trim().slice(0, 50));
    }}
    document.getElementById("out").textContent = "RESULT" + JSON.stringify(bad) + "END";
  }};
  const ready = w.MathJax && w.MathJax.startup && w.MathJax.startup.promise;
  (ready ? w.MathJax.startup.promise : Promise.resolve()).then(() => setTimeout(measure, 200));
}};
</script></body></html>"""


def browser_check(site: Path, pages: list[Path], widths=(1400, PHONE_WIDTH)) -> list[str]:
    """Open every page in headless Chromium at each width; report what is wider than its box."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        return ["--browser: no chromium on the PATH"]
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for page in pages:
            for width in widths:
                wrapper = Path(tmp) / "wrapper.html"
                wrapper.write_text(BROWSER_PAGE.format(src=page.resolve().as_uri(), width=width, phone=PHONE_WIDTH))
                result = subprocess.run(
                    [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                     "--allow-file-access-from-files", "--disable-web-security",
                     "--disable-background-networking", "--disable-component-update",
                     f"--user-data-dir={tmp}/profile", "--window-size=1600,1000",
                     "--virtual-time-budget=15000", "--dump-dom", wrapper.as_uri()],
                    capture_output=True, text=True, timeout=120,
                )
                match = re.search(r"RESULT(.*?)END", result.stdout, re.S)
                name = f"{page.relative_to(site).as_posix()} at {width} px"
                if match is None:
                    problems.append(f"{name}: could not be measured in Chromium")
                    continue
                problems += [f"{name}: {item}" for item in json.loads(match.group(1))]
    return problems


def main(site: Path, browser: bool = False) -> int:
    problems: list[str] = []
    toc = yaml.safe_load(Path("_toc.yml").read_text())
    for page in toc_pages(toc):
        if not (site / f"{page}.html").is_file():
            problems.append(f"missing page {page}.html")
    pages = [
        p for p in sorted(site.rglob("*.html"))
        if "_static" not in p.parts and "_sources" not in p.parts
    ]
    seen: set[str] = set()
    math_pages = sum(check_page(page, site, problems, seen) for page in pages)
    if math_pages == 0:
        problems.append("no page contains typeset math")
    if browser:
        book_pages = [site / f"{page}.html" for page in toc_pages(toc) if (site / f"{page}.html").is_file()]
        problems += browser_check(site, book_pages)
    for problem in problems:
        print(problem)
    print(f"checked {len(pages)} HTML files{' (and in Chromium)' if browser else ''}: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    raise SystemExit(main(Path(args[0] if args else "_build/html"), browser="--browser" in sys.argv))
