"""Sweep of the chapter "Why a transformer: parameters against d".

``ffnn``: for each ``d``, the smallest two-layer ReLU network (:func:`sxor.xor.ffnn.smallest_width`)
whose test loss drops below 0.01, and, beside it, the transformer's success rate after one step
on an ``m`` grid (step ``eta = c d^2 ln d`` of :func:`sxor.xor.analysis.grid_eta`, the same ``c`` as
the one-step chapter), from which the smallest ``m`` reaching a success target follows.
"""

from __future__ import annotations

import numpy as np
import torch

from ..xor import analysis
from ..xor.ffnn import parameter_count, smallest_width
from ..xor.metrics import success
from ..xor.population import one_step
from ..xor.sweeps import Instances, sweep
from . import register, size_config
from .one_step import GRID_C

#: Hyper-parameters of every FFNN run (Adam, fresh batches, validation check every 25 steps).
FFNN_TRAINING = {"batch": 256, "lr": 1e-2, "optimizer": "adam", "eval_every": 25, "n_val": 2048, "n_test": 8192}
#: Per-draw success targets at which the transformer's smallest m is reported.
SUCCESS_TARGETS = (0.5, 0.95)

SIZES = {
    "ci": {"ffnn_d": [8], "widths": [1, 2, 3, 4], "restarts": 4, "max_steps": 250,
           "tf_d": [8, 32, 128], "ms": [4, 8, 16, 32], "seeds": 100},
    "full": {"ffnn_d": [8, 16, 32, 64, 128], "widths": [1, 2, 3, 4, 6, 8], "restarts": 8, "max_steps": 600,
             "tf_d": [8, 16, 32, 64, 128, 256, 512, 1024], "ms": [4, 6, 8, 12, 16, 24, 32, 48, 64], "seeds": 400},
}


def _success_measure(eta: float):
    """Sweep measure: did one step of size ``eta`` succeed (:func:`sxor.xor.metrics.success`)?"""

    def measure(batch: Instances) -> dict[str, torch.Tensor]:
        out = one_step(batch.V, batch.theta0, batch.support, eta)
        return {"success": success(out.loss, out.attention, out.attention_tilde, batch.support)}

    return measure


def transformer_success(d: int, ms: list[int], seeds: int, device: torch.device | str | None = None) -> list[dict]:
    """Success rate of one step at ``eta = GRID_C d^2 ln d`` for each ``m``: one record per ``m``."""
    eta = analysis.grid_eta(d, GRID_C)
    records = []
    for m in ms:
        out = sweep(_success_measure(eta), seeds, d, m, device=device, desc=f"transformer d={d} m={m}")
        records.append({"model": "transformer", "d": d, "m": m, "seeds": seeds, "eta": eta,
                        "successes": int(out["success"].sum()), "parameters": 2 * m})
    return records


def transformer_smallest_m(records: list[dict], target: float) -> dict[int, float]:
    """``{d: smallest m with success rate >= target}`` (``nan`` when the grid never reaches it)."""
    out = {}
    for d in sorted({r["d"] for r in records if r["model"] == "transformer"}):
        rows = sorted((r for r in records if r["model"] == "transformer" and r["d"] == d), key=lambda r: r["m"])
        out[d] = analysis.smallest_m([r["m"] for r in rows], [r["successes"] / r["seeds"] for r in rows], target)
    return out


def ffnn_smallest(records: list[dict]) -> dict[int, dict]:
    """``{d: record of the smallest successful width}`` (absent when no width succeeded)."""
    return {r["d"]: r for r in records if r["model"] == "ffnn" and r["steps"] is not None}


@register("why-transformer", "smallest FFNN reaching test loss < 0.01 against d, beside the transformer's 2m",
          plot=lambda r: plot_parameters(r))
def run(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    cfg = size_config(size, SIZES)
    records = []
    for d in cfg["ffnn_d"]:
        found = smallest_width(d, cfg["widths"], (0, d - 1), restarts=cfg["restarts"], max_steps=cfg["max_steps"],
                               seed=d, device=device, **FFNN_TRAINING)
        records += [{"model": "ffnn", **r} for r in found]
    for d in cfg["tf_d"]:
        records += transformer_success(d, cfg["ms"], cfg["seeds"], device)
    params = {**{k: v for k, v in cfg.items()}, "ffnn_training": FFNN_TRAINING, "support": "(0, d-1)",
              "transformer_eta": "c d^2 ln d", "c": GRID_C, "success_targets": list(SUCCESS_TARGETS)}
    return params, records


def plot_parameters(results: dict):
    """Trainable parameters against ``d`` on log axes: FFNN measured and floors, transformer 2m."""
    import matplotlib.pyplot as plt

    records = results["records"]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    ffnn = ffnn_smallest(records)
    d_all = sorted({r["d"] for r in records})
    grid = np.array([min(d_all), max(d_all)], dtype=float)
    ax.loglog(grid, grid, ":", color="gray",
              label=r"$d$: one first-layer weight per input (slope of the $\Omega(d)$ bounds)")
    ax.loglog(grid, [parameter_count(int(g), 2) for g in grid], "--", color="C0", lw=1,
              label=r"$2d+5$: width-2 ReLU net, smallest exact one")
    if ffnn:
        ds = sorted(ffnn)
        ax.loglog(ds, [ffnn[d]["parameters"] for d in ds], "o", color="C0", ms=7,
                  label="FFNN, measured: smallest with test loss < 0.01")
    for target, marker, color in zip(SUCCESS_TARGETS, ["s", "D"], ["C1", "C3"]):
        m_star = transformer_smallest_m(records, target)
        ds = [d for d in m_star if np.isfinite(m_star[d])]
        ax.loglog(ds, [2 * m_star[d] for d in ds], marker + "-", color=color, ms=6,
                  label=f"transformer $2m$, one-step success $\\geq$ {target:.0%}")
    ax.set(xlabel="input length d", ylabel="trainable parameters",
           title="Trainable parameters needed to learn sparse XOR")
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig
