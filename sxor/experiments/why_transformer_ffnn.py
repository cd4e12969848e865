"""The FFNN sweep of the chapter "Why a transformer: parameters against d" (re-exported by
:mod:`sxor.experiments.why_transformer`, whose docstring describes it).

* ``why-transformer``: two-layer ReLU networks of every width in ``1..8`` for each ``d``, over
  independent restarts (``run``), with the further restarts of some widths joined to the first
  ones (:func:`join_restarts`); the success rates (:func:`rate_table`, :func:`plot_rates`) and the
  parameters against ``d`` beside the transformer's (:func:`plot_parameters`).
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np
import torch

from ..results import committed_results
from ..xor.ffnn import (
    FFNNParams,
    WidthRuns,
    smallest_reliable_width,
    train_ffnn,
    width_records,
)
from . import register, size_config
from .why_transformer_reliability import RELIABILITY, transformer_smallest_m


class FFNNTraining(TypedDict):
    """The keyword arguments of :func:`sxor.xor.ffnn.train_ffnn` that :data:`FFNN_TRAINING` fixes."""

    batch: int
    lr: float
    target: float
    eval_every: int
    n_val: int
    n_test: int


#: Hyper-parameters of every FFNN run (Adam, a fresh batch of 256 per step, a validation check
#: every 25 steps, single precision since the loop's cost is its matrix products).
FFNN_TRAINING: FFNNTraining = {
    "batch": 256,
    "lr": 1e-2,
    "target": 0.01,
    "eval_every": 25,
    "n_val": 2048,
    "n_test": 8192,
}

#: Floating-point type of the FFNN runs.
FFNN_DTYPE = torch.float32

#: Offset of the seed of the second batch of restarts (``d + MORE_SEED``), far from every first-batch seed ``d``.
MORE_SEED = 10_000

SIZES = {
    "ci": {"d": [8], "widths": [6, 7, 8], "restarts": 10, "max_steps": 2000},
    "full": {
        "d": [8, 16, 32, 64, 128],
        "widths": [1, 2, 3, 4, 5, 6, 7, 8],
        "restarts": 10,
        "max_steps": 20000,
        "more_restarts": {"widths": [2, 3, 4, 5], "restarts": 40},
    },
}


@register(
    "why-transformer",
    "FFNN widths 1-8 against d: success rate and samples over independent restarts",
    plot=lambda r: plot_parameters(r),  # noqa: PLW0108 (plot_parameters is defined below)
    compare_keys=("d", "width"),
    compare_tol=1e-5,
)
def run(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    cfg = size_config(size, SIZES)
    records = []
    for d in cfg["d"]:
        runs = train_ffnn(
            d,
            cfg["widths"],
            (0, d - 1),
            restarts=cfg["restarts"],
            max_steps=cfg["max_steps"],
            seed=d,
            dtype=FFNN_DTYPE,
            device=device,
            **FFNN_TRAINING,
        )
        more = cfg.get("more_restarts")
        if more:
            extra = train_ffnn(
                d,
                more["widths"],
                (0, d - 1),
                restarts=more["restarts"],
                max_steps=cfg["max_steps"],
                seed=d + MORE_SEED,
                dtype=FFNN_DTYPE,
                device=device,
                **FFNN_TRAINING,
            )
            records += [
                record for row in join_restarts(runs, extra) for record in width_records(row)
            ]
        else:
            records += width_records(runs)
    params = {
        **cfg,
        "training": {**FFNN_TRAINING, "optimizer": "adam", "dtype": str(FFNN_DTYPE)},
        "support": "(0, d-1)",
        "seed": "d" + (f"; more_restarts: d + {MORE_SEED}" if cfg.get("more_restarts") else ""),
    }
    return params, records


def join_restarts(first: WidthRuns, more: WidthRuns) -> list[WidthRuns]:
    """``first``, one width at a time, with the restarts of ``more`` appended after its own for the
    widths ``more`` has.

    Both must come from :func:`sxor.xor.ffnn.train_ffnn` at the same ``d``, batch, step budget and
    target, and ``more.widths`` must be a subset of ``first.widths``. The result is a list of
    one-width :class:`~sxor.xor.ffnn.WidthRuns`, one per width of ``first`` in its order: for a
    width of ``more``, with the restarts of ``first`` then those of ``more``; for any other width,
    with the restarts of ``first`` only. :func:`sxor.xor.ffnn.width_records` turns each into its
    record.

    Parameters
    ----------
    first
        The first batch of restarts.
    more
        Further restarts of some of its widths.

    Returns
    -------
    list of WidthRuns
        One per width of ``first``.

    Raises
    ------
    ValueError
        if the runs differ in ``d``, ``batch``, ``max_steps`` or ``target``, or ``more`` has a width
        that ``first`` lacks.
    """
    for field in ("d", "batch", "max_steps", "target"):
        if getattr(first, field) != getattr(more, field):
            raise ValueError(
                f"the runs differ in {field}: {getattr(first, field)} and {getattr(more, field)}"
            )
    missing = sorted(set(more.widths) - set(first.widths))
    if missing:
        raise ValueError(f"more has widths {missing} that first lacks")
    rows = []
    for k, w in enumerate(first.widths):
        row = _row(first, k)
        if w in more.widths:
            j = more.widths.index(w)
            extra = _row(more, j)
            # the Tensor fields named in _PER_RESTART, by name (Any: mypy cannot tie a computed
            # key to its field's type)
            joined: dict[str, Any] = {
                f: torch.cat([getattr(row, f), getattr(extra, f)], 1) for f in _PER_RESTART
            }
            row = row._replace(
                **joined,
                params=[
                    FFNNParams(
                        *(torch.cat([p, q], 0) for p, q in zip(row.params[0], extra.params[0]))
                    )
                ],
            )
        rows.append(row)
    return rows


_PER_RESTART = ("steps", "test_loss", "test_loss_se", "rejected", "held_out_loss", "held_out_se")


def _row(runs: WidthRuns, k: int) -> WidthRuns:
    return runs._replace(
        widths=(runs.widths[k],),
        params=[runs.params[k]],
        **{f: getattr(runs, f)[k : k + 1] for f in _PER_RESTART},
    )


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
                ax.text(
                    j,
                    i,
                    f"{r['successes']}/{r['restarts']}",
                    ha="center",
                    va="center",
                    fontsize=10,
                    color="white" if rates[i, j] < 0.6 else "black",
                )
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
    for share, marker, label in [
        (rate, "o", f"FFNN, success in $\\geq$ {rate:.0%} of restarts"),
        (1e-9, "x", "FFNN, success in at least one restart"),
    ]:
        best = smallest_reliable_width(records, share)
        ds = sorted(best)
        ax.loglog(
            ds,
            [best[d]["parameters"] for d in ds],
            marker + "-",
            color="C0",
            ms=7,
            mfc="none" if marker == "o" else None,
            label=label,
        )
    ds = sorted(tf)
    ax.loglog(
        ds,
        [2 * tf[d] for d in ds],
        "s-",
        color="C3",
        ms=6,
        label=f"transformer $2m$, one-step success $\\geq$ {rate:.0%}",
    )
    ax.set(xlabel="input length d", ylabel="trainable parameters")
    ax.legend(
        fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.19), ncol=2
    )  # below the axes and its label
    fig.tight_layout()
    return fig
