"""Regularised training of a one-block softmax transformer on exactly interpolable data (chapter 15).

The authors' Tikhonov experiment (``tikhonov/`` in github.com/DCN-FAU-AvH/exactInterpTF), rebuilt on
the layers of :mod:`sxor.interp.layers`:

* data: ``X_j`` with i.i.d. ``U[0, 1]`` entries, ``[n, d]``; one target point per sequence,
  ``y_j = FF*(mean(X_j))``, produced by the known block ``theta*``: an SA layer with ``A = 0``,
  ``rho = 0``, ``V = I`` (the exact sequence mean for every temperature), then an FF layer with
  ``eta = 1`` and ``W, U, b`` i.i.d. ``U[0, 1]`` (width 4);
* model: one block SA -> FF (the order of the authors' experiment code), softmax SA with rank-one
  ``A = q k^T`` at ``tau = 1``, scalar ``rho``, full ``V``, FF of width 4 with scalar ``eta``;
* loss: ``J(theta) = (1/N) sum_j max_i |T_theta(X_j)_i - y_j|^2`` (squared Hausdorff distance to
  the singleton ``{y_j}``);
* training: Adam with coupled weight decay ``epsilon`` (``torch.optim.Adam(weight_decay=eps)``,
  i.e. the gradient of ``J_eps = J + (eps/2) |theta|^2``), learning rate cosine-annealed to 0 over
  the run, full batch; the authors' sweep warm-starts one model through decreasing ``epsilon``
  (a fresh optimiser and schedule per ``epsilon``, the parameters carried over):
  :func:`warm_start_sweep`.

Theory (proved in chapter 15): a global minimiser ``theta_eps`` of ``J_eps`` has
``J(theta_eps) <= J_eps(theta_eps) <= (eps/2)|theta_dagger|^2`` where ``theta_dagger`` is a
minimum-norm exact interpolant, ``|theta_eps| -> |theta_dagger|``, and so ``J(theta_eps) = o(eps)``.
"""

from __future__ import annotations

import math
import numbers
from typing import cast

import torch

from ..progress import progress
from ._training_data import authors_draw, init_parameters, perturbed, tikhonov_data
from ._training_interpolants import _solve_exact as _solve_exact
from ._training_interpolants import exact_uniform_interpolant, uniform_attention_interpolant
from ._training_model import (
    PARAMETER_NAMES,
    TikhonovData,
    _loss,
    _positive_int,
    _real,
    _sq_norm,
    block,
    loss,
    sq_norm,
)
from ._training_model import _block as _block
from ._training_model import _check_params as _check_params
from ._training_model import _check_theta as _check_theta
from ._training_model import _check_X as _check_X
from ._training_model import _seed as _seed

__all__ = [
    "PARAMETER_NAMES",
    "TikhonovData",
    "authors_draw",
    "block",
    "exact_uniform_interpolant",
    "init_parameters",
    "log_spaced_steps",
    "loss",
    "perturbed",
    "sq_norm",
    "tikhonov_data",
    "train",
    "uniform_attention_interpolant",
    "warm_start_sweep",
]


def log_spaced_steps(steps: int, per_decade: int = 40) -> list[int]:
    """The steps ``1..steps`` at which a curve is recorded: about ``per_decade`` per decade, evenly
    spaced in ``log(step)``, always including 1 and ``steps`` (sorted, no repeats)."""
    steps, per_decade = _positive_int("steps", steps), _positive_int("per_decade", per_decade)
    count = math.ceil(math.log10(steps) * per_decade) + 1 if steps > 1 else 1
    out = {1, steps}
    for i in range(count):
        out.add(round(10 ** (i / per_decade)))
    return sorted(s for s in out if 1 <= s <= steps)


def _recorded_steps(record: object, steps: int) -> set[int]:
    if isinstance(record, str) and record.startswith("log"):
        extra = record[3:]
        if extra == "":
            return set(log_spaced_steps(steps))
        if extra.startswith("+") and extra[1:].isdigit() and int(extra[1:]) >= 1:
            every = int(extra[1:])
            return set(log_spaced_steps(steps)) | set(range(every, steps + 1, every))
    elif isinstance(record, numbers.Integral) and not isinstance(record, bool) and int(record) >= 0:
        return set(range(int(record), steps + 1, int(record))) | {1} if record else set()
    raise ValueError(
        f"record must be 'log', 'log+K' (K an int >= 1) or an int >= 0, got {record!r}"
    )


