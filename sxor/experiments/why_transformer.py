"""Sweep of the chapter "Why a transformer: parameters against d".

``why-transformer``: for each ``d``, two-layer ReLU networks of every width in ``1..8``, each with
``restarts`` independent restarts (data and initialisation), and ``more_restarts["restarts"]``
further restarts for the widths ``more_restarts["widths"]`` (a second, independent batch of
restarts with the seed ``d + MORE_SEED``; the first ``restarts`` restarts are the same whether or
not it is run), trained online with Adam for at most
``max_steps`` steps (:func:`sxor.xor.ffnn.train_ffnn`: a run stops at the first check where its
validation loss *and* its test loss are below ``0.01``, else it trains to the budget; the kept
network is then scored on a third, untouched sample set); one record per ``(d, width)`` (:func:`sxor.xor.ffnn.width_records`). The transformer's side is *not*
run here: it is read from the one-step chapter's committed grid (``one-step-grid``), so that both
chapters report the same numbers; :func:`~sxor.experiments.why_transformer_reliability.transformer_smallest_m` reads it at a given reliability.

The sweep and its figures live in ``why_transformer_ffnn``, the comparison of both models at a
matched reliability in ``why_transformer_reliability``; this module gathers their names.
"""

from __future__ import annotations

from ..xor.ffnn import parameter_count
from .why_transformer_ffnn import _PER_RESTART as _PER_RESTART
from .why_transformer_ffnn import (
    FFNN_DTYPE,
    FFNN_TRAINING,
    MORE_SEED,
    SIZES,
    join_restarts,
    plot_parameters,
    plot_rates,
    rate_table,
    run,
)
from .why_transformer_ffnn import _row as _row
from .why_transformer_reliability import (
    RELIABILITY,
    clopper_pearson,
    consistent_with,
    ffnn_consistent_width,
    interval_threshold,
    matched_reliability,
    plot_reliability,
    smallest_consistent,
    smallest_parameters,
    transformer_consistent_m,
    transformer_smallest_m,
)
from .why_transformer_reliability import _side as _side

__all__ = [
    "FFNN_DTYPE",
    "FFNN_TRAINING",
    "MORE_SEED",
    "RELIABILITY",
    "SIZES",
    "clopper_pearson",
    "consistent_with",
    "ffnn_consistent_width",
    "interval_threshold",
    "join_restarts",
    "matched_reliability",
    "parameter_count",
    "plot_parameters",
    "plot_rates",
    "plot_reliability",
    "rate_table",
    "run",
    "smallest_consistent",
    "smallest_parameters",
    "transformer_consistent_m",
    "transformer_smallest_m",
]
