"""The book's own runs of the chapter "Regularised training" (re-exported by
:mod:`sxor.experiments.regularised_training`, whose docstring describes the setup and the records).

* ``regularised-training``: the single long run and the warm-started ``epsilon`` sweep
  (:func:`run_runs`, :func:`plot_regularised`);
* ``regularised-training-seeds``: the sweep again from other initialisations (:func:`run_seeds`).
"""

from __future__ import annotations

import torch

from ..interp.training import authors_draw as _authors_draw
from ..interp.training import init_parameters, tikhonov_data, warm_start_sweep
from . import one_thread, register, size_config

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

DTYPES = {"float32": torch.float32, "float64": torch.float64}


#: What a record keeps of each stage of a run (besides its epsilon, steps and the reference values).
SUMMARY_FIELDS = ("loss", "min_loss", "objective", "min_objective", "sq_norm", "grad_norm")


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
                    **{k: out[k] for k in SUMMARY_FIELDS},
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
                    **{k: out[k] for k in SUMMARY_FIELDS},
                    "objective_star": eps / 2 * star,
                    "theta_star_sq_norm": star,
                }
            )
    return records


def legend_under(ax) -> None:
    """The legend of a panel of the regularised-training figures, in two columns under it."""
    ax.legend(fontsize=10, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)


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
    legend_under(ax)
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
    legend_under(ax)
    fig.tight_layout()
    return fig


@register(
    "regularised-training",
    "Tikhonov: the authors' single run and warm-started epsilon sweep (N=10, d=16)",
    plot=plot_regularised,
)
def run(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    params = dict(size_config(size, SIZES))
    with one_thread():
        records = run_runs(**params, device=device)
    return params, records


@register(
    "regularised-training-seeds", "Tikhonov: the warm-started sweep from other initialisations"
)
def run_seed_sweeps(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    params = dict(size_config(size, SEED_SIZES))
    with one_thread():
        records = run_seeds(**params, device=device)
    return params, records
