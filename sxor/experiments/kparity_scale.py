"""Sweeps of the section "Three bits at scale" (chapter 9).

``kparity-scale``: population gradient descent of ``k`` heads on ``k``-sparse parity through the
closed-form loss (:mod:`sxor.xor.kparity_population`), at any ``d``. Two parts:

* ``part="rules"``: at fixed ``(d, m)``, each step-size rule of
  :mod:`sxor.xor.kparity_descent` at three constants a factor 3 apart: successes, steps, the
  runs whose loss ever rises, and the failures by cause;
* ``part="scan"``: for ``k = 2, 3``, both initialisations and each ``d``, a walk in ``m`` that
  finds the smallest ``m`` at which at least 90% of the instances succeed (starting from the
  previous ``d``'s answer: down while the rate stays at least 0.9, up while it is below).

Every cell uses the instances ``0 .. seeds - 1`` of
:func:`sxor.xor.kparity_descent.kparity_instances`. ``SXOR_KPARITY_SEEDS`` multiplies the number of
instances (for a GPU). :func:`smallest_m`, :func:`slope_uncertainty` read the scan back.
"""

from __future__ import annotations

import math
import os

import numpy as np
import torch

from ..xor.kparity_descent import classify_failures, kparity_descent_rule, kparity_instances
from . import register, size_config

#: The rule and constant of the scan, chosen from the comparison (see the section).
SCAN_RULE, SCAN_C = "relative", 0.05
RULE_CONSTANTS = {
    "fixed": [0.03, 0.1, 0.3],
    "normalised": [0.3, 1.0, 3.0],
    "decaying": [1.0, 3.0, 10.0],
    "relative": [0.017, 0.05, 0.15],
}
TARGET_RATE = 0.9
KPARITY_SIZES = {
    "ci": {"seeds": 40, "steps": 400, "ds": [16], "rules_d": [16], "rules_m": 6, "m_max": 24},
    "full": {
        "seeds": 40,
        "steps": 400,
        "ds": [16, 64, 256, 1024, 4096],
        "rules_d": [16, 256],
        "rules_m": 6,
        "m_max": 24,
    },
}


def _cell(k, scheme, d, m, rule, c, seeds, steps, device) -> dict:
    V, thetas0, support = kparity_instances(seeds, d, m, k, scheme, device=device)
    run = kparity_descent_rule(V, thetas0, support, rule, c, steps)
    won = run.first_success >= 0
    return {
        "k": k,
        "scheme": scheme,
        "d": d,
        "m": m,
        "rule": rule,
        "c": c,
        "seeds": seeds,
        "successes": int(won.sum()),
        "first_success": run.first_success.tolist(),
        "runs_with_rises": int((run.rises > 0).sum()),
        "failures": classify_failures(run.weights.cpu(), support.cpu(), ~won),
    }


def _scan(k, scheme, cfg, seeds, device, log) -> list[dict]:
    out, m = [], k + 1
    for d in cfg["ds"]:
        tried: dict[int, bool] = {}
        while cfg["m_max"] >= m >= 2 and m not in tried:
            rec = _cell(k, scheme, d, m, SCAN_RULE, SCAN_C, seeds, cfg["steps"], device)
            rec["part"] = "scan"
            out.append(rec)
            tried[m] = rec["successes"] >= TARGET_RATE * seeds
            log(f"k={k} {scheme} d={d} m={m}: {rec['successes']}/{seeds}")
            m = m - 1 if tried[m] else m + 1
        passed = [mm for mm, ok in tried.items() if ok]
        m = min(passed) if passed else cfg["m_max"]
    return out


