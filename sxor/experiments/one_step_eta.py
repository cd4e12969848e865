"""The step-size sweep of the chapter "One gradient step learns sparse XOR" (re-exported by
:mod:`sxor.experiments.one_step`).

* ``one-step-eta``: loss and success after one step against ``eta`` for several ``d`` (fixed
  ``m``), to show that ``eta`` must scale like ``d^2``.

Also the chapter's figures of the sweep (:func:`plot_eta`, :func:`plot_eta_success`), the step at
which the median loss crosses a level (:func:`loss_crossings`) and the attention of one instance
before and after a step (:func:`plot_attention`).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..xor import analysis
from ..xor.metrics import failure_modes
from ..xor.model import attention
from ..xor.population import one_step
from ..xor.sweeps import Instances, sweep
from . import register, size_config
from .one_step_grid import _mode_counts

#: Embedding dimension of the ``eta`` sweep.
ETA_SWEEP_M = 30

#: ``eta / d^2`` values of the ``eta`` sweep: ``10^(k/4)``, ``k = 0..20``, rounded to four significant
#: digits so that the grid is the same decimal numbers on every machine (``np.logspace`` differs in
#: its last bits between CPUs). Records carry the exact index ``k`` as ``eta_index``.
ETA_OVER_D2 = [float(f"{10 ** (k / 4):.4g}") for k in range(21)]

ETA_SIZES = {
    "ci": {"d": [64, 256], "seeds": 100},
    "full": {"d": [64, 256, 1024, 4096, 16384], "seeds": 100},
}


def eta_measure(etas: list[float]):
    """A :func:`sxor.xor.sweeps.sweep` measure: loss and failure mode after one step for each ``eta``
    (``loss [S, E]``, ``mode [S, E]``). One call per ``eta`` keeps memory at one chunk's size
    (a batched ``eta`` would broadcast ``V`` to ``[E, S, d, m]``)."""

    def measure(batch: Instances) -> dict[str, torch.Tensor]:
        losses, modes = [], []
        for eta in etas:
            out = one_step(batch.V, batch.theta0, batch.support, eta)
            losses.append(out.loss)
            modes.append(failure_modes(out.loss, out.attention, out.attention_tilde, batch.support))
        return {"loss": torch.stack(losses, -1), "mode": torch.stack(modes, -1)}

    return measure


@register(
    "one-step-eta",
    "loss and success after one step against eta/d^2, several d",
    plot=lambda r: plot_eta(r),  # noqa: PLW0108 (plot_eta is defined below)
    compare_keys=("d", "eta_index"),
)
def run_eta(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    cfg = size_config(size, ETA_SIZES)
    records = []
    for d in cfg["d"]:
        etas = [c * d**2 for c in ETA_OVER_D2]
        out = sweep(
            eta_measure(etas), cfg["seeds"], d, ETA_SWEEP_M, device=device, desc=f"eta sweep d={d}"
        )
        for k, c in enumerate(ETA_OVER_D2):
            loss = out["loss"][:, k]
            records.append(
                {
                    "d": d,
                    "eta_index": k,
                    "eta_over_d2": c,
                    "lambda": float(analysis.natural_step(c * d**2, d, ETA_SWEEP_M)),
                    "median_loss": float(loss.median()),
                    "mean_loss": float(loss.mean()),
                    **_mode_counts(out["mode"][:, k]),
                }
            )
    return {"m": ETA_SWEEP_M, "seeds": cfg["seeds"], "eta_over_d2": ETA_OVER_D2}, records


def plot_eta(results: dict):
    """Median loss after one step against ``eta / d^2`` (top) and against ``eta / (d^2 ln d)``
    (bottom), one curve per ``d``, the legend below the panels (losses below ``1e-16`` are drawn
    at ``1e-16``)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(7.0, 7.4), sharey=True)
    for d in sorted({r["d"] for r in results["records"]}):
        rows = [r for r in results["records"] if r["d"] == d]
        x = np.array([r["eta_over_d2"] for r in rows])
        y = np.maximum([r["median_loss"] for r in rows], 1e-16)
        axes[0].loglog(x, y, "o-", ms=4, label=f"$d={d}$")
        axes[1].loglog(x / math.log(d), y, "o-", ms=4, label=f"$d={d}$")
    axes[0].set(xlabel=r"$\eta / d^2$", ylabel="median loss after one step")
    axes[1].set(xlabel=r"$\eta / (d^2 \ln d)$", ylabel="median loss after one step")
    for ax in axes:
        ax.axhline(0.01, color="k", ls=":", lw=1)
        ax.set_ylim(5e-17, 2)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=11, frameon=False)
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    return fig


