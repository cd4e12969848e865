"""Sweeps of the chapter "Regularised training": the authors' two Tikhonov runs.

The setup is :mod:`sxor.interp.training` (``N = 10`` sequences of ``n = 100`` tokens in ``d = 16``,
one softmax block, Adam with coupled weight decay ``epsilon``, learning rate ``1e-3``
cosine-annealed to 0 over each run, full batch, the PyTorch-default initialisation). The full
size runs in float32, as the authors' code does; the CI size in float64, so that the digits a
notebook prints do not depend on the machine. Two runs, as in the authors' ``tikhonov/`` scripts:

* ``single`` (their Figure 1a): one ``epsilon``, one long run from the initialisation;
* ``sweep`` (their Figure 1b): one model warm-started through decreasing ``epsilon``, a fresh
  optimiser and schedule per ``epsilon`` (:func:`sxor.interp.training.warm_start_sweep`).

One record per stage (the single run is one stage): ``run``, ``stage``, ``epsilon``, ``steps``,
the final and smallest ``J`` and ``J_eps = J + (eps/2)|theta|^2``, ``|theta|^2``, the final
``|grad J_eps|``, the reference values ``(eps/2)|theta*|^2`` and ``eps|theta*|^2`` of the known
interpolant ``theta*``, and the curve ``[[step, J, J_eps, |theta|^2], ...]`` at log-spaced steps.

The book's runs live in ``regularised_training_runs``, the authors' runs beside their paper in
``regularised_training_paper``; this module gathers their names.
"""

from __future__ import annotations

from .regularised_training_paper import (
    AUTHORS_SIZES,
    PAPER_FIGURE_1,
    plot_against_paper,
    run_authors,
    threshold_crossing,
)
from .regularised_training_runs import (
    DTYPES,
    SEED_SIZES,
    SIZES,
    plot_regularised,
    run,
    run_runs,
    run_seed_sweeps,
    run_seeds,
)

__all__ = [
    "AUTHORS_SIZES",
    "DTYPES",
    "PAPER_FIGURE_1",
    "SEED_SIZES",
    "SIZES",
    "plot_against_paper",
    "plot_regularised",
    "run",
    "run_authors",
    "run_runs",
    "run_seed_sweeps",
    "run_seeds",
    "threshold_crossing",
]
