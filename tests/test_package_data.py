"""The committed results travel with the package: a wheel carries every file a notebook reads.

Colab installs ``sxor`` from the repository (no checkout), so a results file that is not package
data is missing there. The wheel is built here from the working tree, offline, and opened.
"""

from __future__ import annotations

import re
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


def test_the_wheel_carries_every_results_file(sxor_wheel):
    wheel = sxor_wheel
    contents = set(zipfile.ZipFile(wheel).namelist())
    for name in results_read_by_notebooks() | {p.stem for p in RESULTS_DIR.glob("*.json")}:
        assert f"sxor/committed/{name}.json" in contents, f"{name}.json is not in the wheel"
    assert "sxor/xor/population.py" in contents and "sxor/interp/__init__.py" in contents
    assert "sxor/book.mplstyle" in contents, (
        "the figure style sxor.book.setup applies is not in the wheel"
    )
