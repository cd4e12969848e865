"""How deep must a trained transformer be? (section 15c): the ``trained-depth`` experiment.

For datasets of :func:`sxor.interp.dataset.random_dataset` (random targets, no teacher) over
``N``, ``m`` (every ``m_j = m``) and the sequence length ``n``, and for each seed ``s`` (the
dataset *and* the initialisation :func:`sxor.interp.deep_training.init_network` drawn with seed
``s``), networks of depth ``L = 1, 2, ...`` are trained by :func:`sxor.interp.deep_training.train`
until the depth at which at least 90% of the seeds interpolate, or ``L_max``. Every run is kept,
failed or not: one record per ``(N, m, n, seed, L)`` with ``kind = "depth"``, its final loss,
relative error ``max_j d_H / scale``, whether it interpolates (``error <= tol``) and diverged,
and the construction's block count for the same data (softmax
:func:`sxor.interp.construct.construct`). A learning-rate and step scan at one size adds records
with ``kind = "scan"``.

``scale`` in the sizes multiplies the number of seeds and ``L_max`` (1 on one CPU core; a larger
value for a longer run).
"""

from __future__ import annotations

import math

import torch

from ..interp.construct import construct
from ..interp.dataset import random_dataset
from ..interp.deep_training import dataset_tensors, init_network, train
from . import one_thread, register, size_config
from .why_transformer_reliability import clopper_pearson

SIZES = {
    # the same per-run settings as "full" on a subset of its cells (seeds 0, 1 of N = 2, L = 1)
    "ci": {
        "Ns": [2],
        "ms": [1],
        "ns": [3],
        "d": 2,
        "seeds": 2,
        "L_max": 1,
        "scale": 1,
        "steps": 400,
        "polish": 300,
        "lr": 1e-2,
        "objective": "chamfer",
        "tol": 1e-6,
        "scan": {"N": 2, "m": 1, "n": 3, "L": 1, "settings": []},
    },
    "full": {
        "Ns": [2, 4, 8, 16],
        "ms": [1, 2, 3],
        "ns": [3, 5],
        "d": 2,
        "seeds": 3,
        "L_max": 4,
        "scale": 1,
        "steps": 400,
        "polish": 300,
        "lr": 1e-2,
        "objective": "chamfer",
        "tol": 1e-6,
        "scan": {
            "N": 4,
            "m": 1,
            "n": 3,
            "L": 2,
            "settings": [
                [1e-3, 400, "chamfer"],
                [1e-2, 400, "chamfer"],
                [1e-1, 400, "chamfer"],
                [1e-2, 1200, "chamfer"],
                [1e-2, 400, "hausdorff"],
            ],
        },
    },
}


def _one(N, m, n, d, seed, L, steps, polish, lr, objective, tol, device) -> dict:
    inputs, targets = random_dataset(N, n, m, d, seed=seed)
    X, Y = dataset_tensors(inputs, targets, device=device)
    theta = init_network(L, d, seed=seed, device=device)
    out = train(X, Y, theta, steps, lr=lr, polish=polish, tol=tol, objective=objective)
    return {"N": N, "m": m, "n": n, "seed": seed, "L": L, **out}


def run_depth(cfg: dict, device=None) -> list[dict]:
    """The depth records and the scan records of the module docstring for one size's ``cfg``."""
    seeds, L_max = cfg["seeds"] * cfg["scale"], cfg["L_max"] * cfg["scale"]
    common = {k: cfg[k] for k in ("d", "steps", "polish", "lr", "objective", "tol")}
    records = []
    for n in cfg["ns"]:
        for m in cfg["ms"]:
            for N in cfg["Ns"]:
                blocks = [
                    construct(*random_dataset(N, n, m, cfg["d"], seed=s), "softmax").num_blocks
                    for s in range(seeds)
                ]
                for L in range(1, L_max + 1):
                    rows = [
                        _one(N, m, n, seed=s, L=L, device=device, **common) for s in range(seeds)
                    ]
                    for s, r in enumerate(rows):
                        records.append({"kind": "depth", **r, "construction_blocks": blocks[s]})
                    if sum(r["interpolates"] for r in rows) >= 0.9 * seeds:
                        break
    sc = cfg["scan"]
    for lr, steps, objective in sc["settings"]:
        for s in range(seeds):
            kw = {**common, "lr": lr, "steps": steps, "objective": objective}
            r = _one(sc["N"], sc["m"], sc["n"], seed=s, L=sc["L"], device=device, **kw)
            records.append({"kind": "scan", **r, "lr": lr, "steps": steps, "objective": objective})
    return records


