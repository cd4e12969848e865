"""``make pdf``: the single-page build printed by headless Chromium (tools/make_pdf.py).

The full build runs when Chromium is installed (Debian package ``chromium``) and is skipped with
a notice otherwise; it takes several minutes (the single-page build, then Chromium typesets and
prints about 330 A4 pages two or three times)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools import make_pdf
from tools.check_site import find_chromium

ROOT = Path(__file__).resolve().parents[1]


def test_page_count_reads_the_page_objects(tmp_path):
    pdf = tmp_path / "x.pdf"
    pdf.write_bytes(
        b"%PDF-1.4\n1 0 obj <</Type /Pages /Count 2>>\n2 0 obj <</Type /Page>>\n3 0 obj <</Type/Page>>\n"
    )
    assert make_pdf.page_count(pdf) == 2


def test_the_redirecting_index_is_replaced_by_the_book_marked_for_print(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "intro.html").write_text(
        '<html lang="en"><body><img src="_images/a.png"></body></html>'
    )
    index = tmp_path / "index.html"
    index.write_text('<meta http-equiv="Refresh" content="0; url=book/intro.html" />')
    page = make_pdf.resolve_redirect(index)
    assert page.parent == tmp_path, "printed beside index.html, where _static/ and _images/ resolve"
    assert page.read_text().startswith('<html class="sxor-print" lang="en">')
    plain = tmp_path / "plain.html"
    plain.write_text("<html></html>")
    assert make_pdf.resolve_redirect(plain) == plain


def test_print_styles_drop_solutions_and_chrome():
    css = (ROOT / "_static" / "sxor.css").read_text()
    assert "@media print { .bd-article div.solution { display: none !important; } }" in css
    assert "html.sxor-print .bd-article div.solution { display: none !important; }" in css
    assert any(".bd-sidebar-primary" in rules for rules in css.split("@media print")[1:])


NO_CHROMIUM = pytest.mark.skipif(
    find_chromium() is None,
    reason="make pdf needs Chromium (apt-get install chromium): PDF build skipped",
)


@NO_CHROMIUM
def test_chromium_prints_over_the_pipe_with_page_numbers_and_the_outline_is_added(tmp_path):
    """The DevTools client: two A4 pages, each with "n / N" at its foot; the handout check
    wants an outline, a link to the builder's disk and a dead button are reported."""
    page = tmp_path / "p.html"
    page.write_text(
        "<html><body><h2 id='a'>First</h2><p>" + "Text of the first page. " * 40 + "</p>"
        "<a href='#b'>to the second</a> <a href='file:///tmp/x.html'>disk</a>"
        "<h2 id='b' style='break-before: page'>Second</h2><p>" + "More text here. " * 40 + "</p>"
        "<p>Show code cell source</p></body></html>"
    )
    out = tmp_path / "p.pdf"
    browser = make_pdf.Chromium(find_chromium(), str(tmp_path / "profile"))
    try:
        browser.open(page.as_uri())
        assert browser.evaluate("document.title === '' && 1 + 1") == 2
        browser.print_pdf(out)
    finally:
        browser.close()
    assert make_pdf.page_count(out) == 2
    problems = make_pdf.handout_problems(out)
    assert any("no outline" in p for p in problems), problems
    assert any("builder's disk" in p for p in problems), problems
    assert any("dead button" in p and "page 2" in p for p in problems), problems
    assert not any("no page number" in p for p in problems), problems
    destinations = make_pdf.contents_destinations(out, 1)
    assert [page for page, _ in destinations] == [1], "the link to #b lands on page 2"
    make_pdf.add_outline(
        out,
        [{"level": "part", "title": "Part"}, {"level": "chapter", "title": "Chapter"}],
        [(0, 800.0), (1, 800.0)],
    )
    from pypdf import PdfReader

    outline = PdfReader(str(out)).outline
    assert outline[0].title == "Part" and outline[1][0].title == "Chapter", outline
    assert not any("no outline" in p for p in make_pdf.handout_problems(out))


