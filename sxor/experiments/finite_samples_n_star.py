"""The one-step experiment of the chapter "Finite samples" (re-exported by
:mod:`sxor.experiments.finite_samples`).

* ``finite-samples``: one *empirical* gradient step from the antisymmetric init in the large-step
  limit (``eta = 1e12``), on the first ``n`` samples of a stream of samples that belongs to the
  instance (:mod:`sxor.xor.streams`), for ``n`` on a grid of ratio ``2^(1/4)``; the outcome after
  the step is judged by the *population* criterion and classified by
  :func:`sxor.xor.metrics.failure_modes`. One record per ``(d, instance)``. From the records:
  the per-instance sample complexity ``n*`` (:func:`n_star`), its quantiles with censoring
  (:func:`sxor.experiments.finite_samples_stats.censored_quantile`) and their exponent in ``d``
  with a bootstrap over instances (:func:`sxor.experiments.finite_samples_stats.bootstrap_exponent`).

The embedding dimension grows with ``d``: ``m = round(2 log2 d) + 4`` (:func:`embedding_dim`).
Instance ``k`` at dimension ``d`` is :func:`sxor.xor.sweeps.random_instances` instance ``k`` and
its sample stream has key ``d * 2^20 + k`` (:func:`stream_key`).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..progress import progress
from ..xor.metrics import FAILURE_MODES, failure_modes
from ..xor.model import attention_kind, scores
from ..xor.population import loss_from_weights, one_step
from ..xor.streams import stream_empirical_grads
from ..xor.sweeps import random_instances
from . import register, size_config
from .finite_samples_stats import bootstrap_exponent, censored_quantile

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
    out: list[int] = []
    k = 0
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
    fig, axes = plt.subplots(1, len(ds), figsize=(5.1 * len(ds), 4.0), sharey=True, squeeze=False)
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
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=10, frameon=False)
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
    ax.legend(
        loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=10
    )  # below the axes
    fig.tight_layout()
    return fig
