"""Per-instance outcomes of the success grid of the chapter "One gradient step learns sparse XOR"
(re-exported by :mod:`sxor.experiments.one_step`).

* ``one-step-grid-instances``: the instances and cells of ``one-step-grid`` with each instance's
  outcome kept (:func:`run_grid_instances`).

From the records: the outcomes per ``d`` (:func:`instance_outcomes`), the ``d`` with every
instance (:func:`fully_seeded`) and the bootstrap over instances of the smallest sufficient ``m``
and its slope in ``ln d`` (:func:`bootstrap_instances`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable

import numpy as np
import torch

from ..xor import analysis
from ..xor.metrics import FAILURE_MODES
from . import register, size_config
from .one_step_grid import GRID_C, GRID_M_MAX, GRID_SIZES, _grid_blocks, _grid_cells

#: The ``d`` of the ``ci`` size of ``one-step-grid-instances``, each with all its seeds and cells,
#: so that the ``ci`` records equal the full run's exactly.
INSTANCE_CI_D = (64, 256)


@register(
    "one-step-grid-instances",
    "per-instance failure modes on the cells of one-step-grid (same instances)",
    compare_keys=("d", "m"),
)
def run_grid_instances(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    """The instances and cells of ``one-step-grid`` (:func:`.run_grid`: the same blocks, seeds and
    ``m_max``), with each instance's outcome kept: one record per cell ``(d, m)`` whose strings
    ``mode`` and ``limit_mode`` hold one digit per instance, in seed order, the code of
    ``FAILURE_MODES`` at the grid's step and in the argmax limit. Their digit counts are the
    grid's counts (``tests/test_one_step_instances.py`` checks this against the committed grid), and
    they are what :func:`bootstrap_instances` resamples. The ``ci`` size is the full size at
    ``d`` in ``INSTANCE_CI_D``. Environment variables as for :func:`.run_grid`.
    """
    cfg, cells = _grid_cells("full")
    if size == "ci":
        cells = {d: cells[d] for d in INSTANCE_CI_D}
    else:
        size_config(size, GRID_SIZES)
    blocks_by_d = _grid_blocks(cells, cfg["seeds"], device)
    records, cpu = [], {}
    for d, blocks in blocks_by_d.items():
        for m in cells[d]:
            codes = {
                k: "".join(str(int(c)) for b in blocks for c in b["out"][str(m)][k])
                for k in ("mode", "limit_mode")
            }
            records.append({"d": d, "m": m, "seeds": len(codes["mode"]), **codes})
        cpu[str(d)] = round(sum(b["cpu_seconds"] for b in blocks), 1)
    params = {
        "c": GRID_C,
        "eta": "c d^2 ln d",
        "codes": list(FAILURE_MODES),
        "seeds": {str(d): cfg["seeds"][d] for d in cells},
        "m_max": {str(d): GRID_M_MAX[d] for d in cells},
        "nested_in_m": True,
        "cpu_seconds_by_d": cpu,
    }
    return params, records


def instance_outcomes(
    results: dict, key: str = "success"
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """``{d: (ms, ok [seeds, len(ms)])}`` from ``one-step-grid-instances`` results: ``ok[k, j]`` is
    whether instance ``k`` counts at ``ms[j]``. ``key`` is ``"success"`` (step mode 0),
    ``"limit_success"`` (limit mode 0) or ``"no_limit_off_target"`` (limit mode not off-target,
    the curve of ``m_off``).

    Raises
    ------
    ValueError
        For another ``key``, or cells of one ``d`` with different numbers of instances.
    """
    tests: dict[str, tuple[str, Callable[[np.ndarray], np.ndarray]]] = {
        "success": ("mode", lambda c: c == 0),
        "limit_success": ("limit_mode", lambda c: c == 0),
        "no_limit_off_target": ("limit_mode", lambda c: c != 1),
    }
    if key not in tests:
        raise ValueError(
            f"key must be 'success', 'limit_success' or 'no_limit_off_target', got {key!r}"
        )
    field, test = tests[key]
    out = {}
    for d in sorted({r["d"] for r in results["records"]}):
        rows = sorted((r for r in results["records"] if r["d"] == d), key=lambda r: r["m"])
        if len({len(r[field]) for r in rows}) != 1:
            raise ValueError(f"the cells of d = {d} hold different numbers of instances")
        codes = np.array(
            [np.frombuffer(r[field].encode(), dtype=np.uint8) - ord("0") for r in rows]
        ).T
        out[d] = (np.array([r["m"] for r in rows]), test(codes))
    return out


def fully_seeded(outcomes: dict[int, tuple[np.ndarray, np.ndarray]]) -> list[int]:
    """The ``d`` of ``outcomes`` (:func:`instance_outcomes`) with the largest number of instances:
    the ``d`` that the chapter's least-squares lines in ``ln d`` are fitted to, so that every point
    of a line rests on the same number of instances (an unweighted fit would otherwise give a ``d``
    with few instances, at the end of the range where its leverage is largest, the weight of any
    other).

    Raises
    ------
    ValueError
        For empty ``outcomes``.
    """
    if not outcomes:
        raise ValueError("outcomes must hold at least one d")
    most = max(ok.shape[0] for _, ok in outcomes.values())
    return [d for d in sorted(outcomes) if outcomes[d][1].shape[0] == most]


def bootstrap_instances(
    outcomes: dict[int, tuple[np.ndarray, np.ndarray]],
    target: float = 0.95,
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    joint: bool = True,
    fit_d: Collection[int] | None = None,
) -> analysis.SlopeBootstrap:
    """Percentile bootstrap over *instances* of the smallest ``m`` with rate ``>= target``
    (:func:`sxor.xor.analysis.smallest_m`) at each ``d``, and of the slope of its least-squares line
    in ``ln d``.

    ``outcomes[d] = (ms, ok [S_d, len(ms)])`` (:func:`instance_outcomes`). Each resample draws
    instances with replacement and recomputes every ``d``'s whole curve from the drawn instances,
    so the sharing of one instance across the ``m`` of a nested grid is kept. The grid's instance
    ``k`` has seed ``k`` at every ``d``, and the same seed means the same stream of Gaussian
    numbers (:func:`sxor.xor.sweeps.nested_instances`), so instance ``k`` at ``d`` and at ``2d``
    share numbers and the estimates at different ``d`` are not independent. Seeds are therefore
    drawn jointly across ``d`` (``joint=True``): the seed range is cut at every distinct ``S_d``
    into strata, each stratum is resampled on its own (as many draws as it has seeds) once per
    resample, and each ``d`` uses the draws of the strata below its ``S_d``, so every ``d``'s
    resample has exactly ``S_d`` instances. ``joint=False`` resamples each ``d`` independently
    (for comparison). The smallest ``m`` is :func:`sxor.xor.analysis.smallest_m`'s: the crossing
    after the last grid ``m`` whose rate is below ``target``. A resample whose rate at the largest
    grid ``m`` is below ``target`` at some ``d`` is kept with that ``d``'s value set to the largest
    grid ``m`` (censored) and counted in ``censored``; only ``d`` with a finite point estimate
    enter.

    ``fit_d`` (optional) names the ``d`` whose point estimates enter the least-squares line, its
    slope and the slope's interval (e.g. :func:`fully_seeded`); the other ``d`` keep their own
    intervals, from the same joint resamples, and ``SlopeBootstrap.fit`` marks which ``d`` entered.
    By default every ``d`` with a finite point estimate enters.

    Returns
    -------
    sxor.xor.analysis.SlopeBootstrap

    Raises
    ------
    ValueError
        For ``resamples < 2``, a ``level`` outside ``(0, 1)``, fewer than two ``d`` with a
        finite point estimate (or, with ``fit_d``, fewer than two of them in ``fit_d``), or a
        ``d`` of ``fit_d`` that is not in ``outcomes`` or has no finite point estimate.
    TypeError
        For a ``fit_d`` that is not a collection of ``d`` (an int, a string).
    """
    if resamples < 2:
        raise ValueError(f"resamples must be >= 2, got {resamples}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if fit_d is not None:
        if isinstance(fit_d, (str, bytes)) or not isinstance(fit_d, Iterable):
            raise TypeError(f"fit_d must be a collection of d, got {type(fit_d).__name__}")
        fit_d = set(fit_d)  # once: a generator would be used up by the first look
        if not fit_d <= set(outcomes):
            raise ValueError(f"fit_d holds d not in outcomes: {sorted(fit_d - set(outcomes))}")
    ds, points = [], []
    for d in sorted(outcomes):
        ms, ok = outcomes[d]
        value = analysis.smallest_m(ms, ok.mean(0), target)
        if np.isfinite(value):
            ds.append(d)
            points.append(value)
    if len(ds) < 2:
        raise ValueError("need at least two d with a finite smallest m")
    if fit_d is not None:
        if not fit_d <= set(ds):
            raise ValueError(f"fit_d holds d with no finite smallest m: {sorted(fit_d - set(ds))}")
        if len(fit_d) < 2:
            raise ValueError("need at least two d of fit_d with a finite smallest m")
    sizes = sorted({outcomes[d][1].shape[0] for d in ds})
    edges = [0, *sizes]
    rng = np.random.default_rng(seed)
    samples = np.empty((resamples, len(ds)))
    censored = np.zeros(len(ds), dtype=np.int64)
    for r in range(resamples):
        if joint:
            idx = np.concatenate(
                [rng.integers(a, b, size=b - a) for a, b in itertools.pairwise(edges)]
            )
            weights = np.bincount(idx, minlength=sizes[-1]).astype(float)
        for j, d in enumerate(ds):
            ms, ok = outcomes[d]
            n = ok.shape[0]
            if not joint:
                weights = np.bincount(rng.integers(0, n, size=n), minlength=n).astype(float)
            value = analysis.smallest_m(ms, weights[:n] @ ok / n, target)
            if not np.isfinite(value):
                value = ms[-1]
                censored[j] += 1
            samples[r, j] = value
    used = np.array([fit_d is None or d in fit_d for d in ds])
    return analysis.summarise_bootstrap(
        ds, points, samples, level, float(censored.sum()) / (resamples * len(ds)), used, censored
    )
