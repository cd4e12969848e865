"""Check the built website: every page exists, no cell output shows a traceback, every relative
link and image resolves, and MathJax is served from the site itself (the book works offline).

Usage: ``python tools/check_site.py _build/html``. Exit status 1 on any problem.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import yaml


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.targets: list[str] = []
        self.scripts: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("href", "src"):
            if attrs.get(key):
                self.targets.append(attrs[key])
        if tag == "script" and attrs.get("src"):
            self.scripts.append(attrs["src"])


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


def main(site: Path) -> int:
    problems: list[str] = []
    toc = yaml.safe_load(Path("_toc.yml").read_text())
    for page in toc_pages(toc):
        if not (site / f"{page}.html").is_file():
            problems.append(f"missing page {page}.html")
    pages = sorted(site.rglob("*.html"))
    math_pages = 0
    for page in pages:
        if "_static" in page.parts or "_sources" in page.parts:
            continue
        text = page.read_text(errors="replace")
        if "Traceback (most recent call last)" in text:
            problems.append(f"{page}: a cell output shows a traceback")
        math_pages += 'class="math' in text
        parser = _Links()
        parser.feed(text)
        for target in parser.targets:
            url = urlparse(target)
            if url.scheme or target.startswith(("#", "mailto:", "//")) or not url.path:
                continue
            if not (page.parent / unquote(url.path)).resolve().exists():
                problems.append(f"{page.relative_to(site)}: broken link {target}")
        for script in parser.scripts:
            if "mathjax" in script.lower() and urlparse(script).scheme:
                problems.append(f"{page.relative_to(site)}: MathJax loaded from the network ({script})")
    if math_pages == 0:
        problems.append("no page contains typeset math")
    for problem in problems:
        print(problem)
    print(f"checked {len(pages)} HTML files: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "_build/html")))
