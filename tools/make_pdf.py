"""Print the single-page HTML build of the book to one PDF handout with headless Chromium.

Usage: ``python tools/make_pdf.py _build/singlehtml/index.html _build/pdf/book.pdf [--api]``
(``make pdf`` builds the single page first; ``make pdf API=1`` passes ``--api``).

The handout is A4 with a page number ("page n of N") at the foot of every page, a title page, a
contents page with the page of every part, chapter and section, and a PDF outline (bookmarks)
by part, chapter and section. Chromium is driven over its DevTools protocol on a pipe
(``--remote-debugging-pipe``: nothing listens on a port and no package beyond the standard
library is needed) and prints twice: the first print tells on which page each entry of the
contents falls (from the contents' own links, read with pypdf), the second prints those
numbers. Chromium now and then leaves a page blank before a chapter's page break; blank pages
are dropped, and the page numbers are stamped afterwards from a print of empty pages with
Chromium's own footer (:func:`stamp`), so that they run on without a gap. In the page, before printing, ``tools/pdf_page.js`` points every link to another page
of the site at its target in the single page (no link to a ``file:`` address is left), removes
hidden cells and buttons, drops the API reference unless ``--api`` is given, and starts each
chapter on a new page. The page's print styles (``_static/sxor.css``, ``@media print``) drop
the theme's navigation and every solution (exercises keep their numbers), wrap code lines, and
keep figures with their captions, theorems and exercises on one page each. The numbers are the
website's: theorems, figures, equations and exercises are numbered by the build.

Before printing it checks the single page in Chromium at the printed column's width: nothing
from another host is requested and no code block, display equation, figure or inline formula is
cut off (:func:`tools.check_site.browser_check`). After printing it checks the PDF
(:func:`handout_problems`). Exit status 1 on a problem or when no PDF was written.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.check_site import browser_check, find_chromium

#: A4 in inches, and the page margins (12 mm at the sides, room for the page number below).
PAPER = (8.27, 11.69)
MARGINS = {"marginTop": 0.55, "marginBottom": 0.75, "marginLeft": 0.47, "marginRight": 0.47}
#: Width in CSS pixels of the printed text column: the page is laid out this wide and scaled to
#: the A4 column (8.27 - 2 x 0.47 in = 704 px at 96 px per inch), a scale of 0.85: body text of
#: 16 px prints at 10.2 pt and a default-size figure (700 px) fits the column.
PRINT_WIDTH = 828
SCALE = round((PAPER[0] - MARGINS["marginLeft"] - MARGINS["marginRight"]) * 96 / PRINT_WIDTH, 3)
#: Seconds the page may take to load, lay out and typeset (MathJax) before it is printed.
LOAD_SECONDS = 300
FOOTER = (
    '<div style="width:100%;font-size:9pt;font-family:sans-serif;color:#444;text-align:center">'
    '<span class="pageNumber"></span> / <span class="totalPages"></span></div>'
)
#: Text Chromium would print for a button that does nothing on paper.
DEAD_BUTTONS = ("Show code cell source", "Show code cell output", "Hide code cell", "Copy to")
#: Prints at most: one to find the pages, one to print their numbers, one more should a number
#: move a line.
PASSES = 4
#: The script that prepares the page (title page, contents, links, API reference, buttons).
PAGE_SCRIPT = Path(__file__).with_name("pdf_page.js")


def page_count(pdf: Path) -> int:
    """Number of pages of ``pdf`` (its ``/Type /Page`` objects: Chromium writes no others)."""
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf.read_bytes()))


class Chromium:
    """Headless Chromium driven over the DevTools protocol on a pipe: the browser reads
    commands from its file descriptor 3 and writes replies to 4, one JSON message each,
    ended by a NUL byte."""

    def __init__(self, chromium: str, profile: str) -> None:
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()

        def wire() -> None:  # in the child: the pipe ends on descriptors 3 and 4
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)

        self.proc = subprocess.Popen(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--host-resolver-rules=MAP * ~NOTFOUND",
                "--allow-file-access-from-files",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=wire,  # noqa: PLW1509 (no threads here: dup2 between fork and exec)
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._id = 0
        self.events: list[dict] = []
        self.session: str | None = None

    def _message(self) -> dict:
        while b"\0" not in self._buffer:
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: bool = True) -> dict:
        """Send one command and return its result; raise with Chromium's error message."""
        self._id += 1
        message: dict = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._message()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            self.events.append(reply)

    def evaluate(self, expression: str, timeout: float = 60.0):
        """Evaluate ``expression`` in the page (awaiting a promise) and return its value."""
        result = self.send(
            "Runtime.evaluate",
            {
                "expression": expression,
                "awaitPromise": True,
                "returnByValue": True,
                "timeout": int(timeout * 1000),
            },
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise RuntimeError(details.get("exception", {}).get("description", str(details)))
        return result.get("result", {}).get("value")

    def open(self, url: str) -> None:
        targets = self.send("Target.getTargets", session=False)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.send(
            "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}, session=False
        )["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Emulation.setEmulatedMedia", {"media": "print"})
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": PRINT_WIDTH, "height": 1200, "deviceScaleFactor": 1, "mobile": False},
        )
        self.send("Page.navigate", {"url": url})
        deadline = time.monotonic() + LOAD_SECONDS
        while time.monotonic() < deadline:
            ready = self.evaluate(
                "document.readyState === 'complete' && Array.from(document.images)"
                ".every((i) => i.complete)"
            )
            if ready:
                break
            time.sleep(0.5)
        # MathJax typesets after the load event; wait for it to finish
        self.evaluate(
            "(window.MathJax && MathJax.startup && MathJax.startup.promise"
            " ? MathJax.startup.promise : Promise.resolve()).then(() => true)",
            timeout=LOAD_SECONDS,
        )

    def print_pdf(self, path: Path, footer: bool = True) -> None:
        """Print the page to ``path`` (A4, the book's margins and scale), with the page number
        at the foot of each page when ``footer``."""
        result = self.send(
            "Page.printToPDF",
            {
                "paperWidth": PAPER[0],
                "paperHeight": PAPER[1],
                **MARGINS,
                "scale": SCALE,
                "printBackground": True,
                "displayHeaderFooter": footer,
                "headerTemplate": "<span></span>",
                "footerTemplate": FOOTER,
                "preferCSSPageSize": False,
            },
        )
        path.write_bytes(base64.b64decode(result["data"]))

    def close(self) -> None:
        with contextlib.suppress(RuntimeError):  # the browser may already be gone
            self.send("Browser.close", session=False)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._write)
        os.close(self._read)


