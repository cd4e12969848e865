"""tools/release.py: the release bundle is packed completely and reproducibly, and its
verification catches every way a bundle can be wrong. Small fixtures here; `make release` packs
and verifies the real editions (and `test_built_release_bundle` re-verifies them when built)."""

from __future__ import annotations

import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from tools import release

ROOT = Path(__file__).resolve().parents[1]
VERSION = release.version()


def notebook(text: str) -> str:
    cell = {"cell_type": "markdown", "metadata": {}, "source": [text]}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def editions(tmp_path: Path) -> dict[str, Path]:
    """A tiny website, a PDF and three folders of notebooks."""
    html = tmp_path / "html"
    (html / "book" / "_static").mkdir(parents=True)
    (html / "index.html").write_text('<meta http-equiv="Refresh" content="0; url=book/intro.html">')
    (html / "book" / "intro.html").write_text("<html><body><p>Intro</p></body></html>")
    (html / "book" / "_static" / "a.css").write_text("p {}")
    pdf = tmp_path / "book.pdf"
    pdf.write_bytes(b"%PDF-1.7\n%fixture\n")
    folders = {}
    for name in ("student", "colab_full", "colab_student"):
        folder = tmp_path / name
        (folder / "part1").mkdir(parents=True)
        (folder / "part1" / "01.ipynb").write_text(notebook(f"{name} one"))
        (folder / "part2" / "sub").mkdir(parents=True)
        (folder / "part2" / "sub" / "10.ipynb").write_text(notebook(f"{name} ten"))
        folders[name] = folder
    return {"html": html, "pdf": pdf, **folders}


def pack(tmp_path: Path, out_name: str = "release", tag: str | None = None) -> Path:
    e = editions(tmp_path / "in") if not (tmp_path / "in").exists() else fixture_paths(tmp_path)
    out = tmp_path / out_name
    release.pack(e["html"], e["pdf"], e["student"], e["colab_full"], e["colab_student"], out, tag)
    return out


def fixture_paths(tmp_path: Path) -> dict[str, Path]:
    base = tmp_path / "in"
    return {
        "html": base / "html",
        "pdf": base / "book.pdf",
        **{n: base / n for n in ("student", "colab_full", "colab_student")},
    }


def test_the_bundle_holds_every_edition_and_its_lists(tmp_path):
    out = pack(tmp_path)
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        [
            f"book-html-{VERSION}.tar.gz",
            f"book-{VERSION}.pdf",
            f"notebooks-student-{VERSION}.zip",
            f"colab-full-{VERSION}.zip",
            f"colab-student-{VERSION}.zip",
            "manifest.json",
            "SHA256SUMS",
        ]
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["version"] == VERSION and manifest["tag"] == f"v{VERSION}"
    assert manifest["commit"] == release.commit() != ""
    for entry in manifest["files"]:
        path = out / entry["name"]
        assert entry["size"] == path.stat().st_size and entry["sha256"] == release.sha256(path)
        assert entry["description"]
    sums = (out / "SHA256SUMS").read_text().splitlines()
    assert len(sums) == 6 and all(len(line.split("  ")[0]) == 64 for line in sums)
    with tarfile.open(out / f"book-html-{VERSION}.tar.gz") as tar:
        members = tar.getnames()
    assert f"book-html-{VERSION}/index.html" in members
    assert f"book-html-{VERSION}/book/_static/a.css" in members
    with zipfile.ZipFile(out / f"colab-student-{VERSION}.zip") as archive:
        assert sorted(archive.namelist()) == ["part1/01.ipynb", "part2/sub/10.ipynb"]
        assert "colab_student ten" in archive.read("part2/sub/10.ipynb").decode()
    assert release.verify(out, site_check=False) == []


def test_packing_twice_gives_the_same_bytes(tmp_path):
    first, second = pack(tmp_path, "a"), pack(tmp_path, "b")
    assert (first / "SHA256SUMS").read_text() == (second / "SHA256SUMS").read_text()


def test_a_given_tag_is_recorded(tmp_path):
    out = pack(tmp_path, tag=f"v{VERSION}")
    assert json.loads((out / "manifest.json").read_text())["tag"] == f"v{VERSION}"


