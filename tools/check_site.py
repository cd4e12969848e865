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

* no page loads a script, style sheet, image, font or frame from another host
  (:func:`check_offline`): the book works offline.

With ``--browser`` (needs ``chromium`` on the PATH) it also opens every page in headless
Chromium at 1400 and 390 pixels, with every other host unreachable, and measures what the HTML
cannot tell: the page's scroll width, every ``pre``, display equation and figure wider than its
box (at 1400 px; on a phone they may scroll in their own box), every inline formula cut off at
the text column (both widths), every figure shrunk below :data:`MIN_PHONE_SCALE` of its size at
390 px, and every request to another host (from Chromium's net log). At 390 px it also counts,
over the whole book, what a phone reader meets against :data:`PHONE_BUDGET` (display equations
that scroll sideways and whether each shows a shadow at its edge, inline formulas wider than the
column, links in tables broken inside a word), every figure panned with less than
:data:`MIN_PHONE_VISIBLE` of its width in view, and TeX that MathJax could not typeset.
``--browser-if-available``
(what ``make test`` passes) runs it when Chromium is installed and prints a notice otherwise.
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
VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "track",
    "wbr",
}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Node | None) -> None:
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
            n
            for n in self.iter()
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
                return tex[start + 1 : i], i + 1
        return tex[start + 1 :], len(tex)
    if tex[start] == "\\":
        match = re.match(r"\\([a-zA-Z]+|.)", tex[start:], re.DOTALL)
        if match is None:  # a lone backslash at the end
            return "\\", start + 1
        return match.group(0), start + len(match.group(0))
    return tex[start], start + 1


SPACES = {"quad": 1.0, "qquad": 2.0, ",": 0.17, ";": 0.28, ":": 0.22, "!": -0.17, " ": 0.3}
ZERO = {
    "left",
    "right",
    "big",
    "Big",
    "bigg",
    "Bigg",
    "bigl",
    "bigr",
    "Bigl",
    "Bigr",
    "displaystyle",
    "textstyle",
    "limits",
    "nolimits",
    "mathrm",
    "mathbb",
    "mathcal",
    "mathbf",
    "boldsymbol",
    "mathit",
    "operatorname",
    "text",
    "mbox",
    "hat",
    "tilde",
    "bar",
    "vec",
    "dot",
    "ddot",
    "overline",
    "underline",
    "widetilde",
    "widehat",
    "nonumber",
    "notag",
    "phantom",
}


