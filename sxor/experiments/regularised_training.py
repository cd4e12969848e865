"""Sweeps of the chapter "Regularised training": the authors' two Tikhonov runs.

The setup is :mod:`sxor.interp.training` (``N = 10`` sequences of ``n = 100`` tokens in ``d = 16``,
one softmax block, Adam with coupled weight decay ``epsilon``, learning rate ``1e-3``
cosine-annealed to 0 over each run, full batch, the PyTorch-default initialisation). The full
size runs in float32, as the authors' code does; the CI size in float64, so that the digits a
notebook prints do not depend on the machine. Two runs, as in the authors' ``tikhonov/`` scripts:

* ``single`` (their Figure 1a): one ``epsilon``, one long run from the initialisation;
* ``sweep`` (their Figure 1b): one model warm-started through decreasing ``epsilon``, a fresh
  optimiser and schedule per ``epsilon`` (:func:`sxor.interp.training.warm_start_sweep`).

One record per stage (the single run is one stage): ``run``, ``stage``, ``epsilon``, ``steps``,
the final and smallest ``J`` and ``J_eps = J + (eps/2)|theta|^2``, ``|theta|^2``, the final
``|grad J_eps|``, the reference values ``(eps/2)|theta*|^2`` and ``eps|theta*|^2`` of the known
interpolant ``theta*``, and the curve ``[[step, J, J_eps, |theta|^2], ...]`` at log-spaced steps.
"""

from __future__ import annotations

import torch

from ..interp.training import authors_draw as _authors_draw
from ..interp.training import init_parameters, tikhonov_data, warm_start_sweep
from . import register, size_config

SIZES = {
    # float64 for CI, so that the digits the notebook prints are the same on every machine
    "ci": {
        "N": 10,
        "n": 100,
        "d": 16,
        "lr": 1e-3,
        "dtype": "float64",
        "single_epsilon": 1e-4,
        "single_steps": 2000,
        "sweep_epsilons": [1e-1, 1e-2, 1e-3],
        "sweep_steps": [300, 600, 1000],
    },
    "full": {
        "N": 10,
        "n": 100,
        "d": 16,
        "lr": 1e-3,
        "dtype": "float32",
        "single_epsilon": 1e-4,
        "single_steps": 50000,
        "sweep_epsilons": [1e-1, 1e-2, 1e-3, 1e-4],
        "sweep_steps": [5000, 10000, 50000, 50000],
    },
}

#: The warm-started sweep again from other initialisations (same data), to see whether one
#: trajectory is typical.
SEED_SIZES = {
    "ci": {
        "N": 10,
        "n": 100,
        "d": 16,
        "lr": 1e-3,
        "dtype": "float64",
        "init_seeds": [2, 3],
        "sweep_epsilons": [1e-1, 1e-2],
        "sweep_steps": [200, 200],
    },
    "full": {
        "N": 10,
        "n": 100,
        "d": 16,
        "lr": 1e-3,
        "dtype": "float32",
        "init_seeds": [2, 3],
        "sweep_epsilons": [1e-1, 1e-2, 1e-3, 1e-4],
        "sweep_steps": [5000, 10000, 50000, 50000],
    },
}

#: The authors' two runs on the data and initialisation drawn exactly as their scripts draw them
#: (:func:`sxor.interp.training.authors_draw`, seed 0): their Figure 1a (one run, ``epsilon = 1e-4``,
#: 50 000 steps) and Figure 1b (the warm-started sweep over ``1e-1, 1e-2, 1e-3`` with 5 000,
#: 10 000 and 50 000 steps), in float32 as theirs; the curves also every 50 steps, to place the
#: crossing of the threshold.
AUTHORS_SIZES = {
    "ci": {
        "N": 10,
        "n": 100,
        "d": 16,
        "lr": 1e-3,
        "dtype": "float64",
        "authors_draw": True,
        "record": "log+50",
        "single_epsilon": 1e-4,
        "single_steps": 1000,
        "sweep_epsilons": [1e-1, 1e-2, 1e-3],
        "sweep_steps": [300, 300, 300],
    },
    "full": {
        "N": 10,
        "n": 100,
        "d": 16,
        "lr": 1e-3,
        "dtype": "float32",
        "authors_draw": True,
        "record": "log+50",
        "single_epsilon": 1e-4,
        "single_steps": 50000,
        "sweep_epsilons": [1e-1, 1e-2, 1e-3],
        "sweep_steps": [5000, 10000, 50000],
    },
}

