"""The leading-order prediction of the chapter "One gradient step learns sparse XOR" (re-exported
by :mod:`sxor.experiments.one_step`).

* ``one-step-prediction``: predicted failure rates of the ``eta -> infinity`` limit on a
  ``(d, m)`` grid (:func:`run_prediction`), no sweep over instances.

From the records: the predicted smallest ``m`` (:func:`predicted_m95`, :func:`plot_prediction`)
and the grid's off-target fraction against the predicted band (:func:`plot_off_target`).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..xor import analysis
from . import register, size_config

PREDICTION_SIZES = {
    "ci": {"d": [64, 1024], "m": list(range(8, 41, 8)), "samples": 2000},
    "full": {"d": [2**k for k in range(6, 21)], "m": list(range(4, 65, 2)), "samples": 20000},
}


@register(
    "one-step-prediction",
    "leading-order prediction of the eta -> infinity success rate on a (d, m) grid",
    plot=lambda r: plot_prediction(r),  # noqa: PLW0108 (plot_prediction is defined below)
)
def run_prediction(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    """Predicted failure rates of the argmax limit: off-target band (:func:`sxor.xor.analysis.predicted_off_target`)
    and same-target (:func:`sxor.xor.analysis.predicted_same_target`); no sweep over instances."""
    cfg = size_config(size, PREDICTION_SIZES)
    records = []
    for m in cfg["m"]:
        for d in cfg["d"]:
            off = analysis.predicted_off_target(d, m, samples=cfg["samples"], seed=0)
            records.append(
                {
                    "d": d,
                    "m": m,
                    "off_target_low": float(off.lower),
                    "off_target_high": float(off.upper),
                    "same_target": float(analysis.predicted_same_target(d)),
                }
            )
    return {"samples": cfg["samples"]}, records


def predicted_m95(
    records: list[dict], bound: str, target: float = 0.95, same_target: bool = True
) -> dict[int, float]:
    """Smallest ``m`` with predicted success ``1 - off_target_<bound> - same_target >= target``, per
    ``d``; ``same_target=False`` leaves out the ``m``-independent same-target failures."""
    out = {}
    for d in sorted({r["d"] for r in records}):
        rows = sorted((r for r in records if r["d"] == d), key=lambda r: r["m"])
        rates = [
            1 - r[f"off_target_{bound}"] - (r["same_target"] if same_target else 0.0) for r in rows
        ]
        out[d] = analysis.smallest_m([r["m"] for r in rows], rates, target)
    return out


def plot_prediction(results: dict):
    """Predicted smallest ``m`` for 95% success (argmax limit) against ``ln d``."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for bound, style in [("low", "v-"), ("high", "^-")]:
        m95 = predicted_m95(results["records"], bound)
        d = np.array([k for k, v in m95.items() if np.isfinite(v)])
        ax.plot(
            np.log(d),
            [m95[k] for k in d],
            style,
            ms=4,
            label=f"prediction, off-target {bound}er bound",
        )
    grid = np.linspace(np.log(64), np.log(2**20), 20)
    ax.plot(grid, 2 * grid / math.log(2), "k:", label=r"$2\log_2 d$")
    ax.set(
        xlabel=r"$\ln d$",
        ylabel="predicted smallest m with 95% success",
        title=r"Leading-order prediction, $\eta\to\infty$",
    )
    ax.legend(fontsize=10)
    fig.tight_layout()
    return fig


def plot_off_target(results: dict, prediction: dict, ds: list[int]):
    """Off-target fraction (argmax limit) against ``m`` for the given ``d``, with the predicted band."""
    import matplotlib.pyplot as plt

    cells = results["records"]
    fig, ax = plt.subplots(figsize=(8, 4.4))
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(ds)))
    for color, d in zip(colors, ds):
        rows = sorted((r for r in cells if r["d"] == d), key=lambda r: r["m"])
        ax.semilogy(
            [r["m"] for r in rows],
            [max(r["limit_off_target"], 0.5) / r["seeds"] for r in rows],
            "o",
            ms=4,
            color=color,
            label=f"$d=2^{{{round(math.log2(d))}}}$",
        )
        prow = sorted((r for r in prediction["records"] if r["d"] == d), key=lambda r: r["m"])
        ax.fill_between(
            [r["m"] for r in prow],
            [r["off_target_low"] for r in prow],
            [r["off_target_high"] for r in prow],
            color=color,
            alpha=0.3,
        )
    ax.set(
        xlabel="m",
        ylabel="off-target fraction (0 drawn at 0.5/seeds)",
        ylim=(1e-4, 1.2),
        xlim=(2, 66),
    )
    ax.legend(fontsize=10, ncol=1, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig
