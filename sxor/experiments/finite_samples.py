"""Sweeps of the chapter "Finite samples".

* ``finite-samples``: one *empirical* gradient step from the antisymmetric init in the large-step
  limit (``eta = 1e12``), on the first ``n`` samples of a stream of samples that belongs to the
  instance (:mod:`sxor.xor.streams`), for ``n`` on a grid of ratio ``2^(1/4)``; the outcome after
  the step is judged by the *population* criterion and classified by
  :func:`sxor.xor.metrics.failure_modes`. One record per ``(d, instance)``. From the records:
  the per-instance sample complexity ``n*`` (:func:`~sxor.experiments.finite_samples_n_star.n_star`), its quantiles with censoring
  (:func:`~sxor.experiments.finite_samples_stats.censored_quantile`) and their exponent in ``d`` with a bootstrap over instances
  (:func:`~sxor.experiments.finite_samples_stats.bootstrap_exponent`).
* ``finite-samples-sgd``: mini-batch SGD with a scan over the batch size and the step size (see
  :func:`~sxor.experiments.finite_samples_sgd.run_sgd`).

The embedding dimension grows with ``d``: ``m = round(2 log2 d) + 4`` (:func:`~sxor.experiments.finite_samples_n_star.embedding_dim`).
Instance ``k`` at dimension ``d`` is :func:`sxor.xor.sweeps.random_instances` instance ``k`` and
its sample stream has key ``d * 2^20 + k``.

The sweeps live in ``finite_samples_n_star`` (the one-step experiment and ``n*``),
``finite_samples_sgd`` (the SGD scan) and ``finite_samples_stats`` (censored quantiles and
power-law exponents); this module gathers their names, so that
``from sxor.experiments import finite_samples as fs`` reaches all of them.
"""

from __future__ import annotations

from .finite_samples_n_star import (
    BLOCK,
    GRID_RATIO,
    ONE_STEP_ETA,
    SIZES,
    capped_table,
    embedding_dim,
    fails_after_success,
    last_failure_modes,
    mode_fractions_by_n,
    n_grid,
    n_star,
    n_star_by_split,
    n_star_capped,
    n_star_table,
    one_step_modes,
    plot_modes,
    plot_n_star,
    population_modes,
    run_finite_samples,
    stream_key,
)
from .finite_samples_n_star import _chunk as _chunk
from .finite_samples_sgd import (
    SGD_BATCH_PER_STEP,
    SGD_LAMBDAS,
    SGD_REFINE_SIZES,
    SGD_SIZES,
    SGD_STEP_RULE,
    SGD_TARGET,
    bootstrap_sgd,
    paired_exponent_difference,
    plot_sgd,
    refine_configs,
    run_sgd,
    run_sgd_refine,
    sgd_batch,
    sgd_best,
    sgd_configs,
    sgd_optimum_position,
    sgd_steps,
    steps_to_rate,
)
from .finite_samples_sgd import _sgd_records as _sgd_records
from .finite_samples_stats import _bootstrap_power_law as _bootstrap_power_law
from .finite_samples_stats import (
    bootstrap_exponent,
    censored_quantile,
    fit_power_law,
)

__all__ = [
    "BLOCK",
    "GRID_RATIO",
    "ONE_STEP_ETA",
    "SGD_BATCH_PER_STEP",
    "SGD_LAMBDAS",
    "SGD_REFINE_SIZES",
    "SGD_SIZES",
    "SGD_STEP_RULE",
    "SGD_TARGET",
    "SIZES",
    "bootstrap_exponent",
    "bootstrap_sgd",
    "capped_table",
    "censored_quantile",
    "embedding_dim",
    "fails_after_success",
    "fit_power_law",
    "last_failure_modes",
    "mode_fractions_by_n",
    "n_grid",
    "n_star",
    "n_star_by_split",
    "n_star_capped",
    "n_star_table",
    "one_step_modes",
    "paired_exponent_difference",
    "plot_modes",
    "plot_n_star",
    "plot_sgd",
    "population_modes",
    "refine_configs",
    "run_finite_samples",
    "run_sgd",
    "run_sgd_refine",
    "sgd_batch",
    "sgd_best",
    "sgd_configs",
    "sgd_optimum_position",
    "sgd_steps",
    "steps_to_rate",
    "stream_key",
]
