"""Sweeps of the chapter "One gradient step learns sparse XOR".

* ``one-step-eta``: loss and success after one step against ``eta`` for several ``d`` (fixed
  ``m``), to show that ``eta`` must scale like ``d^2`` (``one_step_eta``).
* ``one-step-grid``: success probability and failure modes on a ``(d, m)`` grid at the grid step
  ``eta = c d^2 ln d`` (:func:`sxor.xor.analysis.grid_eta`) and in the ``eta -> infinity`` limit
  (``one_step_grid``).
* ``one-step-grid-instances``: the same grid with each instance's outcome kept, and the bootstrap
  over instances (``one_step_instances``).
* ``one-step-same-target``: same-target failures on fresh draws, and the grid's failure counts
  against their predictions (``one_step_same_target``).
* ``one-step-prediction``: the leading-order prediction of the ``eta -> infinity`` success rate
  (``one_step_prediction``).

The eta sweep and the grid use :func:`sxor.xor.sweeps.sweep` and :func:`sxor.xor.sweeps.sweep_m`
(instance ``k`` seeded with ``seed + k``), so a cell of the ``ci`` size equals the same cell of the
``full`` size whenever both use the same number of seeds.

This module gathers the chapter's names from those modules, so that
``from sxor.experiments import one_step as exp`` reaches all of them.
"""

from __future__ import annotations

from .one_step_eta import (
    ETA_OVER_D2,
    ETA_SIZES,
    ETA_SWEEP_M,
    eta_measure,
    loss_crossings,
    plot_attention,
    plot_eta,
    plot_eta_success,
    run_eta,
)
from .one_step_grid import (
    GRID_BLOCK,
    GRID_C,
    GRID_M_MAX,
    GRID_SIZES,
    grid_block,
    grid_counts,
    grid_measure,
    m95_by_d,
    plot_grid,
    run_grid,
    success_curves,
)
from .one_step_grid import _grid_blocks as _grid_blocks
from .one_step_grid import _grid_cells as _grid_cells
from .one_step_grid import _grid_ms as _grid_ms
from .one_step_grid import _grid_records as _grid_records
from .one_step_grid import _logged_blocks as _logged_blocks
from .one_step_grid import _mode_counts as _mode_counts
from .one_step_instances import (
    INSTANCE_CI_D,
    bootstrap_instances,
    fully_seeded,
    instance_outcomes,
    run_grid_instances,
)
from .one_step_prediction import (
    PREDICTION_SIZES,
    plot_off_target,
    plot_prediction,
    predicted_m95,
    run_prediction,
)
from .one_step_same_target import (
    SAME_TARGET_BLOCK,
    SAME_TARGET_M,
    SAME_TARGET_SIZES,
    FailureSummary,
    PooledExcess,
    SameTargetRow,
    failure_summary,
    limit_measure,
    plot_same_and_under,
    pooled_same_target,
    run_same_target,
    same_target_seed,
    same_target_table,
)

__all__ = [
    "ETA_OVER_D2",
    "ETA_SIZES",
    "ETA_SWEEP_M",
    "GRID_BLOCK",
    "GRID_C",
    "GRID_M_MAX",
    "GRID_SIZES",
    "INSTANCE_CI_D",
    "PREDICTION_SIZES",
    "SAME_TARGET_BLOCK",
    "SAME_TARGET_M",
    "SAME_TARGET_SIZES",
    "FailureSummary",
    "PooledExcess",
    "SameTargetRow",
    "bootstrap_instances",
    "eta_measure",
    "failure_summary",
    "fully_seeded",
    "grid_block",
    "grid_counts",
    "grid_measure",
    "instance_outcomes",
    "limit_measure",
    "loss_crossings",
    "m95_by_d",
    "plot_attention",
    "plot_eta",
    "plot_eta_success",
    "plot_grid",
    "plot_off_target",
    "plot_prediction",
    "plot_same_and_under",
    "pooled_same_target",
    "predicted_m95",
    "run_eta",
    "run_grid",
    "run_grid_instances",
    "run_prediction",
    "run_same_target",
    "same_target_seed",
    "same_target_table",
    "success_curves",
]
