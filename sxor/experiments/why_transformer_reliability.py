"""Both models at a matched reliability, for the chapter "Why a transformer: parameters against d"
(re-exported by :mod:`sxor.experiments.why_transformer`).

The transformer's side is read from the one-step chapter's committed grid (``one-step-grid``,
:func:`transformer_smallest_m`); the FFNN's from the ``why-transformer`` records. Two rules pick a
model's smallest size: the point rule (measured rate at least ``rate``) and the interval rule
(:func:`consistent_with`: exact Clopper-Pearson interval, :func:`clopper_pearson`);
:func:`matched_reliability` puts both sides side by side and :func:`plot_reliability` draws them.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..results import committed_results
from ..xor.ffnn import parameter_count, smallest_reliable_width
from .one_step_grid import m95_by_d

#: The reliability at which the two models are compared, success in at least 90% of restarts or draws.
RELIABILITY = 0.9


def transformer_smallest_m(grid: dict, rate: float = RELIABILITY) -> dict[int, float]:
    """``{d: smallest grid m from which every grid m has one-step success rate >= rate}`` on the
    one-step chapter's grid (``committed_results("one-step-grid")``): the first grid point after the
    last one below ``rate``, an integer size that was run (``nan`` if the largest ``m`` is below).

    It is the grid point at or above the interpolated crossing of
    :func:`~sxor.experiments.one_step_grid.m95_by_d`; a model size is compared as the size that was run
    and measured, not as a crossing between two sizes."""
    out = {}
    for d, m in m95_by_d(grid["records"], target=rate).items():
        ms = sorted(r["m"] for r in grid["records"] if r["d"] == d)
        out[d] = float(min(mm for mm in ms if mm >= m - 1e-12)) if np.isfinite(m) else math.nan
    return out


def clopper_pearson(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) ``level`` interval for a success probability from ``successes`` of ``n``,
    by bisection on the binomial tails (computed in log space, no SciPy)."""
    if (
        isinstance(successes, bool)
        or not 0 <= successes <= n
        or n < 1
        or int(successes) != successes
    ):
        raise ValueError(
            f"need integers 0 <= successes <= n and n >= 1, got successes={successes}, n={n}"
        )
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    alpha = (1 - level) / 2
    k = torch.arange(n + 1, dtype=torch.float64)
    log_choose = (
        torch.lgamma(torch.tensor(n + 1.0, dtype=torch.float64))
        - torch.lgamma(k + 1)
        - torch.lgamma(n - k + 1)
    )

    def pmf(p: float) -> torch.Tensor:
        return torch.exp(log_choose + k * math.log(p) + (n - k) * math.log1p(-p))

    def bisect(too_low) -> float:  # too_low(p) is True below the root and False above it
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if too_low(mid) else (lo, mid)
        return (lo + hi) / 2

    lower = 0.0 if successes == 0 else bisect(lambda p: float(pmf(p)[successes:].sum()) < alpha)
    upper = (
        1.0 if successes == n else bisect(lambda p: float(pmf(p)[: successes + 1].sum()) > alpha)
    )
    return lower, upper


def consistent_with(successes: int, n: int, rate: float = RELIABILITY, level: float = 0.95) -> bool:
    """The interval rule used for both models: a success rate is *consistent with* ``rate`` or more
    if the upper end of its exact ``level`` interval (:func:`clopper_pearson`) is at least ``rate``."""
    return clopper_pearson(successes, n, level)[1] >= rate


def smallest_consistent(
    rows: list[tuple[int, int, int]], rate: float = RELIABILITY, level: float = 0.95
) -> int | None:
    """Smallest size ``s`` of ``rows = [(size, successes, n), ...]`` from which *every* size
    ``>= s`` has a rate :func:`consistent_with` ``rate`` (so a size that is, and a larger one that is
    shown below ``rate``, does not count); ``None`` if the largest size is not consistent."""
    rows = sorted(rows)
    best = None
    for size, k, n in reversed(rows):
        if not consistent_with(k, n, rate, level):
            break
        best = size
    return best


