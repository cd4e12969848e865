"""Mini-batch SGD in the chapter "Finite samples" (re-exported by
:mod:`sxor.experiments.finite_samples`).

* ``finite-samples-sgd``: mini-batch SGD with a scan over the batch size and the step size (see
  :func:`run_sgd`).
* ``finite-samples-sgd-refine``: more instances at the scan's optimum and its neighbours (see
  :func:`run_sgd_refine`).

Same instances, embedding dimension and sample streams as ``finite-samples``
(:func:`sxor.experiments.finite_samples_n_star.embedding_dim`,
:func:`sxor.experiments.finite_samples_n_star.stream_key`).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..progress import progress
from ..xor.dynamics import first_success, minibatch_sgd
from ..xor.sweeps import random_instances
from . import register, size_config
from .finite_samples_n_star import embedding_dim, n_star, stream_key
from .finite_samples_stats import _bootstrap_power_law, censored_quantile, fit_power_law

#: Step sizes of the SGD scan, as natural steps ``lambda = eta / (d^2 M(1)^2)`` (exact decimals): 1/256 ... 1/8.
SGD_LAMBDAS = (0.00390625, 0.0078125, 0.015625, 0.03125, 0.0625, 0.125)

#: Batch sizes of the SGD scan per unit step, ``B / (lambda d)``: the noise level of a step.
SGD_BATCH_PER_STEP = (1, 2, 4, 8, 16, 32)

#: Fraction of instances that must have met the success criterion.
SGD_TARGET = 0.8

#: The step rule of every SGD run (see :func:`sgd_steps`): at most ``max_steps`` steps, at least
#: ``min_steps``, otherwise ``natural_time / lambda``, and at most ``max_samples_over_d * d`` samples.
SGD_STEP_RULE = {"max_steps": 512, "min_steps": 64, "natural_time": 4, "max_samples_over_d": 128}

SGD_SIZES = {
    "ci": {
        "d": [16, 32],
        "instances": 16,
        "lambdas": [0.015625, 0.03125],
        "batch_per_step": [2, 8],
    },
    "full": {
        "d": [16, 32, 64, 128],
        "instances": 40,
        "lambdas": list(SGD_LAMBDAS),
        "batch_per_step": list(SGD_BATCH_PER_STEP),
    },
}

#: Stage 2 (``finite-samples-sgd-refine``): 200 instances (the first 40 are the scan's) at the
#: scan's optimum ``(lambda, c)`` at each ``d`` and its neighbours on both sides of each axis.
SGD_REFINE_SIZES = {
    "ci": {"d": [16, 32], "instances": 16, "configs": {16: [(0.03125, 2)], 32: [(0.0078125, 2)]}},
    # from the committed scan: its optimum (lambda*, c*) and (lambda*/2, c*), (2 lambda*, c*), and the
    # neighbouring c at lambda* (where the optimum's batch is 1 there is no smaller batch); at d = 64
    # and 128, where these points put the optimum at lambda*/2, also lambda*/4
    "full": {
        "d": [16, 32, 64, 128],
        "instances": 200,
        "configs": {
            16: [(0.015625, 2), (0.03125, 2), (0.03125, 4), (0.0625, 2)],
            32: [(0.00390625, 2), (0.0078125, 2), (0.0078125, 8), (0.015625, 2)],
            64: [
                (0.001953125, 8),
                (0.00390625, 8),
                (0.0078125, 4),
                (0.0078125, 8),
                (0.0078125, 16),
                (0.015625, 8),
            ],
            128: [
                (0.00390625, 16),
                (0.0078125, 16),
                (0.015625, 8),
                (0.015625, 16),
                (0.015625, 32),
                (0.03125, 16),
            ],
        },
    },
}


def sgd_steps(lam: float, batch: int, d: int, rule: dict | None = None) -> int:
    """Steps of an SGD run (``batch >= 1``) or of the population control (``batch = 0``) at the
    natural step ``lam``: ``min(max_steps, max(min_steps, ceil(natural_time / lam)))``, and for SGD
    at most ``max_samples_over_d * d // batch`` (a budget of samples per run)."""
    rule = SGD_STEP_RULE if rule is None else rule
    if not lam > 0 or int(batch) != batch or batch < 0:
        raise ValueError(f"need lam > 0 and an integer batch >= 0, got lam={lam}, batch={batch}")
    steps = min(
        rule["max_steps"], max(rule["min_steps"], math.ceil(rule["natural_time"] / lam - 1e-9))
    )
    return steps if batch == 0 else min(steps, rule["max_samples_over_d"] * d // batch)


def sgd_batch(lam: float, c: float, d: int) -> int:
    """The batch ``B = max(1, round(c lam d))`` of noise level ``c`` at the natural step ``lam``."""
    return max(1, round(c * lam * d))


def sgd_configs(
    d: int, lambdas=SGD_LAMBDAS, batch_per_step=SGD_BATCH_PER_STEP, rule: dict | None = None
) -> list[tuple[float, int, int]]:
    """The scanned ``(lambda, batch, steps)`` at ``d``: every ``lambda`` with every batch
    :func:`sgd_batch`, for :func:`sgd_steps` steps; a batch that two ``c`` round to is run once."""
    out = []
    for lam in lambdas:
        for c in batch_per_step:
            batch = sgd_batch(lam, c, d)
            config = (lam, batch, sgd_steps(lam, batch, d, rule))
            if config not in out:  # small c lambda d: several c round to the same batch
                out.append(config)
    return out


def _sgd_records(d: int, instances: int, configs, device) -> list[dict]:
    """Population control (at every ``lambda`` of ``configs``) and SGD runs at ``d``, one record each."""
    from ..xor.analysis import sphere_mgf
    from ..xor.dynamics import population_descent

    m = embedding_dim(d)
    inst = random_instances(instances, d, m, device=device)
    keys = torch.tensor([stream_key(d, k) for k in range(instances)], device=device)
    M = float(sphere_mgf(1.0, m))
    records = []
    for lam in sorted({lam for lam, _, _ in configs}):
        steps = sgd_steps(lam, 0, d)
        pop = population_descent(
            inst.V, inst.theta0, -inst.theta0, inst.support, lam * d * d * M * M, steps
        )
        records.append(
            {
                "d": d,
                "m": m,
                "config": f"population, lambda={lam:g}",
                "lambda": lam,
                "batch": 0,
                "steps": steps,
                "first_success": first_success(pop.success).tolist(),
            }
        )
    for lam, batch, steps in progress(configs, desc=f"d={d}"):
        run = minibatch_sgd(
            inst.V, inst.theta0, inst.support, lam * d * d * M * M, batch, steps, keys=keys
        )
        records.append(
            {
                "d": d,
                "m": m,
                "config": f"SGD, lambda={lam:g}, B={batch}",
                "lambda": lam,
                "batch": batch,
                "steps": steps,
                "first_success": first_success(run.success).tolist(),
            }
        )
    return records


@register(
    "finite-samples-sgd",
    "mini-batch SGD: scan of batch size and step size, samples to 80% success",
    plot=lambda r: plot_sgd(r),  # noqa: PLW0108 (plot_sgd is defined below)
    compare_prefix=("first_success",),
)
def run_sgd(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    """At each ``d`` (``m = round(2 log2 d) + 4``) and each natural step ``lambda``
    (``eta = lambda d^2 M(1)^2``): population gradient descent (the control, ``batch = 0``) and
    mini-batch SGD for every batch of :func:`sgd_configs`, on the instances' sample streams; per
    instance, the first step that meets the success criterion (``-1``: never within the run)."""
    cfg = size_config(size, SGD_SIZES)
    records = []
    for d in cfg["d"]:
        records += _sgd_records(
            d, cfg["instances"], sgd_configs(d, cfg["lambdas"], cfg["batch_per_step"]), device
        )
    params = {
        "d": cfg["d"],
        "instances": cfg["instances"],
        **SGD_STEP_RULE,
        "m_rule": "round(2 log2 d) + 4",
        "lambdas": list(cfg["lambdas"]),
        "batch_per_step": list(cfg["batch_per_step"]),
        "target": SGD_TARGET,
    }
    return params, records


def refine_configs(d: int, stencil) -> list[tuple[float, int, int]]:
    """The ``(lambda, batch, steps)`` of the points ``(lambda, c)`` of ``stencil`` at ``d`` (duplicates once)."""
    out = []
    for lam, c in stencil:
        batch = sgd_batch(lam, c, d)
        if (config := (lam, batch, sgd_steps(lam, batch, d))) not in out:
            out.append(config)
    return out


@register(
    "finite-samples-sgd-refine",
    "mini-batch SGD, 200 instances at the scan's optimum and its neighbours",
    plot=lambda r: plot_sgd(r),  # noqa: PLW0108 (plot_sgd is defined below)
    compare_prefix=("first_success",),
)
def run_sgd_refine(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    """Stage 2 of the SGD measurement: the runs of :func:`run_sgd` (same instances, streams and step
    rule, more instances) at the points ``(lambda, c)`` of :data:`SGD_REFINE_SIZES` at each ``d``."""
    cfg = size_config(size, SGD_REFINE_SIZES)
    records = []
    for d in cfg["d"]:
        records += _sgd_records(d, cfg["instances"], refine_configs(d, cfg["configs"][d]), device)
    params = {
        "d": cfg["d"],
        "instances": cfg["instances"],
        **SGD_STEP_RULE,
        "m_rule": "round(2 log2 d) + 4",
        "configs": {str(d): [list(p) for p in cfg["configs"][d]] for d in cfg["d"]},
        "target": SGD_TARGET,
    }
    return params, records


def steps_to_rate(first: np.ndarray, target: float = SGD_TARGET) -> float:
    """The smallest step ``t`` by which a fraction ``>= target`` of the instances has met the
    criterion (``first [instances]``, ``-1``: never): a censored quantile; ``inf`` if never."""
    first = np.asarray(first, dtype=float)
    return censored_quantile(np.where(first < 0, math.inf, first), target)


def sgd_best(
    records: list[dict], d: int, index: np.ndarray | None = None, target: float = SGD_TARGET
) -> dict:
    """At ``d``: for every SGD configuration the samples ``N = batch x t`` by which ``target`` of the
    instances (optionally the resample ``index``) have succeeded, and the smallest of them
    (``inf`` when no configuration gets there within its steps)."""
    samples: dict[str, float] = {}
    for r in records:
        if r["d"] != d or r["batch"] == 0:
            continue
        first = np.asarray(r["first_success"])
        first = first if index is None else first[index]
        samples[r["config"]] = r["batch"] * steps_to_rate(first, target)
    if not samples:
        raise ValueError(f"no SGD record at d={d}")
    best = min(samples, key=samples.__getitem__)
    return {"samples": samples, "best": best, "n": samples[best]}


def sgd_optimum_position(records: list[dict], d: int, target: float = SGD_TARGET) -> dict:
    """Where the best SGD configuration at ``d`` (:func:`sgd_best`) lies in the scan.

    Returns the best record's ``lambda``, ``batch``, ``c = batch / (lambda d)``, ``steps`` (allowed)
    and ``steps_used`` (``N / batch``); ``lambdas`` (every scanned ``lambda`` at ``d``) and
    ``batches`` (every batch scanned at the best ``lambda``); ``lambda_edge`` / ``batch_edge``:
    whether the best is the smallest or largest of them (a batch of 1 is an edge no scan can
    move); and ``cut_short``: the configurations that never reach ``target`` yet read fewer than
    ``N`` samples (``batch x steps < N``), for which the run's cap, not the data, may have decided
    (none: the caps cannot have hidden a smaller ``N``).
    """
    best = sgd_best(records, d, target=target)
    sgd = [r for r in records if r["d"] == d and r["batch"] > 0]
    rec = next(r for r in sgd if r["config"] == best["best"])
    lams = sorted({r["lambda"] for r in sgd})
    batches = sorted({r["batch"] for r in sgd if r["lambda"] == rec["lambda"]})
    cut = [
        r["config"]
        for r in sgd
        if not math.isfinite(best["samples"][r["config"]]) and r["batch"] * r["steps"] < best["n"]
    ]
    return {
        "d": d,
        "n": best["n"],
        "config": best["best"],
        "lambda": rec["lambda"],
        "batch": rec["batch"],
        "c": rec["batch"] / (rec["lambda"] * d),
        "steps": rec["steps"],
        "steps_used": best["n"] / rec["batch"],
        "lambdas": lams,
        "batches": batches,
        "lambda_edge": rec["lambda"] in (lams[0], lams[-1]),
        "batch_edge": rec["batch"] in (batches[0], batches[-1]),
        "cut_short": cut,
    }


def bootstrap_sgd(
    records: list[dict], num: int = 1000, seed: int = 0, target: float = SGD_TARGET
) -> dict:
    """Smallest samples-to-``target`` ``N(d)`` over the scanned configurations, its exponent in
    ``d``, and percentile bootstrap intervals (instances resampled, the same resample for every
    configuration at a ``d``: the minimum over configurations is recomputed on each resample)."""
    ds = sorted({r["d"] for r in records})
    point = [sgd_best(records, d, target=target)["n"] for d in ds]
    if not np.isfinite(point).all():
        raise ValueError(f"no configuration reaches {target:.0%} at some d: {dict(zip(ds, point))}")
    p, c = fit_power_law(ds, point)
    sizes = {d: len(next(r for r in records if r["d"] == d)["first_success"]) for d in ds}
    boot_n, boot_p, undefined = _bootstrap_power_law(
        ds, sizes, lambda d, idx: sgd_best(records, d, idx, target)["n"], num, seed
    )
    return {
        "d": ds,
        "n": point,
        "exponent": p,
        "constant": c,
        "n_low": np.percentile(boot_n, 2.5, axis=0, method="inverted_cdf").tolist(),
        "n_high": np.percentile(boot_n, 97.5, axis=0, method="inverted_cdf").tolist(),
        "exponent_low": float(np.percentile(boot_p, 2.5)),
        "exponent_high": float(np.percentile(boot_p, 97.5)),
        "resamples": num,
        "undefined": undefined,
    }


def paired_exponent_difference(
    one_step: list[dict],
    sgd: list[dict],
    cap: dict[int, float],
    num: int = 1000,
    seed: int = 0,
    target: float = SGD_TARGET,
) -> dict:
    """The exponent of ``N(d)`` (SGD, :func:`sgd_best`) minus that of the median one-step ``n*``
    over the ``d`` of the SGD records, with a *paired* percentile bootstrap of the difference.

    Instance ``k`` at ``d`` is the same draw ``(V, theta_0, support)`` in both experiments, so each
    resample draws one set of instance indices per ``d`` and uses it on both sides: the one-step
    median is over the resampled instances whose population step succeeds, of ``min(n*, cap[d])``
    (as in :func:`~sxor.experiments.finite_samples_stats.bootstrap_exponent` with ``cap``); ``N(d)`` is re-minimised over the
    configurations. Returns ``d``, ``difference``, ``low``, ``high`` (2.5% and 97.5%),
    ``resamples`` and ``undefined`` (resamples where some statistic is infinite)."""
    ds = sorted({r["d"] for r in sgd})
    per: dict[int, np.ndarray] = {}
    for d in ds:
        recs = sorted((r for r in one_step if r["d"] == d), key=lambda r: r["instance"])
        size = len(next(r for r in sgd if r["d"] == d)["first_success"])
        if [r["instance"] for r in recs] != list(range(size)):
            raise ValueError(f"at d={d} the one-step records must be instances 0..{size - 1}")
        v = [min(n_star(r), cap[d]) if r["population_mode"] == 0 else math.nan for r in recs]
        per[d] = np.asarray(v)

    def difference(index: dict[int, np.ndarray]) -> float:
        one, many = [], []
        for d in ds:
            v = per[d][index[d]]
            one.append(censored_quantile(v[~np.isnan(v)], 0.5))
            many.append(sgd_best(sgd, d, index[d], target)["n"])
        if not (np.isfinite(one).all() and np.isfinite(many).all()):
            return math.nan
        return fit_power_law(ds, many)[0] - fit_power_law(ds, one)[0]

    point = difference({d: np.arange(len(per[d])) for d in ds})
    rng = np.random.default_rng(seed)
    boot = [
        difference({d: rng.integers(0, len(per[d]), len(per[d])) for d in ds}) for _ in range(num)
    ]
    ok = [b for b in boot if math.isfinite(b)]
    return {
        "d": ds,
        "difference": point,
        "low": float(np.percentile(ok, 2.5)),
        "high": float(np.percentile(ok, 97.5)),
        "resamples": num,
        "undefined": num - len(ok),
    }


def plot_sgd(results: dict, fit: dict | None = None):
    """Smallest samples for 80% success against ``d`` (bootstrap band), with ``d`` and ``d^2`` guides."""
    import matplotlib.pyplot as plt

    fit = bootstrap_sgd(results["records"], num=200) if fit is None else fit
    ds = np.asarray(fit["d"], dtype=float)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    high = np.where(np.isfinite(fit["n_high"]), fit["n_high"], np.nan)
    ax.fill_between(ds, fit["n_low"], high, color="C0", alpha=0.2, lw=0, label="95% bootstrap band")
    ax.plot(
        ds,
        fit["n"],
        "o-",
        color="C0",
        label=f"SGD, best batch and step: $\\propto d^{{{fit['exponent']:.2f}}}$",
    )
    ax.plot(ds, ds**2, "k--", lw=1, label="$d^2$")
    ax.plot(ds, 16 * ds, "k:", lw=1, label="$16d$")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("input dimension $d$")
    ax.set_ylabel("samples for 80% success")
    ax.legend(
        loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=10
    )  # below the axes
    fig.tight_layout()
    return fig
