"""Sweeps of the chapter "Beyond two bits".

* ``k3-parity``: population gradient descent for three heads on 3-sparse parity (exact
  enumeration of ``{+1,-1}^d``) from three initialisation schemes.

Instances come from :func:`sxor.xor.sweeps.sweep` (instance ``k`` seeded with ``seed + k``), so every
kind and every step size sees exactly the same embeddings, inits and supports.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..xor.dynamics import first_success, parity_descent, parity_inits, population_descent
from ..xor.metrics import success
from ..xor.population import one_step
from ..xor.sweeps import Instances, random_instances, sweep
from . import register, size_config


from ..results import finite_or_none

INIT_SCHEMES = ["star", "antipodal", "random"]
K3_SIZES = {
    "ci": {"d": 8, "m": 8, "seeds": 12, "steps": 60, "etas": [30.0, 300.0]},
    "full": {"d": 10, "m": 10, "seeds": 60, "steps": 200, "etas": [10.0, 100.0, 1000.0]},
}


def k3_instances(num: int, d: int, m: int, scheme: str, *, seed: int = 0, device=None):
    """Instances for 3-sparse parity: :func:`sxor.xor.sweeps.random_instances` supplies ``V`` and
    ``theta0``; the support is three distinct positions and the three initial queries come from
    :func:`sxor.xor.dynamics.parity_inits`, all from a generator seeded with ``seed``."""
    inst = random_instances(num, d, m, seed=seed, device=device)
    gen = torch.Generator(device=inst.V.device).manual_seed(seed)
    support = torch.stack([torch.randperm(d, generator=gen, device=inst.V.device)[:3] for _ in range(num)])
    return inst.V, parity_inits(inst.theta0, scheme, generator=gen), support


@register("beyond-two-bits", "three heads on 3-sparse parity: population GD from three init schemes", plot=lambda r: plot_k3(r))
def run_k3(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    cfg = size_config(size, K3_SIZES)
    records = []
    for scheme in INIT_SCHEMES:
        V, thetas0, support = k3_instances(cfg["seeds"], cfg["d"], cfg["m"], scheme, device=device)
        for eta in cfg["etas"]:
            tr = parity_descent(V, thetas0, support, eta, cfg["steps"])
            first = first_success(tr.success)
            records.append({
                "scheme": scheme, "eta": eta,
                "success_rate": float((first >= 0).double().mean()),
                "first_success": first.tolist(),
                "median_loss": [float(x) for x in tr.loss.nanmedian(-1).values],
                "final_loss": [finite_or_none(float(x)) for x in tr.loss[-1]],
            })
    return {"d": cfg["d"], "m": cfg["m"], "seeds": cfg["seeds"], "steps": cfg["steps"], "schemes": INIT_SCHEMES}, records


def plot_k3(results: dict):
    """Median population loss over the steps, one line per (init scheme, eta)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, scheme in enumerate(results["params"]["schemes"]):
        rows = [r for r in results["records"] if r["scheme"] == scheme]
        for j, rec in enumerate(rows):
            ax.plot(rec["median_loss"], color=f"C{i}", alpha=0.4 + 0.6 * (j + 1) / len(rows),
                    label=f"{scheme}, eta={rec['eta']:g} ({rec['success_rate']:.0%} succeed)")
    ax.set_yscale("log")
    ax.set_xlabel("gradient step")
    ax.set_ylabel("median population loss")
    p = results["params"]
    ax.set_title(f"3-sparse parity, three heads, d={p['d']}, m={p['m']}, {p['seeds']} seeds")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig
