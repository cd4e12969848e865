"""Set-up and print helpers shared by every chapter: seeds, threads, print precision, figure
style, device and scale, and the one way the book prints a numerical agreement."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import torch

#: How much larger the sizes of a chapter get on a GPU (one variable for the whole chapter).
GPU_SCALE = 8
#: The book's one matplotlib style file (package data), applied by :func:`setup`.
STYLE = Path(__file__).with_name("book.mplstyle")


def default_device() -> torch.device:
    """``cuda`` when a GPU is visible, else ``cpu``: the device every chapter computes on."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def setup(seed: int = 0, threads: int | None = None) -> tuple[torch.device, int]:
    """Fix seeds and printing, style figures, and return ``(DEVICE, SCALE)``.

    Parameters
    ----------
    seed
        Seed of Python's, NumPy's and torch's global generators.
    threads
        Passed to ``torch.set_num_threads``. Chapters whose tensors are small pass ``1``: they
        gain nothing from threads and lose a lot on a busy CPU. ``None`` leaves torch's default.

    Returns
    -------
    tuple
        ``DEVICE``, which is :func:`default_device`, and ``SCALE``, which is 1 on a CPU and
        :data:`GPU_SCALE` on a GPU, so that ``n = 1000 * SCALE`` grows a chapter's sizes with
        one variable.
    """
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive integer or None, got {threads!r}")
        torch.set_num_threads(threads)
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 (setup's contract: NumPy's global generator, for readers' own cells)
    torch.manual_seed(seed)
    torch.set_printoptions(precision=4, sci_mode=False)
    np.set_printoptions(precision=4, suppress=True)
    use_style()
    try:  # inline backend options exist only inside IPython
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None:
            shell.run_line_magic("config", "InlineBackend.figure_formats = ['png']")
    except ImportError:
        pass
    device = default_device()
    return device, (1 if device.type == "cpu" else GPU_SCALE)


def use_style() -> None:
    """Apply the book's figure style, :data:`STYLE` (fonts legible at page width and on a phone,
    a colour-blind-safe cycle, legends on an opaque frame); :func:`setup` calls it."""
    import matplotlib.pyplot as plt

    plt.style.use(STYLE)


def legend_below(ax, ncol: int | None = None, **kwargs):
    """Put the legend of ``ax`` under the axes, clear of the data and of the x-axis label.

    Parameters
    ----------
    ax
        A matplotlib ``Axes`` with labelled artists.
    ncol
        Columns of the legend; default: as many as fit three to a row (at most 3).
    **kwargs
        Passed to ``ax.legend`` (``title``, ``fontsize``, ...).

    Returns
    -------
    matplotlib.legend.Legend
        The legend; the inline backend's tight bounding box keeps it in the saved figure.

    Raises
    ------
    TypeError
        When ``ax`` is not an Axes.
    ValueError
        When ``ax`` has no labelled artist (the legend would be empty) or ``ncol`` is not a
        positive integer.
    """
    if not (hasattr(ax, "get_legend_handles_labels") and hasattr(ax, "get_tightbbox")):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        raise ValueError("ax has no labelled artist: nothing to put in a legend")
    if ncol is None:
        ncol = min(3, len(handles))
    if isinstance(ncol, bool) or not isinstance(ncol, int) or ncol < 1:
        raise ValueError(f"ncol must be a positive integer, got {ncol!r}")
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    tight, box = ax.get_tightbbox(renderer), ax.get_window_extent(renderer)
    below = (tight.y0 - box.y0) / box.height if box.height else -0.15
    kwargs.setdefault("frameon", False)
    return ax.legend(
        handles, labels, loc="upper center", bbox_to_anchor=(0.5, below - 0.02), ncol=ncol, **kwargs
    )


def bound(err: float, tol: float) -> str:
    """Print a numerical error the way the whole book does: ``"< 1e-12"`` when ``err < tol``.

    An error at rounding level has digits that change from one machine to the next; the bound
    does not. An error at or above ``tol`` is printed with its value and flagged, so a failing
    check is visible on the page and in the notebook comparison of the tests.

    Parameters
    ----------
    err
        The error, difference or residual (a float or a 0-dim tensor).
    tol
        The tolerance the check promises, a positive number.

    Raises
    ------
    ValueError
        When ``err`` or ``tol`` is nan, or ``tol`` is not positive.
    """
    err, tol = float(err), float(tol)
    if math.isnan(err) or math.isnan(tol) or tol <= 0:
        raise ValueError(f"bound needs a number err and a positive tol, got err={err}, tol={tol}")
    return f"< {tol:.0e}" if err < tol else f"{err:.1e} (not below {tol:.0e}!)"