#: The authors' Figure 1 (arXiv 2502.02270, Fig. 1a and 1b), read off their own figure files
#: ``figs/figure1a.pdf`` and ``figs/figure1b.pdf`` in github.com/DCN-FAU-AvH/exactInterpTF (commit
#: 1f633bb): the coordinates of the plotted vertices in the PDFs' vector data, mapped through the
#: log axes' tick positions. Their x axis is the index of the epoch (0-based), so epoch = x + 1; one
#: epoch is one full-batch Adam step. Matplotlib's path simplification keeps only some vertices, so
#: the crossing of the threshold is bracketed by the vertices around it. Three significant figures
#: (the reading itself is good to about 1e-6 relative). Epoch 1 is not usable: its x = log(0) is
#: clipped, and the point drawn at the axes' edge is interpolated towards epoch 20.
PAPER_FIGURE_1 = {
    "fig1a_J_at_20": 1698.49,  # epoch 20, the first plotted point inside the axes (to 6 figures)
    "fig1a_threshold": 6.25e-3,  # the red "Tikhonov threshold", 1e-4 * 62.5
    "fig1a_first_below": (18681, 18778),  # first dips below the threshold between these epochs
    "fig1a_last_above": (
        18924,
        18971,
    ),  # last vertex above it, and the next vertex (below for good)
    "fig1a_epochs": 50000,
    "fig1a_end_J": 3.90e-4,  # epoch 50 000
    "fig1b_min_J": {1e-1: 3.26e-2, 1e-2: 1.32e-2, 1e-3: 4.96e-4},  # the blue markers
}

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def run_runs(
    N: int,
    n: int,
    d: int,
    lr: float,
    dtype: str,
    single_epsilon: float,
    single_steps: int,
    sweep_epsilons: list[float],
    sweep_steps: list[int],
    device: torch.device | str | None = None,
    data_seed: int = 0,
    init_seed: int = 1,
    authors_draw: bool = False,
    record: str = "log",
) -> list[dict]:
    """The single long run and the warm-started sweep, from the same initialisation; one record
    per stage (see the module docstring). With ``authors_draw`` the data and the initialisation
    are :func:`sxor.interp.training.authors_draw` with seed ``data_seed`` (``init_seed`` unused),
    as both of the authors' scripts draw them; otherwise the book's own draw
    (:func:`~sxor.interp.training.tikhonov_data` with ``data_seed``,
    :func:`~sxor.interp.training.init_parameters` with ``init_seed``). ``record`` is passed to
    :func:`~sxor.interp.training.train` (which steps the curves hold)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    if not isinstance(authors_draw, bool):
        raise TypeError(f"authors_draw must be a bool, got {authors_draw!r}")
    if authors_draw:
        data, _ = _authors_draw(N, n, d, seed=data_seed, dtype=DTYPES[dtype], device=device)
    else:
        data = tikhonov_data(N, n, d, seed=data_seed, dtype=DTYPES[dtype], device=device)
    star = data.theta_star_sq_norm
    records = []
    runs = (
        ("single", [single_epsilon], [single_steps]),
        ("sweep", list(sweep_epsilons), list(sweep_steps)),
    )
    for name, epsilons, steps in runs:
        if (
            authors_draw
        ):  # each of their scripts re-seeds and draws the same data and initialisation
            theta = _authors_draw(N, n, d, seed=data_seed, dtype=DTYPES[dtype], device=device)[1]
        else:
            theta = init_parameters(d, seed=init_seed, dtype=DTYPES[dtype], device=device)
        for stage, out in enumerate(
            warm_start_sweep(data, theta, epsilons, steps, lr=lr, record=record)
        ):
            eps = out.pop("epsilon")
            records.append(
                {
                    "run": name,
                    "stage": stage,
                    "epsilon": eps,
                    "steps": out.pop("steps"),
                    **{
                        k: out[k]
                        for k in (
                            "loss",
                            "min_loss",
                            "objective",
                            "min_objective",
                            "sq_norm",
                            "grad_norm",
                        )
                    },
                    "objective_star": eps / 2 * star,
                    "bound": eps * star,
                    "theta_star_sq_norm": star,
                    "curve": out["curve"],
                }
            )
    return records


def run_seeds(
    N: int,
    n: int,
    d: int,
    lr: float,
    dtype: str,
    init_seeds: list[int],
    sweep_epsilons: list[float],
    sweep_steps: list[int],
    device: torch.device | str | None = None,
    data_seed: int = 0,
) -> list[dict]:
    """The warm-started sweep of :func:`run_runs` from each initialisation seed in ``init_seeds``
    (same data); one record per (seed, stage), as in :func:`run_runs` with ``init_seed`` added and
    no curve."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    data = tikhonov_data(N, n, d, seed=data_seed, dtype=DTYPES[dtype], device=device)
    star = data.theta_star_sq_norm
    records = []
    for seed in init_seeds:
        theta = init_parameters(d, seed=seed, dtype=DTYPES[dtype], device=device)
        for stage, out in enumerate(
            warm_start_sweep(data, theta, list(sweep_epsilons), list(sweep_steps), lr=lr, record=0)
        ):
            eps = out["epsilon"]
            records.append(
                {
                    "init_seed": seed,
                    "stage": stage,
                    "epsilon": eps,
                    "steps": out["steps"],
                    **{
                        k: out[k]
                        for k in (
                            "loss",
                            "min_loss",
                            "objective",
                            "min_objective",
                            "sq_norm",
                            "grad_norm",
                        )
                    },
                    "objective_star": eps / 2 * star,
                    "theta_star_sq_norm": star,
                }
            )
    return records