def _line_width(tex: str) -> float:
    width, i = 0.0, 0
    while i < len(tex):
        ch = tex[i]
        if ch == "\\":
            match = re.match(
                r"\\([a-zA-Z]+|.)", tex[i:], re.DOTALL
            )  # a backslash may precede a newline
            if match is None:  # a lone backslash at the end
                i += 1
                continue
            name = match.group(1)
            i += len(match.group(0))
            if name in ("frac", "dfrac", "tfrac", "binom", "tbinom", "dbinom"):
                top, i = _group(tex, i)
                bottom, i = _group(tex, i)
                scale = 0.75 if name.startswith("t") else 1.0
                width += scale * max(_line_width(top), _line_width(bottom)) + 0.3
            elif name == "sqrt":
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
        elif ch in "{}&" or ch.isspace():
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
                problems.append(
                    f"raw TeX in the navigation sidebar (every page): {link.text().strip()!r}:"
                    " write the page's first heading in plain text"
                )

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
            problems.append(
                f"{name}: raw TeX in a bibliography entry: {' '.join(citation.text().split())[:80]}"
                " (write Unicode in references.bib)"
            )

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
            problems.append(
                f"{name}: image without a numbered caption: {Path(img.attrs.get('src', '?')).name}"
                " (cell metadata mystnb.figure.caption and .name)"
            )
        width = png_width(page.parent / unquote(img.attrs.get("src", "")))
        if width is not None and width > MAX_FIGURE_PX:
            problems.append(
                f"{name}: figure {width} px wide, shrunk below 2/3 at 1400 px: at most two panels "
                f"side by side ({Path(img.attrs['src']).name})"
            )

    clipped = []
    for pre in article.find("pre"):
        where = "output" if any("cell_output" in a.classes for a in pre.ancestors()) else "code"
        for line in pre.text().splitlines():
            if len(line) > MAX_LINE:
                clipped.append(f"{where} line of {len(line)} chars: {line.strip()[:50]}...")
    if clipped:
        problems.append(
            f"{name}: {len(clipped)} line(s) longer than {MAX_LINE} characters, clipped "
            f"at 1400 px; first: {clipped[0]}"
        )

    for table in article.find("table"):
        if table.classes & {"indextable", "modindextable"}:
            continue  # the general and module indexes: short entries that wrap
        scrolls = any(
            a.classes & {"pst-scrollable-table-container", "table-wrapper", "output_html"}
            or "overflow" in a.attrs.get("style", "")
            for a in table.ancestors()
        )
        if not scrolls:
            problems.append(
                f"{name}: a table outside a scrolling container widens the page on a phone"
            )
    for node in article.iter():
        style = node.attrs.get("style", "")
        for match in re.finditer(r"(?<![-\w])(min-)?width:\s*(\d+(?:\.\d+)?)px", style):
            if float(match.group(2)) > PHONE_WIDTH and "max-width" not in style:
                problems.append(
                    f"{name}: <{node.tag}> fixed at {match.group(2)} px, wider than a phone"
                )
        if (
            node.tag == "img"
            and node.attrs.get("width", "").isdigit()
            and "style" not in node.attrs
        ):
            pass  # the theme caps images at 100% width

    for div in article.find("div", "math"):
        tex = div.text().strip()
        tex = re.sub(r"^\\\[|\\\]$", "", tex).strip()
        width = tex_width_em(tex)
        if width > PAGE_EM:
            first = " ".join(tex.split())[:60]
            problems.append(
                f"{name}: display equation about {width:.0f} em wide, the page has "
                f"{PAGE_EM:.0f}: split it (aligned): {first}..."
            )
    return 'class="math' in text


#: Tags and attributes through which a page loads something as it opens (not links a reader
#: follows): a script, a style sheet, an image, a font, a frame.
LOADED = {
    "script": ("src",),
    "img": ("src", "srcset"),
    "source": ("src", "srcset"),
    "iframe": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "audio": ("src",),
    "video": ("src", "poster"),
    "input": ("src",),
}
#: ``<link rel=...>`` values that make the browser fetch the target.
LOADED_LINKS = {
    "stylesheet",
    "icon",
    "shortcut",
    "apple-touch-icon",
    "preload",
    "modulepreload",
    "prefetch",
    "manifest",
}


def leaves_site(target: str) -> bool:
    """True when ``target`` (a ``src``/``href`` value) is fetched from another host."""
    target = target.strip()
    return target.startswith("//") or urlparse(target).scheme in (
        "http",
        "https",
        "ftp",
        "ws",
        "wss",
    )


def external_loads(root: Node) -> list[str]:
    """Every URL of another host that the page would fetch as it opens: scripts, style sheets,
    images, fonts, frames (``<a href>`` links are not fetched, so they are not counted), and
    ``url(...)``/``@import`` in inline styles."""
    found = []
    for node in root.iter():
        keys = list(LOADED.get(node.tag, ()))
        if node.tag == "link" and set(node.attrs.get("rel", "").lower().split()) & LOADED_LINKS:
            keys.append("href")
        for key in keys:
            for candidate in (
                re.split(r",\s*", node.attrs.get(key, ""))
                if key == "srcset"
                else [node.attrs.get(key, "")]
            ):
                target = candidate.split()[0] if candidate.split() else ""
                if target and leaves_site(target):
                    found.append(f"<{node.tag} {key}={target}>")
        if node.tag == "style" or "style" in node.attrs:
            css = node.text() if node.tag == "style" else node.attrs["style"]
            for match in re.finditer(r"url\(\s*['\"]?([^'\")]+)|@import\s+['\"]([^'\"]+)", css):
                target = match.group(1) or match.group(2)
                if leaves_site(target):
                    found.append(f"<{node.tag}> style url({target})")
    return found


def check_offline(page: Path, site: Path, problems: list[str]) -> None:
    """A page fetches nothing from another host (it works offline and leaks no visit)."""
    name = page.relative_to(site).as_posix()
    for item in external_loads(parse(page.read_text(errors="replace"))):
        problems.append(
            f"{name}: loads {item} from another host (serve it from _static or drop it)"
        )


