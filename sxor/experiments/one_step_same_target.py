"""Same-target and under-stepped failures in the chapter "One gradient step learns sparse XOR"
(re-exported by :mod:`sxor.experiments.one_step`).

* ``one-step-same-target``: same-target failures of the argmax limit on fresh independent draws,
  several ``d`` (:func:`run_same_target`).

From the records: the rates per ``d`` against the prediction (:func:`same_target_table`), the
failures of ``one-step-grid-instances`` pooled over cells (:func:`pooled_same_target`), and the
grid's pooled same-target and under-stepped counts beside their predictions
(:func:`failure_summary`, :func:`plot_same_and_under`).
"""

from __future__ import annotations

import json
import math
import os
import time
from typing import NamedTuple

import numpy as np
import torch

from ..xor import analysis
from ..xor.metrics import FAILURE_MODES, failure_modes
from ..xor.population import loss_from_weights, one_step_and_limit_factored
from ..xor.sweeps import ScaledInstances, sweep_m
from . import register, size_config
from .one_step_grid import _mode_counts

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
    :func:`.grid_measure`'s ``limit_mode``)."""
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
    max_d = int(os.environ.get("SXOR_SAME_TARGET_MAX_D", "0")) or None
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