def contents_destinations(pdf: Path, count: int) -> list[tuple[int, float]]:
    """The target (page index, height on the page) of the first ``count`` internal links of
    ``pdf`` in reading order: the contents' rows, which come before any other link."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(pdf.read_bytes()))
    found: list[tuple[int, float]] = []
    for page in reader.pages:
        links = []
        for reference in page.get("/Annots") or []:
            annot = reference.get_object()
            if annot.get("/Subtype") != "/Link":
                continue
            dest = annot.get("/Dest")
            if dest is None and "/A" in annot:
                dest = annot["/A"].get_object().get("/D")
            if dest is None:
                continue
            if isinstance(dest, str) or not hasattr(dest, "__getitem__"):
                named = reader.named_destinations.get(str(dest))
                if named is None:  # a target Chromium did not print: no page
                    links.append((-float(annot["/Rect"][3]), float(annot["/Rect"][0]), -1, 0.0))
                    continue
                target_page, top = reader.get_destination_page_number(named), named.top
            else:
                target_page = reader.get_page_number(dest[0].get_object())
                top = float(dest[3]) if len(dest) > 3 and dest[3] is not None else 0.0
            rect = [float(x) for x in annot["/Rect"]]
            links.append((-rect[3], rect[0], target_page, float(top or 0.0)))
        for _, _, target_page, top in sorted(links):
            found.append((target_page, top))
            if len(found) == count:
                return found
    return found


def page_texts(pdf: Path) -> list[str]:
    """The text of each page of ``pdf``: with poppler's ``pdftotext`` when it is installed
    (seconds for the whole book), else with pypdf (minutes)."""
    pdftotext = shutil.which("pdftotext")
    if pdftotext:
        result = subprocess.run(
            [pdftotext, str(pdf), "-"], capture_output=True, text=True, timeout=600, check=True
        )
        pages = result.stdout.split("\f")
        return pages[: page_count(pdf)]
    from pypdf import PdfReader

    return [page.extract_text() or "" for page in PdfReader(str(pdf)).pages]


def blank_pages(pdf: Path) -> set[int]:
    """Numbers (from 1) of the pages of ``pdf`` that show nothing (or only their number)."""
    texts = page_texts(pdf)
    total = len(texts)
    return {
        number
        for number, text in enumerate(texts, start=1)
        if "".join(text.split()) in ("", f"{number}/{total}")
    }


def add_outline(pdf: Path, entries: list[dict], destinations: list[tuple[int, float]]) -> None:
    """Write the PDF outline: parts, their chapters, the chapters' sections."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import Fit

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf.read_bytes())))
    parents: dict[str, object] = {}
    depth = {"part": 0, "chapter": 1, "section": 2}
    for entry, (page, top) in zip(entries, destinations, strict=True):
        level = depth[entry["level"]]
        parent = None
        for above in ("section", "chapter", "part")[3 - level :]:
            if above in parents:
                parent = parents[above]
                break
        item = writer.add_outline_item(
            title=entry["title"], page_number=page, parent=parent, fit=Fit.xyz(top=top)
        )
        parents[entry["level"]] = item
        for lower in ("chapter", "section")[level:]:
            parents.pop(lower, None)
    writer.page_mode = "/UseOutlines"
    buffer = io.BytesIO()
    writer.write(buffer)
    pdf.write_bytes(buffer.getvalue())