def depth_table(records: list[dict], level: float = 0.95) -> list[dict]:
    """Per ``(n, m, N)``: the construction's block counts (min and max over seeds), the runs,
    and for each depth ``L`` tried the successes, the seeds and the Clopper-Pearson ``level``
    interval; ``L_half`` and ``L_90``, the smallest ``L`` with success rate ``>= 1/2`` and
    ``>= 0.9`` (``None`` when no ``L`` tried reached it: censored at the largest ``L`` tried)."""
    out = []
    keys = sorted({(r["n"], r["m"], r["N"]) for r in records if r["kind"] == "depth"})
    for n, m, N in keys:
        rows = [
            r for r in records if r["kind"] == "depth" and (r["n"], r["m"], r["N"]) == (n, m, N)
        ]
        per_L = []
        for L in sorted({r["L"] for r in rows}):
            hits = [r["interpolates"] for r in rows if r["L"] == L]
            lo, hi = clopper_pearson(sum(hits), len(hits), level)
            per_L.append({"L": L, "successes": sum(hits), "runs": len(hits), "ci": [lo, hi]})

        def first(rate: float, per_L: list = per_L) -> int | None:
            return next((p["L"] for p in per_L if p["successes"] >= rate * p["runs"]), None)

        blocks = [r["construction_blocks"] for r in rows]
        out.append(
            {
                "n": n,
                "m": m,
                "N": N,
                "construction_blocks": [min(blocks), max(blocks)],
                "L_max_tried": max(p["L"] for p in per_L),
                "L_half": first(0.5),
                "L_90": first(0.9),
                "per_L": per_L,
                "diverged": sum(r["diverged"] for r in rows),
            }
        )
    return out


def plot_depth(results: dict):
    """The first depth tried at which at least half of the seeds interpolated (``L_half``)
    against ``N`` (one panel per ``n``), one colour per ``m`` (markers of different ``m`` set
    slightly apart in ``N``); a hollow marker at ``L_max + 1`` marks a censored cell (no depth
    tried reached half), the construction's block count dashed."""
    import matplotlib.pyplot as plt

    table = depth_table(results["records"])
    ns = sorted({t["n"] for t in table})
    fig, axes = plt.subplots(1, len(ns), figsize=(4.2 * len(ns), 4.2), squeeze=False)
    for ax, n in zip(axes[0], ns):
        for m, colour in zip((1, 2, 3), ("tab:blue", "tab:orange", "tab:green")):
            rows = [t for t in table if t["n"] == n and t["m"] == m]
            if not rows:
                continue
            Ns = [t["N"] for t in rows]
            ax.plot(Ns, [t["construction_blocks"][1] for t in rows], "--", color=colour)
            for t in rows:
                censored = t["L_half"] is None
                y = t["L_max_tried"] + 1 if censored else t["L_half"]
                face = "none" if censored else colour
                shift = 2 ** (0.08 * (m - 2))  # side by side, so that equal values stay visible
                ax.plot([t["N"] * shift], [y], "o", mfc=face, color=colour, ms=8)
            ax.plot([], [], "o-", color=colour, label=f"m = {m}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("N (sequences)")
        ax.set_ylabel("blocks")
        ax.set_title(f"n = {n}: trained (dots), construction (dashed)", fontsize=11)
        ax.legend(fontsize=10, frameon=False)
    fig.tight_layout()
    return fig


@register(
    "trained-depth",
    "Smallest trained depth that interpolates random data, against the construction's count",
    plot=plot_depth,
)
def run(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    cfg = dict(size_config(size, SIZES))
    with one_thread():
        records = run_depth(cfg, device=device)
    for r in records:  # json: no inf
        r["error"] = r["error"] if math.isfinite(r["error"]) else None
    return cfg, records