#: At 390 px a figure shown at less than this fraction of its size has unreadable labels: the
#: book's style (sxor/book.mplstyle) sets text of 12-13 pt, 17-18 px at 100 dpi, so below 0.45 of
#: its size a label is under 8 CSS px.
MIN_PHONE_SCALE = 0.45


#: At 390 px a figure wider than its box is panned sideways (_static/sxor.js); at least this
#: fraction of its width must be in view (two panels side by side lose the right one below it:
#: stack them, or draw the figure narrower).
MIN_PHONE_VISIBLE = 0.7
#: What a 390 px phone may show, counted over the whole book (book/appendix/contributing.md,
#: "What a page must satisfy"): display equations that scroll sideways (each with a fade at its
#: edge, so that the reader sees there is more), none without that cue, inline formulas that
#: scroll in their own box (a long one becomes display math), and no link in a table broken
#: inside a word. The first two are ceilings measured on the book as it stands (they were 120
#: equations, all without a cue, and 78 inline formulas): lower them as equations are broken
#: and long inline formulas become display math, towards a handful each; never raise them.
PHONE_BUDGET = {"wide_equation": 3, "no_cue": 0, "inline_scroll": 3, "midword_link": 0}


#: MyST syntax that must never reach a reader as text: a directive fence, a role, an option line.
DIRECTIVE_TEXT = re.compile(
    r"(`{3,}|~{3,}|:{3,})\{[\w:-]+\}"  # ```{prf:proof}, :::{note}
    r"|\{[a-z][\w-]*(:[\w-]+)*\}`"  # {prf:ref}`...`, {ref}`...`, {doc}`...`
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
        context = " ".join(prose[max(0, at - 20) : at + 50].split())
        problems.append(
            f"{name}: MyST syntax shown as text ({match.group(0).strip()!r}): ...{context}... "
            "(a directive or role that did not parse: check its fence and info string)"
        )


def check_solutions(article: Node, name: str, problems: list[str]) -> None:
    """An exercise (sphinx-exercise) with more than one solution on the page."""
    counts: dict[str, int] = {}
    for div in article.find("div", "solution"):
        titles = list(div.find("p", "admonition-title"))[:1]
        links = titles[0].find("a") if titles else []
        target = links[0].attrs.get("href", "?") if links else "?"
        counts[target] = counts.get(target, 0) + 1
    for target, count in sorted(counts.items()):
        if count > 1:
            problems.append(f"{name}: {count} solutions to the exercise {target}: keep one")


BROWSER_PAGE = """<!DOCTYPE html><html><body><div id="out">pending</div>
{frames}
<script>
const widths = {widths}, phone = {phone}, results = {{}};
const measure = (width) => {{
  const f = document.getElementById("f" + width), d = f.contentDocument;
  const bad = [];
  const page = d.documentElement.scrollWidth;
  if (page > width + 1) {{  // name the innermost element that reaches past the edge
    let culprit = "";
    for (const el of d.body.querySelectorAll("*")) {{
      const r = el.getBoundingClientRect();
      if (r.right > width + 1 && r.width > 0 && !el.closest(".bd-sidebar-secondary, .bd-sidebar-primary")) {{
        const box = el.closest("mjx-container") || el;  // a formula is named as a whole
        culprit = box.tagName.toLowerCase() + " in " + box.parentElement.tagName.toLowerCase() + " \u201c" +
          (box.textContent || "").replace(/\\s+/g, " ").trim().slice(0, 60) + "\u201d";
      }}
    }}
    bad.push("page scrolls sideways: " + page + " px wide" + (culprit ? " (" + culprit + ")" : ""));
  }}
  const scrolls = (el) => {{  // an ancestor the reader can scroll sideways (a table's box, a long equation)
    for (let a = el.parentElement; a; a = a.parentElement) {{
      const o = getComputedStyle(a).overflowX;
      if ((o === "auto" || o === "scroll") && a.scrollWidth > a.clientWidth) return true;
    }}
    return false;
  }};
  const figureName = (img) => {{  // "Fig. 4.1 Median population loss ..." or the file name
    const fig = img.closest("figure"), num = fig && fig.querySelector(".caption-number");
    return num ? (num.textContent + (img.getAttribute("alt") || "")).trim().slice(0, 60)
               : (img.getAttribute("src") || "").split("/").pop();
  }};
  const article = d.querySelector("article.bd-article") || d.body;
  const edge = article.getBoundingClientRect();
  const phoneCounts = {{wide_equation: [], no_cue: [], inline_scroll: [], midword_link: []}};
  const cue = (el) => /gradient/.test(getComputedStyle(el).backgroundImage);
  // the width MathJax draws a formula (its hidden MathML copy for screen readers is not counted)
  const drawn = (el) => {{
    const m = el.querySelector("mjx-math");
    return m ? m.getBoundingClientRect().width : el.scrollWidth;
  }};
  // TeX that MathJax could not typeset (shown in red on the page)
  for (const el of article.querySelectorAll("mjx-merror"))
    bad.push("TeX error: " + (el.getAttribute("data-mjx-error") || el.textContent || "").trim().slice(0, 60));
  // Inline formulas: one that sticks out of the text column is cut off (the column hides
  // overflow) unless it scrolls in its own box or in a scrolling ancestor.
  for (const el of article.querySelectorAll("mjx-container:not([display=true])")) {{
    if (!el.getClientRects().length) continue;
    const r = el.getBoundingClientRect();
    const over = Math.max(r.right - edge.right, edge.left - r.left);
    if (over > 2 && !scrolls(el))
      bad.push("inline math clipped by " + Math.round(over) + " px: " + (el.textContent || "").trim().slice(0, 40));
    else if (width <= phone && drawn(el) > el.clientWidth + 2)
      phoneCounts.inline_scroll.push("inline formula scrolls in its box (" + Math.round(drawn(el)) +
                                     " px in " + el.clientWidth + "): " + (el.textContent || "").trim().slice(0, 40));
  }}
  // Links in tables break between words: a line break inside a word of a link's text
  if (width <= phone) for (const a of article.querySelectorAll("td a.reference, th a.reference")) {{
    const walker = d.createTreeWalker(a, NodeFilter.SHOW_TEXT);
    const range = d.createRange();
    let prev = null, top = null, hit = false;
    for (let node = walker.nextNode(); node && !hit; node = walker.nextNode()) {{
      for (let i = 0; i < node.data.length && !hit; i++) {{
        range.setStart(node, i); range.setEnd(node, i + 1);
        const r = range.getClientRects()[0];
        if (!r) continue;
        const ch = node.data[i];
        if (top !== null && r.top > top + 2 && ch.trim() && prev && prev.trim() && !"-/\u2010\u2013\u2014".includes(prev)) hit = true;
        top = r.top; prev = ch;
      }}
    }}
    if (hit) phoneCounts.midword_link.push("link breaks mid-word: " + a.textContent.trim().slice(0, 40));
  }}
  for (const el of article.querySelectorAll("pre, mjx-container[display=true], figure img, table")) {{
    if (!el.getClientRects().length || !el.clientWidth) continue;  // collapsed (hidden input)
    if (el.tagName === "IMG") {{
      if (el.naturalWidth && el.clientWidth < el.naturalWidth * {min_scale} && width <= phone)
        bad.push("figure shown at " + Math.round(100 * el.clientWidth / el.naturalWidth) +
                 "% of its size, labels unreadable: " + figureName(el));
      // a figure wider than its box is panned: at least {min_visible} of it must be in view
      const box = el.closest("figure");
      if (box && width <= phone && box.clientWidth < el.clientWidth * {min_visible})
        bad.push("figure panned, " + Math.round(100 * box.clientWidth / el.clientWidth) +
                 "% of its width in view: " + figureName(el));
      continue;
    }}
    if (width <= phone && el.tagName === "MJX-CONTAINER" && drawn(el) > el.clientWidth + 2) {{
      const what = (el.textContent || "").trim().slice(0, 40);
      phoneCounts.wide_equation.push("display equation scrolls sideways (" + Math.round(drawn(el)) +
                                     " px in " + el.clientWidth + "): " + what);
      if (!cue(el)) phoneCounts.no_cue.push("display equation scrolls with no cue at its edge: " + what);
    }}
    // On a phone a long code line, table or display equation may scroll inside its own box.
    if (width <= phone) continue;
    const box = el.closest(".pst-scrollable-table-container") || el;
    if (el.scrollWidth > box.clientWidth + 2)
      bad.push(el.tagName.toLowerCase() + " clipped by " + (el.scrollWidth - box.clientWidth) +
               " px: " + (el.textContent || "").trim().slice(0, 50));
  }}
  results[width] = {{bad: bad, counted: phoneCounts}};
  if (Object.keys(results).length === widths.length)
    document.getElementById("out").textContent = "RESULT" + JSON.stringify(results) + "END";
}};
for (const width of widths) {{
  const f = document.getElementById("f" + width);
  f.onload = () => {{
    const w = f.contentWindow;
    const ready = w.MathJax && w.MathJax.startup && w.MathJax.startup.promise;
    (ready ? w.MathJax.startup.promise : Promise.resolve()).then(() => setTimeout(() => measure(width), 300));
  }};
}}
</script></body></html>"""
FRAME = '<iframe id="f{width}" src="{src}" style="width:{width}px;height:900px;border:0"></iframe>'


def find_chromium() -> str | None:
    return (
        shutil.which("chromium")
        or shutil.which("chromium-browser")
        or shutil.which("google-chrome")
    )


def requested_urls(netlog: Path) -> set[str]:
    """Every http(s) URL that a page asked for, from a Chromium net log (``--log-net-log``).

    Chromium's own requests (its clock, its updater, its account check) start with an initiator
    of ``not an origin`` and no page in their isolation key; those are not the site's."""
    try:
        text = netlog.read_text(errors="replace").rstrip().rstrip(",")
    except OSError:
        return set()
    for tail in ("", "]}", "}]}"):
        try:
            log = json.loads(text + tail)
            break
        except json.JSONDecodeError:
            continue
    else:
        return set()
    start = log.get("constants", {}).get("logEventTypes", {}).get("URL_REQUEST_START_JOB")
    urls = set()
    for event in log.get("events", []):
        params = event.get("params", {})
        url = str(params.get("url", ""))
        if event.get("type") != start or not url.startswith(("http:", "https:", "ws:", "wss:")):
            continue
        by_page = params.get("initiator") not in (None, "not an origin") or str(
            params.get("network_isolation_key", "")
        ).startswith("file://")
        if by_page:
            urls.add(url)
    return urls


def script_errors(log: str) -> list[str]:
    """Uncaught JavaScript errors in Chromium's console log (``--enable-logging=stderr``)."""
    return [
        m.group(1).strip()[:160]
        for m in re.finditer(r'CONSOLE[:(]\d+\)?\]\s*"?(Uncaught[^"\n]*)', log)
    ]


def browser_check(
    site: Path, pages: list[Path], widths=(1400, PHONE_WIDTH), counts: dict | None = None
) -> list[str]:
    """Open every page in headless Chromium at each width, with no network (every other host
    resolves to nothing), and report what is wider than its box, inline formulas cut off, figures
    shrunk until unreadable on a phone, every request to another host (from the net log) and
    every uncaught script error (from the console log).

    ``counts``, when given, receives ``{"clipped": {width: n}, "external": n, "pages": n}``."""
    chromium = find_chromium()
    if chromium is None:
        return ["--browser: no chromium on the PATH"]
    problems = []
    clipped = dict.fromkeys(widths, 0)
    phone: dict[str, list[str]] = {kind: [] for kind in PHONE_BUDGET}
    external: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        for page in pages:
            wrapper = Path(tmp) / "wrapper.html"
            frames = "\n".join(FRAME.format(width=w, src=page.resolve().as_uri()) for w in widths)
            wrapper.write_text(
                BROWSER_PAGE.format(
                    frames=frames,
                    widths=json.dumps(list(widths)),
                    phone=PHONE_WIDTH,
                    min_scale=MIN_PHONE_SCALE,
                    min_visible=MIN_PHONE_VISIBLE,
                )
            )
            netlog = Path(tmp) / "net.json"
            netlog.unlink(missing_ok=True)
            result = subprocess.run(
                [
                    chromium,
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--no-first-run",
                    "--allow-file-access-from-files",
                    "--disable-web-security",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--disable-default-apps",
                    "--no-default-browser-check",
                    "--disable-domain-reliability",
                    "--host-resolver-rules=MAP * ~NOTFOUND",
                    f"--log-net-log={netlog}",
                    "--enable-logging=stderr",
                    "--v=0",
                    f"--user-data-dir={tmp}/profile",
                    "--window-size=2000,1000",
                    "--virtual-time-budget=20000",
                    "--dump-dom",
                    wrapper.as_uri(),
                ],
                capture_output=True,
                text=True,
                timeout=180,
                check=False,  # the page is judged by its DOM and log, not Chromium's status
            )
            name = page.relative_to(site).as_posix()
            for error in sorted(set(script_errors(result.stderr))):
                problems.append(f"{name}: script error: {error}")
            for url in sorted(requested_urls(netlog)):
                external.add(url)
                problems.append(f"{name}: requested {url} from another host")
            match = re.search(r"RESULT(.*?)END", result.stdout, re.DOTALL)
            if match is None:
                problems.append(f"{name}: could not be measured in Chromium")
                continue
            for width, found in json.loads(match.group(1)).items():
                clipped[int(width)] += len(found["bad"])
                problems += [f"{name} at {width} px: {item}" for item in found["bad"]]
                for kind, items in found["counted"].items():
                    phone[kind] += [f"{name}: {item}" for item in items]
    for kind, items in phone.items():
        if len(items) > PHONE_BUDGET[kind]:
            problems.append(
                f"at {PHONE_WIDTH} px: {len(items)} x {kind.replace('_', ' ')}, the budget is "
                f"{PHONE_BUDGET[kind]} (book/appendix/contributing.md): "
                + "; ".join(items[:3])
                + (" ..." if len(items) > 3 else "")
            )
    if counts is not None:
        counts.update(
            clipped=clipped,
            external=len(external),
            pages=len(pages),
            phone={kind: len(items) for kind, items in phone.items()},
        )
        counts["phone_items"] = phone
    return problems


def main(site: Path, browser: bool | None = False) -> int:
    """Check the site; ``browser``: True runs the Chromium check (a problem if there is no
    Chromium), None runs it when Chromium is installed and prints a notice otherwise."""
    problems: list[str] = []
    toc = yaml.safe_load(Path("_toc.yml").read_text())
    for page in toc_pages(toc):
        if not (site / f"{page}.html").is_file():
            problems.append(f"missing page {page}.html")
    pages = [
        p
        for p in sorted(site.rglob("*.html"))
        if "_static" not in p.parts and "_sources" not in p.parts
    ]
    seen: set[str] = set()
    math_pages = sum(check_page(page, site, problems, seen) for page in pages)
    if math_pages == 0:
        problems.append("no page contains typeset math")
    for page in pages:
        check_offline(page, site, problems)
    if browser is None:
        browser = find_chromium() is not None
        if not browser:
            print(
                "notice: browser check skipped (no chromium on the PATH; on Debian: apt-get install chromium)"
            )
    counts: dict = {}
    if browser:
        book_pages = [
            site / f"{page}.html" for page in toc_pages(toc) if (site / f"{page}.html").is_file()
        ]
        problems += browser_check(site, book_pages, counts=counts)
    for problem in problems:
        print(problem)
    if counts:
        per_width = ", ".join(f"{n} at {w} px" for w, n in counts["clipped"].items())
        budgets = ", ".join(
            f"{kind.replace('_', ' ')} {n}/{PHONE_BUDGET[kind]}"
            for kind, n in counts["phone"].items()
        )
        print(
            f"Chromium, {counts['pages']} pages: clipped or unreadable elements {per_width}; "
            f"requests to other hosts: {counts['external']}; at {PHONE_WIDTH} px (budget): {budgets}"
        )
    print(
        f"checked {len(pages)} HTML files{' (and in Chromium)' if browser else ''}: {len(problems)} problem(s)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    mode = (
        True
        if "--browser" in sys.argv
        else (None if "--browser-if-available" in sys.argv else False)
    )
    raise SystemExit(main(Path(args[0] if args else "_build/html"), browser=mode))