@register(
    "kparity-scale",
    "k heads on k-sparse parity at d up to 2^12: step-size rules and the smallest m",
    plot=lambda r: plot_scale(r),  # noqa: PLW0108 (plot_scale is defined below)
)
def run_kparity_scale(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    cfg = size_config(size, KPARITY_SIZES)
    seeds = cfg["seeds"] * int(os.environ.get("SXOR_KPARITY_SEEDS", "1"))
    log = print if os.environ.get("SXOR_KPARITY_LOG") else (lambda _msg: None)
    records = []
    for d in cfg["rules_d"]:
        for rule, cs in RULE_CONSTANTS.items():
            for c in cs:
                rec = _cell(3, "star", d, cfg["rules_m"], rule, c, seeds, cfg["steps"], device)
                rec["part"] = "rules"
                records.append(rec)
                log(f"rules d={d} {rule} c={c}: {rec['successes']}/{seeds}")
    for k in (3, 2):
        for scheme in ("star", "random"):
            records.extend(_scan(k, scheme, cfg, seeds, device, log))
    params = {"seeds": seeds, "steps": cfg["steps"], "ds": cfg["ds"], "rules_d": cfg["rules_d"]}
    params |= {"rules_m": cfg["rules_m"], "m_max": cfg["m_max"], "target_rate": TARGET_RATE}
    params |= {"scan_rule": SCAN_RULE, "scan_c": SCAN_C, "rule_constants": RULE_CONSTANTS}
    return params, records


def smallest_m(records: list[dict], k: int, scheme: str, d: int, outcomes=None) -> int | None:
    """The smallest scanned ``m`` at ``(k, scheme, d)`` that passes (rate at least 0.9) with every
    larger scanned ``m`` passing too; ``None`` if none passes. ``outcomes`` (a dict from the
    record index to a success count) replaces the recorded counts, for the bootstrap."""
    cells = [
        (r["m"], (outcomes or {}).get(i, r["successes"]) >= TARGET_RATE * r["seeds"])
        for i, r in enumerate(records)
        if r["part"] == "scan" and r["k"] == k and r["scheme"] == scheme and r["d"] == d
    ]
    best = None
    for m, ok in sorted(cells, reverse=True):
        if not ok:
            break
        best = m
    return best


def _fit(xs, ys) -> tuple[float, float]:
    """Least-squares slope and its standard error (``nan`` with fewer than three points)."""
    x, y = np.asarray(xs, float), np.asarray(ys, float)
    coef = np.polyfit(x, y, 1)
    dof = len(x) - 2
    if dof < 1:
        return float(coef[0]), math.nan
    resid = y - np.polyval(coef, x)
    return float(coef[0]), float(math.sqrt((resid @ resid) / dof / ((x - x.mean()) ** 2).sum()))


def slope_uncertainty(
    records: list[dict], k: int, scheme: str, reps: int = 1000, seed: int = 0
) -> dict:
    """The least-squares slope of the smallest ``m`` against ``ln d`` and three statements of its
    uncertainty: ``se`` (the least-squares standard error), ``shift`` (the smallest and largest
    slope when one ``d``'s smallest ``m`` moves by ``+-1``), and a bootstrap: the instances of one
    ``d`` are resampled once, jointly for all its scanned ``m`` (they share their seeds), and the
    smallest ``m`` is recomputed; a resample in which no scanned ``m`` passes counts as the largest
    scanned ``m`` plus one (censored above). ``boot`` is the 95% percentile interval and
    ``boot_at_point`` the fraction of resamples whose slope equals the point slope."""
    cells: dict[int, list[int]] = {}
    for i, r in enumerate(records):
        if r["part"] == "scan" and r["k"] == k and r["scheme"] == scheme:
            cells.setdefault(r["d"], []).append(i)
    ds = sorted(cells)
    xs = [math.log(d) for d in ds]

    def m_of(d, outcomes=None) -> int:
        best = smallest_m(records, k, scheme, d, outcomes)
        return best if best is not None else max(records[i]["m"] for i in cells[d]) + 1

    ys = [m_of(d) for d in ds]
    slope, se = _fit(xs, ys)
    shifted = [
        _fit(xs, [y + (j == i) * s for j, y in enumerate(ys)])[0]
        for i in range(len(ys))
        for s in (-1, 1)
    ]
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(reps):
        outcomes = {}
        for d in ds:
            pick = rng.integers(records[cells[d][0]]["seeds"], size=records[cells[d][0]]["seeds"])
            for i in cells[d]:
                outcomes[i] = int((np.array(records[i]["first_success"])[pick] >= 0).sum())
        boots.append(_fit(xs, [m_of(d, outcomes) for d in ds])[0])
    lo, hi = np.percentile(boots, [2.5, 97.5])
    at_point = float(np.mean(np.isclose(boots, slope, rtol=0, atol=1e-12)))
    return {
        "slope": slope,
        "se": se,
        "dof": len(ds) - 2,
        "shift": (min(shifted), max(shifted)),
        "boot": (float(lo), float(hi)),
        "boot_at_point": at_point,
    }


def plot_scale(results: dict):
    """Smallest ``m`` against ``d`` (top) and median steps to success at that ``m`` (bottom)."""
    import matplotlib.pyplot as plt

    recs = results["records"]
    fig, axes = plt.subplots(2, 1, figsize=(7.0, 7.0), sharex=True)
    ds = results["params"]["ds"]
    for i, (k, scheme) in enumerate([(3, "star"), (3, "random"), (2, "star"), (2, "random")]):
        ms = [smallest_m(recs, k, scheme, d) for d in ds]
        pts = [(d, m) for d, m in zip(ds, ms) if m is not None]
        if not pts:
            continue
        style = {"color": f"C{i}", "marker": "os^v"[i], "label": f"k={k}, {scheme}"}
        axes[0].plot(*zip(*pts), **style)
        steps = []
        for d, m in pts:
            rec = next(
                r
                for r in recs
                if r["part"] == "scan"
                and (r["k"], r["scheme"], r["d"], r["m"]) == (k, scheme, d, m)
            )
            steps.append(float(np.median([t for t in rec["first_success"] if t >= 0])))
        axes[1].plot([d for d, _ in pts], steps, **style)
    for ax, label in zip(axes, ["smallest m (90% succeed)", "median steps to success"]):
        ax.set_xscale("log", base=2)
        ax.set_ylabel(label)
    axes[1].set_xlabel("d")
    axes[0].legend(fontsize=11)
    fig.tight_layout()
    return fig
