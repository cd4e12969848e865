"""Re-execute notebooks in place, top to bottom in a fresh kernel, as CI does.

Usage: ``python tools/execute_notebooks.py book/part1/02_population_gradient.ipynb ...``
(``make execute`` runs it on every notebook). ``--fallbacks-only`` rewrites only the plain-text
line of widget outputs (:func:`shorten_widget_fallbacks`), without executing anything. Sets ``TQDM_DISABLE=1`` and strips per-cell
timing metadata so that diffs show only real changes. A notebook none of whose outputs is a widget
loses its stored widget state (``metadata.widgets``): myst-nb would otherwise make its page load
the widget scripts from the internet for nothing.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.cpu_kernels import pin

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def strip_unused_widget_state(nb: nbformat.NotebookNode) -> bool:
    """Remove ``metadata.widgets`` when no output of ``nb`` shows a widget; True if removed."""
    shows_widgets = any(
        WIDGET_MIME in output.get("data", {})
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    if shows_widgets or "widgets" not in nb.metadata:
        return False
    del nb.metadata["widgets"]
    return True


#: What a widget output's plain-text fallback says instead of the widget's long ``repr``.
#: The website shows it instead of the widget (``_config.yml`` renders no widget and loads no
#: widget script from another host), so it says how to explore.
WIDGET_FALLBACK = "(an explorer: run it in Colab, rocket button above, to explore; the figure below is its static view)"


def shorten_widget_fallbacks(nb: nbformat.NotebookNode) -> int:
    """Replace the ``text/plain`` fallback of every widget output (the widget's ``repr``, often
    wider than the page) by :data:`WIDGET_FALLBACK`; return how many were replaced. Widget cells
    are tagged ``nbval-ignore-output``, so nothing compared changes."""
    count = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = output.get("data", {})
            if WIDGET_MIME in data and data.get("text/plain") != WIDGET_FALLBACK:
                data["text/plain"] = WIDGET_FALLBACK
                count += 1
    return count


def execute(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    start = time.perf_counter()
    NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    strip_unused_widget_state(nb)
    shorten_widget_fallbacks(nb)
    nbformat.write(nb, path)
    return time.perf_counter() - start


def rewrite_fallbacks(path: Path) -> int:
    """Apply :func:`shorten_widget_fallbacks` to the stored notebook at ``path``; return the count."""
    nb = nbformat.read(path, as_version=4)
    count = shorten_widget_fallbacks(nb)
    if count:
        nbformat.write(nb, path)
    return count


if __name__ == "__main__":
    os.environ["TQDM_DISABLE"] = "1"  # the kernels inherit it: no progress bars in the outputs
    pin()  # the kernels inherit it too: PyTorch's AVX2 kernels on every x86-64 CPU
    names = [a for a in sys.argv[1:] if not a.startswith("--")]
    for name in names:
        if "--fallbacks-only" in sys.argv:
            print(
                f"{name}: {rewrite_fallbacks(Path(name))} widget fallback(s) rewritten", flush=True
            )
        else:
            print(f"{name}: {execute(Path(name)):.1f} s", flush=True)
