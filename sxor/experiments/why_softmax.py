"""Sweeps of the chapter "Why exact softmax".

* ``variants``: for each attention kind (softmax, linear, erf), one population step and ``T``
  steps of population gradient descent from the same antisymmetric inits, on a grid of step
  sizes; records the success rate, the step of first success of every seed and the losses.

Instances come from :func:`sxor.xor.sweeps.sweep` (instance ``k`` seeded with ``seed + k``), so every
kind and every step size sees exactly the same embeddings, inits and supports.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..results import finite_or_none
from ..xor.dynamics import first_success, population_descent
from ..xor.metrics import success
from ..xor.population import one_step
from ..xor.sweeps import Instances, random_instances, sweep
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
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex="col")
    colours = {"softmax": "C0", "linear": "C1", "erf": "C2"}
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
                label = f"{kind}, d={d}"
                axes[0, col].plot(
                    etas,
                    [r["success_rate"] for r in rows],
                    styles[s % 3],
                    color=colours[kind],
                    marker="o",
                    ms=3,
                    label=label,
                )
                axes[1, col].plot(
                    etas, losses, styles[s % 3], color=colours[kind], marker="o", ms=3, label=label
                )
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
    handles, labels = axes[0, 1].get_legend_handles_labels()
    fig.legend(
        handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False
    )  # below the panels
    fig.suptitle(
        f"Attention variants, m={results['params']['m']}, {results['params']['seeds']} seeds"
    )
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


#: Cells ``(d, m)`` of the best-loss experiment; ``m = d`` is the control where the representation
#: argument predicts that linear and erf attention can reach loss 0; ``m < d`` are the chapter's sizes.
FLOOR_SIZES = {
    "ci": {
        "cells": [(16, 16), (64, 24)],
        "instances": 1,
        "kinds": ["linear", "erf"],
        "max_iter": 100,
        "starts": ["antisymmetric", "least squares"],
    },
    "full": {
        "cells": [(16, 16), (16, 6), (64, 24), (64, 64), (128, 24), (128, 128)],
        "instances": 6,
        "kinds": KINDS,
        "max_iter": 200,
        "starts": [
            "antisymmetric",
            "random",
            "aimed c=1",
            "aimed c=4",
            "aimed c=16",
            "least squares",
        ],
    },
}


@register(
    "why-softmax-floor",
    "best population loss reachable (L-BFGS from several starts) per attention kind",
    plot=lambda r: plot_floor(r),  # noqa: PLW0108 (plot_floor is defined below)
)
def run_floor(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    from ..xor.representation import best_losses, erf_floor_probability, linear_loss_floor

    cfg = size_config(size, FLOOR_SIZES)
    records = []
    for d, m in cfg["cells"]:
        inst = random_instances(cfg["instances"], d, m, seed=0, device=device)
        lin_floor = linear_loss_floor(inst.V, inst.support)
        for kind in cfg["kinds"]:
            losses = best_losses(
                inst.V.cpu(),
                inst.theta0.cpu(),
                inst.support.cpu(),
                kind,
                names=tuple(cfg["starts"]),
                seed=d * 1000 + m,
                max_iter=cfg["max_iter"],
            )
            records.append(
                {
                    "d": d,
                    "m": m,
                    "kind": kind,
                    "instances": cfg["instances"],
                    "best_loss": [float(x) for x in losses.min(-1).values],
                    "loss_by_start": {
                        name: [float(x) for x in losses[:, k]]
                        for k, name in enumerate(cfg["starts"])
                    },
                    "erf_floor_probability": erf_floor_probability(d, m),
                    "linear_floor": [finite_or_none(float(x)) for x in lin_floor],
                }
            )
    return {
        "cells": [list(c) for c in cfg["cells"]],
        "instances": cfg["instances"],
        "kinds": cfg["kinds"],
        "max_iter": cfg["max_iter"],
        "starts": cfg["starts"],
    }, records


def plot_floor(results: dict):
    """Best loss found per instance (dots) for each kind and cell, with the erf floor of the chapter."""
    import matplotlib.pyplot as plt

    from ..xor.representation import ERF_LOSS_FLOOR

    records = results["records"]
    cells = [tuple(c) for c in results["params"]["cells"]]
    kinds = results["params"]["kinds"]
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    width = 0.8 / len(kinds)
    for k, kind in enumerate(kinds):
        for i, cell in enumerate(cells):
            rec = next((r for r in records if (r["d"], r["m"]) == cell and r["kind"] == kind), None)
            if rec is None:
                continue
            ys = [max(x, 1e-16) for x in rec["best_loss"]]
            ax.plot(
                [i + (k - (len(kinds) - 1) / 2) * width] * len(ys),
                ys,
                "o",
                color=f"C{k}",
                ms=5,
                alpha=0.7,
                label=kind if i == 0 else None,
            )
    ax.axhline(ERF_LOSS_FLOOR, color="C2", ls="--", lw=1, label="erf floor (when 0 is in the hull)")
    ax.axhline(0.01, color="gray", ls=":", lw=1, label="success threshold 0.01")
    ax.set_yscale("log")
    ax.set_ylim(1e-17, 2)
    ax.set_xticks(range(len(cells)), [f"d={d}\nm={m}" for d, m in cells])
    ax.set_ylabel("best population loss found (floor 1e-16)")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3)  # below the axes
    fig.tight_layout()
    return fig


#: Cells and effort of the gap experiment, which sets the erf floor proved on each instance against the best
#: loss found from more starts than the floor run's (same instances, ``random_instances(n, d, m, seed=0)``).
GAP_SIZES = {
    "ci": {
        "cells": [(16, 6)],
        "instances": 2,
        "max_iter": 60,
        "random": 2,
        "depth_restarts": 32,
        "depth_steps": 100,
    },
    "full": {
        "cells": [(16, 6), (64, 24), (128, 24)],
        "instances": 6,
        "max_iter": 200,
        "random": 6,
        "depth_restarts": 256,
        "depth_steps": 300,
    },
}


def gap_starts(
    V: torch.Tensor,
    theta0: torch.Tensor,
    support: torch.Tensor,
    n_random: int,
    generator: torch.Generator,
    max_iter: int,
) -> dict[str, torch.Tensor]:
    """Starts for the erf search beyond those of :func:`sxor.xor.representation.starts`: the
    antisymmetric pair scaled by 4 and 16, the softmax optimum's queries (L-BFGS from the aimed
    start ``c = 4``) scaled by 1/4, 1/2 and 1, and ``n_random`` random pairs of norm 4."""
    from ..xor.representation import minimise_loss, starts

    out = {f"antisymmetric x{c}": torch.stack([c * theta0, -c * theta0]) for c in (4, 16)}
    aimed = starts(V, theta0, support, generator=generator)[3]  # aimed c=4
    _, soft = minimise_loss(V, support, aimed, "softmax", max_iter=max_iter)
    for c in (0.25, 0.5, 1.0):
        out[f"softmax optimum x{c:g}"] = c * soft
    for r in range(n_random):
        z = torch.randn(2, V.shape[-1], generator=generator, dtype=V.dtype)
        out[f"random norm 4 #{r}"] = 4 * z / z.norm(dim=-1, keepdim=True)
    return out


@register(
    "why-softmax-gap",
    "erf attention: floors proved per instance (hull, depth 2) against the best loss from more starts",
    plot=None,
)
def run_gap(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    from ..xor.representation import (
        depth_two_certified,
        depth_upper_bound,
        erf_floor_certified,
        minimise_loss,
    )

    cfg = size_config(size, GAP_SIZES)
    records = []
    for d, m in cfg["cells"]:
        inst = random_instances(
            cfg["instances"], d, m, seed=0
        )  # float64, CPU: the floor run's instances
        hull = erf_floor_certified(inst.V, inst.support)
        gen = torch.Generator().manual_seed(d * 1000 + m + 7)
        for s in range(cfg["instances"]):
            keep = torch.ones(d, dtype=torch.bool)
            keep[inst.support[s]] = False
            others = inst.V[s][keep]
            depth2 = depth_two_certified(others) if int(hull[s]) == 1 else int(hull[s])
            depth_hat, _ = depth_upper_bound(
                others, restarts=cfg["depth_restarts"], steps=cfg["depth_steps"], generator=gen
            )
            losses = {}
            for name, start in gap_starts(
                inst.V[s], inst.theta0[s], inst.support[s], cfg["random"], gen, cfg["max_iter"]
            ).items():
                losses[name] = float(
                    minimise_loss(
                        inst.V[s], inst.support[s], start, "erf", max_iter=cfg["max_iter"]
                    )[0]
                )
            records.append(
                {
                    "d": d,
                    "m": m,
                    "instance": s,
                    "hull": int(hull[s]),
                    "depth_two": depth2,
                    "depth_upper": depth_hat,
                    "loss_by_start": losses,
                    "best_loss": min(losses.values()),
                }
            )
    return {
        "cells": [list(c) for c in cfg["cells"]],
        "instances": cfg["instances"],
        "max_iter": cfg["max_iter"],
        "random": cfg["random"],
    }, records