def handout_problems(pdf: Path) -> list[str]:
    """What the printed handout must not show: a page without its number, no outline, a link to
    the builder's disk, a dead button, a page holding only a heading."""
    from pypdf import PdfReader

    reader = PdfReader(str(pdf))
    problems = []
    total = len(reader.pages)
    if total < 2:
        return [f"{pdf}: {total} page(s)"]
    if not reader.outline:
        problems.append(f"{pdf}: no outline (bookmarks)")
    texts = page_texts(pdf)
    for number, page in enumerate(reader.pages, start=1):
        text = texts[number - 1]
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if f"{number}/{total}" not in ("".join(line.split()) for line in lines):
            problems.append(f"page {number}: no page number at its foot")
        body = lines[:-1]
        for button in DEAD_BUTTONS:
            if button in text:
                problems.append(f"page {number}: a dead button ({button!r})")
        if 1 < number < total and sum(len(line) for line in body) < 120:  # the last may be short
            problems.append(f"page {number}: (nearly) empty: {' | '.join(body)[:80]!r}")
        for annot in page.get("/Annots") or []:
            uri = annot.get_object().get("/A", {}).get("/URI")
            if uri is not None and str(uri).startswith("file:"):
                problems.append(f"page {number}: a link to the builder's disk: {str(uri)[:80]}")
    return problems


def resolve_redirect(page: Path) -> Path:
    """The page to print. The single-page build writes the book to ``book/intro.html`` (the root
    document) with its ``_static/`` and ``_images/`` links relative to the build's top folder,
    and an ``index.html`` that redirects there; the book is copied beside ``index.html`` as
    ``book-print.html`` so that its links resolve, its ``<html>`` of class ``sxor-print``."""
    match = re.search(
        r'http-equiv="Refresh"[^>]*url=([^"]+)"',
        page.read_text(errors="replace")[:2000],
        re.IGNORECASE,
    )
    if not match:
        return page
    target = page.parent / match.group(1)
    printed = page.parent / "book-print.html"
    # html.sxor-print: the screen layout takes the print rules that change widths (_static/sxor.css)
    text = re.sub(
        r"<html\b", '<html class="sxor-print"', target.read_text(errors="replace"), count=1
    )
    printed.write_text(text)
    return printed


