"""tools/colab_branches.py: each Colab edition becomes a one-commit branch, pushed with --force
to a remote through the checkout (here a bare repository on disk stands for the host)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tools import colab_branches, release

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="no git on the PATH")


def git(*args: str, cwd: Path) -> str:
    result = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=True
    )
    return result.stdout.strip()


def edition(folder: Path, text: str) -> Path:
    (folder / "part1").mkdir(parents=True)
    cell = {"cell_type": "markdown", "metadata": {}, "source": [text]}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (folder / "part1" / "01.ipynb").write_text(json.dumps(nb))
    (folder / "intro.ipynb").write_text(json.dumps(nb))
    return folder


def test_prepare_and_push_replace_both_branches(tmp_path):
    full = edition(tmp_path / "full", "full text")
    student = edition(tmp_path / "student", "student text")
    host = tmp_path / "host.git"
    git("init", "-q", "--bare", str(host), cwd=tmp_path)
    checkout = tmp_path / "checkout"
    git("init", "-q", str(checkout), cwd=tmp_path)
    git("remote", "add", "origin", str(host), cwd=checkout)

    prepared = tmp_path / "branches"
    colab_branches.prepare(prepared, {"colab": full, "colab-student": student})
    assert colab_branches.push(prepared, "origin", checkout) == ["colab", "colab-student"]
    files = git("ls-tree", "-r", "--name-only", "colab", cwd=host).splitlines()
    assert sorted(files) == ["README.md", "intro.ipynb", "part1/01.ipynb"]
    assert "student text" in git("show", "colab-student:part1/01.ipynb", cwd=host)
    readme = git("show", "colab:README.md", cwd=host)
    assert f"version {release.version()}" in readme and "CC BY 4.0" in readme

    # The next release replaces each branch with one new commit (no history of generated files).
    (full / "part1" / "01.ipynb").unlink()
    colab_branches.prepare(prepared, {"colab": full, "colab-student": student})
    colab_branches.push(prepared, "origin", checkout)
    assert git("rev-list", "--count", "colab", cwd=host) == "1"
    assert "part1/01.ipynb" not in git("ls-tree", "-r", "--name-only", "colab", cwd=host)


def test_prepare_refuses_a_missing_edition_and_a_bad_branch_name(tmp_path):
    with pytest.raises(SystemExit, match="make colab"):
        colab_branches.prepare(tmp_path / "out", {"colab": tmp_path / "missing"})
    full = edition(tmp_path / "full", "x")
    with pytest.raises(SystemExit, match="not a branch name"):
        colab_branches.prepare(tmp_path / "out", {"-bad": full})


def test_push_refuses_an_empty_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit, match="no prepared branches"):
        colab_branches.push(tmp_path / "empty", "origin", tmp_path)