@pytest.mark.parametrize(
    "damage, expected",
    [
        (lambda out: (out / f"book-{VERSION}.pdf").write_bytes(b"%PDF-1.7\n%other\n"), "SHA-256"),
        (lambda out: (out / f"book-{VERSION}.pdf").unlink(), "missing"),
        (lambda out: (out / "extra.txt").write_text("x"), "not in manifest.json"),
        (lambda out: (out / "SHA256SUMS").write_text(""), "SHA256SUMS"),
        (lambda out: (out / "manifest.json").write_text("{"), "unreadable"),
        (
            lambda out: (out / f"colab-full-{VERSION}.zip").write_bytes(b"not a zip"),
            "not a zip of notebooks",
        ),
    ],
    ids=["changed", "missing", "extra", "sums", "manifest", "bad zip"],
)
def test_verification_catches_a_damaged_bundle(tmp_path, damage, expected):
    out = pack(tmp_path)
    damage(out)
    problems = release.verify(out, site_check=False)
    assert any(expected in p for p in problems), problems


def test_verification_catches_a_manifest_that_lies_about_a_size(tmp_path):
    out = pack(tmp_path)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["files"][1]["size"] += 1
    (out / "manifest.json").write_text(json.dumps(manifest))
    problems = release.verify(out, site_check=False)
    assert any("bytes, manifest.json says" in p for p in problems), problems


def test_content_checks(tmp_path):
    fake_pdf = tmp_path / "x.pdf"
    fake_pdf.write_bytes(b"<html>")
    assert release.check_content(fake_pdf) == ["x.pdf: not a PDF"]
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("../outside.ipynb", notebook("x"))
    assert "not a notebook at a relative path" in release.check_content(evil)[0]
    text = tmp_path / "text.zip"
    with zipfile.ZipFile(text, "w") as archive:
        archive.writestr("a.txt", "x")
    assert release.check_content(text)
    empty = tmp_path / "empty.zip"
    zipfile.ZipFile(empty, "w").close()
    assert release.check_content(empty) == ["empty.zip: no notebook in it"]


def test_the_unpacked_site_goes_through_the_site_check(tmp_path, capsys):
    # The fixture site lacks the book's pages: the offline site check run on the unpacked
    # tarball must say so, and verification must fail.
    out = pack(tmp_path)
    problems = release.verify(out, site_check=True)
    assert problems == [f"book-html-{VERSION}.tar.gz: the unpacked site fails the site check"]
    assert "missing page" in capsys.readouterr().out
    with tarfile.open(out / f"book-html-{VERSION}.tar.gz") as tar:
        assert all(release.safe_member(m) for m in tar.getnames())


def test_packing_refuses_missing_editions(tmp_path):
    e = editions(tmp_path)
    with pytest.raises(SystemExit, match="colab-student"):
        release.pack(
            e["html"], e["pdf"], e["student"], e["colab_full"], tmp_path / "nope", tmp_path / "o"
        )
    with pytest.raises(SystemExit, match="--pdf"):
        release.pack(
            e["html"],
            tmp_path / "no.pdf",
            e["student"],
            e["colab_full"],
            e["colab_student"],
            tmp_path / "o",
        )


@pytest.mark.parametrize(
    "env, tag",
    [
        ({}, None),
        ({"GITHUB_REF_NAME": "main"}, None),
        ({"GITHUB_REF_NAME": "v9.9.9"}, "v9.9.9"),
        ({"RELEASE_TAG": "v1.0.0", "GITHUB_REF_NAME": "v2.0.0"}, "v1.0.0"),
    ],
)
def test_the_tag_named_by_the_environment(env, tag):
    assert release.tag_from_env(env) == tag


def test_tag_must_be_v_plus_the_version():
    assert release.tag_problem(None, "0.4.0") is None
    assert release.tag_problem("v0.4.0", "0.4.0") is None
    assert "does not match" in release.tag_problem("v0.4.1", "0.4.0")
    assert "does not match" in release.tag_problem("0.4.0", "0.4.0")
    assert release.main(["check-tag", f"v{VERSION}"]) == 0
    assert release.main(["check-tag", "v0.0.0-not-this"]) == 1


def test_release_notes_come_from_the_changelog(tmp_path):
    out = pack(tmp_path)
    text = release.notes(out)
    assert release.changelog_section(VERSION, (ROOT / "CHANGELOG.md").read_text()) in text
    assert f"colab-full-{VERSION}.zip" in text and "SHA-256" in text
    assert release.changelog_section("0.0.0", "## 0.1.0\n\nx\n") == ""
    assert release.changelog_section("0.1.0", "# C\n\n## 0.2.0\n\ny\n\n## 0.1.0 (d)\n\nx\n") == "x"


def test_built_release_bundle():
    """The bundle `make release` wrote, verified again as a reader receives it: every file
    against the manifest, the HTML tarball unpacked and site-checked offline."""
    bundle = ROOT / "_build" / "release"
    if not (bundle / "manifest.json").is_file():
        pytest.skip("no release bundle built (make release)")
    assert release.verify(bundle, site_check=True) == []