def print_handout(page: Path, out: Path, chromium: str, api: bool = False) -> list[str]:
    """Print ``page`` to ``out`` (two passes, see the module's docstring); return problems."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    # the printed page's height in CSS pixels of the layout (what fits on one page)
    height = (PAPER[1] - MARGINS["marginTop"] - MARGINS["marginBottom"]) * 96 / SCALE
    options = json.dumps(
        {"api": api, "author": "The sxor lecture-notes team", "pageHeight": round(height)}
    )
    raw = out.with_suffix(".raw.pdf")
    with tempfile.TemporaryDirectory() as tmp:
        browser = Chromium(chromium, f"{tmp}/profile")
        try:
            browser.open(page.resolve().as_uri())
            prepared = browser.evaluate(f"({PAGE_SCRIPT.read_text()})({options})")
            if not prepared or "error" in prepared:
                return [f"the page could not be prepared: {prepared}"]
            entries = prepared["entries"]
            pages: list[int] = []
            for _ in range(PASSES):
                browser.print_pdf(raw, footer=False)
                destinations = contents_destinations(raw, len(entries))
                missing = [e["title"] for e, (p, _) in zip(entries, destinations) if p < 0]
                if missing:
                    return [f"contents entries whose target is not printed: {missing}"]
                if len(destinations) != len(entries):
                    return [
                        f"the contents have {len(entries)} entries but the PDF "
                        f"{len(destinations)} links from them"
                    ]
                # Chromium leaves a page blank now and then before a chapter's page break
                # (the spacing below a page filled to its foot): blank pages are dropped, and
                # the pages numbered after that.
                empty = blank_pages(raw)
                kept = [n for n in range(page_count(raw)) if n + 1 not in empty]
                number = {old: new + 1 for new, old in enumerate(kept)}
                found = [number.get(p, number.get(p + 1, 0)) for p, _ in destinations]
                if found == pages:
                    break
                pages = found
                browser.evaluate(
                    "(() => { const rows = document.querySelectorAll('.sxor-toc-page');"
                    f" const pages = {json.dumps(pages)};"
                    " rows.forEach((r, i) => { r.textContent = String(pages[i]); }); })()"
                )
            else:
                return [f"the contents' page numbers did not settle after {PASSES} prints"]
            footers = Path(tmp) / "footers.pdf"
            blank = Path(tmp) / "blank.html"
            blank.write_text(
                "<html><body style='margin:0'><div>&#8203;</div>"
                + "<div style='break-before:page'>&#8203;</div>" * (len(kept) - 1)
                + "</body></html>"
            )
            browser.open(blank.as_uri())
            browser.print_pdf(footers, footer=True)
        finally:
            browser.close()
        stamp(raw, footers, kept, out)
    raw.unlink(missing_ok=True)
    add_outline(out, entries, [(pages[k] - 1, top) for k, (_, top) in enumerate(destinations)])
    return handout_problems(out)


def stamp(raw: Path, footers: Path, kept: list[int], out: Path) -> None:
    """Write the pages ``kept`` (indices) of ``raw`` to ``out``, each with its page number: the
    foot of the same page of ``footers`` (Chromium's own "n / N", printed from an empty page)."""
    from pypdf import PdfReader, PdfWriter

    content, feet = PdfReader(str(raw)), PdfReader(str(footers))
    if len(feet.pages) != len(kept):
        raise RuntimeError(f"{len(feet.pages)} footer pages for {len(kept)} pages")
    writer = PdfWriter(clone_from=content)
    for index in sorted(set(range(len(content.pages))) - set(kept), reverse=True):
        writer.remove_page(index)
    for page, foot in zip(writer.pages, feet.pages, strict=True):
        page.merge_page(foot)
    writer.compress_identical_objects(remove_unreferenced=True)  # the dropped pages' objects
    buffer = io.BytesIO()
    writer.write(buffer)
    out.write_bytes(buffer.getvalue())


def main(page: Path, out: Path, api: bool = False) -> int:
    chromium = find_chromium()
    if chromium is None:
        print("make pdf needs Chromium on the PATH (on Debian: apt-get install chromium)")
        return 1
    if not page.is_file():
        print(f"{page}: no such page (build it with: jupyter-book build . --builder singlehtml)")
        return 1
    page = resolve_redirect(page)
    problems = browser_check(page.parent, [page], widths=(PRINT_WIDTH,))
    try:
        problems += print_handout(page, out, chromium, api=api)
    finally:
        if page.name == "book-print.html":
            page.unlink()
    for problem in problems:
        print(problem)
    if not out.is_file() or out.stat().st_size == 0:
        print(f"Chromium wrote no PDF at {out}")
        return 1
    from pypdf import PdfReader

    print(
        f"{out}: {len(PdfReader(str(out)).pages)} A4 pages, {out.stat().st_size / 1e6:.1f} MB"
        f"{' with the API reference' if api else ''}; {len(problems)} problem(s)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        raise SystemExit(__doc__.split("\n\n")[1])
    raise SystemExit(main(Path(args[0]), Path(args[1]), api="--api" in sys.argv))
