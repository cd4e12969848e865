"""Sweeps of the chapter "Finite samples".

* ``finite-samples``: one *empirical* gradient step from the antisymmetric init in the large-step
  limit (``eta = 1e12``), on the first ``n`` samples of a stream of samples that belongs to the
  instance (:mod:`sxor.xor.streams`), for ``n`` on a grid of ratio ``2^(1/4)``; the outcome after
  the step is judged by the *population* criterion and classified by
  :func:`sxor.xor.metrics.failure_modes`. One record per ``(d, instance)``. From the records:
  the per-instance sample complexity ``n*`` (:func:`n_star`), its quantiles with censoring
  (:func:`censored_quantile`) and their exponent in ``d`` with a bootstrap over instances
  (:func:`bootstrap_exponent`).
* ``finite-samples-sgd``: mini-batch SGD with a scan over the batch size and the step size (see
  :func:`run_sgd`).

The embedding dimension grows with ``d``: ``m = round(2 log2 d) + 4`` (:func:`embedding_dim`).
Instance ``k`` at dimension ``d`` is :func:`sxor.xor.sweeps.random_instances` instance ``k`` and
its sample stream has key ``d * 2^20 + k``.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..progress import progress
from ..xor.dynamics import first_success, minibatch_sgd
from ..xor.metrics import FAILURE_MODES, failure_modes
from ..xor.model import attention_kind, scores
from ..xor.population import loss_from_weights, one_step
from ..xor.streams import stream_empirical_grads
from ..xor.sweeps import random_instances
from . import register, size_config

#: The step size ``eta = 10^12`` of the one-step experiment: the ``eta -> infinity`` limit of the step.
ONE_STEP_ETA = 1e12
#: Ratio of consecutive sample sizes of the one-step grid.
GRID_RATIO = 2**0.25
#: Samples per block of the streamed gradient (fixed, so that every run sums in the same order).
BLOCK = 2048

SIZES = {
    "ci": {"d": [16, 32, 64], "instances": 32, "max_n_over_d2": 16},
    "full": {"d": [16, 32, 64, 128, 256], "instances": 200, "max_n_over_d2": 16},
}


def embedding_dim(d: int) -> int:
    """``m = round(2 log2 d) + 4``: grows like ``log d`` and stays below ``d`` for every ``d >= 12``."""
    if int(d) != d or d < 12:
        raise ValueError(f"d must be an integer >= 12 (so that m < d), got d={d}")
    return round(2 * math.log2(d)) + 4


def stream_key(d: int, instance: int) -> int:
    """The key of the sample stream of instance ``instance`` at dimension ``d``: ``d * 2^20 + instance``."""
    if not (0 <= instance < 2**20 and 1 <= d < 2**12):
        raise ValueError(
            f"need 0 <= instance < 2^20 and 1 <= d < 2^12, got d={d}, instance={instance}"
        )
    return d * 2**20 + instance


def n_grid(d: int, max_n: int) -> list[int]:
    """Sample sizes ``round(d * 2^(k/4))``, ``k = 0, 1, ...`` (duplicates dropped), up to ``max_n``."""
    if int(d) != d or d < 1 or max_n < d:
        raise ValueError(f"need an integer d >= 1 and max_n >= d, got d={d}, max_n={max_n}")
    out, k = [], 0
    while (n := round(d * GRID_RATIO**k)) <= max_n:
        if not out or n > out[-1]:
            out.append(n)
        k += 1
    return out


def one_step_modes(
    V: torch.Tensor,
    theta0: torch.Tensor,
    support: torch.Tensor,
    keys: torch.Tensor,
    ns: list[int],
    eta: float = ONE_STEP_ETA,
    kind: str = "softmax",
) -> torch.Tensor:
    """Outcome codes (:data:`sxor.xor.metrics.FAILURE_MODES`, 0 = success) of one empirical step
    of size ``eta`` from ``(theta0, -theta0)`` on the first ``n`` samples of each instance's
    stream, for each ``n`` in ``ns``: ``[len(ns), S]``, judged by the population criterion."""
    grad, grad_tilde = stream_empirical_grads(
        keys, ns, V, theta0, -theta0, support, kind, block=BLOCK
    )
    phi = attention_kind(kind)
    att = phi.weights(scores(V, theta0 - eta * grad))
    att_tilde = phi.weights(scores(V, -theta0 - eta * grad_tilde))
    return failure_modes(loss_from_weights(att, att_tilde, support), att, att_tilde, support)


def population_modes(
    V, theta0, support, eta: float = ONE_STEP_ETA, kind: str = "softmax"
) -> torch.Tensor:
    """Outcome codes of the *population* step at the same ``eta`` (the ``n -> infinity`` limit), ``[S]``."""
    pop = one_step(V, theta0, support, eta, kind)
    return failure_modes(pop.loss, pop.attention, pop.attention_tilde, support)


def _chunk(d: int) -> int:
    return max(1, 2**23 // (BLOCK * d))


@register(
    "finite-samples",
    "one empirical step on nested samples: per-instance n*, m = 2 log2 d + 4",
    plot=lambda r: plot_n_star(r),  # noqa: PLW0108 (plot_n_star is defined below)
)
def run_finite_samples(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    cfg = size_config(size, SIZES)
    records = []
    for d in cfg["d"]:
        m = embedding_dim(d)
        ns = n_grid(d, cfg["max_n_over_d2"] * d * d)
        inst = random_instances(cfg["instances"], d, m, device=device)
        pop = population_modes(inst.V, inst.theta0, inst.support)
        s = scores(inst.V, inst.theta0)
        a, b = inst.support[:, 0], inst.support[:, 1]
        rows = torch.arange(cfg["instances"], device=device)
        D = s[rows, a] - s[rows, b]
        rho = (inst.V[rows, a] * inst.V[rows, b]).sum(-1)
        step = _chunk(d)
        for lo in progress(range(0, cfg["instances"], step), desc=f"d={d}"):
            idx = list(range(lo, min(lo + step, cfg["instances"])))
            keys = torch.tensor([stream_key(d, k) for k in idx], device=device)
            codes = one_step_modes(inst.V[idx], inst.theta0[idx], inst.support[idx], keys, ns)
            for j, k in enumerate(idx):
                records.append(
                    {
                        "d": d,
                        "m": m,
                        "instance": k,
                        "D": float(D[k]),
                        "rho": float(rho[k]),
                        "population_mode": int(pop[k]),
                        "n": ns,
                        "mode": codes[:, j].tolist(),
                    }
                )
    params = {
        "d": cfg["d"],
        "instances": cfg["instances"],
        "max_n_over_d2": cfg["max_n_over_d2"],
        "m_rule": "round(2 log2 d) + 4",
        "eta": ONE_STEP_ETA,
        "grid_ratio": "2^(1/4)",
    }
    return params, records


def n_star(record: dict) -> float:
    """The instance's sample complexity: the smallest grid ``n`` from which the step succeeds at
    every larger grid ``n``; ``inf`` (censored: more than the largest grid ``n``) if it fails at
    the largest."""
    ok = np.asarray(record["mode"]) == 0
    ns = record["n"]
    if len(ok) != len(ns) or len(ns) == 0:
        raise ValueError("a record needs equally long, non-empty 'n' and 'mode' lists")
    if not ok[-1]:
        return math.inf
    fails = np.nonzero(~ok)[0]
    return float(ns[fails[-1] + 1] if len(fails) else ns[0])


def fails_after_success(record: dict) -> bool:
    """Whether the step succeeds at some grid ``n`` and fails at a larger grid ``n``: the outcome is
    not monotone in ``n`` (this is why :func:`n_star` is defined from the *last* failure)."""
    ok = np.asarray(record["mode"]) == 0
    if len(ok) != len(record["n"]) or len(ok) == 0:
        raise ValueError("a record needs equally long, non-empty 'n' and 'mode' lists")
    first = np.argmax(ok) if ok.any() else len(ok)
    return bool((~ok[first:]).any())


def n_star_table(records: list[dict], *, condition: bool = True) -> dict[int, np.ndarray]:
    """``{d: array of n*}`` over the instances (``inf`` where censored); with ``condition`` only the
    instances whose *population* step succeeds."""
    out: dict[int, list[float]] = {}
    for r in records:
        if condition and r["population_mode"] != 0:
            continue
        out.setdefault(r["d"], []).append(n_star(r))
    return {d: np.asarray(v) for d, v in sorted(out.items())}


def censored_quantile(values: np.ndarray, q: float) -> float:
    """The empirical ``q``-quantile (the smallest value with at least a fraction ``q`` of the
    sample at or below it) of values where ``inf`` marks a censored one (known only to exceed the
    largest ``n``). Censored values sort last, so the quantile is finite exactly when more than a
    fraction ``1 - q`` is uncensored; ``inf`` otherwise (only a lower bound is known)."""
    values = np.sort(np.asarray(values, dtype=float))
    if values.ndim != 1 or len(values) == 0 or np.isnan(values).any():
        raise ValueError("values must be a non-empty 1-d array without nan")
    if not 0 < q <= 1:
        raise ValueError(f"q must lie in (0, 1], got {q}")
    return float(values[math.ceil(q * len(values) - 1e-9) - 1])


def fit_power_law(ds, ns) -> tuple[float, float]:
    """Least-squares fit ``log n = log C + p log d``; returns ``(p, C)``. Every ``n`` must be finite."""
    ds, ns = np.asarray(ds, dtype=float), np.asarray(ns, dtype=float)
    if ds.shape != ns.shape or len(ds) < 2:
        raise ValueError("need at least two (d, n) pairs of equal length")
    if not np.isfinite(ns).all() or (ns <= 0).any():
        raise ValueError("every n must be finite and positive to fit a power law")
    p, logc = np.polyfit(np.log(ds), np.log(ns), 1)
    return float(p), float(np.exp(logc))


def _bootstrap_power_law(ds: list[int], sizes: dict[int, int], statistic, num: int, seed: int):
    """Resample the instances of each ``d`` with replacement ``num`` times (``sizes[d]`` of them),
    evaluate ``statistic(d, indices)`` at every ``d`` and fit its power law in ``d``. Returns the
    statistics ``[num, len(ds)]``, the exponents of the resamples where every statistic is finite,
    and how many resamples were left without one (``undefined``)."""
    rng = np.random.default_rng(seed)
    values, exponents, undefined = [], [], 0
    for _ in range(num):
        row = [statistic(d, rng.integers(0, sizes[d], sizes[d])) for d in ds]
        values.append(row)
        if np.isfinite(row).all():
            exponents.append(fit_power_law(ds, row)[0])
        else:
            undefined += 1
    return np.asarray(values), exponents, undefined


def bootstrap_exponent(
    table: dict[int, np.ndarray],
    q: float = 0.5,
    num: int = 1000,
    seed: int = 0,
    cap: dict[int, float] | None = None,
) -> dict:
    """Quantile ``q`` of ``n*`` at each ``d``, its fitted exponent in ``d``, and percentile (2.5%,
    97.5%) bootstrap intervals, resampling the instances of each ``d`` with replacement.

    Without ``cap``, a resample whose quantile is censored at some ``d`` has no exponent: such
    resamples count as ``undefined`` (returned) and the interval is over the others; the point
    estimate itself must be defined at every ``d`` (ValueError otherwise).

    With ``cap`` (``{d: the grid's largest n}``) the statistic is the quantile of ``min(n*, cap)``,
    defined on every sample: a censored quantile becomes the cap (a lower bound of the quantile),
    no resample is dropped (``undefined`` is 0), and ``at_cap`` counts the resamples whose
    quantile is at the cap at some ``d`` (their exponent is that of a bound). ``point_at_cap``
    lists the ``d`` where the point estimate itself is at the cap.
    """
    ds = sorted(table)
    if cap is not None:
        if set(cap) != set(ds) or not all(math.isfinite(cap[d]) and cap[d] > 0 for d in ds):
            raise ValueError("cap must give a finite positive cap for every d of the table")
        table = {d: np.minimum(np.asarray(table[d], dtype=float), cap[d]) for d in ds}
    point = [censored_quantile(table[d], q) for d in ds]
    if not np.isfinite(point).all():
        raise ValueError(
            f"the {q:.0%} quantile of n* is censored at some d: {dict(zip(ds, point))}"
        )
    p, c = fit_power_law(ds, point)
    boot_q, boot_p, undefined = _bootstrap_power_law(
        ds,
        {d: len(table[d]) for d in ds},
        lambda d, idx: censored_quantile(table[d][idx], q),
        num,
        seed,
    )
    out = {
        "d": ds,
        "q": q,
        "quantile": point,
        "exponent": p,
        "constant": c,
        # percentiles without interpolation: a censored (inf) resample stays inf instead of nan
        "quantile_low": np.percentile(boot_q, 2.5, axis=0, method="inverted_cdf").tolist(),
        "quantile_high": np.percentile(boot_q, 97.5, axis=0, method="inverted_cdf").tolist(),
        "exponent_low": float(np.percentile(boot_p, 2.5)),
        "exponent_high": float(np.percentile(boot_p, 97.5)),
        "resamples": num,
        "undefined": undefined,
    }
    if cap is not None:
        caps = np.asarray([cap[d] for d in ds])
        out["at_cap"] = int((boot_q >= caps).any(axis=1).sum())
        out["point_at_cap"] = [d for d, v in zip(ds, point) if v >= cap[d]]
    return out


def n_star_capped(record: dict, cap: float) -> float:
    """:func:`n_star` of one instance on its grid cut at ``cap * d^2`` (``inf``: fails at the cut)."""
    keep = [k for k, n in enumerate(record["n"]) if n <= cap * record["d"] ** 2]
    if not keep:
        raise ValueError(f"no grid n at or below {cap} d^2")
    return n_star({"n": [record["n"][k] for k in keep], "mode": [record["mode"][k] for k in keep]})


def capped_table(records: list[dict], cap: float) -> dict[int, np.ndarray]:
    """``{d: n*}`` over the instances whose population step succeeds, on the grids cut at ``cap * d^2``."""
    out: dict[int, list[float]] = {}
    for r in records:
        if r["population_mode"] == 0:
            out.setdefault(r["d"], []).append(n_star_capped(r, cap))
    return {d: np.asarray(v) for d, v in sorted(out.items())}


def last_failure_modes(records: list[dict]) -> dict[int, dict[str, int]]:
    """For each ``d``, over the instances whose population step succeeds and that fail at some grid
    ``n``: how many show each failure mode at their *last* failing ``n`` (just below ``n*``, or at
    the largest ``n`` if censored)."""
    out: dict[int, dict[str, int]] = {}
    for r in records:
        if r["population_mode"] != 0:
            continue
        modes = [c for c in r["mode"] if c != 0]
        counts = out.setdefault(r["d"], dict.fromkeys(FAILURE_MODES[1:], 0))
        if modes:
            fails = [i for i, c in enumerate(r["mode"]) if c != 0]
            counts[FAILURE_MODES[r["mode"][fails[-1]]]] += 1
    return dict(sorted(out.items()))


def mode_fractions_by_n(records: list[dict], d: int) -> tuple[np.ndarray, np.ndarray]:
    """For the instances at ``d`` whose population step succeeds: the grid ``n`` and the fraction
    of instances in each outcome of :data:`sxor.xor.metrics.FAILURE_MODES` at each ``n``, ``[len(n), 4]``."""
    rows = [r for r in records if r["d"] == d and r["population_mode"] == 0]
    if not rows:
        raise ValueError(f"no instance at d={d} whose population step succeeds")
    codes = np.asarray([r["mode"] for r in rows])  # [instances, n]
    frac = np.stack([(codes == c).mean(0) for c in range(len(FAILURE_MODES))], axis=-1)
    return np.asarray(rows[0]["n"]), frac


def n_star_by_split(records: list[dict], bins: int = 4) -> list[dict]:
    """The instances whose population step succeeds, pooled over ``d`` and sorted into ``bins``
    groups of equal size by ``m D^2`` (``D = s_a - s_b``, the initial score difference of the two
    targets): per group, the range and median of ``m D^2`` and the censored median of
    ``n* / d^2``. If the split of the heads (the sign of ``D``) limits one step, the median of
    ``n* / d^2`` falls like ``1 / (m D^2)`` from group to group; if beating the non-targets does,
    it does not depend on ``D``."""
    rows = [
        (r["m"] * r["D"] ** 2, n_star(r) / r["d"] ** 2)
        for r in records
        if r["population_mode"] == 0
    ]
    if len(rows) < bins:
        raise ValueError(f"need at least {bins} instances, got {len(rows)}")
    rows.sort()
    out = []
    for group in np.array_split(np.arange(len(rows)), bins):
        md2 = np.array([rows[i][0] for i in group])
        ns = np.array([rows[i][1] for i in group])
        out.append(
            {
                "mD2_low": float(md2.min()),
                "mD2_high": float(md2.max()),
                "mD2_median": float(np.median(md2)),
                "instances": len(group),
                "censored": int(np.isinf(ns).sum()),
                "median_n_over_d2": censored_quantile(ns, 0.5),
            }
        )
    return out


def plot_modes(results: dict, ds: tuple[int, ...] | None = None):
    """Outcome of the empirical step against ``n / d^2`` (population step succeeding), one panel
    per ``d`` (at most two, side by side): stacked fractions of success and of each failure mode."""
    import matplotlib.pyplot as plt

    all_d = sorted({r["d"] for r in results["records"]})
    ds = (all_d[len(all_d) // 2], all_d[-1]) if ds is None else tuple(ds)
    if not 1 <= len(ds) <= 2:
        raise ValueError("plot_modes draws one or two panels")
    fig, axes = plt.subplots(1, len(ds), figsize=(5.9 * len(ds), 4.0), sharey=True, squeeze=False)
    colors = {"success": "C2", "off_target": "C3", "same_target": "C0", "under_stepped": "C7"}
    for ax, d in zip(axes[0], ds):
        ns, frac = mode_fractions_by_n(results["records"], d)
        ax.stackplot(
            ns / d**2,
            frac.T,
            labels=[name.replace("_", " ") for name in FAILURE_MODES],
            colors=[colors[name] for name in FAILURE_MODES],
            alpha=0.85,
        )
        ax.set_xscale("log")
        ax.set_xlim(ns[0] / d**2, ns[-1] / d**2)
        ax.set_ylim(0, 1)
        ax.set_xlabel("samples per $d^2$, $n/d^2$")
        ax.set_title(f"d = {d}, m = {embedding_dim(d)}")
    axes[0, 0].set_ylabel("fraction of instances")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def plot_n_star(results: dict, quantiles=(0.5, 0.75, 0.9)):
    """``n*`` quantiles against ``d`` (population step succeeding), with bootstrap bands and fits."""
    import matplotlib.pyplot as plt

    table = n_star_table(results["records"])
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for i, q in enumerate(quantiles):
        ds = np.asarray(sorted(table), dtype=float)
        qs = np.asarray([censored_quantile(table[d], q) for d in table])
        ok = np.isfinite(qs)
        ax.plot(ds[ok], qs[ok], "o-", color=f"C{i}", label=f"{q:.0%} quantile of $n^*$")
        if ok.all():
            fit = bootstrap_exponent(table, q, num=200)
            high = np.where(
                np.isfinite(fit["quantile_high"]), fit["quantile_high"], np.nan
            )  # censored: no band
            ax.fill_between(ds, fit["quantile_low"], high, color=f"C{i}", alpha=0.2, lw=0)
    ax.plot(ds, ds**2, "k--", lw=1, label="$d^2$")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("input dimension $d$")
    ax.set_ylabel("samples $n^*$ for one step")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=9)  # below the axes
    fig.tight_layout()
    return fig


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
    samples = {}
    for r in records:
        if r["d"] != d or r["batch"] == 0:
            continue
        first = np.asarray(r["first_success"])
        first = first if index is None else first[index]
        samples[r["config"]] = r["batch"] * steps_to_rate(first, target)
    if not samples:
        raise ValueError(f"no SGD record at d={d}")
    best = min(samples, key=samples.get)
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
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=9)  # below the axes
    fig.tight_layout()
    return fig
