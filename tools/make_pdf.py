"""Print the single-page HTML build of the book to one PDF with headless Chromium.

Usage: ``python tools/make_pdf.py _build/singlehtml/index.html _build/pdf/book.pdf``
(``make pdf`` builds the single page first). The page's print styles (``_static/sxor.css``,
``@media print``) drop the theme's navigation, buttons and every solution (exercises keep their
numbers), let code lines wrap, and keep figures, theorems and exercises on one page each. The
numbers are the website's: theorems, figures, equations and exercises are numbered by the build.

Before printing it checks the single page in Chromium at the printed column's width: nothing
from another host is requested and no code block, display equation, figure or inline formula is
cut off (:func:`tools.check_site.browser_check`). Exit status 1 on a problem or when no PDF was
written.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.check_site import browser_check, find_chromium

#: Width in CSS pixels of the printed text column: A4 (210 mm) less 2 x 12 mm margins at 96 px
#: per inch is 703 px, and Chromium shrinks a page up to 4/3 to fit its widest line (937 px).
PRINT_WIDTH = 900
#: Virtual milliseconds Chromium may spend laying out and typesetting (MathJax) before it prints.
BUDGET_MS = 180_000


def page_count(pdf: Path) -> int:
    """Number of pages of ``pdf`` (its ``/Type /Page`` objects)."""
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf.read_bytes()))


def print_pdf(page: Path, out: Path, chromium: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
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
                f"--user-data-dir={tmp}/profile",
                "--run-all-compositor-stages-before-draw",
                f"--virtual-time-budget={BUDGET_MS}",
                "--no-pdf-header-footer",
                f"--print-to-pdf={out.resolve()}",
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,  # success is judged by the PDF written (see main)
        )


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


def main(page: Path, out: Path) -> int:
    chromium = find_chromium()
    if chromium is None:
        print("make pdf needs Chromium on the PATH (on Debian: apt-get install chromium)")
        return 1
    if not page.is_file():
        print(f"{page}: no such page (build it with: jupyter-book build . --builder singlehtml)")
        return 1
    page = resolve_redirect(page)
    problems = browser_check(page.parent, [page], widths=(PRINT_WIDTH,))
    for problem in problems:
        print(problem)
    print_pdf(page, out, chromium)
    if page.name == "book-print.html":
        page.unlink()
    if not out.is_file() or out.stat().st_size == 0:
        print(f"Chromium wrote no PDF at {out}")
        return 1
    print(
        f"{out}: {page_count(out)} pages, {out.stat().st_size / 1e6:.1f} MB; {len(problems)} problem(s)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__.split("\n\n")[1])
    raise SystemExit(main(Path(sys.argv[1]), Path(sys.argv[2])))
