"""Sweeps of the chapter "Finite samples".

* ``finite-samples``: one *empirical* gradient step on ``n`` fresh samples from the
  antisymmetric init, judged by the *population* success criterion after the step; success
  rate against ``n`` for several ``d``. The step size is the large-step limit ``eta = 1e12``
  (success no longer depends on ``eta`` there; the chapter shows it).
* ``finite-samples-sgd``: mini-batch SGD with fresh batches of ``4d`` samples and
  ``eta = 0.3 d^2``; the number of samples seen until the first success.

Instance ``k`` is :func:`sxor.xor.sweeps.random_instances` instance ``seed + k``; the samples of a
whole ``(d, n)`` cell come from one generator seeded with ``SAMPLE_SEED + n``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from ..progress import progress

from ..xor.dynamics import empirical_grad, first_success, minibatch_sgd, sample_batch
from ..xor.metrics import success
from ..xor.model import attention_kind, scores
from ..xor.population import loss_from_weights, one_step
from ..xor.sweeps import random_instances
from . import register, size_config

#: The step size ``eta = 10^12`` of the one-step experiment, i.e. the ``eta -> infinity`` limit of the step.
ONE_STEP_ETA = 1e12
#: Seed offset of the sample generators (distinct from the instance seeds).
SAMPLE_SEED = 10**6
#: Success rate that defines ``n_90``.
TARGET_RATE = 0.9

SIZES = {
    "ci": {"d": [8, 16, 24], "m": 24, "seeds": 24, "max_n_over_d2": 8},
    "full": {"d": [8, 12, 16, 24, 32, 48, 64], "m": 24, "seeds": 100, "max_n_over_d2": 32},
}
SGD_SIZES = {
    "ci": {"d": [16, 32], "m": 24, "seeds": 30, "steps": 100},
    "full": {"d": [16, 32, 64, 96], "m": 24, "seeds": 60, "steps": 150},
}


def streamed_empirical_step(
    n: int,
    V: torch.Tensor,
    theta0: torch.Tensor,
    support: torch.Tensor,
    eta: float,
    *,
    generator: torch.Generator,
    kind: str = "softmax",
    max_elements: int = 2**24,
) -> torch.Tensor:
    """Success (population criterion) after one empirical step on ``n`` fresh samples per instance.

    The empirical gradient is a mean over samples, so it is accumulated over chunks of samples
    (``chunk * S * d <= max_elements``) with weights ``chunk / n``: memory stays bounded for any ``n``.
    """
    S, d, _ = V.shape
    chunk = max(1, max_elements // (S * d))
    grad = torch.zeros_like(theta0)
    grad_tilde = torch.zeros_like(theta0)
    for start in range(0, n, chunk):
        size = min(chunk, n - start)
        x, y = sample_batch(size, support, d, generator=generator, dtype=V.dtype, device=V.device)
        g, gt = empirical_grad(x, y, V, theta0, -theta0, kind)
        grad += g * (size / n)
        grad_tilde += gt * (size / n)
    phi = attention_kind(kind)
    att = phi.weights(scores(V, theta0 - eta * grad))
    att_tilde = phi.weights(scores(V, -theta0 - eta * grad_tilde))
    return success(loss_from_weights(att, att_tilde, support), att, att_tilde, support)


def n_grid(d: int, max_n: int) -> list[int]:
    """Sample sizes ``d/2 * 2^(k/2)`` (rounded), ``k = 0, 1, ...``, up to ``max_n``."""
    out, k = [], 0
    while (n := int(round(d / 2 * 2 ** (k / 2)))) <= max_n:
        if not out or n > out[-1]:
            out.append(n)
        k += 1
    return out


@register("finite-samples", "one empirical step on n fresh samples: success rate against n, several d", plot=lambda r: plot_finite_samples(r))
def run_finite_samples(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    cfg = size_config(size, SIZES)
    records = []
    for d in cfg["d"]:
        inst = random_instances(cfg["seeds"], d, cfg["m"], device=device)
        pop = one_step(inst.V, inst.theta0, inst.support, ONE_STEP_ETA)
        pop_ok = success(pop.loss, pop.attention, pop.attention_tilde, inst.support)
        for n in progress(n_grid(d, cfg["max_n_over_d2"] * d * d), desc=f"d={d}"):
            gen = torch.Generator(device=device).manual_seed(SAMPLE_SEED + n)
            ok = streamed_empirical_step(n, inst.V, inst.theta0, inst.support, ONE_STEP_ETA, generator=gen)
            records.append({"d": d, "n": n, "success": ok.int().tolist(), "population_success": pop_ok.int().tolist()})
            if conditional_rate(ok, pop_ok) >= 0.99:
                break
    return {"m": cfg["m"], "seeds": cfg["seeds"], "eta": ONE_STEP_ETA, "target_rate": TARGET_RATE}, records


def conditional_rate(ok: torch.Tensor, population_ok: torch.Tensor) -> float:
    """Success rate of the empirical step among the instances where the population step succeeds."""
    ok, population_ok = torch.as_tensor(ok).bool(), torch.as_tensor(population_ok).bool()
    if ok.shape != population_ok.shape:
        raise ValueError(f"ok and population_ok must have the same shape, got {tuple(ok.shape)} and {tuple(population_ok.shape)}")
    total = int(population_ok.sum())
    return float((ok & population_ok).sum()) / total if total else math.nan


def n_at_rate(ns: np.ndarray, rates: np.ndarray, target: float = TARGET_RATE) -> float:
    """Smallest ``n`` where the success rate reaches ``target``, interpolated linearly in
    ``log n`` between the last grid point below and the first at or above; ``nan`` if never."""
    ns, rates = np.asarray(ns, dtype=float), np.asarray(rates, dtype=float)
    if ns.shape != rates.shape or ns.ndim != 1:
        raise ValueError("ns and rates must be 1-d arrays of the same length")
    above = np.nonzero(rates >= target)[0]
    if len(above) == 0:
        return math.nan
    j = above[0]
    if j == 0:
        return float(ns[0])
    t = (target - rates[j - 1]) / (rates[j] - rates[j - 1])
    return float(np.exp(np.log(ns[j - 1]) + t * (np.log(ns[j]) - np.log(ns[j - 1]))))


def n90_per_d(records: list[dict], seed_index: np.ndarray | None = None, target: float = TARGET_RATE) -> dict[int, float]:
    """``n_90(d)`` (the ``n`` reaching success rate ``target``) from the records, optionally on a
    resample ``seed_index`` of the seeds."""
    out = {}
    for d in sorted({r["d"] for r in records}):
        rows = sorted((r for r in records if r["d"] == d), key=lambda r: r["n"])
        ok = np.asarray([r["success"] for r in rows], dtype=bool)  # [n values, seeds]
        pop = np.asarray(rows[0]["population_success"], dtype=bool)
        if seed_index is not None:
            ok, pop = ok[:, seed_index], pop[seed_index]
        rates = (ok & pop).sum(-1) / pop.sum() if pop.any() else np.full(len(rows), math.nan)
        out[d] = n_at_rate(np.array([r["n"] for r in rows]), rates, target)
    return out


def fit_power_law(ds, ns) -> tuple[float, float]:
    """Least-squares fit ``log n = log C + p log d``; returns ``(p, C)`` (``nan`` entries dropped)."""
    ds, ns = np.asarray(ds, dtype=float), np.asarray(ns, dtype=float)
    keep = np.isfinite(ns)
    if keep.sum() < 2:
        raise ValueError("need at least two finite points to fit a power law")
    p, logc = np.polyfit(np.log(ds[keep]), np.log(ns[keep]), 1)
    return float(p), float(np.exp(logc))


def bootstrap_fit(records: list[dict], num: int = 200, seed: int = 0, target: float = TARGET_RATE) -> dict:
    """Point estimate and bootstrap (over seeds, ``num`` resamples) of ``n_90(d)`` (or the ``n``
    for success rate ``target``) and of the fitted exponent: 2.5% and 97.5% percentiles."""
    seeds = len(records[0]["success"])
    rng = np.random.default_rng(seed)
    point = n90_per_d(records, target=target)
    ds = np.array(sorted(point))
    p, c = fit_power_law(ds, [point[d] for d in ds])
    boot_n, boot_p = [], []
    for _ in range(num):
        idx = rng.integers(0, seeds, seeds)
        n90 = n90_per_d(records, idx, target)
        boot_n.append([n90[d] for d in ds])
        try:
            boot_p.append(fit_power_law(ds, boot_n[-1])[0])
        except ValueError:
            continue
    boot_n = np.array(boot_n)
    return {
        "d": ds.tolist(), "n90": [point[d] for d in ds], "exponent": p, "constant": c,
        "n90_low": np.nanpercentile(boot_n, 2.5, axis=0).tolist(),
        "n90_high": np.nanpercentile(boot_n, 97.5, axis=0).tolist(),
        "exponent_low": float(np.percentile(boot_p, 2.5)), "exponent_high": float(np.percentile(boot_p, 97.5)),
    }


def plot_finite_samples(results: dict, fit: dict | None = None, target: float | None = None):
    """Left: success rate against ``n / d^2``. Right: ``n_target`` (default: the results' target
    rate, 0.9) against ``d`` with the fit of :func:`bootstrap_fit` (computed unless given), its
    bootstrap band, ``O(d)`` and the ``d^4 log^2 d`` shape (both through the smallest-``d`` point)."""
    import matplotlib.pyplot as plt

    records = results["records"]
    target = results["params"]["target_rate"] if target is None else target
    fit = bootstrap_fit(records, target=target) if fit is None else fit
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 4.5))
    for i, d in enumerate(fit["d"]):
        rows = sorted((r for r in records if r["d"] == d), key=lambda r: r["n"])
        rates = [conditional_rate(torch.as_tensor(r["success"]), torch.as_tensor(r["population_success"])) for r in rows]
        ax0.plot([r["n"] / d**2 for r in rows], rates, marker="o", ms=3, color=f"C{i}", label=f"d={d}")
    ax0.axhline(target, color="k", lw=0.8, ls="--")
    ax0.set_xscale("log")
    ax0.set_xlabel(r"samples per $d^2$, $n/d^2$")
    ax0.set_ylabel("success rate (given population step succeeds)")
    ax0.set_title("one empirical step, large-step limit")
    ax0.legend()
    ds, n90 = np.array(fit["d"], dtype=float), np.array(fit["n90"])
    ax1.fill_between(ds, fit["n90_low"], fit["n90_high"], color="C0", alpha=0.25, label="95% bootstrap band")
    ax1.plot(ds, n90, "o", color="C0", label=f"measured $n_{{{round(100 * target)}}}$")
    grid = np.geomspace(ds[0], ds[-1], 50)
    ax1.plot(grid, fit["constant"] * grid ** fit["exponent"], color="C0",
             label=f"fit $\\propto d^{{{fit['exponent']:.2f}}}$ [{fit['exponent_low']:.2f}, {fit['exponent_high']:.2f}]")
    ax1.plot(grid, n90[0] * grid / ds[0], "--", color="C1", label=r"$O(d)$ (through first point)")
    shape = grid**4 * np.log(grid) ** 2
    ax1.plot(grid, n90[0] * shape / shape[0], ":", color="C3", label=r"$d^4\log^2 d$ shape (Cor. 3, unverified)")
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_xlabel("d")
    ax1.set_ylabel(f"$n_{{{round(100 * target)}}}$")
    ax1.set_title(f"samples for {target:.0%} success, m={results['params']['m']}")
    ax1.legend(fontsize=8)
    fig.tight_layout()
    return fig


@register("finite-samples-sgd", "mini-batch SGD (batch 4d, eta 0.3 d^2): samples seen until success", plot=lambda r: plot_sgd(r))
def run_sgd(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    cfg = size_config(size, SGD_SIZES)
    records = []
    for d in cfg["d"]:
        inst = random_instances(cfg["seeds"], d, cfg["m"], device=device)
        gen = torch.Generator(device=device).manual_seed(SAMPLE_SEED + d)
        batch = 4 * d
        run = minibatch_sgd(inst.V, inst.theta0, inst.support, 0.3 * d**2, batch, cfg["steps"], generator=gen)
        first = first_success(run.success)
        records.append({"d": d, "batch_size": batch, "eta": 0.3 * d**2, "steps": cfg["steps"], "first_success": first.tolist()})
    return {"m": cfg["m"], "seeds": cfg["seeds"]}, records


def sgd_samples(record: dict) -> np.ndarray:
    """Samples seen until the first success, ``steps * batch_size``, for the successful seeds."""
    first = np.asarray(record["first_success"])
    return first[first >= 0] * record["batch_size"]


def plot_sgd(results: dict):
    """Median (and quartiles) of the samples SGD sees before success, against ``d``."""
    import matplotlib.pyplot as plt

    recs = sorted(results["records"], key=lambda r: r["d"])
    ds = np.array([r["d"] for r in recs], dtype=float)
    q = np.array([np.percentile(sgd_samples(r), [25, 50, 75]) for r in recs])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.fill_between(ds, q[:, 0], q[:, 2], alpha=0.25, label="quartiles")
    ax.plot(ds, q[:, 1], "o-", label="median samples to success")
    ax.plot(ds, q[0, 1] * ds / ds[0], "--", label=r"$O(d)$ (through first point)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("d")
    ax.set_ylabel("samples seen (steps x batch)")
    ax.set_title(f"mini-batch SGD, batch 4d, eta = 0.3 d^2, m={results['params']['m']}")
    ax.legend()
    fig.tight_layout()
    return fig
