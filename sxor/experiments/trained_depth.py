"""How deep must a trained transformer be? (section 15c): the ``trained-depth`` experiment.

For datasets of :func:`sxor.interp.dataset.random_dataset` (random targets, no teacher) over
``N``, ``m`` (every ``m_j = m``) and the sequence length ``n``, and for each seed ``s`` (the
dataset *and* the initialisation :func:`sxor.interp.deep_training.init_network` drawn with seed
``s``), networks of the depths ``L`` in ``Ls`` are trained by
:func:`sxor.interp.deep_training.train` (Adam with the authors' settings: learning rate
``1e-3``, cosine-annealed, full batch; then an L-BFGS polish and ``newton`` Gauss-Newton
steps, ``sxor.interp._training_polish``) in increasing order until the depth at which at least
90% of the seeds interpolate. Every run is kept, failed or not: one record per
``(N, m, n, seed, L)`` with ``kind = "depth"``: its final loss, relative error
``max_j d_H / scale``, whether it interpolates (``error <= tol``) and diverged, and what its blocks
do (``distinct``: the mean number of distinct token values per sequence after each block, to
``cluster_tol`` times the data's scale; ``entropy``: the mean attention entropy of each block, in
nats). One record per dataset with ``kind = "construction"`` holds the construction's block count
and the same statistics of its softmax network (:func:`sxor.interp.construct.construct`). Records
with ``kind = "teacher"`` train on the outputs of random teachers of depth ``L*`` at depths
``1, ..., L* + 1``; records with ``kind = "scan"`` repeat one cell with other optimiser settings.

``scale`` in the sizes multiplies the number of seeds (1 on a CPU; a larger value for a longer
run), and ``SXOR_WORKERS`` runs that many cells at once in worker processes (spawned, one torch
thread each); every run is seeded, so the records do not depend on the number of workers.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable

import torch

from ..interp.construct import construct
from ..interp.dataset import random_dataset
from ..interp.deep_training import (
    data_scale,
    dataset_tensors,
    forward,
    from_construction,
    init_network,
    layer_statistics,
    train,
)
from . import one_thread, register, size_config
from .trained_depth_report import plot_depth

__all__ = ["SIZES", "run_depth"]

# the authors' optimiser (Adam, lr 1e-3, cosine-annealed, full batch), then this section's polish
_OPTIMISER = {"steps": 2000, "polish": 300, "newton": 100, "lr": 1e-3, "objective": "chamfer"}
SIZES = {
    # the same per-run settings as "full" on a subset of its cells (seeds 0, 1 of N = 2, L = 1)
    "ci": {
        "Ns": [2],
        "ms": [1],
        "ns": [3],
        "Ls": [1],
        "d": 2,
        "seeds": 2,
        "scale": 1,
        **_OPTIMISER,
        "tol": 1e-6,
        "cluster_tol": 1e-3,
        "teacher": {"N": 4, "n": 3, "depths": [], "seed": 7},
        "scan": {"N": 2, "m": 1, "n": 3, "L": 1, "settings": []},
    },
    "full": {
        "Ns": [2, 4, 8, 16],
        "ms": [1, 2, 3],
        "ns": [3, 5],
        "Ls": [1, 2, 3, 4, 6, 8],
        "d": 2,
        "seeds": 10,
        "scale": 1,
        **_OPTIMISER,
        "tol": 1e-6,
        "cluster_tol": 1e-3,
        "teacher": {"N": 4, "n": 3, "depths": [1, 2, 3], "seed": 7, "seeds": 20},
        "scan": {
            "N": 4,
            "m": 1,
            "n": 3,
            "L": 2,
            "settings": [
                [1e-3, 400, "chamfer"],
                [1e-3, 2000, "chamfer"],
                [1e-3, 6000, "chamfer"],
                [1e-2, 400, "chamfer"],
                [1e-2, 2000, "chamfer"],
                [1e-1, 2000, "chamfer"],
                [1e-3, 2000, "hausdorff"],
            ],
        },
    },
}


def _means(stats: dict) -> dict:
    """Per block, the mean over the sequences of the distinct values and of the entropy."""
    return {key: [sum(row) / len(row) for row in stats[key]] for key in ("distinct", "entropy")}


def _fit(X, Y, L, seed, cfg, device, **override) -> dict:
    """Train a depth-``L`` network from the initialisation of ``seed`` on ``(X, Y)``; the result
    of :func:`train` with the statistics of the trained blocks."""
    kw = {k: cfg[k] for k in ("steps", "polish", "newton", "lr", "objective", "tol")}
    kw.update(override)
    theta = init_network(L, cfg["d"], seed=seed, device=device)
    steps = kw.pop("steps")
    out = train(X, Y, theta, steps, **kw)
    stats = layer_statistics(X, theta, cfg["cluster_tol"] * data_scale(X, Y))
    return {**out, **_means(stats)}


def _cell(n: int, m: int, N: int, cfg: dict, device: str) -> list[dict]:
    """The construction and depth records of one ``(n, m, N)``."""
    seeds, tol = cfg["seeds"] * cfg["scale"], cfg["cluster_tol"]
    records, data = [], []
    with one_thread():
        for s in range(seeds):
            inputs, targets = random_dataset(N, n, m, cfg["d"], seed=s)
            X, Y = dataset_tensors(inputs, targets, device=device)
            T = construct(inputs, targets, "softmax")
            theta = {k: v.to(device) for k, v in from_construction(T).items()}
            stats = _means(layer_statistics(X, theta, tol * data_scale(X, Y)))
            key = {"N": N, "m": m, "n": n, "seed": s}
            records.append({"kind": "construction", **key, "blocks": T.num_blocks, **stats})
            data.append((key, X, Y, T.num_blocks))
        for L in cfg["Ls"]:
            rows = [
                {"kind": "depth", **key, "L": L, **_fit(X, Y, L, key["seed"], cfg, device),
                 "construction_blocks": blocks}
                for key, X, Y, blocks in data
            ]  # fmt: skip
            records += rows
            if sum(r["interpolates"] for r in rows) >= 0.9 * seeds:
                break
    return records


def _teacher(L_star: int, cfg: dict, device: str) -> list[dict]:
    """Train at depths ``1, ..., L* + 1`` on the outputs of a random teacher of depth ``L*``
    (:func:`init_network` with the teacher's seed) on the inputs of the first dataset of
    ``teacher``'s size; initialisations of seeds ``100, 101, ...`` (never the teacher's own),
    ``teacher["seeds"]`` of them (default: ``seeds``), times ``scale``."""
    tc = cfg["teacher"]
    with one_thread():
        inputs, targets = random_dataset(tc["N"], tc["n"], 1, cfg["d"], seed=0)
        X, _ = dataset_tensors(inputs, targets, device=device)
        teacher = init_network(L_star, cfg["d"], seed=tc["seed"], device=device)
        Y = forward(X, {k: v.detach() for k, v in teacher.items()}).detach()
        return [
            {"kind": "teacher", "L_star": L_star, "L": L, "seed": 100 + s,
             **_fit(X, Y, L, 100 + s, cfg, device)}
            for L in range(1, L_star + 2)
            for s in range(tc.get("seeds", cfg["seeds"]) * cfg["scale"])
        ]  # fmt: skip


def _scan(setting: list, cfg: dict, device: str) -> list[dict]:
    """The scan cell with one setting ``[lr, steps, objective]``, every seed."""
    sc, (lr, steps, objective) = cfg["scan"], setting
    out = []
    with one_thread():
        for s in range(cfg["seeds"] * cfg["scale"]):
            X, Y = dataset_tensors(*random_dataset(sc["N"], sc["n"], sc["m"], cfg["d"], seed=s),
                                   device=device)  # fmt: skip
            fit = _fit(X, Y, sc["L"], s, cfg, device, lr=lr, steps=steps, objective=objective)
            key = {"N": sc["N"], "m": sc["m"], "n": sc["n"], "seed": s, "L": sc["L"]}
            out.append({"kind": "scan", **key, **fit, "lr": lr, "steps": steps,
                        "objective": objective})  # fmt: skip
    return out


def _cost(fn: Callable[..., list[dict]], args: tuple) -> int:
    """A rough order of the tasks' run times: a teacher's runs, a cell's ``N n``, a scan's steps."""
    if fn is _teacher:
        return 10**9 + args[0]
    if fn is _cell:
        return args[0] * args[2]
    return 0


def run_depth(cfg: dict, device=None) -> list[dict]:
    """Every record of the module docstring for one size's ``cfg``, in a fixed order (cells by
    ``(n, m, N)``, then the teachers, then the scan), on ``SXOR_WORKERS`` processes (default 1)."""
    device = str(device or "cpu")
    tasks: list[tuple[Callable[..., list[dict]], tuple]] = [
        (_cell, (n, m, N, cfg, device)) for n in cfg["ns"] for m in cfg["ms"] for N in cfg["Ns"]
    ]
    tasks += [(_teacher, (L, cfg, device)) for L in cfg["teacher"]["depths"]]
    tasks += [(_scan, (setting, cfg, device)) for setting in cfg["scan"]["settings"]]
    workers = int(os.environ.get("SXOR_WORKERS", "1"))
    if workers > 1 and len(tasks) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # the long tasks first (the teachers, then the cells of the largest N), so that no
        # worker is left with one long task at the end; the records keep the fixed order
        order = sorted(range(len(tasks)), key=lambda i: _cost(*tasks[i]), reverse=True)
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            parts = {i: pool.submit(tasks[i][0], *tasks[i][1]) for i in order}
            results = [parts[i].result() for i in range(len(tasks))]
    else:
        results = [fn(*args) for fn, args in tasks]
    return [r for part in results for r in part]


@register(
    "trained-depth",
    "Smallest trained depth that interpolates random data, against the construction's count",
    plot=plot_depth,
)
def run(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    cfg = dict(size_config(size, SIZES))
    records = run_depth(cfg, device=device)
    for r in records:  # json: no inf
        if "error" in r:
            r["error"] = r["error"] if math.isfinite(r["error"]) else None
    return cfg, records
