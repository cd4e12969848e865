"""The success grid of the chapter "One gradient step learns sparse XOR" (re-exported by
:mod:`sxor.experiments.one_step`).

* ``one-step-grid``: success probability and failure modes on a ``(d, m)`` grid at the grid step
  ``eta = c d^2 ln d`` (:func:`sxor.xor.analysis.grid_eta`) and in the ``eta -> infinity`` limit,
  computed in blocks of seeds (:func:`grid_block`) that :mod:`sxor.experiments.one_step_instances`
  shares.

From the records: the success curves per ``d`` (:func:`success_curves`), the smallest sufficient
``m`` (:func:`m95_by_d`), the counts for a bootstrap (:func:`grid_counts`) and the chapter's
figure (:func:`plot_grid`).
"""

from __future__ import annotations

import json
import math
import os
import time

import numpy as np
import torch

from ..xor import analysis
from ..xor.metrics import FAILURE_MODES, failure_modes
from ..xor.population import loss_from_weights, one_step_and_limit_factored
from ..xor.sweeps import ScaledInstances, sweep_m
from . import register, size_config

GRID_C = analysis.GRID_C


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
    workers = int(os.environ.get("SXOR_WORKERS", "1"))
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
    max_d = int(os.environ.get("SXOR_GRID_MAX_D", "0")) or None
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
        :func:`.bootstrap_instances` of the per-instance outcomes, fitted to :func:`.fully_seeded`);
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
        reached = np.array(
            [k for k, v in m95.items() if np.isfinite(v) and (key != "success" or k >= m95_min_d)]
        )
        axes[1].plot(
            np.log(reached),
            [m95[k] for k in reached],
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
