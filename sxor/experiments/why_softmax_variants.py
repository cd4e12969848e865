"""The attention variants of the chapter "Why exact softmax" (re-exported by
:mod:`sxor.experiments.why_softmax`).

* ``why-softmax``: for each attention kind (softmax, linear, erf), one population step and ``T``
  steps of population gradient descent from the same antisymmetric inits, on a grid of step
  sizes; records the success rate, the step of first success of every seed and the losses.

Instances come from :func:`sxor.xor.sweeps.sweep` (instance ``k`` seeded with ``seed + k``), so every
kind and every step size sees exactly the same embeddings, inits and supports.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ..results import finite_or_none
from ..xor.dynamics import first_success, population_descent
from ..xor.metrics import success
from ..xor.population import one_step
from ..xor.sweeps import Instances, sweep
from . import register, size_config

#: The attention kinds compared.
KINDS = ["softmax", "linear", "erf"]

VARIANT_SIZES = {
    "ci": {
        "d": [32],
        "m": 12,
        "seeds": 16,
        "steps": 30,
        "descent_etas": [10.0**e for e in range(1, 5)],
    },
    "full": {
        "d": [64, 128],
        "m": 24,
        "seeds": 100,
        "steps": 200,
        "descent_etas": [10.0 ** (e / 2) for e in range(2, 12)],
    },
}

#: The step sizes ``eta = 10^0, ..., 10^12`` of the one-step comparison (large ``eta`` is the one-step regime of the paper).
ONE_STEP_ETAS = [10.0**e for e in range(13)]


def variants_measure(kind: str, descent_etas: list[float], steps: int):
    """A :func:`sxor.xor.sweeps.sweep` measure for one kind: success and loss after one step for each
    of :data:`ONE_STEP_ETAS`, and, for each ``eta`` of ``descent_etas``, the step of first success
    (``-1`` for none) and the final and smallest loss of ``steps`` steps of gradient descent."""

    def measure(batch: Instances) -> dict[str, torch.Tensor]:
        one_loss, one_win = [], []
        for eta in ONE_STEP_ETAS:
            out = one_step(batch.V, batch.theta0, batch.support, eta, kind)
            one_loss.append(out.loss)
            one_win.append(success(out.loss, out.attention, out.attention_tilde, batch.support))
        first, final, best = [], [], []
        for eta in descent_etas:
            tr = population_descent(
                batch.V, batch.theta0, -batch.theta0, batch.support, eta, steps, kind
            )
            first.append(first_success(tr.success))
            final.append(
                torch.nan_to_num(tr.loss[-1], nan=math.inf)
            )  # a diverged run counts as infinite loss
            best.append(torch.nan_to_num(tr.loss, nan=math.inf).amin(0))
        return {
            "one_step_loss": torch.stack(one_loss, -1),
            "one_step_success": torch.stack(one_win, -1),
            "first_success": torch.stack(first, -1),
            "final_loss": torch.stack(final, -1),
            "best_loss": torch.stack(best, -1),
        }

    return measure


@register(
    "why-softmax",
    "softmax vs linear vs erf attention: one step and T steps of population GD",
    plot=lambda r: plot_variants(r),  # noqa: PLW0108 (plot_variants is defined below)
)
def run_variants(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    cfg = size_config(size, VARIANT_SIZES)
    records = []
    for d in cfg["d"]:
        for kind in KINDS:
            out = sweep(
                variants_measure(kind, cfg["descent_etas"], cfg["steps"]),
                cfg["seeds"],
                d,
                cfg["m"],
                device=device,
                desc=f"{kind}, d={d}",
            )
            for j, eta in enumerate(ONE_STEP_ETAS):
                loss = out["one_step_loss"][:, j]
                records.append(
                    {
                        "mode": "one-step",
                        "kind": kind,
                        "d": d,
                        "eta": eta,
                        "success_rate": float(out["one_step_success"][:, j].double().mean()),
                        "median_loss": finite_or_none(float(loss.nanmedian())),
                    }
                )
            for j, eta in enumerate(cfg["descent_etas"]):
                records.append(
                    {
                        "mode": "descent",
                        "kind": kind,
                        "d": d,
                        "eta": eta,
                        "steps": cfg["steps"],
                        "success_rate": float((out["first_success"][:, j] >= 0).double().mean()),
                        "first_success": out["first_success"][:, j].tolist(),
                        "median_final_loss": finite_or_none(
                            float(out["final_loss"][:, j].median())
                        ),
                        "median_best_loss": finite_or_none(float(out["best_loss"][:, j].median())),
                    }
                )
    return {
        "m": cfg["m"],
        "seeds": cfg["seeds"],
        "kinds": KINDS,
        "one_step_etas": ONE_STEP_ETAS,
    }, records


def tuned_descent(records: list[dict], d: int) -> dict[str, dict]:
    """For each kind, the descent record at the tuned ``eta``: highest success rate, then fewest
    median steps to success, then lowest median final loss (a diverged run counts as infinite)."""
    best: dict[str, dict] = {}
    for rec in records:
        if rec["mode"] != "descent" or rec["d"] != d:
            continue
        first = [t for t in rec["first_success"] if t >= 0]
        final = rec["median_final_loss"]
        key = (
            -rec["success_rate"],
            float(np.median(first)) if first else math.inf,
            final if final is not None else math.inf,
        )
        if rec["kind"] not in best or key < best[rec["kind"]]["_key"]:
            best[rec["kind"]] = {**rec, "_key": key}
    return {kind: {k: v for k, v in rec.items() if k != "_key"} for kind, rec in best.items()}


def plot_variants(results: dict):
    """Success rate and median loss against ``eta``, one step (left) and ``T`` steps (right)."""
    import matplotlib.pyplot as plt

    records = results["records"]
    ds = sorted({r["d"] for r in records})
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex="col")
    colours = {"softmax": "C0", "linear": "C1", "erf": "C2"}
    # Linear and erf attention often give the same curve (success 0, the same loss): drawn as a
    # wide line with hollow squares under a narrow one with triangles, both stay visible.
    looks: dict[str, dict[str, Any]] = {
        "softmax": {"marker": "o", "ms": 4, "lw": 1.8, "zorder": 3},
        "linear": {"marker": "s", "ms": 8, "mfc": "none", "lw": 4.5, "alpha": 0.55, "zorder": 1},
        "erf": {"marker": "^", "ms": 4, "lw": 1.4, "zorder": 2},
    }
    styles = ["-", "--", ":"]
    for col, mode in enumerate(["one-step", "descent"]):
        for s, d in enumerate(ds):
            for kind in results["params"]["kinds"]:
                rows = [
                    r for r in records if r["mode"] == mode and r["kind"] == kind and r["d"] == d
                ]
                etas = [r["eta"] for r in rows]
                loss_key = "median_loss" if mode == "one-step" else "median_best_loss"
                # A loss of exactly 0 (one-hot softmax) is drawn at the floor 1e-16 of the log axis.
                losses = [
                    max(r[loss_key], 1e-16) if r[loss_key] is not None else np.nan for r in rows
                ]
                look = dict(ls=styles[s % 3], color=colours.get(kind), **looks.get(kind, {}))
                axes[0, col].plot(etas, [r["success_rate"] for r in rows], **look)
                axes[1, col].plot(etas, losses, **look)
        steps = next((r["steps"] for r in records if r["mode"] == "descent"), None)
        axes[0, col].set_title(
            "one population step"
            if mode == "one-step"
            else f"{steps} steps of population GD (best loss)"
        )
        axes[1, col].set_xlabel(r"step size $\eta$")
        axes[1, col].set_yscale("log")
        for ax in axes[:, col]:
            ax.set_xscale("log")
    axes[0, 0].set_ylabel("success rate")
    axes[1, 0].set_ylabel("median population loss (floor 1e-16)")
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color=colours.get(kind), label=kind, **looks.get(kind, {}))
        for kind in results["params"]["kinds"]
    ] + [Line2D([], [], color="gray", ls=styles[s % 3], label=f"d={d}") for s, d in enumerate(ds)]
    fig.legend(
        handles=handles, loc="lower center", ncol=len(handles), fontsize=10, frameon=False
    )  # below the panels
    fig.suptitle(
        f"Attention variants, m={results['params']['m']}, {results['params']['seeds']} seeds"
    )
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig
