"""Sweeps of the chapter "One gradient step learns sparse XOR".

* ``one-step-eta``: loss and success after one step against ``eta`` for several ``d`` (fixed
  ``m``), to show that ``eta`` must scale like ``d^2``.
* ``one-step-grid``: success probability and failure modes on a ``(d, m)`` grid at the grid step
  ``eta = c d^2 ln d`` (:func:`sxor.xor.analysis.grid_eta`) and in the ``eta -> infinity`` limit.

Both use :func:`sxor.xor.sweeps.sweep` (instance ``k`` seeded with ``seed + k``), so a cell of the
``ci`` size equals the same cell of the ``full`` size whenever both use the same number of seeds.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import time
from collections.abc import Collection, Iterable
from typing import NamedTuple

import numpy as np
import torch

from ..xor import analysis
from ..xor.metrics import FAILURE_MODES, failure_modes
from ..xor.model import attention
from ..xor.population import loss_from_weights, one_step, one_step_and_limit_factored
from ..xor.sweeps import Instances, ScaledInstances, sweep, sweep_m
from . import register, size_config

#: Embedding dimension of the ``eta`` sweep.
ETA_SWEEP_M = 30
#: ``eta / d^2`` values of the ``eta`` sweep: ``10^(k/4)``, ``k = 0..20``, rounded to four significant
#: digits so that the grid is the same decimal numbers on every machine (``np.logspace`` differs in
#: its last bits between CPUs). Records carry the exact index ``k`` as ``eta_index``.
ETA_OVER_D2 = [float(f"{10 ** (k / 4):.4g}") for k in range(21)]
GRID_C = analysis.GRID_C

ETA_SIZES = {
    "ci": {"d": [64, 256], "seeds": 100},
    "full": {"d": [64, 256, 1024, 4096, 16384], "seeds": 100},
}


def _grid_ms(lo: int, hi: int, fine: tuple[int, int] | None = None) -> list[int]:
    """Even ``m`` from ``lo`` to ``hi`` in steps of 2, or in steps of 4 outside the ``fine`` window."""
    if fine is None:
        return list(range(lo, hi + 1, 2))
    return sorted({*range(lo, hi + 1, 4), *range(fine[0], fine[1] + 1, 2), hi})


#: Columns drawn per instance at each ``d`` of the success grid (both sizes): instance ``k`` at
#: ``d`` is the same in the ``ci`` and ``full`` runs only if ``m_max`` is.
GRID_M_MAX = {
    **{2**k: 40 for k in range(6, 11)},
    **{2**k: 44 for k in range(11, 15)},
    2**16: 48,
    2**18: 44,
    2**20: 46,
}
GRID_SIZES = {
    "ci": {
        "cells": {64: [8, 20, 32], 256: [8, 20, 32], 1024: [8, 20, 32]},
        "seeds": {64: 1000, 256: 1000, 1024: 1000},
    },
    "full": {
        "cells": {
            **{2**k: _grid_ms(4, 40) for k in range(6, 11)},
            **{2**k: _grid_ms(8, 44) for k in range(11, 15)},
            2**16: _grid_ms(16, 48, (24, 44)),
            2**18: _grid_ms(28, 44),
            2**20: _grid_ms(32, 46),
        },
        "seeds": {**{2**k: 1000 for k in range(6, 15)}, 2**16: 1000, 2**18: 1000, 2**20: 200},
    },
}


def _mode_counts(codes: torch.Tensor) -> dict[str, int]:
    counts = torch.bincount(codes.flatten(), minlength=len(FAILURE_MODES)).tolist()
    return dict(zip(FAILURE_MODES, counts))


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


def grid_measure(eta: float):
    """A :func:`sxor.xor.sweeps.sweep_m` measure for the success grid: failure mode at step ``eta``
    and in the argmax limit (both from the same reads of ``V``), the loss, and the
    per-input error bound :func:`sxor.xor.analysis.sup_error_bound` after the step."""

    def measure(batch: ScaledInstances) -> dict[str, torch.Tensor]:
        out = one_step_and_limit_factored(batch.Z, batch.scale, batch.theta0, batch.support, eta)
        step = out.step
        d = batch.Z.shape[-1]
        hard = torch.nn.functional.one_hot(out.head, d).to(batch.Z)
        hard_tilde = torch.nn.functional.one_hot(out.head_tilde, d).to(batch.Z)
        hard_loss = loss_from_weights(hard, hard_tilde, batch.support)
        return {
            "mode": failure_modes(step.loss, step.attention, step.attention_tilde, batch.support),
            "limit_mode": failure_modes(hard_loss, hard, hard_tilde, batch.support),
            "loss": step.loss,
            "sup_error": analysis.sup_error_bound(
                step.attention, step.attention_tilde, batch.support
            ),
        }

    return measure


#: Seeds per task of the success grid at large ``d`` (tasks run in worker processes, see :func:`run_grid`).
GRID_BLOCK = {2**16: 50, 2**18: 25, 2**20: 25}


def grid_block(d: int, ms: list[int], start: int, stop: int, device: str = "cpu") -> dict:
    """Instances ``start .. stop - 1`` of the success grid at ``d``, measured at every ``m`` of ``ms``:
    ``{"d", "start", "stop", "ms", "out": {m: {key: list}}, "seconds", "cpu_seconds"}`` with the
    per-instance failure mode, argmax-limit mode, loss and error bound. Instance ``k`` is seeded
    with ``k`` whatever the block, so blocks concatenate to one run. A top-level function, so
    that worker processes can run blocks at once."""
    wall, cpu = time.perf_counter(), time.process_time()
    # at least one instance per torch thread in a chunk, so that the draws run on every thread
    budget = max(1e9, torch.get_num_threads() * 2 * d * GRID_M_MAX[d] * 8)
    outs = sweep_m(
        grid_measure(analysis.grid_eta(d)),
        stop - start,
        d,
        list(ms),
        m_max=GRID_M_MAX[d],
        seed=start,
        device=device,
        budget_bytes=budget,
        desc=f"grid d={d} seeds {start}..{stop - 1}",
    )
    return {
        "d": d,
        "start": start,
        "stop": stop,
        "ms": list(ms),
        "out": {str(m): {k: v.tolist() for k, v in outs[m].items()} for m in ms},
        "seconds": round(time.perf_counter() - wall, 1),
        "cpu_seconds": round(time.process_time() - cpu, 1),
    }


def _grid_records(d: int, ms: list[int], blocks: list[dict]) -> list[dict]:
    """The records of one ``d`` from its blocks (in seed order)."""
    eta = analysis.grid_eta(d)
    rows = []
    for m in ms:
        out = {
            k: torch.tensor([x for b in blocks for x in b["out"][str(m)][k]])
            for k in blocks[0]["out"][str(m)]
        }
        limit = {f"limit_{k}": v for k, v in _mode_counts(out["limit_mode"]).items()}
        sup_ok = out["sup_error"][out["mode"] == 0]
        rows.append(
            {
                "d": d,
                "m": m,
                "seeds": len(out["mode"]),
                "eta": eta,
                "median_loss": float(out["loss"].median()),
                **_mode_counts(out["mode"]),
                **limit,
                "max_sup_error_success": float(sup_ok.max()) if len(sup_ok) else None,
                "median_sup_error_success": float(sup_ok.median()) if len(sup_ok) else None,
            }
        )
    return rows


def _logged_blocks(log: str | None) -> dict[tuple, dict]:
    """Blocks already in the JSON-lines ``log``, keyed by ``(d, start, stop, ms)``."""
    if not log or not os.path.exists(log):
        return {}
    with open(log) as f:
        entries = [json.loads(line) for line in f if line.strip()]
    return {(e["d"], e["start"], e["stop"], tuple(e["ms"])): e for e in entries}


def _grid_blocks(
    cells: dict[int, list[int]], seeds: dict[int, int], device: torch.device
) -> dict[int, list[dict]]:
    """Run :func:`grid_block` over every ``d`` of ``cells`` in the seed blocks of ``GRID_BLOCK``
    (one block below ``2^16``) and return ``{d: blocks in seed order}``; the environment variables
    ``SXOR_WORKERS`` and ``SXOR_GRID_LOG`` act as :func:`run_grid` describes (a log holds blocks
    with the same ``(d, start, stop, ms)`` whichever experiment wrote them)."""
    log = os.environ.get("SXOR_GRID_LOG")
    workers = int(os.environ.get("SXOR_WORKERS", 1))
    tasks = []
    for d in sorted(cells):
        block = GRID_BLOCK.get(d, seeds[d])
        tasks += [
            (d, a, min(a + block, seeds[d]), tuple(cells[d])) for a in range(0, seeds[d], block)
        ]
    done = _logged_blocks(log)
    todo = [t for t in tasks if t not in done]

    def finish(entry: dict) -> None:
        done[(entry["d"], entry["start"], entry["stop"], tuple(entry["ms"]))] = entry
        if log:
            with open(log, "a") as f:
                f.write(json.dumps(entry) + "\n")

    if workers > 1 and len(todo) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [
                pool.submit(grid_block, d, list(ms), a, b, str(device)) for d, a, b, ms in todo
            ]
            for future in as_completed(futures):
                finish(future.result())
    else:
        for d, a, b, ms in todo:
            finish(grid_block(d, list(ms), a, b, str(device)))
    return {d: [done[t] for t in tasks if t[0] == d] for d in sorted(cells)}


def _grid_cells(size: str) -> tuple[dict, dict[int, list[int]]]:
    """The size's grid configuration and its cells, without ``d > SXOR_GRID_MAX_D`` (if set)."""
    cfg = size_config(size, GRID_SIZES)
    max_d = int(os.environ.get("SXOR_GRID_MAX_D", 0)) or None
    return cfg, {d: list(ms) for d, ms in cfg["cells"].items() if max_d is None or d <= max_d}


@register(
    "one-step-grid",
    "success and failure modes of one step on a (d, m) grid",
    plot=lambda r: plot_grid(r),  # noqa: PLW0108 (plot_grid is defined below)
)
def run_grid(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    """Every ``d`` of the size's grid: its instances are drawn once with ``GRID_M_MAX[d]`` columns
    and measured at every ``m`` (:func:`sxor.xor.sweeps.sweep_m`), in blocks of seeds
    (``GRID_BLOCK``; one block below ``2^16``).

    Environment (all optional): ``SXOR_WORKERS`` runs that many blocks at once in worker
    processes (in order of ``d``); ``SXOR_GRID_LOG`` names a JSON-lines file to which each finished
    block is appended, and from which a finished block is taken instead of recomputed (so a
    stopped run resumes); ``SXOR_GRID_MAX_D`` leaves out larger ``d``. ``params`` records the wall
    and CPU seconds each ``d``'s blocks took, wherever they were computed.
    """
    cfg, cells = _grid_cells(size)
    blocks_by_d = _grid_blocks(cells, cfg["seeds"], device)
    records, seconds, cpu = [], {}, {}
    for d, blocks in blocks_by_d.items():
        records += _grid_records(d, cells[d], blocks)
        seconds[str(d)] = round(sum(b["seconds"] for b in blocks), 1)
        cpu[str(d)] = round(sum(b["cpu_seconds"] for b in blocks), 1)
    params = {
        "c": GRID_C,
        "eta": "c d^2 ln d",
        "seeds": {str(d): cfg["seeds"][d] for d in cells},
        "m_max": {str(d): GRID_M_MAX[d] for d in cells},
        "nested_in_m": True,
        "seconds_by_d": seconds,
        "cpu_seconds_by_d": cpu,
    }
    if os.environ.get("SXOR_GRID_STARTED"):
        params["started"] = os.environ["SXOR_GRID_STARTED"]
    return params, records


#: The ``d`` of the ``ci`` size of ``one-step-grid-instances``, each with all its seeds and cells,
#: so that the ``ci`` records equal the full run's exactly.
INSTANCE_CI_D = (64, 256)


@register(
    "one-step-grid-instances",
    "per-instance failure modes on the cells of one-step-grid (same instances)",
    compare_keys=("d", "m"),
)
def run_grid_instances(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    """The instances and cells of ``one-step-grid`` (:func:`run_grid`: the same blocks, seeds and
    ``m_max``), with each instance's outcome kept: one record per cell ``(d, m)`` whose strings
    ``mode`` and ``limit_mode`` hold one digit per instance, in seed order, the code of
    ``FAILURE_MODES`` at the grid's step and in the argmax limit. Their digit counts are the
    grid's counts (``tests/test_one_step_instances.py`` checks this against the committed grid), and
    they are what :func:`bootstrap_instances` resamples. The ``ci`` size is the full size at
    ``d`` in ``INSTANCE_CI_D``. Environment variables as for :func:`run_grid`.
    """
    cfg, cells = _grid_cells("full")
    if size == "ci":
        cells = {d: cells[d] for d in INSTANCE_CI_D}
    else:
        size_config(size, GRID_SIZES)
    blocks_by_d = _grid_blocks(cells, cfg["seeds"], device)
    records, cpu = [], {}
    for d, blocks in blocks_by_d.items():
        for m in cells[d]:
            codes = {
                k: "".join(str(int(c)) for b in blocks for c in b["out"][str(m)][k])
                for k in ("mode", "limit_mode")
            }
            records.append({"d": d, "m": m, "seeds": len(codes["mode"]), **codes})
        cpu[str(d)] = round(sum(b["cpu_seconds"] for b in blocks), 1)
    params = {
        "c": GRID_C,
        "eta": "c d^2 ln d",
        "codes": list(FAILURE_MODES),
        "seeds": {str(d): cfg["seeds"][d] for d in cells},
        "m_max": {str(d): GRID_M_MAX[d] for d in cells},
        "nested_in_m": True,
        "cpu_seconds_by_d": cpu,
    }
    return params, records


def instance_outcomes(
    results: dict, key: str = "success"
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """``{d: (ms, ok [seeds, len(ms)])}`` from ``one-step-grid-instances`` results: ``ok[k, j]`` is
    whether instance ``k`` counts at ``ms[j]``. ``key`` is ``"success"`` (step mode 0),
    ``"limit_success"`` (limit mode 0) or ``"no_limit_off_target"`` (limit mode not off-target,
    the curve of ``m_off``).

    Raises
    ------
    ValueError
        For another ``key``, or cells of one ``d`` with different numbers of instances.
    """
    field, test = {
        "success": ("mode", lambda c: c == 0),
        "limit_success": ("limit_mode", lambda c: c == 0),
        "no_limit_off_target": ("limit_mode", lambda c: c != 1),
    }.get(key, (None, None))
    if field is None:
        raise ValueError(
            f"key must be 'success', 'limit_success' or 'no_limit_off_target', got {key!r}"
        )
    out = {}
    for d in sorted({r["d"] for r in results["records"]}):
        rows = sorted((r for r in results["records"] if r["d"] == d), key=lambda r: r["m"])
        if len({len(r[field]) for r in rows}) != 1:
            raise ValueError(f"the cells of d = {d} hold different numbers of instances")
        codes = np.array(
            [np.frombuffer(r[field].encode(), dtype=np.uint8) - ord("0") for r in rows]
        ).T
        out[d] = (np.array([r["m"] for r in rows]), test(codes))
    return out


def fully_seeded(outcomes: dict[int, tuple[np.ndarray, np.ndarray]]) -> list[int]:
    """The ``d`` of ``outcomes`` (:func:`instance_outcomes`) with the largest number of instances:
    the ``d`` that the chapter's least-squares lines in ``ln d`` are fitted to, so that every point
    of a line rests on the same number of instances (an unweighted fit would otherwise give a ``d``
    with few instances, at the end of the range where its leverage is largest, the weight of any
    other).

    Raises
    ------
    ValueError
        For empty ``outcomes``.
    """
    if not outcomes:
        raise ValueError("outcomes must hold at least one d")
    most = max(ok.shape[0] for _, ok in outcomes.values())
    return [d for d in sorted(outcomes) if outcomes[d][1].shape[0] == most]


def bootstrap_instances(
    outcomes: dict[int, tuple[np.ndarray, np.ndarray]],
    target: float = 0.95,
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    joint: bool = True,
    fit_d: Collection[int] | None = None,
) -> analysis.SlopeBootstrap:
    """Percentile bootstrap over *instances* of the smallest ``m`` with rate ``>= target``
    (:func:`sxor.xor.analysis.smallest_m`) at each ``d``, and of the slope of its least-squares line
    in ``ln d``.

    ``outcomes[d] = (ms, ok [S_d, len(ms)])`` (:func:`instance_outcomes`). Each resample draws
    instances with replacement and recomputes every ``d``'s whole curve from the drawn instances,
    so the sharing of one instance across the ``m`` of a nested grid is kept. The grid's instance
    ``k`` has seed ``k`` at every ``d``, and the same seed means the same stream of Gaussian
    numbers (:func:`sxor.xor.sweeps.nested_instances`), so instance ``k`` at ``d`` and at ``2d``
    share numbers and the estimates at different ``d`` are not independent. Seeds are therefore
    drawn jointly across ``d`` (``joint=True``): the seed range is cut at every distinct ``S_d``
    into strata, each stratum is resampled on its own (as many draws as it has seeds) once per
    resample, and each ``d`` uses the draws of the strata below its ``S_d``, so every ``d``'s
    resample has exactly ``S_d`` instances. ``joint=False`` resamples each ``d`` independently
    (for comparison). The smallest ``m`` is :func:`sxor.xor.analysis.smallest_m`'s: the crossing
    after the last grid ``m`` whose rate is below ``target``. A resample whose rate at the largest
    grid ``m`` is below ``target`` at some ``d`` is kept with that ``d``'s value set to the largest
    grid ``m`` (censored) and counted in ``censored``; only ``d`` with a finite point estimate
    enter.

    ``fit_d`` (optional) names the ``d`` whose point estimates enter the least-squares line, its
    slope and the slope's interval (e.g. :func:`fully_seeded`); the other ``d`` keep their own
    intervals, from the same joint resamples, and ``SlopeBootstrap.fit`` marks which ``d`` entered.
    By default every ``d`` with a finite point estimate enters.

    Returns
    -------
    sxor.xor.analysis.SlopeBootstrap

    Raises
    ------
    ValueError
        For ``resamples < 2``, a ``level`` outside ``(0, 1)``, fewer than two ``d`` with a
        finite point estimate (or, with ``fit_d``, fewer than two of them in ``fit_d``), or a
        ``d`` of ``fit_d`` that is not in ``outcomes`` or has no finite point estimate.
    TypeError
        For a ``fit_d`` that is not a collection of ``d`` (an int, a string).
    """
    if resamples < 2:
        raise ValueError(f"resamples must be >= 2, got {resamples}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if fit_d is not None:
        if isinstance(fit_d, (str, bytes)) or not isinstance(fit_d, Iterable):
            raise TypeError(f"fit_d must be a collection of d, got {type(fit_d).__name__}")
        fit_d = set(fit_d)  # once: a generator would be used up by the first look
        if not fit_d <= set(outcomes):
            raise ValueError(f"fit_d holds d not in outcomes: {sorted(fit_d - set(outcomes))}")
    ds, points = [], []
    for d in sorted(outcomes):
        ms, ok = outcomes[d]
        value = analysis.smallest_m(ms, ok.mean(0), target)
        if np.isfinite(value):
            ds.append(d)
            points.append(value)
    if len(ds) < 2:
        raise ValueError("need at least two d with a finite smallest m")
    if fit_d is not None:
        if not fit_d <= set(ds):
            raise ValueError(f"fit_d holds d with no finite smallest m: {sorted(fit_d - set(ds))}")
        if len(fit_d) < 2:
            raise ValueError("need at least two d of fit_d with a finite smallest m")
    sizes = sorted({outcomes[d][1].shape[0] for d in ds})
    edges = [0, *sizes]
    rng = np.random.default_rng(seed)
    samples = np.empty((resamples, len(ds)))
    censored = np.zeros(len(ds), dtype=np.int64)
    for r in range(resamples):
        if joint:
            idx = np.concatenate(
                [rng.integers(a, b, size=b - a) for a, b in itertools.pairwise(edges)]
            )
            weights = np.bincount(idx, minlength=sizes[-1]).astype(float)
        for j, d in enumerate(ds):
            ms, ok = outcomes[d]
            n = ok.shape[0]
            if not joint:
                weights = np.bincount(rng.integers(0, n, size=n), minlength=n).astype(float)
            value = analysis.smallest_m(ms, weights[:n] @ ok / n, target)
            if not np.isfinite(value):
                value = ms[-1]
                censored[j] += 1
            samples[r, j] = value
    used = np.array([fit_d is None or d in fit_d for d in ds])
    x = np.log(np.array(ds, dtype=float))[used]
    fit = analysis.fit_line(x, np.array(points)[used])
    A = np.stack([np.ones_like(x), x], axis=1)
    slopes = np.linalg.lstsq(A, samples[:, used].T, rcond=None)[0][1]
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
    m_low, m_high = np.percentile(samples, q, axis=0)
    slope_low, slope_high = np.percentile(slopes, q)
    return analysis.SlopeBootstrap(
        np.array(ds),
        np.array(points),
        m_low,
        m_high,
        fit.slope,
        fit.intercept,
        float(slope_low),
        float(slope_high),
        float(censored.sum()) / (resamples * len(ds)),
        used,
        censored,
    )


#: Embedding dimension of the fresh same-target draws (the ``m`` of the chapter's comparison).
SAME_TARGET_M = 32
#: Instances per record of ``one-step-same-target``.
SAME_TARGET_BLOCK = 5000
SAME_TARGET_SIZES = {
    "ci": {"d": [1024], "blocks": 1},
    "full": {"d": [1024, 2048, 4096, 8192, 16384], "blocks": 2},
}


def same_target_seed(d: int) -> int:
    """First seed of the fresh same-target draws at ``d``: ``10^6 log2 d``, so the seed ranges of
    different ``d`` are disjoint from each other and from the grid's (seeds ``0 .. 999``)."""
    return 10**6 * round(math.log2(d))


def limit_measure(batch: ScaledInstances) -> dict[str, torch.Tensor]:
    """A :func:`sxor.xor.sweeps.sweep_m` measure: the failure mode of the argmax limit (as in
    :func:`grid_measure`'s ``limit_mode``)."""
    d = batch.Z.shape[-1]
    out = one_step_and_limit_factored(
        batch.Z, batch.scale, batch.theta0, batch.support, analysis.grid_eta(d)
    )
    hard = torch.nn.functional.one_hot(out.head, d).to(batch.Z)
    hard_tilde = torch.nn.functional.one_hot(out.head_tilde, d).to(batch.Z)
    return {
        "limit_mode": failure_modes(
            loss_from_weights(hard, hard_tilde, batch.support), hard, hard_tilde, batch.support
        )
    }


@register(
    "one-step-same-target",
    "same-target failures of the argmax limit on fresh independent draws, several d",
    compare_keys=("d", "block"),
)
def run_same_target(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    """Fresh instances at ``m = SAME_TARGET_M`` (independent across instances and across ``d``:
    seeds from :func:`same_target_seed`, each instance drawn with ``m_max = m``), classified in the
    ``eta -> infinity`` limit; one record per block of ``SAME_TARGET_BLOCK`` instances, with the
    counts of every failure mode and the prediction :func:`sxor.xor.analysis.predicted_same_target`.
    The ``ci`` size is the first block of the full size at ``d = 1024``. ``SXOR_SAME_TARGET_LOG``
    (optional) names a JSON-lines file to which each finished record is appended and from which a
    logged record is taken instead of recomputed (so a stopped run resumes); ``SXOR_SAME_TARGET_MAX_D``
    (optional) leaves out larger ``d``."""
    cfg = size_config(size, SAME_TARGET_SIZES)
    log = os.environ.get("SXOR_SAME_TARGET_LOG")
    max_d = int(os.environ.get("SXOR_SAME_TARGET_MAX_D", 0)) or None
    logged = {}
    if log and os.path.exists(log):
        with open(log) as f:
            logged = {(e["d"], e["block"]): e for e in map(json.loads, filter(str.strip, f))}
    records, cpu = [], {}
    for d in (d for d in cfg["d"] if max_d is None or d <= max_d):
        seconds = 0.0
        for block in range(cfg["blocks"]):
            if (d, block) in logged:
                record = logged[(d, block)]
            else:
                started = time.process_time()
                start = same_target_seed(d) + block * SAME_TARGET_BLOCK
                out = sweep_m(
                    limit_measure,
                    SAME_TARGET_BLOCK,
                    d,
                    [SAME_TARGET_M],
                    seed=start,
                    device=device,
                    desc=f"same target d={d} block {block}",
                )[SAME_TARGET_M]
                counts = _mode_counts(out["limit_mode"])
                record = {
                    "d": d,
                    "m": SAME_TARGET_M,
                    "block": block,
                    "first_seed": start,
                    "draws": SAME_TARGET_BLOCK,
                    **{f"limit_{k}": v for k, v in counts.items()},
                    "predicted_same_target": float(analysis.predicted_same_target(d)),
                    "cpu_seconds": round(time.process_time() - started, 1),
                }
                if log:
                    with open(log, "a") as f:
                        f.write(json.dumps(record) + "\n")
            seconds += record.pop("cpu_seconds", 0.0)
            records.append(record)
        cpu[str(d)] = round(seconds, 1)
    params = {
        "m": SAME_TARGET_M,
        "block": SAME_TARGET_BLOCK,
        "blocks": cfg["blocks"],
        "seeds": "10^6 log2(d) + k, k = 0 .. blocks * block - 1",
        "cpu_seconds_by_d": cpu,
    }
    return params, records


class PooledExcess(NamedTuple):
    """:func:`pooled_same_target`: a failure mode's count pooled over cells, against its prediction."""

    events: int
    pairs: int  #: instance-m pairs pooled
    instances: int
    expected: float  #: sum over the pairs of the predicted rate
    z_pairs: float  #: ``(events - expected) / sqrt(expected)``, as if the pairs were independent
    z_instances: float  #: the same excess over the standard error from the per-instance totals


def pooled_same_target(results: dict, ds: list[int], m_min: int = 32) -> PooledExcess:
    """Same-target failures in the argmax limit of ``one-step-grid-instances`` results, pooled
    over the cells with ``d`` in ``ds`` and ``m >= m_min``, against
    :func:`sxor.xor.analysis.predicted_same_target`. ``z_instances`` respects the nesting: each
    instance contributes its number ``c_k`` of failing cells, and the total's variance is
    estimated by ``sum_d S_d var(c_k)`` (the instances are independent, their cells are not).

    Raises
    ------
    ValueError
        If some ``d`` of ``ds`` has no cell with ``m >= m_min``.
    """
    events, pairs, instances, expected, var = 0, 0, 0, 0.0, 0.0
    code = str(FAILURE_MODES.index("same_target"))
    for d in ds:
        rows = [r for r in results["records"] if r["d"] == d and r["m"] >= m_min]
        if not rows:
            raise ValueError(f"no cell with d = {d} and m >= {m_min}")
        counts = np.sum(
            [np.frombuffer(r["limit_mode"].encode(), dtype=np.uint8) == ord(code) for r in rows],
            axis=0,
        )
        events += int(counts.sum())
        pairs += counts.size * len(rows)
        instances += counts.size
        expected += float(analysis.predicted_same_target(d)) * counts.size * len(rows)
        var += counts.size * float(counts.var(ddof=1))
    return PooledExcess(
        events,
        pairs,
        instances,
        expected,
        (events - expected) / math.sqrt(expected),
        (events - expected) / math.sqrt(var),
    )


class SameTargetRow(NamedTuple):
    """One ``d`` of :func:`same_target_table`."""

    d: int
    draws: int
    events: int
    rate: float
    se: float  #: binomial standard error ``sqrt(rate (1 - rate) / draws)``
    predicted: float
    z: float  #: ``(events - draws p) / sqrt(draws p (1 - p))`` with ``p`` the prediction


def same_target_table(results: dict) -> list[SameTargetRow]:
    """Pool the blocks of ``one-step-same-target`` results per ``d``; the z-score uses the
    predicted rate's binomial standard error (the test of the prediction as the null)."""
    rows = []
    for d in sorted({r["d"] for r in results["records"]}):
        recs = [r for r in results["records"] if r["d"] == d]
        n, k = sum(r["draws"] for r in recs), sum(r["limit_same_target"] for r in recs)
        p = recs[0]["predicted_same_target"]
        rate = k / n
        rows.append(
            SameTargetRow(
                d,
                n,
                k,
                rate,
                math.sqrt(rate * (1 - rate) / n),
                p,
                (k - n * p) / math.sqrt(n * p * (1 - p)),
            )
        )
    return rows


def success_curves(
    records: list[dict], key: str = "success"
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """``{d: (ms, rates)}`` from grid records with ``rates = record[key] / seeds``; a key
    ``"no_<name>"`` gives the complement ``1 - record[name] / seeds`` (e.g. ``"no_limit_off_target"``)."""
    curves: dict[int, tuple[list, list]] = {}
    for r in sorted(records, key=lambda r: (r["d"], r["m"])):
        ms, rates = curves.setdefault(r["d"], ([], []))
        ms.append(r["m"])
        if key.startswith("no_"):
            rates.append(1 - r[key[3:]] / r["seeds"])
        else:
            rates.append(r[key] / r["seeds"])
    return {d: (np.array(ms), np.array(rates)) for d, (ms, rates) in curves.items()}


def m95_by_d(records: list[dict], key: str = "success", target: float = 0.95) -> dict[int, float]:
    """Smallest ``m`` reaching ``target`` for each ``d`` (:func:`sxor.xor.analysis.smallest_m`) on the
    curves of :func:`success_curves`."""
    return {
        d: analysis.smallest_m(ms, rates, target)
        for d, (ms, rates) in success_curves(records, key).items()
    }


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


def grid_counts(
    records: list[dict], key: str = "success"
) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``{d: (ms, successes, trials)}`` from grid records (for
    :func:`sxor.xor.analysis.bootstrap_smallest_m`); ``"no_<name>"`` counts ``seeds - record[name]``."""
    out = {}
    for d in sorted({r["d"] for r in records}):
        rows = sorted((r for r in records if r["d"] == d), key=lambda r: r["m"])
        k = [r["seeds"] - r[key[3:]] if key.startswith("no_") else r[key] for r in rows]
        out[d] = (
            np.array([r["m"] for r in rows]),
            np.array(k),
            np.array([r["seeds"] for r in rows]),
        )
    return out


class FailureSummary(NamedTuple):
    """Per ``d`` of the grid: pooled same-target and under-stepped counts and their predictions."""

    d: list[int]
    same_target: (
        np.ndarray
    )  #: same-target failures in the argmax limit, pooled over cells with ``m >= m_min``
    same_trials: np.ndarray
    same_predicted: np.ndarray  #: :func:`sxor.xor.analysis.predicted_same_target`
    under_stepped: np.ndarray  #: under-stepped at the grid's step, pooled over every ``m``
    under_trials: np.ndarray
    under_predicted: np.ndarray  #: :func:`sxor.xor.analysis.predicted_under_stepped` at ``m_pred``


def failure_summary(
    results: dict, m_min: int = 32, m_pred: int = 32, samples: int = 5000
) -> FailureSummary:
    """Pool the committed grid's failure counts per ``d`` and put the predictions beside them."""
    cells = results["records"]
    ds = sorted({r["d"] for r in cells})
    same, same_n, under, under_n, under_pred = [], [], [], [], []
    for d in ds:
        rows = [r for r in cells if r["d"] == d and r["m"] >= m_min]
        same.append(sum(r["limit_same_target"] for r in rows))
        same_n.append(sum(r["seeds"] for r in rows))
        rows_all = [r for r in cells if r["d"] == d]
        under.append(sum(r["under_stepped"] for r in rows_all))
        under_n.append(sum(r["seeds"] for r in rows_all))
        lam = analysis.natural_step(analysis.grid_eta(d, results["params"]["c"]), d, m_pred)
        under_pred.append(
            float(analysis.predicted_under_stepped(m_pred, float(lam), samples=samples))
        )
    return FailureSummary(
        ds,
        np.array(same),
        np.array(same_n),
        analysis.predicted_same_target(np.array(ds)),
        np.array(under),
        np.array(under_n),
        np.array(under_pred),
    )


def plot_same_and_under(summary: FailureSummary):
    """Two panels, one above the other: the same-target fraction against ``d`` with its prediction
    (95% Wilson intervals), and the under-stepped fraction against ``d`` with its prediction."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(7.0, 7.6))
    ds = np.array(summary.d)
    rate = summary.same_target / summary.same_trials
    lo, hi = zip(
        *(
            analysis.wilson_interval(np.array([k]), int(n))
            for k, n in zip(summary.same_target, summary.same_trials)
        )
    )
    lo, hi = np.concatenate(lo), np.concatenate(hi)
    axes[0].errorbar(
        ds, rate, yerr=[rate - lo, hi - rate], fmt="o", capsize=3, label="measured (95% Wilson)"
    )
    dd = np.logspace(np.log10(ds[0]), np.log10(ds[-1]), 50)
    axes[0].plot(
        dd,
        analysis.predicted_same_target(dd),
        "k-",
        label=r"$\frac{2}{\pi}\arctan\frac{\sqrt{d-2}}{d}$",
    )
    axes[0].set(
        xscale="log", yscale="log", xlabel="d", ylabel=r"same-target fraction ($\eta\to\infty$)"
    )
    axes[0].legend(fontsize=11, loc="lower left")
    axes[1].semilogx(
        ds, summary.under_stepped / summary.under_trials, "o", label="measured (pooled over m)"
    )
    axes[1].semilogx(ds, summary.under_predicted, "k-", label=r"prediction at $m=32$")
    axes[1].set(xlabel="d", ylabel="under-stepped fraction", ylim=(0, None))
    axes[1].legend(
        fontsize=11, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False
    )
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


def plot_grid(
    results: dict,
    boot: analysis.SlopeBootstrap | None = None,
    ds: list[int] | None = None,
    m95_min_d: int = 1024,
):
    """Success rate against ``m`` for some ``d`` (solid: the grid's step; dashed: the argmax limit),
    and below it the smallest ``m`` reaching the 95% / 5% levels against ``ln d`` with the line in
    ``ln d`` fitted to ``m_off`` (slope and its bootstrap interval in the legend).

    Parameters
    ----------
    results
        The ``one-step-grid`` results.
    boot
        The bootstrap of ``m_off`` whose slope and interval the legend shows (the chapter passes
        :func:`bootstrap_instances` of the per-instance outcomes, fitted to :func:`fully_seeded`);
        its line is drawn over the ``d`` that entered the fit (``boot.fit_d()``); by default
        :func:`sxor.xor.analysis.bootstrap_smallest_m` of the ``no_limit_off_target`` counts with
        its default resamples and seed (each cell redrawn on its own).
    ds
        The ``d`` drawn in the top panel (default: six ``d`` spread evenly over the grid, so that
        the curves can be told apart).
    m95_min_d
        ``m_95`` is drawn only for ``d >= m95_min_d``: below it the same-target floor is close to
        5% and ``m_95`` is set by sampling noise (the chapter uses it from ``d = 1024`` on).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    records = results["records"]
    fig, axes = plt.subplots(2, 1, figsize=(7.0, 9.0))
    curves = success_curves(records)
    limit = success_curves(records, "limit_success")
    if ds is None:
        all_d = sorted(curves)
        ds = sorted({all_d[round(k)] for k in np.linspace(0, len(all_d) - 1, min(6, len(all_d)))})
    colors = plt.cm.plasma(np.linspace(0, 0.85, len(ds)))
    for color, d in zip(colors, ds):
        ms, rates = curves[d]
        axes[0].plot(ms, rates, "o-", ms=3.5, color=color, label=f"$d=2^{{{round(math.log2(d))}}}$")
        axes[0].plot(*limit[d], "--", color=color, lw=1)
    axes[0].axhline(0.95, color="k", ls=":", lw=1)
    axes[0].set(xlabel="embedding dimension m", ylabel="success rate", ylim=(0, 1.02))
    axes[0].legend(fontsize=10, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    series = [
        ("success", "o", r"$m_{95}$: success $\geq$ 95%"),
        ("no_limit_off_target", "s", r"$m_{\rm off}$: off-target $\leq$ 5% ($\eta\to\infty$)"),
    ]
    for key, marker, label in series:
        m95 = m95_by_d(records, key)
        d = np.array(
            [k for k, v in m95.items() if np.isfinite(v) and (key != "success" or k >= m95_min_d)]
        )
        axes[1].plot(
            np.log(d),
            [m95[k] for k in d],
            marker,
            mfc="none" if marker == "s" else None,
            label=label,
        )
    counts = grid_counts(records, "no_limit_off_target")
    if (
        boot is None
        and sum(np.isfinite(analysis.smallest_m(ms, k / n)) for ms, k, n in counts.values()) >= 2
    ):
        boot = analysis.bootstrap_smallest_m(counts)
    if boot is not None:
        x = np.log(boot.fit_d().astype(float))
        axes[1].plot(
            x,
            boot.intercept + boot.slope * x,
            "k-",
            lw=1,
            label=rf"fit to $m_{{\rm off}}$: slope {boot.slope:.3f} [{boot.slope_low:.3f}, {boot.slope_high:.3f}]",
        )
        axes[1].plot(
            x,
            boot.intercept + 2 / math.log(2) * (x - x.mean()) + boot.slope * x.mean(),
            "k:",
            lw=1,
            label=r"slope $2/\ln 2$ through the same centre",
        )
    axes[1].set(xlabel=r"$\ln d$", ylabel="smallest sufficient m")
    axes[1].legend(
        fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=1, frameon=False
    )
    fig.tight_layout()
    return fig


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
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


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
            ax.annotate(name, (t, top), ha="center", va="bottom", fontsize=9)
        ax.set(title=label, ylim=(-1.2 * top, 1.2 * top), ylabel="weight")
    axes[-1].set_xlabel("position i")
    axes[0].set_title(axes[0].get_title() + ": scale ~ 1/d")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=10, frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.5 / (2.9 * rows + 0.6), 1, 1))
    return fig
