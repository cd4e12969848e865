"""Sweeps of the chapter "Why exact softmax".

* ``why-softmax``: for each attention kind (softmax, linear, erf), one population step and ``T``
  steps of population gradient descent from the same antisymmetric inits, on a grid of step
  sizes; records the success rate, the step of first success of every seed and the losses
  (``why_softmax_variants``).
* ``why-softmax-floor`` and ``why-softmax-gap``: the best population loss reachable per attention
  kind, and erf's floor proved per instance against the best loss found from more starts
  (``why_softmax_floor``).

Instances come from :func:`sxor.xor.sweeps.sweep` (instance ``k`` seeded with ``seed + k``), so every
kind and every step size sees exactly the same embeddings, inits and supports.

This module gathers the chapter's names from both modules.
"""

from __future__ import annotations

from .why_softmax_floor import (
    FLOOR_SIZES,
    GAP_SIZES,
    gap_starts,
    plot_floor,
    run_floor,
    run_gap,
)
from .why_softmax_variants import (
    KINDS,
    ONE_STEP_ETAS,
    VARIANT_SIZES,
    plot_variants,
    run_variants,
    tuned_descent,
    variants_measure,
)

__all__ = [
    "FLOOR_SIZES",
    "GAP_SIZES",
    "KINDS",
    "ONE_STEP_ETAS",
    "VARIANT_SIZES",
    "gap_starts",
    "plot_floor",
    "plot_variants",
    "run_floor",
    "run_gap",
    "run_variants",
    "tuned_descent",
    "variants_measure",
]
