"""The committed results travel with the package: a wheel carries every file a notebook reads.

Colab installs ``sxor`` from the repository (no checkout), so a results file that is not package
data is missing there. The wheel is built here from the working tree, offline, and opened.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat

from sxor.results import RESULTS_DIR

ROOT = Path(__file__).resolve().parents[1]


def results_read_by_notebooks() -> set[str]:
    names = set()
    for path in sorted((ROOT / "book").rglob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                names |= set(re.findall(r"committed_results\(\s*[\"']([\w.-]+)[\"']", cell.source))
    return names


def test_every_results_file_a_notebook_reads_is_committed():
    names = results_read_by_notebooks()
    assert names, "no notebook reads committed results: the pattern is stale"
    missing = sorted(n for n in names if not (RESULTS_DIR / f"{n}.json").is_file())
    assert not missing, f"notebooks read results that are not in {RESULTS_DIR}: {missing}"


def test_the_wheel_carries_every_results_file(tmp_path):
    src = tmp_path / "src"  # a copy, so that the build leaves nothing in the checkout
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "sxor", src / "sxor", ignore=shutil.ignore_patterns("__pycache__", "*.png")
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "--disable-pip-version-check",
            "-w",
            str(tmp_path),
            str(src),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("sxor-*.whl")
    contents = set(zipfile.ZipFile(wheel).namelist())
    for name in results_read_by_notebooks() | {p.stem for p in RESULTS_DIR.glob("*.json")}:
        assert f"sxor/committed/{name}.json" in contents, f"{name}.json is not in the wheel"
    assert "sxor/xor/population.py" in contents and "sxor/interp/__init__.py" in contents
    assert "sxor/book.mplstyle" in contents, (
        "the figure style sxor.book.setup applies is not in the wheel"
    )
