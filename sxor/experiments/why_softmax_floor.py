"""The best reachable losses of the chapter "Why exact softmax" (re-exported by
:mod:`sxor.experiments.why_softmax`).

* ``why-softmax-floor``: the best population loss found (L-BFGS from several starts) per
  attention kind, on cells ``(d, m)`` (``run_floor``, :func:`plot_floor`).
* ``why-softmax-gap``: for erf attention, the floor proved on each instance (hull, depth 2) against
  the best loss found from more starts (``run_gap``, :func:`gap_starts`).
"""

from __future__ import annotations

import torch

from ..results import finite_or_none
from ..xor.sweeps import random_instances
from . import register, size_config
from .why_softmax_variants import KINDS

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
    """The ``why-softmax-floor`` run: for each cell and kind, the best loss from each start."""
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
    ax.legend(
        fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3
    )  # below the axes
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
        "lp_starts": 2,
    },
    "full": {
        "cells": [(16, 6), (64, 24), (128, 24)],
        "instances": 6,
        "max_iter": 200,
        "random": 6,
        "depth_restarts": 256,
        "depth_steps": 300,
        "lp_starts": 8,
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
    """The ``why-softmax-gap`` run: per erf instance, the hull and depth-two certificates, both
    depth upper bounds and the best loss from the extra starts."""
    from ..xor.representation import (
        depth_two_certified,
        depth_upper_bound,
        depth_upper_bound_lp,
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
            depth_hat, theta_hat = depth_upper_bound(
                others, restarts=cfg["depth_restarts"], steps=cfg["depth_steps"], generator=gen
            )
            # LP-greedy from the smoothed count's query and perturbations of it (own generator, so
            # that the starts of the loss search below are those of the earlier runs)
            lp_gen = torch.Generator().manual_seed(d * 1000 + m + 11 + s)
            th = theta_hat / theta_hat.norm()
            noise = torch.randn(cfg["lp_starts"] - 1, m, generator=lp_gen, dtype=th.dtype)
            lp_starts = torch.cat([th.unsqueeze(0), th + 0.3 * noise / m**0.5])
            depth_lp, _ = depth_upper_bound_lp(others, lp_starts)
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
                    "depth_upper_lp": depth_lp,
                    "loss_by_start": losses,
                    "best_loss": min(losses.values()),
                }
            )
    return {
        "cells": [list(c) for c in cfg["cells"]],
        "instances": cfg["instances"],
        "max_iter": cfg["max_iter"],
        "random": cfg["random"],
        "lp_starts": cfg["lp_starts"],
    }, records
