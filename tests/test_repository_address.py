"""One address: every copy of the repository's address agrees with ``repository.url`` of
``_config.yml``, and ``tools/set_repository.py URL`` rewrites all of them (run here on a copy of
the files)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools import set_repository

ROOT = Path(__file__).resolve().parents[1]
URL = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
#: Every form of a GitHub repository's address (see tools/set_repository.py).
ANY_ADDRESS = re.compile(
    r"https://github\.com/(?P<a>[\w.-]+/[\w.-]+)"
    r"|https://(?P<owner>[\w-]+)\.github\.io/(?P<name>[\w.-]+)"
    r"|colab\.research\.google\.com/github/(?P<c>[\w.-]+/[\w.-]+)"
)
#: Slugs that are not this repository: the usage example, and GitHub's own pages.
OTHERS = {"OWNER/NAME", "owner/NAME"}


def slugs(text: str) -> list[str]:
    found = []
    for match in ANY_ADDRESS.finditer(text):
        if match.group("a") or match.group("c"):
            found.append(match.group("a") or match.group("c"))
        else:
            found.append(f"{match.group('owner')}/{match.group('name')}")
    return [s.removesuffix(".git") for s in found if s not in OTHERS]


def test_no_copy_disagrees_with_the_config():
    owner, name = set_repository.owner_and_name(URL)
    wrong = {}
    for path in set_repository.copy_files():
        for slug in slugs(path.read_text()):
            if slug.lower() != f"{owner}/{name}".lower():
                wrong.setdefault(path.relative_to(ROOT).as_posix(), []).append(slug)
    assert not wrong, f"addresses other than {URL}: {wrong}"
    copies = "".join(p.read_text() for p in set_repository.copy_files())
    assert f"{URL}" in (ROOT / "CITATION.cff").read_text()
    assert set_repository.site_url(URL) in copies, "the website's address is named somewhere"


def test_the_address_check_can_fail():
    assert slugs("see https://github.com/else/where/actions") == ["else/where"]
    assert slugs("https://else.github.io/where/ and colab.research.google.com/github/a/b/") == [
        "else/where",
        "a/b",
    ]
    assert slugs("python tools/set_repository.py https://github.com/OWNER/NAME") == []


def test_rewrite_changes_every_form_and_nothing_else():
    old = "https://github.com/sxor-notes/sxor-book"
    text = (
        f"{old}/actions/workflows/ci.yml/badge.svg {old}-other https://sxor-notes.github.io/sxor-book/"
        " colab.research.google.com/github/sxor-notes/sxor-book/blob/colab/x.ipynb "
        "https://github.com/sxor-notes/other"
    )
    new = set_repository.rewrite(text, old, "https://github.com/Me/Book")
    assert new == (
        "https://github.com/Me/Book/actions/workflows/ci.yml/badge.svg "
        f"{old}-other https://me.github.io/Book/"
        " colab.research.google.com/github/Me/Book/blob/colab/x.ipynb "
        "https://github.com/sxor-notes/other"
    )


@pytest.mark.parametrize(
    "bad", ["github.com/a/b", "https://gitlab.com/a/b", "https://github.com/a"]
)
def test_refuses_an_address_that_is_not_a_repository(bad):
    with pytest.raises(SystemExit, match=r"expected https://github\.com/OWNER/NAME"):
        set_repository.owner_and_name(bad)


def test_set_repository_on_a_copy_rewrites_every_copy(tmp_path):
    for pattern in ("_config.yml", "tools/set_repository.py", *set_repository.COPIES):
        for path in ROOT.glob(pattern):
            target = tmp_path / path.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)
    notebooks = sorted((ROOT / "book").rglob("*.ipynb"))[:2]
    for path in notebooks:
        target = tmp_path / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    new = "https://github.com/Someone/lecture-notes"
    result = subprocess.run(
        [sys.executable, str(tmp_path / "tools" / "set_repository.py"), new],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "CITATION.cff" in result.stdout
    config = yaml.safe_load((tmp_path / "_config.yml").read_text())
    assert config["repository"]["url"] == new
    for path in [tmp_path / "_config.yml", *tmp_path.glob(".github/workflows/*.yml")] + [
        tmp_path / p for p in set_repository.COPIES if "*" not in p
    ]:
        found = slugs(path.read_text())
        # The website's address has the owner in lower case (GitHub Pages).
        assert all(s.lower() == "someone/lecture-notes" for s in found), (path, found)
    for path in notebooks:
        first = json.loads((tmp_path / path.relative_to(ROOT)).read_text())["cells"][0]
        assert f"git+{new}@" in "".join(first["source"])
    assert "https://someone.github.io/lecture-notes/" in (tmp_path / "CITATION.cff").read_text()