def train(
    data: TikhonovData,
    theta: dict[str, torch.Tensor],
    epsilon: float,
    steps: int,
    *,
    lr: float = 1e-3,
    tau: float = 1.0,
    record: str | int = "log",
) -> dict:
    """Adam (``weight_decay = epsilon``, coupled), learning rate cosine-annealed from ``lr`` to 0
    over ``steps``, full batch: the authors' ``train_model`` with ``batch_size = N``.

    Trains ``theta`` in place. The loss of step ``t`` is evaluated before its update, as the
    authors' per-epoch loss is. Returns

    * ``loss``, ``objective``, ``sq_norm``: ``J``, ``J_eps = J + (eps/2)|theta|^2`` and
      ``|theta|^2`` at the final parameters;
    * ``min_loss``, ``min_objective``: the smallest ``J`` and ``J_eps`` over the run (the
      authors plot the smallest epoch loss);
    * ``grad_norm``: ``|grad J_eps|`` at the final parameters (a measure of stationarity);
    * ``curve``: ``[[step, J, J_eps, |theta|^2], ...]`` at :func:`log_spaced_steps` when
      ``record == "log"``, at those and every ``K`` steps for ``"log+K"``, every ``record`` steps
      for an int, nothing for ``0``.

    ``epsilon >= 0`` and ``lr > 0`` finite reals, ``steps >= 1`` an int; ``theta`` of the data's
    dtype (see :func:`block`), every parameter requiring grad. Anything else raises
    ``TypeError``/``ValueError`` naming the argument, as does a run whose loss becomes nan or inf
    (it names the step)."""
    if not isinstance(data, TikhonovData):
        raise TypeError(
            f"data must be a TikhonovData (from tikhonov_data), got {type(data).__name__}"
        )
    epsilon = _real("epsilon", epsilon, minimum=0.0)
    steps = _positive_int("steps", steps)
    lr = _real("lr", lr, positive=True)
    tau = _real("tau", tau, positive=True)
    _check_theta(theta, data.X)
    wanted = _recorded_steps(record, steps)
    params = [theta[name] for name in PARAMETER_NAMES]
    if not all(p.requires_grad for p in params):
        raise ValueError(
            "every parameter of theta must require grad (init_parameters and perturbed do this)"
        )
    opt = torch.optim.Adam(params, lr=lr, weight_decay=epsilon)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    best, best_obj, curve = math.inf, math.inf, []
    for step in progress(range(1, steps + 1), desc=f"eps={epsilon:g}"):
        opt.zero_grad()
        J = _loss(data.X, data.Y, theta, tau)
        J.backward()
        value = float(J.detach())
        if not math.isfinite(value):
            raise ValueError(
                f"training diverged: J = {value} at step {step} (epsilon = {epsilon}, lr = {lr})"
            )
        norm = _sq_norm(theta) if (step in wanted or epsilon > 0) else 0.0
        objective = value + epsilon / 2 * norm
        best, best_obj = min(best, value), min(best_obj, objective)
        if step in wanted:
            curve.append([step, value, objective, norm])
        opt.step()
        sched.step()
    J = _loss(data.X, data.Y, theta, tau)
    penalty = epsilon / 2 * sum((p**2).sum() for p in params)
    grads = torch.autograd.grad(J + penalty, params)
    final, norm = float(J.detach()), _sq_norm(theta)
    for p in params:
        p.grad = None
    grad_sq = cast(torch.Tensor, sum((g.double() ** 2).sum() for g in grads))  # grads: not empty
    return {
        "loss": final,
        "min_loss": min(best, final),
        "objective": final + epsilon / 2 * norm,
        "min_objective": min(best_obj, final + epsilon / 2 * norm),
        "sq_norm": norm,
        "grad_norm": float(torch.sqrt(grad_sq)),
        "curve": curve,
    }


def warm_start_sweep(
    data: TikhonovData,
    theta: dict[str, torch.Tensor],
    epsilons: list[float],
    steps: list[int],
    *,
    lr: float = 1e-3,
    tau: float = 1.0,
    record: str | int = "log",
) -> list[dict]:
    """The authors' sweep (their ``tikhonovEpsilon.py``): one model trained through ``epsilons`` in
    turn, ``steps[i]`` steps at ``epsilons[i]``, each stage a fresh :func:`train` (new Adam state,
    new cosine schedule) started from where the previous stage ended. Returns the list of
    :func:`train` results, each with ``epsilon`` and ``steps`` added. ``epsilons`` and ``steps``
    are non-empty lists of the same length."""
    if not isinstance(epsilons, (list, tuple)) or not isinstance(steps, (list, tuple)):
        raise TypeError("epsilons and steps must be lists")
    if not epsilons or len(epsilons) != len(steps):
        raise ValueError(
            f"epsilons and steps must be non-empty and of equal length, got {len(epsilons)} and {len(steps)}"
        )
    out = []
    for eps, n_steps in zip(epsilons, steps):
        result = train(data, theta, eps, n_steps, lr=lr, tau=tau, record=record)
        out.append({"epsilon": eps, "steps": n_steps, **result})
    return out
