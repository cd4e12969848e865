"""Re-execute notebooks in place, top to bottom in a fresh kernel, as CI does.

Usage: ``python tools/execute_notebooks.py book/part1/02_population_gradient.ipynb ...``
(``make execute`` runs it on every notebook). Sets ``TQDM_DISABLE=1`` and strips per-cell
timing metadata so that diffs show only real changes.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

os.environ["TQDM_DISABLE"] = "1"


def execute(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    start = time.perf_counter()
    NotebookClient(
        nb, timeout=600, kernel_name="python3", record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    nbformat.write(nb, path)
    return time.perf_counter() - start


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(f"{name}: {execute(Path(name)):.1f} s", flush=True)
