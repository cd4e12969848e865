"""Set the book's repository URL in its one home and everywhere it is copied from there.

Usage: ``python tools/set_repository.py https://github.com/OWNER/NAME``

The URL lives in ``_config.yml`` (``repository.url``: the rocket and repository buttons). Each
notebook's Colab cell installs ``sxor`` from the same URL, so the cells are rewritten to match
(``tests/test_notebooks.py`` fails when they differ). Only text is changed; no outputs.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The URL the book ships with until it is published (``make book`` warns while it is set).
PLACEHOLDER = "https://github.com/sxor-notes/sxor-book"


def current_url() -> str:
    match = re.search(
        r"^repository:\s*\n\s+url:\s*(\S+)", (ROOT / "_config.yml").read_text(), re.MULTILINE
    )
    if match is None:
        raise SystemExit("_config.yml has no repository.url")
    return match.group(1)


def set_url(url: str) -> int:
    if not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url):
        raise SystemExit(f"expected https://github.com/OWNER/NAME, got {url!r}")
    old = current_url()
    config = ROOT / "_config.yml"
    config.write_text(config.read_text().replace(f"url: {old}", f"url: {url}", 1))
    changed = 0
    for path in sorted((ROOT / "book").rglob("*.ipynb")):
        text = path.read_text()
        nb = json.loads(text)
        first = nb["cells"][0]
        source = "".join(first["source"])
        new = source.replace(f"git+{old}@", f"git+{url}@")
        if new != source:
            first["source"] = new.splitlines(keepends=True)
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
            changed += 1
    print(f"repository URL: {old} -> {url}; {changed} notebook Colab cells updated")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[1] == "--check":
        if current_url() == PLACEHOLDER:
            print(
                f"note: the repository URL is still the placeholder {PLACEHOLDER}; "
                "before publishing run `python tools/set_repository.py https://github.com/OWNER/NAME`"
            )
        return 0
    if len(argv) != 2:
        print(__doc__)
        return 2
    return set_url(argv[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