def plot_regularised(results: dict):
    """Two panels. Left: the single run's ``J`` and ``J_eps`` against the step (log-log), with the
    values ``eps|theta*|^2`` (the authors' threshold) and ``(eps/2)|theta*|^2``. Right: the sweep's
    smallest ``J`` and final ``J_eps`` per ``epsilon``, with ``(eps/2)|theta*|^2`` and a slope-1
    line through the first point. Legends sit below the panels, off the data."""
    import matplotlib.pyplot as plt
    import numpy as np

    recs = results["records"]
    star = recs[0]["theta_star_sq_norm"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.8))
    ax = axes[0]
    single = next(r for r in recs if r["run"] == "single")
    curve = np.array(single["curve"])
    eps = single["epsilon"]
    ax.loglog(curve[:, 0], curve[:, 1], color="tab:blue", label=r"$J$")
    ax.loglog(curve[:, 0], curve[:, 2], color="tab:orange", label=r"$J_\varepsilon$")
    ax.axhline(eps * star, color="r", ls="--", label=r"$\varepsilon\|\theta^*\|^2$")
    ax.axhline(eps * star / 2, color="r", ls=":", label=r"$\frac{\varepsilon}{2}\|\theta^*\|^2$")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(rf"one run, $\varepsilon={eps:g}$, {single['steps']} steps")
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)
    ax = axes[1]
    rows = sorted((r for r in recs if r["run"] == "sweep"), key=lambda r: -r["epsilon"])
    e = np.array([r["epsilon"] for r in rows])
    ax.loglog(e, [r["min_loss"] for r in rows], "o-", color="tab:blue", label=r"smallest $J$")
    ax.loglog(
        e, [r["objective"] for r in rows], "s-", color="tab:orange", label=r"final $J_\varepsilon$"
    )
    ax.loglog(e, e * star / 2, "r:", label=r"$\frac{\varepsilon}{2}\|\theta^*\|^2$")
    ax.loglog(e, e / e[0] * rows[0]["min_loss"], "--", color="gray", label="slope 1")
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_title("warm-started sweep")
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)
    fig.tight_layout()
    return fig