@NO_CHROMIUM
def test_make_pdf_writes_the_whole_book(tmp_path):
    jb = Path(sys.executable).parent / "jupyter-book"
    build = subprocess.run(
        [
            str(jb) if jb.exists() else "jupyter-book",
            "build",
            str(ROOT),
            "--builder",
            "singlehtml",
            "--keep-going",
            "--path-output",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,  # asserted below, with the build log
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    site = tmp_path / "_build" / "singlehtml"
    out = tmp_path / "book.pdf"
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "make_pdf.py"), str(site / "index.html"), str(out)],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=ROOT,
        check=False,  # asserted below, with the script's output
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert out.read_bytes()[:5] == b"%PDF-"
    # the handout: page numbers on every page, an outline, no link to the builder's disk, no
    # dead button, no empty page (make_pdf fails on each; asserted here on the file itself)
    assert make_pdf.handout_problems(out) == []
    from pypdf import PdfReader

    reader = PdfReader(str(out))
    assert len(reader.pages) > 100
    width, height = (float(x) for x in reader.pages[0].mediabox[2:])
    assert abs(width - 595) < 2 and abs(height - 842) < 2, "not A4"
    titles = [item.title for item in reader.outline if not isinstance(item, list)]
    assert any(t.startswith("Part I") for t in titles) and any(
        t.startswith("Part II") for t in titles
    ), titles
    assert (
        "API reference" not in str(titles) and "API reference" not in reader.pages[1].extract_text()
    )
    # the title page names the version and the commit it was built from
    assert "Version " in reader.pages[0].extract_text() and "built from commit" in " ".join(
        reader.pages[0].extract_text().split()
    )
    book = (site / "book" / "intro.html").read_text()
    for numbered in ("Fig. 1.1", "Theorem 2.1", "Exercise 1.1", "(2.1)"):
        assert numbered in book, f"{numbered} is not numbered in the single-page build"
    if shutil.which("pdftotext"):  # Debian package poppler-utils
        text = subprocess.run(
            ["pdftotext", str(out), "-"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,  # the extracted text is what the assertions below judge
        ).stdout
        for numbered in ("Fig. 1.1", "Theorem 2.1", "Exercise 1.1"):
            assert numbered in text
        assert "Solution to Exercise" not in text, "solutions are printed"
        assert "\\(" not in text, "raw TeX in the PDF: MathJax did not finish before printing"


@NO_CHROMIUM
def test_blank_pages_are_dropped_and_the_pages_numbered_after(tmp_path):
    """A page that Chromium leaves blank is dropped; the page numbers stamped afterwards run
    on without a gap."""
    page = tmp_path / "p.html"
    page.write_text(
        "<html><body><p>First page.</p><div style='break-before: page'></div>"
        "<p style='break-before: page'>Third page, second after the blank one.</p></body></html>"
    )
    feet = tmp_path / "feet.html"
    feet.write_text("<html><body><div>&#8203;</div><div style='break-before:page'>&#8203;</div>")
    raw, footers, out = tmp_path / "raw.pdf", tmp_path / "footers.pdf", tmp_path / "out.pdf"
    browser = make_pdf.Chromium(find_chromium(), str(tmp_path / "profile"))
    try:
        browser.open(page.as_uri())
        browser.print_pdf(raw, footer=False)
        browser.open(feet.as_uri())
        browser.print_pdf(footers, footer=True)
    finally:
        browser.close()
    assert make_pdf.page_count(raw) == 3 and make_pdf.blank_pages(raw) == {2}
    make_pdf.stamp(raw, footers, [0, 2], out)
    from pypdf import PdfReader

    texts = ["".join(p.extract_text().split()) for p in PdfReader(str(out)).pages]
    assert len(texts) == 2 and "Thirdpage" in texts[1]
    assert texts[0].endswith("1/2") and texts[1].endswith("2/2"), texts