def plot_eta_success(results: dict):
    """Success rate after one step against ``eta / d^2``, one curve per ``d``."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.0))
    for d in sorted({r["d"] for r in results["records"]}):
        rows = [r for r in results["records"] if r["d"] == d]
        rate = np.array([r["success"] for r in rows]) / results["params"]["seeds"]
        ax.semilogx([r["eta_over_d2"] for r in rows], rate, "o-", ms=4, label=f"$d={d}$")
    ax.set(xlabel=r"$\eta / d^2$", ylabel="success rate", ylim=(0, 1.02))
    ax.legend(fontsize=11, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def loss_crossings(records: list[dict], level: float = 0.01) -> dict[int, float]:
    """Per ``d`` of ``one-step-eta`` records: the ``eta / d^2`` at which the median loss first falls
    below ``level``, interpolated linearly in ``log(eta / d^2)`` and ``log(loss)``."""
    out = {}
    for d in sorted({r["d"] for r in records}):
        rows = sorted((r for r in records if r["d"] == d), key=lambda r: r["eta_index"])
        x = np.log([r["eta_over_d2"] for r in rows])
        y = np.log(np.maximum([r["median_loss"] for r in rows], 1e-300))
        k = next((i for i in range(1, len(rows)) if rows[i]["median_loss"] < level), None)
        out[d] = (
            math.nan
            if k is None
            else math.exp(
                x[k - 1] + (math.log(level) - y[k - 1]) / (y[k] - y[k - 1]) * (x[k] - x[k - 1])
            )
        )
    return out


def plot_attention(
    V: torch.Tensor, theta0: torch.Tensor, support: torch.Tensor, etas: list[float], title: str = ""
):
    """Both heads' attention before the step and after one step of each size in ``etas``, for one
    instance, one panel per row: head 1 drawn upwards, head 2 downwards (weights negated), the two
    targets marked, the legend below the panels."""
    import matplotlib.pyplot as plt

    d = V.shape[-2]
    rows = len(etas) + 1
    fig, axes = plt.subplots(rows, 1, figsize=(7.0, 2.9 * rows + 0.6), squeeze=False)
    axes = axes[:, 0]
    panels = [
        ("before the step (antisymmetric init)", (attention(V, theta0), attention(V, -theta0)))
    ]
    for eta in etas:
        out = one_step(V, theta0, support, eta)
        panels.append(
            (
                rf"after one step, $\eta/d^2$ = {eta / d**2:.3g}"
                + f"\nloss = {float(out.loss):.2e}",
                (out.attention, out.attention_tilde),
            )
        )
    positions = np.arange(d)
    for ax, (label, (g, h)) in zip(axes, panels):
        ax.vlines(positions, 0, g.numpy(), color="tab:blue", lw=2, label=r"head 1 ($\theta$)")
        ax.vlines(
            positions,
            0,
            -h.numpy(),
            color="tab:orange",
            lw=2,
            label=r"head 2 ($\tilde\theta$), drawn downwards",
        )
        top = 1.15 * float(max(g.max(), h.max()))
        for t, name in zip(support.tolist(), ("i*", "j*")):
            ax.plot([t, t], [-top, top], color="k", ls=":", lw=1)
            ax.annotate(name, (t, top), ha="center", va="bottom", fontsize=10)
        ax.set(title=label, ylim=(-1.2 * top, 1.2 * top), ylabel="weight")
    axes[-1].set_xlabel("position i")
    axes[0].set_title(axes[0].get_title() + ": scale ~ 1/d")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=10, frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.5 / (2.9 * rows + 0.6), 1, 1))
    return fig