def threshold_crossing(curve: list[list[float]], threshold: float) -> dict:
    """Where a recorded curve ``[[step, J, ...], ...]`` crosses ``threshold`` downwards: the recorded
    steps around the first value below it (``first_below``) and around the last value at or above
    it (``last_above``: that step and the next recorded one), and whether it stays below from then
    on (always true by construction of ``last_above``; ``None`` fields if it never goes below)."""
    steps = [int(c[0]) for c in curve]
    vals = [c[1] for c in curve]
    below = [k for k, v in enumerate(vals) if v < threshold]
    if not below:
        return {"first_below": None, "last_above": None}
    k = below[0]
    above = [i for i, v in enumerate(vals) if v >= threshold]
    last = above[-1] if above else None
    return {
        "first_below": (steps[k - 1] if k else None, steps[k]),
        "last_above": (steps[last], steps[last + 1])
        if last is not None and last + 1 < len(steps)
        else None,
    }


def plot_against_paper(results: dict, paper: dict = PAPER_FIGURE_1):
    """The authors'-draw runs beside the values read off the authors' Figure 1. Left: ``J`` of the
    single run against the step (log-log), the threshold ``eps|theta*|^2``, the paper's end value
    and the epochs where the paper's curve crosses the threshold. Right: the sweep's smallest ``J``
    per ``epsilon`` and the paper's. Legends below the panels."""
    import matplotlib.pyplot as plt
    import numpy as np

    recs = results["records"]
    star = recs[0]["theta_star_sq_norm"]
    single = next(r for r in recs if r["run"] == "single")
    curve = np.array(single["curve"])
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.8))
    ax = axes[0]
    ax.loglog(curve[:, 0], curve[:, 1], color="tab:blue", label=r"$J$, this run")
    ax.axhline(single["epsilon"] * star, color="r", ls="--", label=r"$\varepsilon\|\theta^*\|^2$")
    lo, hi = paper["fig1a_first_below"][0], paper["fig1a_last_above"][1]
    ax.axvspan(lo, hi, color="0.8", label="paper: crossing")
    ax.loglog(
        [paper["fig1a_epochs"]], [paper["fig1a_end_J"]], "kx", ms=9, mew=2, label="paper: end"
    )
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(rf"one run, $\varepsilon={single['epsilon']:g}$ (Fig. 1a)")
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)
    ax = axes[1]
    rows = sorted((r for r in recs if r["run"] == "sweep"), key=lambda r: -r["epsilon"])
    e = np.array([r["epsilon"] for r in rows])
    ax.loglog(
        e, [r["min_loss"] for r in rows], "o-", color="tab:blue", label=r"smallest $J$, this run"
    )
    pe = sorted(paper["fig1b_min_J"], reverse=True)
    ax.loglog(
        pe, [paper["fig1b_min_J"][x] for x in pe], "kx", ms=9, mew=2, ls="none", label="paper"
    )
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_title("warm-started sweep (Fig. 1b)")
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)
    fig.tight_layout()
    return fig


@register(
    "regularised-training",
    "Tikhonov: the authors' single run and warm-started epsilon sweep (N=10, d=16)",
    plot=plot_regularised,
)
def run(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    params = dict(size_config(size, SIZES))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: one thread is fastest and immune to oversubscription
    try:
        records = run_runs(**params, device=device)
    finally:
        torch.set_num_threads(threads)
    return params, records


@register(
    "regularised-training-paper",
    "Tikhonov: the authors' Figure 1a run and Figure 1b sweep on their own draw of data and initialisation",
    plot=plot_against_paper,
)
def run_authors(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    params = dict(size_config(size, AUTHORS_SIZES))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        records = run_runs(**params, device=device)
    finally:
        torch.set_num_threads(threads)
    return params, records


@register(
    "regularised-training-seeds", "Tikhonov: the warm-started sweep from other initialisations"
)
def run_seed_sweeps(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    params = dict(size_config(size, SEED_SIZES))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        records = run_seeds(**params, device=device)
    finally:
        torch.set_num_threads(threads)
    return params, records
