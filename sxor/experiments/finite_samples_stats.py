"""Statistics of the chapter "Finite samples" (re-exported by
:mod:`sxor.experiments.finite_samples`): quantiles of sample counts with censoring
(:func:`censored_quantile`), their power law in ``d`` (:func:`fit_power_law`) and its exponent with
a bootstrap over instances (:func:`bootstrap_exponent`).
"""

from __future__ import annotations

import math

import numpy as np


def censored_quantile(values: np.ndarray, q: float) -> float:
    """The empirical ``q``-quantile (the smallest value with at least a fraction ``q`` of the
    sample at or below it) of values where ``inf`` marks a censored one (known only to exceed the
    largest ``n``). Censored values sort last, so the quantile is finite exactly when more than a
    fraction ``1 - q`` is uncensored; ``inf`` otherwise (only a lower bound is known)."""
    values = np.sort(np.asarray(values, dtype=float))
    if values.ndim != 1 or len(values) == 0 or np.isnan(values).any():
        raise ValueError("values must be a non-empty 1-d array without nan")
    if not 0 < q <= 1:
        raise ValueError(f"q must lie in (0, 1], got {q}")
    return float(values[math.ceil(q * len(values) - 1e-9) - 1])


def fit_power_law(ds, ns) -> tuple[float, float]:
    """Least-squares fit ``log n = log C + p log d``; returns ``(p, C)``. Every ``n`` must be finite."""
    ds, ns = np.asarray(ds, dtype=float), np.asarray(ns, dtype=float)
    if ds.shape != ns.shape or len(ds) < 2:
        raise ValueError("need at least two (d, n) pairs of equal length")
    if not np.isfinite(ns).all() or (ns <= 0).any():
        raise ValueError("every n must be finite and positive to fit a power law")
    p, logc = np.polyfit(np.log(ds), np.log(ns), 1)
    return float(p), float(np.exp(logc))


def _bootstrap_power_law(ds: list[int], sizes: dict[int, int], statistic, num: int, seed: int):
    """Resample the instances of each ``d`` with replacement ``num`` times (``sizes[d]`` of them),
    evaluate ``statistic(d, indices)`` at every ``d`` and fit its power law in ``d``. Returns the
    statistics ``[num, len(ds)]``, the exponents of the resamples where every statistic is finite,
    and how many resamples were left without one (``undefined``)."""
    rng = np.random.default_rng(seed)
    values, exponents, undefined = [], [], 0
    for _ in range(num):
        row = [statistic(d, rng.integers(0, sizes[d], sizes[d])) for d in ds]
        values.append(row)
        if np.isfinite(row).all():
            exponents.append(fit_power_law(ds, row)[0])
        else:
            undefined += 1
    return np.asarray(values), exponents, undefined


def bootstrap_exponent(
    table: dict[int, np.ndarray],
    q: float = 0.5,
    num: int = 1000,
    seed: int = 0,
    cap: dict[int, float] | None = None,
) -> dict:
    """Quantile ``q`` of ``n*`` at each ``d``, its fitted exponent in ``d``, and percentile (2.5%,
    97.5%) bootstrap intervals, resampling the instances of each ``d`` with replacement.

    Without ``cap``, a resample whose quantile is censored at some ``d`` has no exponent: such
    resamples count as ``undefined`` (returned) and the interval is over the others; the point
    estimate itself must be defined at every ``d`` (ValueError otherwise).

    With ``cap`` (``{d: the grid's largest n}``) the statistic is the quantile of ``min(n*, cap)``,
    defined on every sample: a censored quantile becomes the cap (a lower bound of the quantile),
    no resample is dropped (``undefined`` is 0), and ``at_cap`` counts the resamples whose
    quantile is at the cap at some ``d`` (their exponent is that of a bound). ``point_at_cap``
    lists the ``d`` where the point estimate itself is at the cap.
    """
    ds = sorted(table)
    if cap is not None:
        if set(cap) != set(ds) or not all(math.isfinite(cap[d]) and cap[d] > 0 for d in ds):
            raise ValueError("cap must give a finite positive cap for every d of the table")
        table = {d: np.minimum(np.asarray(table[d], dtype=float), cap[d]) for d in ds}
    point = [censored_quantile(table[d], q) for d in ds]
    if not np.isfinite(point).all():
        raise ValueError(
            f"the {q:.0%} quantile of n* is censored at some d: {dict(zip(ds, point))}"
        )
    p, c = fit_power_law(ds, point)
    boot_q, boot_p, undefined = _bootstrap_power_law(
        ds,
        {d: len(table[d]) for d in ds},
        lambda d, idx: censored_quantile(table[d][idx], q),
        num,
        seed,
    )
    out = {
        "d": ds,
        "q": q,
        "quantile": point,
        "exponent": p,
        "constant": c,
        # percentiles without interpolation: a censored (inf) resample stays inf instead of nan
        "quantile_low": np.percentile(boot_q, 2.5, axis=0, method="inverted_cdf").tolist(),
        "quantile_high": np.percentile(boot_q, 97.5, axis=0, method="inverted_cdf").tolist(),
        "exponent_low": float(np.percentile(boot_p, 2.5)),
        "exponent_high": float(np.percentile(boot_p, 97.5)),
        "resamples": num,
        "undefined": undefined,
    }
    if cap is not None:
        caps = np.asarray([cap[d] for d in ds])
        out["at_cap"] = int((boot_q >= caps).any(axis=1).sum())
        out["point_at_cap"] = [d for d, v in zip(ds, point) if v >= cap[d]]
    return out
