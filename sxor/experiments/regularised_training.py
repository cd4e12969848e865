"""Sweep of the chapter "Regularised training": training loss against the weight decay epsilon.

``regularised``: the authors' Tikhonov setup (:mod:`sxor.interp.training`; ``N = 10`` sequences,
``d = 16``, one block, Adam with coupled weight decay ``epsilon``, cosine schedule). For each
``epsilon`` and each of two initialisations, a fresh run of ``steps`` full-batch steps:

* ``near`` -- ``theta* + sigma N(0, 1)``, in the basin of the exact interpolant;
* ``default`` -- the authors' (PyTorch-default-like) initialisation, ``rho = eta = 0``.

Each record holds the final and smallest training loss ``J``, the regularised objective
``J_eps = J + (eps/2)|theta|^2``, the value ``J_eps(theta*) = (eps/2)|theta*|^2`` and the bound
line ``eps |theta*|^2``.
"""

from __future__ import annotations

import torch

from ..interp.training import init_parameters, perturbed, tikhonov_data, train
from . import register, size_config

SIZES = {
    "ci": {"N": 10, "n": 20, "d": 16, "epsilons": [1e-1, 1e-2, 1e-3, 1e-4], "steps": 200, "lr": 1e-2, "sigma": 0.01,
           "curve_every": 5},
    "full": {"N": 10, "n": 100, "d": 16, "epsilons": [1e-1, 1e-2, 1e-3, 3e-4, 1e-4], "steps": 1000, "lr": 1e-2,
             "sigma": 0.01, "curve_every": 10},
}

CONDITIONS = ("near", "default")


def run_grid(N: int, n: int, d: int, epsilons: list[float], steps: int, lr: float, sigma: float, curve_every: int,
             device: torch.device | str | None = None, dtype: torch.dtype = torch.float64, seed: int = 0) -> list[dict]:
    """One record per (initialisation, epsilon); loss curves are kept for the smallest epsilon."""
    data = tikhonov_data(N, n, d, seed=seed, dtype=dtype, device=device)
    star = data.theta_star_sq_norm
    records = []
    for condition in CONDITIONS:
        for eps in epsilons:
            if condition == "near":
                theta = perturbed(data.theta_star, sigma, seed=seed + 1)
            else:
                theta = init_parameters(d, seed=seed + 1, dtype=dtype, device=device)
            keep_curve = eps == min(epsilons)
            out = train(data, theta, eps, steps, lr=lr, record_every=curve_every if keep_curve else 0)
            records.append({
                "init": condition, "epsilon": eps, "steps": steps, "loss": out["loss"], "min_loss": out["min_loss"],
                "objective": out["objective"], "objective_star": eps / 2 * star, "bound": eps * star,
                "theta_sq_norm": out["sq_norm"], "theta_star_sq_norm": star,
                "curve": out["curve"] if keep_curve else [],
            })
    return records


def plot_regularised(results: dict):
    """Log-log: smallest training loss against epsilon for both initialisations, beside the
    Tikhonov bound ``eps |theta*|^2`` (and ``(eps/2)|theta*|^2``); right: loss curves at the smallest
    epsilon with its bound."""
    import matplotlib.pyplot as plt
    import numpy as np

    recs = results["records"]
    star = recs[0]["theta_star_sq_norm"]
    eps = np.array(sorted({r["epsilon"] for r in recs}))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.3))
    ax = axes[0]
    styles = {"near": ("o-", "tab:blue", r"init near $\theta^*$"), "default": ("s-", "tab:orange", "default init")}
    for cond, (style, color, label) in styles.items():
        rows = sorted((r for r in recs if r["init"] == cond), key=lambda r: r["epsilon"])
        ax.loglog([r["epsilon"] for r in rows], [r["min_loss"] for r in rows], style, color=color,
                  label=f"{label}: min training loss $J$")
    ax.loglog(eps, eps * star, "r--", label=r"Tikhonov bound $\varepsilon\|\theta^*\|^2$")
    ax.loglog(eps, eps * star / 2, "r:", lw=1, label=r"$(\varepsilon/2)\|\theta^*\|^2$ (Adam's penalty)")
    ax.set_xlabel(r"weight decay $\varepsilon$")
    ax.set_ylabel("training loss")
    ax.set_title(f"Loss vs $\\varepsilon$ ({results['params'].get('size', '')} size, "
                 f"{results['params']['steps']} steps)")
    ax.legend(fontsize=8)
    ax = axes[1]
    for cond, (style, color, label) in styles.items():
        rows = [r for r in recs if r["init"] == cond and r["curve"]]
        if rows:
            steps, values = zip(*rows[0]["curve"])
            ax.loglog(steps, values, color=color, label=label)
    e0 = float(eps.min())
    ax.axhline(e0 * star, color="r", ls="--", label=rf"bound at $\varepsilon={e0:g}$")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss $J$")
    ax.set_title(rf"Training curves at $\varepsilon={e0:g}$")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


@register("regularised-training", "Tikhonov: training loss vs weight decay epsilon (N=10, d=16, one block)",
          plot=plot_regularised)
def run(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    params = dict(size_config(size, SIZES))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: one thread is fastest and immune to oversubscription
    try:
        records = run_grid(**params, device=device)
    finally:
        torch.set_num_threads(threads)
    return params, records
