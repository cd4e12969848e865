"""Version, licences and what each edition says about itself.

* The version has one definition, ``sxor/_version.py``: ``sxor.__version__``, the wheel's
  metadata (setuptools reads it statically), the changelog's newest section and a release tag
  given in the environment all agree with it.
* The licences (MIT for the code, CC BY 4.0 for the text and figures) are in the repository,
  the README, ``pyproject.toml`` and every page's footer.
* The site's footer and the PDF's first page name the version and the commit (_ext/sxor_site.py).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import tomllib
import zipfile
from pathlib import Path
from types import SimpleNamespace

import yaml

import sxor
from tools import release

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def site_extension():
    spec = importlib.util.spec_from_file_location("sxor_site", ROOT / "_ext" / "sxor_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_version():
    from sxor._version import __version__

    assert sxor.__version__ == __version__ == release.version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    project = PYPROJECT["project"]
    assert "version" not in project and project["dynamic"] == ["version"]
    dynamic = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "sxor._version.__version__"}
    assert site_extension().book_version() == __version__


def test_a_tag_in_the_environment_names_this_version():
    """Where a release tag is given (RELEASE_TAG, or GITHUB_REF_NAME starting with v: the publish
    workflow), it is v + the version; the publish workflow runs `make check-tag` first."""
    tag = release.tag_from_env(os.environ)
    problem = release.tag_problem(tag, sxor.__version__)
    assert problem is None, problem
    assert release.tag_problem("v0.0.0", sxor.__version__) is not None


def test_the_changelog_starts_with_this_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    versions = re.findall(r"^## (\d+\.\d+\.\d+) \((\d{4}-\d\d-\d\d)\)$", text, re.MULTILINE)
    assert versions[0][0] == sxor.__version__, "add a CHANGELOG.md section for the new version"
    assert [v for v, _ in versions] == sorted(
        (v for v, _ in versions), key=lambda v: tuple(map(int, v.split("."))), reverse=True
    )
    assert [v for v, _ in versions][-1] == "0.1.0"
    assert all(release.changelog_section(v, text) for v, _ in versions)


def test_the_wheel_carries_version_licence_and_python_versions(sxor_wheel):
    wheel = sxor_wheel
    assert wheel.name.startswith(f"sxor-{sxor.__version__}-")
    with zipfile.ZipFile(wheel) as archive:
        meta = archive.read(f"sxor-{sxor.__version__}.dist-info/METADATA").decode()
        names = archive.namelist()
    assert f"Version: {sxor.__version__}\n" in meta
    assert "License-Expression: MIT\n" in meta
    assert f"sxor-{sxor.__version__}.dist-info/licenses/LICENSE" in names
    assert "Requires-Python: >=3.11\n" in meta
    assert "Classifier: Programming Language :: Python :: 3.13\n" in meta


def test_licences_are_stated_everywhere():
    mit = (ROOT / "LICENSE").read_text()
    assert mit.startswith("MIT License") and "Permission is hereby granted" in mit
    text = (ROOT / "LICENSE-text").read_text()
    assert "Creative Commons" in text and "Attribution 4.0 International" in text
    assert "https://creativecommons.org/licenses/by/4.0/legalcode" in text
    assert PYPROJECT["project"]["license"] == "MIT"
    assert "CC BY 4.0" in (ROOT / "pyproject.toml").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "LICENSE-text" in readme and "CC BY 4.0" in readme and "MIT" in readme
    footer = yaml.safe_load((ROOT / "_config.yml").read_text())["html"]["extra_footer"]
    assert "creativecommons.org/licenses/by/4.0/" in footer and "MIT License" in footer


def test_footer_names_version_and_commit():
    ext = site_extension()
    config = SimpleNamespace(html_theme_options={"extra_footer": "<p>Licences</p>"})
    ext.edition_footer(None, config)
    footer = config.html_theme_options["extra_footer"]
    assert footer.startswith("<p>Licences</p>")
    commit = ext.build_commit()
    assert f"Version {sxor.__version__}, built from commit {commit}." in footer
    if shutil.which("git") and (ROOT / ".git").exists():
        assert re.fullmatch(r"[0-9a-f]{4,40}", commit)


def test_commit_is_unknown_outside_git(tmp_path):
    assert site_extension().build_commit(tmp_path) == "unknown"


def test_pdf_title_page_names_version_and_commit():
    ext = site_extension()
    app = SimpleNamespace(
        builder=SimpleNamespace(name="singlehtml"), config=SimpleNamespace(root_doc="book/intro")
    )
    context = {"pagetitle": "Attention, provably"}
    ext.edition_on_title_page(app, "book/intro", "page.html", context, None)
    assert context["pagetitle"].startswith('Attention, provably<span class="sxor-edition"')
    assert f"Version {sxor.__version__}, built from commit " in context["pagetitle"]
    # Only the single page that make pdf prints, and only its root document.
    for name, page in (("html", "book/intro"), ("singlehtml", "book/notation")):
        app.builder.name = name
        other = {"pagetitle": "Attention, provably"}
        ext.edition_on_title_page(app, page, "page.html", other, None)
        assert other == {"pagetitle": "Attention, provably"}
