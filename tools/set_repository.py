"""Set the book's repository URL in its one home and everywhere it is copied from there.

Usage: ``python tools/set_repository.py https://github.com/OWNER/NAME`` (``--check``: only the
note while the URL is the placeholder).

The URL lives in ``_config.yml`` (``repository.url``: the rocket and repository buttons). Copies:

* each notebook's Colab cell installs ``sxor`` from it (``git+URL@``);
* :data:`COPIES`: ``CITATION.cff`` (the repository and the website), ``pyproject.toml``
  (``[project.urls]``), the README (badges and links), ``book/README.md`` (the Colab cell's
  template) and the workflows. In these files the address appears in three forms, all rewritten:
  ``https://github.com/OWNER/NAME``, the website ``https://OWNER.github.io/NAME/`` (owner in lower
  case) and Colab links ``colab.research.google.com/github/OWNER/NAME/``.

``tests/test_repository_address.py`` (and ``tests/test_notebooks.py`` for the Colab cells) fail
when a copy disagrees with ``_config.yml``. Only text is changed; no outputs.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The URL the book ships with until it is published (``make book`` warns while it is set).
PLACEHOLDER = "https://github.com/sxor-notes/sxor-book"
#: Files (globs, relative to the root) that hold copies of the address.
COPIES = (
    "CITATION.cff",
    "pyproject.toml",
    "README.md",
    "book/README.md",
    ".github/workflows/*.yml",
)
#: Where a slug ends: anything that cannot continue a GitHub owner or repository name.
_END = r"(?![\w.-])"


def current_url() -> str:
    match = re.search(
        r"^repository:\s*\n\s+url:\s*(\S+)", (ROOT / "_config.yml").read_text(), re.MULTILINE
    )
    if match is None:
        raise SystemExit("_config.yml has no repository.url")
    return match.group(1)


def owner_and_name(url: str) -> tuple[str, str]:
    match = re.fullmatch(r"https://github\.com/([\w.-]+)/([\w.-]+)", url)
    if match is None:
        raise SystemExit(f"expected https://github.com/OWNER/NAME, got {url!r}")
    return match.group(1), match.group(2)


def site_url(url: str) -> str:
    """The GitHub Pages address of the repository at ``url``."""
    owner, name = owner_and_name(url)
    return f"https://{owner.lower()}.github.io/{name}/"


def address_patterns(owner: str, name: str) -> list[re.Pattern[str]]:
    """The three forms of the address of ``owner/name`` (see the module's docstring)."""
    o, n = re.escape(owner), re.escape(name)
    return [
        re.compile(rf"https://github\.com/{o}/{n}{_END}"),
        re.compile(rf"https://{re.escape(owner.lower())}\.github\.io/{n}{_END}", re.IGNORECASE),
        re.compile(rf"colab\.research\.google\.com/github/{o}/{n}{_END}"),
    ]


def rewrite(text: str, old: str, new: str) -> str:
    """``text`` with every form of the address ``old`` replaced by the same form of ``new``."""
    (old_owner, old_name), (owner, name) = owner_and_name(old), owner_and_name(new)
    replacements = [
        f"https://github.com/{owner}/{name}",
        f"https://{owner.lower()}.github.io/{name}",
        f"colab.research.google.com/github/{owner}/{name}",
    ]
    for pattern, replacement in zip(address_patterns(old_owner, old_name), replacements):
        text = pattern.sub(lambda _match, r=replacement: r, text)
    return text


def copy_files() -> list[Path]:
    return sorted({p for pattern in COPIES for p in ROOT.glob(pattern) if p.is_file()})


def set_url(url: str) -> int:
    owner_and_name(url)
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
    files = []
    for path in copy_files():
        text = path.read_text()
        new = rewrite(text, old, url)
        if new != text:
            path.write_text(new)
            files.append(path.relative_to(ROOT).as_posix())
    print(
        f"repository URL: {old} -> {url}; {changed} notebook Colab cells updated; "
        f"other copies updated in: {', '.join(files) or 'none'}"
    )
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