def ffnn_consistent_width(records: list[dict], rate: float = RELIABILITY) -> dict[int, dict]:
    """``{d: record of the smallest width consistent with rate}`` (:func:`smallest_consistent` over
    the widths of the FFNN records)."""
    out = {}
    for d in sorted({r["d"] for r in records}):
        rows = {r["width"]: r for r in records if r["d"] == d}
        w = smallest_consistent([(w, r["successes"], r["restarts"]) for w, r in rows.items()], rate)
        if w is not None:
            out[d] = rows[w]
    return out


def transformer_consistent_m(grid: dict, rate: float = RELIABILITY) -> dict[int, int]:
    """``{d: smallest grid m consistent with rate}`` (:func:`smallest_consistent` over the ``m`` of
    the one-step grid's records at each ``d``)."""
    out = {}
    for d in sorted({r["d"] for r in grid["records"]}):
        m = smallest_consistent(
            [(r["m"], r["success"], r["seeds"]) for r in grid["records"] if r["d"] == d], rate
        )
        if m is not None:
            out[d] = m
    return out


def interval_threshold(n: int, rate: float = RELIABILITY, level: float = 0.95) -> int:
    """Fewest successes of ``n`` whose rate is :func:`consistent_with` ``rate``: what the interval
    rule asks of a side measured ``n`` times (7 of 10, 881 of 1000 at the defaults)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    return next(k for k in range(n + 1) if consistent_with(k, n, rate, level))


def _side(size: float, parameters: float, successes: int, n: int, level: float) -> dict:
    lo, hi = clopper_pearson(successes, n, level)
    return {
        "size": size,
        "parameters": parameters,
        "successes": successes,
        "n": n,
        "rate": successes / n,
        "interval": (lo, hi),
    }


def matched_reliability(
    records: list[dict], grid: dict, rate: float = RELIABILITY, level: float = 0.95
) -> list[dict]:
    """Both models' smallest sizes at reliability ``rate``, by both rules, with the measured
    reliability of each chosen size and its exact ``level`` interval, at every ``d`` of either side.

    Parameters
    ----------
    records
        FFNN records (:func:`sxor.xor.ffnn.width_records`, e.g. of the committed ``why-transformer``).
    grid
        The one-step grid (``committed_results("one-step-grid")``).
    rate
        The reliability, in ``(0, 1)``.
    level
        Confidence level of the intervals (:func:`clopper_pearson`).

    Returns
    -------
    list of dict
        One per ``d``, increasing, with keys ``d``, ``ffnn_point``, ``ffnn_interval``,
        ``tf_point``, ``tf_interval`` (each ``None`` where that side has no such size at this ``d``,
        else a dict ``size`` (width or ``m``), ``parameters`` (``w(d+2)+1`` or ``2m``),
        ``successes``, ``n``, ``rate``, ``interval``), ``ratio_point`` and ``ratio_interval``
        (FFNN over transformer parameters, ``None`` unless both sides have the size) and
        ``floor_ratio`` (``2d+5`` over the transformer's point-rule ``2m``, ``None`` without it).
        The FFNN point rule is :func:`sxor.xor.ffnn.smallest_reliable_width`, the interval rule
        :func:`ffnn_consistent_width`; the transformer's point rule is
        :func:`transformer_smallest_m` (a grid ``m``, the first from which every grid ``m``
        reaches ``rate``), its interval rule :func:`transformer_consistent_m`: integer sizes that
        were run, on both sides.
    """
    if not 0 < rate < 1:
        raise ValueError(f"rate must lie in (0, 1), got {rate}")
    f_point = smallest_reliable_width(records, rate)
    f_int = ffnn_consistent_width(records, rate)
    t_point = transformer_smallest_m(grid, rate)
    t_int = transformer_consistent_m(grid, rate)
    by_dm = {(r["d"], r["m"]): r for r in grid["records"]}
    rows = []
    for d in sorted({r["d"] for r in records} | {r["d"] for r in grid["records"]}):
        row = {
            "d": d,
            "ffnn_point": None,
            "ffnn_interval": None,
            "tf_point": None,
            "tf_interval": None,
        }
        for key, chosen in (("ffnn_point", f_point), ("ffnn_interval", f_int)):
            if d in chosen:
                r = chosen[d]
                row[key] = _side(r["width"], r["parameters"], r["successes"], r["restarts"], level)
        m = t_point.get(d, math.nan)
        if np.isfinite(m):
            r = by_dm[d, int(m)]
            row["tf_point"] = _side(int(m), 2 * int(m), r["success"], r["seeds"], level)
        if d in t_int:
            r = by_dm[d, t_int[d]]
            row["tf_interval"] = _side(t_int[d], 2 * t_int[d], r["success"], r["seeds"], level)
        for rule in ("point", "interval"):
            f, t = row[f"ffnn_{rule}"], row[f"tf_{rule}"]
            row[f"ratio_{rule}"] = f["parameters"] / t["parameters"] if f and t else None
        row["floor_ratio"] = (
            parameter_count(d, 2) / row["tf_point"]["parameters"] if row["tf_point"] else None
        )
        rows.append(row)
    return rows


def plot_reliability(
    results: dict,
    grid: dict | None = None,
    rate: float = RELIABILITY,
    widths: tuple[int, ...] = (2, 3, 4, 5),
    level: float = 0.95,
):
    """Measured reliability of both models against ``d``, each with its exact ``level`` interval
    (:func:`clopper_pearson`): the FFNN's success rate over its restarts for each of ``widths``, and
    the transformer's one-step success rate at the ``m`` each rule picks
    (:func:`matched_reliability`), with the level ``rate`` as a dotted line; legend below the axes."""
    import matplotlib.pyplot as plt

    grid = committed_results("one-step-grid") if grid is None else grid
    records = results["records"]
    ffnn_ds = sorted({r["d"] for r in records})
    rows = [
        r
        for r in matched_reliability(records, grid, rate, level)
        if r["tf_point"] and r["d"] <= max(ffnn_ds)
    ]
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    offsets = np.linspace(-0.12, 0.12, len(widths) + 2)  # spread the series a little along log2 d
    for k, w in enumerate(widths):
        cells = sorted((r["d"], r["successes"], r["restarts"]) for r in records if r["width"] == w)
        if not cells:
            continue
        x = [2 ** (math.log2(d) + offsets[k]) for d, _, _ in cells]
        y = np.array([s / n for _, s, n in cells])
        ci = np.array([clopper_pearson(s, n, level) for _, s, n in cells])
        ax.errorbar(
            x,
            y,
            yerr=[y - ci[:, 0], ci[:, 1] - y],
            fmt="o-",
            color=f"C{k}",
            ms=5,
            capsize=3,
            lw=1.2,
            label=f"FFNN width {w} ({cells[0][2]} restarts)",
        )
    for j, (rule, marker) in enumerate((("point", "s"), ("interval", "D"))):
        side = [(r["d"], r[f"tf_{rule}"]) for r in rows if r[f"tf_{rule}"]]
        x = [2 ** (math.log2(d) + offsets[len(widths) + j]) for d, _ in side]
        y = np.array([t["rate"] for _, t in side])
        ci = np.array([t["interval"] for _, t in side])
        ax.errorbar(
            x,
            y,
            yerr=[y - ci[:, 0], ci[:, 1] - y],
            fmt=marker,
            color="k",
            ms=6,
            capsize=3,
            mfc="none" if j else None,
            label=f"transformer at the {rule}-rule $m$ ({'/'.join(sorted({str(t['n']) for _, t in side}))} draws)",
        )
    ax.axhline(rate, color="gray", ls=":", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ffnn_ds, [str(d) for d in ffnn_ds])
    ax.set(xlabel="input length d", ylabel="success rate, exact 95% interval", ylim=(0, 1.03))
    ax.legend(
        fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2
    )  # below the axes
    fig.tight_layout()
    return fig


def smallest_parameters(records: list[dict], rate: float) -> dict[int, int]:
    """``{d: parameters of the smallest width succeeding in >= rate of restarts}``."""
    return {d: r["parameters"] for d, r in smallest_reliable_width(records, rate).items()}
