"""Sweep of the chapter "Why a transformer: parameters against d".

``why-transformer``: for each ``d``, two-layer ReLU networks of every width in ``1..8``, each with
``restarts`` independent restarts (data and initialisation), trained online with Adam for at most
``max_steps`` steps (:func:`sxor.xor.ffnn.train_ffnn`: a run stops at the first check where its
validation loss *and* its test loss are below ``0.01``, else it trains to the budget; the kept
network is then scored on a third, untouched sample set); one record per ``(d, width)`` (:func:`sxor.xor.ffnn.width_records`). The transformer's side is *not*
run here: it is read from the one-step chapter's committed grid (``one-step-grid``), so that both
chapters report the same numbers; :func:`transformer_smallest_m` reads it at a given reliability.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..results import committed_results
from ..xor.ffnn import parameter_count, smallest_reliable_width, train_ffnn, width_records
from . import register, size_config
from .one_step import m95_by_d

#: Hyper-parameters of every FFNN run (Adam, a fresh batch of 256 per step, a validation check
#: every 25 steps, single precision since the loop's cost is its matrix products).
FFNN_TRAINING = {"batch": 256, "lr": 1e-2, "target": 0.01, "eval_every": 25, "n_val": 2048, "n_test": 8192}
#: Floating-point type of the FFNN runs.
FFNN_DTYPE = torch.float32
#: The reliability at which the two models are compared, success in at least 90% of restarts or draws.
RELIABILITY = 0.9

SIZES = {
    "ci": {"d": [8], "widths": [6, 7, 8], "restarts": 10, "max_steps": 2000},
    "full": {"d": [8, 16, 32, 64, 128], "widths": [1, 2, 3, 4, 5, 6, 7, 8], "restarts": 10, "max_steps": 20000},
}


@register("why-transformer", "FFNN widths 1-8 against d: success rate and samples over independent restarts",
          plot=lambda r: plot_parameters(r), compare_keys=("d", "width"), compare_tol=1e-5)
def run(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    cfg = size_config(size, SIZES)
    records = []
    for d in cfg["d"]:
        runs = train_ffnn(d, cfg["widths"], (0, d - 1), restarts=cfg["restarts"], max_steps=cfg["max_steps"],
                          seed=d, dtype=FFNN_DTYPE, device=device, **FFNN_TRAINING)
        records += width_records(runs)
    params = {**cfg, "training": {**FFNN_TRAINING, "optimizer": "adam", "dtype": str(FFNN_DTYPE)},
              "support": "(0, d-1)", "seed": "d"}
    return params, records


def transformer_smallest_m(grid: dict, rate: float = RELIABILITY) -> dict[int, float]:
    """``{d: smallest m whose one-step success rate is >= rate}`` on the one-step chapter's grid
    (``committed_results("one-step-grid")``), by :func:`sxor.experiments.one_step.m95_by_d`: the
    interpolated crossing after the last grid point below ``rate`` (``nan`` if never reached)."""
    return m95_by_d(grid["records"], target=rate)


def clopper_pearson(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) ``level`` interval for a success probability from ``successes`` of ``n``,
    by bisection on the binomial tails (computed in log space, no SciPy)."""
    if isinstance(successes, bool) or not 0 <= successes <= n or n < 1 or int(successes) != successes:
        raise ValueError(f"need integers 0 <= successes <= n and n >= 1, got successes={successes}, n={n}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    alpha = (1 - level) / 2
    k = torch.arange(n + 1, dtype=torch.float64)
    log_choose = torch.lgamma(torch.tensor(n + 1.0, dtype=torch.float64)) - torch.lgamma(k + 1) - torch.lgamma(n - k + 1)

    def pmf(p: float) -> torch.Tensor:
        return torch.exp(log_choose + k * math.log(p) + (n - k) * math.log1p(-p))

    def bisect(too_low) -> float:  # too_low(p) is True below the root and False above it
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if too_low(mid) else (lo, mid)
        return (lo + hi) / 2

    lower = 0.0 if successes == 0 else bisect(lambda p: float(pmf(p)[successes:].sum()) < alpha)
    upper = 1.0 if successes == n else bisect(lambda p: float(pmf(p)[: successes + 1].sum()) > alpha)
    return lower, upper


def consistent_with(successes: int, n: int, rate: float = RELIABILITY, level: float = 0.95) -> bool:
    """The interval rule used for both models: a success rate is *consistent with* ``rate`` or more
    if the upper end of its exact ``level`` interval (:func:`clopper_pearson`) is at least ``rate``."""
    return clopper_pearson(successes, n, level)[1] >= rate


def smallest_consistent(rows: list[tuple[int, int, int]], rate: float = RELIABILITY,
                        level: float = 0.95) -> int | None:
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
        m = smallest_consistent([(r["m"], r["success"], r["seeds"]) for r in grid["records"] if r["d"] == d], rate)
        if m is not None:
            out[d] = m
    return out


def rate_table(records: list[dict]) -> tuple[list[int], list[int], np.ndarray]:
    """``(ds, widths, rates [widths, ds])`` of the FFNN records (``nan`` where a cell was not run)."""
    ds = sorted({r["d"] for r in records})
    widths = sorted({r["width"] for r in records})
    rates = np.full((len(widths), len(ds)), np.nan)
    for r in records:
        rates[widths.index(r["width"]), ds.index(r["d"])] = r["successes"] / r["restarts"]
    return ds, widths, rates


def plot_rates(results: dict):
    """Heat map of the FFNN success rate per width (rows) and ``d`` (columns), counts in the cells."""
    import matplotlib.pyplot as plt

    ds, widths, rates = rate_table(results["records"])
    by_cell = {(r["d"], r["width"]): r for r in results["records"]}
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    image = ax.imshow(rates, origin="lower", cmap="viridis", vmin=0, vmax=1, aspect="auto")
    for i, w in enumerate(widths):
        for j, d in enumerate(ds):
            r = by_cell.get((d, w))
            if r is not None:
                ax.text(j, i, f"{r['successes']}/{r['restarts']}", ha="center", va="center", fontsize=9,
                        color="white" if rates[i, j] < 0.6 else "black")
    ax.set_xticks(range(len(ds)), [str(d) for d in ds])
    ax.set_yticks(range(len(widths)), [str(w) for w in widths])
    ax.set(xlabel="input length d", ylabel="hidden width w")
    ax.grid(False)
    fig.colorbar(image, ax=ax, label="success rate over restarts")
    fig.tight_layout()
    return fig


def plot_parameters(results: dict, grid: dict | None = None, rate: float = RELIABILITY):
    """Trainable parameters against ``d`` on log axes: the smallest FFNN that succeeds in at least
    ``rate`` of its restarts and the smallest that succeeds in one, the exact width-2 floor ``2d+5``,
    and the transformer's ``2m`` at the same reliability from ``grid`` (default: the committed
    ``one-step-grid``)."""
    import matplotlib.pyplot as plt

    grid = committed_results("one-step-grid") if grid is None else grid
    records = results["records"]
    fig, ax = plt.subplots(figsize=(7.0, 4.6))
    tf = {d: m for d, m in transformer_smallest_m(grid, rate).items() if np.isfinite(m)}
    d_all = sorted({r["d"] for r in records} | set(tf))
    line = np.array([min(d_all), max(d_all)], dtype=float)
    ax.loglog(line, line, ":", color="gray", label=r"$d$ (slope of the $\Omega(d)$ bounds)")
    ax.loglog(line, 2 * line + 5, "--", color="C0", lw=1, label=r"$2d+5$: smallest exact ReLU net")
    for share, marker, label in [(rate, "o", f"FFNN, success in $\\geq$ {rate:.0%} of restarts"),
                                 (1e-9, "x", "FFNN, success in at least one restart")]:
        best = smallest_reliable_width(records, share)
        ds = sorted(best)
        ax.loglog(ds, [best[d]["parameters"] for d in ds], marker + "-", color="C0", ms=7,
                  mfc="none" if marker == "o" else None, label=label)
    ds = sorted(tf)
    ax.loglog(ds, [2 * tf[d] for d in ds], "s-", color="C3", ms=6,
              label=f"transformer $2m$, one-step success $\\geq$ {rate:.0%}")
    ax.set(xlabel="input length d", ylabel="trainable parameters")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)  # below the axes
    fig.tight_layout()
    return fig


def smallest_parameters(records: list[dict], rate: float) -> dict[int, int]:
    """``{d: parameters of the smallest width succeeding in >= rate of restarts}``."""
    return {d: r["parameters"] for d, r in smallest_reliable_width(records, rate).items()}


__all__ = ["FFNN_TRAINING", "FFNN_DTYPE", "RELIABILITY", "SIZES", "run", "transformer_smallest_m", "clopper_pearson",
           "consistent_with", "smallest_consistent", "ffnn_consistent_width", "transformer_consistent_m",
           "rate_table", "plot_rates", "plot_parameters", "smallest_parameters", "parameter_count"]
