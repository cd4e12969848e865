"""Regularised training of a one-block softmax transformer on exactly interpolable data (chapter 15).

The authors' Tikhonov experiment (``tikhonov/`` in github.com/DCN-FAU-AvH/exactInterpTF), rebuilt on
:mod:`sxor.interp.layers`:

* data: ``X_j`` with i.i.d. ``U[0, 1]`` entries, ``[n, d]``; one target point per sequence,
  ``y_j = FF*(mean(X_j))``, produced by the known block ``theta*``: an SA layer with ``A = 0``,
  ``rho = 0``, ``V = I`` (the exact sequence mean for every temperature), then an FF layer with
  ``eta = 1`` and ``W, U, b`` i.i.d. ``U[0, 1]`` (width 4);
* model: one block SA -> FF (the order of the authors' experiment code), softmax SA with rank-one
  ``A = q k^T`` at ``tau = 1``, scalar ``rho``, full ``V``, FF of width 4 with scalar ``eta``;
* loss: ``J(theta) = (1/N) sum_j max_i |T_theta(X_j)_i - y_j|^2`` (squared Hausdorff distance to
  the singleton ``{y_j}``), computed with :func:`sxor.interp.layers.hausdorff_squared`;
* training: Adam with coupled weight decay ``epsilon`` (``torch.optim.Adam(weight_decay=eps)``,
  i.e. the gradient of ``J + (eps/2) |theta|^2``), cosine-annealed learning rate, full batch.

Tikhonov bound (proved in chapter 15): a global minimiser ``theta_eps`` of
``J_eps = J + (eps/2)|theta|^2`` has ``J(theta_eps) <= (eps/2)|theta*|^2 <= eps |theta*|^2``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..progress import progress
from .layers import feed_forward, hausdorff_squared, self_attention

PARAMETER_NAMES = ("q", "k", "rho", "V", "eta", "W", "U", "b")


@dataclass
class TikhonovData:
    """Inputs ``X [N, n, d]``, targets ``Y [N, 1, d]`` and the exact interpolant ``theta_star``."""

    X: torch.Tensor
    Y: torch.Tensor
    theta_star: dict[str, torch.Tensor]

    @property
    def theta_star_sq_norm(self) -> float:
        """``|theta*|^2``: the sum of squares of all its parameters (``q = k = rho = 0``)."""
        return float(sum((p.double() ** 2).sum() for p in self.theta_star.values()))


def block(X: torch.Tensor, theta: dict[str, torch.Tensor], tau: float = 1.0) -> torch.Tensor:
    """One block SA -> FF: ``FF(SA(X))`` with ``A = q k^T`` (rank one), softmax at ``tau``.

    ``SA(X)_i = rho x_i + V sum_l pi_il x_l`` and ``FF(z) = eta z + W relu(U z + b)``; the residual
    terms are added here (``rho X``, ``eta Z``) so that ``rho`` and ``eta`` stay differentiable, and
    the rest is :func:`~sxor.interp.layers.self_attention` / :func:`~sxor.interp.layers.feed_forward`
    with zero residual weight."""
    A = torch.outer(theta["q"], theta["k"])
    Z = self_attention(X, A, 0.0, theta["V"], tau) + theta["rho"] * X
    return feed_forward(Z, 0.0, theta["W"], theta["U"], theta["b"]) + theta["eta"] * Z


def loss(X: torch.Tensor, Y: torch.Tensor, theta: dict[str, torch.Tensor], tau: float = 1.0) -> torch.Tensor:
    """``J(theta) = mean_j d_H(T(X_j), {y_j})^2`` for ``X [N, n, d]``, ``Y [N, 1, d]``."""
    return hausdorff_squared(block(X, theta, tau), Y).mean()


def tikhonov_data(N: int = 10, n: int = 100, d: int = 16, width: int = 4, *, seed: int = 0,
                  dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> TikhonovData:
    """The authors' dataset: ``X ~ U[0,1]^(N x n x d)``, ``y_j = FF*(SA*(X_j))`` (see module doc)."""
    if min(N, n, d, width) < 1:
        raise ValueError(f"N, n, d, width must be >= 1, got {N}, {n}, {d}, {width}")
    gen = torch.Generator(device=device or "cpu").manual_seed(seed)
    kw = {"dtype": dtype, "device": device}
    X = torch.rand(N, n, d, generator=gen, **kw)
    theta = {
        "q": torch.zeros(d, **kw), "k": torch.zeros(d, **kw), "rho": torch.zeros((), **kw),
        "V": torch.eye(d, **kw), "eta": torch.ones((), **kw),
        "W": torch.rand(d, width, generator=gen, **kw), "U": torch.rand(width, d, generator=gen, **kw),
        "b": torch.rand(width, generator=gen, **kw),
    }
    Y = block(X, theta)[:, :1, :]  # every token of T*(X_j) is the same point y_j
    return TikhonovData(X, Y, theta)


def init_parameters(d: int, width: int = 4, *, seed: int = 0, scale: float = 1.0, dtype: torch.dtype = torch.float64,
                    device: torch.device | str | None = None) -> dict[str, torch.Tensor]:
    """PyTorch-default-like initialisation (as in the authors' code): matrices and vectors
    ``U[-s/sqrt(fan_in), s/sqrt(fan_in)]`` with ``s = scale``; ``rho = eta = 0``."""
    gen = torch.Generator(device=device or "cpu").manual_seed(seed)
    kw = {"dtype": dtype, "device": device}

    def uniform(shape, fan_in):
        return (2 * torch.rand(*shape, generator=gen, **kw) - 1) * scale / math.sqrt(fan_in)

    theta = {"q": uniform((d,), d), "k": uniform((d,), d), "rho": torch.zeros((), **kw), "V": uniform((d, d), d),
             "eta": torch.zeros((), **kw), "W": uniform((d, width), width), "U": uniform((width, d), d),
             "b": uniform((width,), d)}
    return {name: p.requires_grad_(True) for name, p in theta.items()}


def perturbed(theta: dict[str, torch.Tensor], sigma: float, *, seed: int = 0) -> dict[str, torch.Tensor]:
    """``theta + sigma * N(0, 1)`` entrywise (a fresh, trainable copy): an initialisation in the
    basin of the exact interpolant ``theta*`` when ``sigma`` is small."""
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma}")
    first = next(iter(theta.values()))
    gen = torch.Generator(device=first.device).manual_seed(seed)
    return {name: (p.detach() + sigma * torch.randn(p.shape, generator=gen, dtype=p.dtype, device=p.device)).requires_grad_(True)
            for name, p in theta.items()}


def sq_norm(theta: dict[str, torch.Tensor]) -> float:
    """``|theta|^2`` over every parameter."""
    return float(sum((p.detach().double() ** 2).sum() for p in theta.values()))


def train(data: TikhonovData, theta: dict[str, torch.Tensor], epsilon: float, steps: int, *, lr: float = 1e-3,
          tau: float = 1.0, record_every: int = 0) -> dict:
    """Adam (``weight_decay = epsilon``, coupled), cosine-annealed over ``steps``, full batch.

    Trains ``theta`` in place and returns ``{"loss": J at the end, "min_loss": smallest J seen,
    "objective": J + (eps/2)|theta|^2 at the end, "sq_norm": |theta|^2, "curve": [(step, J)]}``."""
    if epsilon < 0 or steps < 1:
        raise ValueError(f"need epsilon >= 0 and steps >= 1, got {epsilon}, {steps}")
    params = list(theta.values())
    opt = torch.optim.Adam(params, lr=lr, weight_decay=epsilon)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    best, curve = math.inf, []
    for step in progress(range(1, steps + 1), desc=f"eps={epsilon:g}"):
        opt.zero_grad()
        J = loss(data.X, data.Y, theta, tau)
        J.backward()
        opt.step()
        sched.step()
        value = float(J.detach())
        best = min(best, value)
        if record_every and (step % record_every == 0 or step == 1):
            curve.append((step, value))
    with torch.no_grad():
        final = float(loss(data.X, data.Y, theta, tau))
    best = min(best, final)
    return {"loss": final, "min_loss": best, "objective": final + epsilon / 2 * sq_norm(theta),
            "sq_norm": sq_norm(theta), "curve": curve}
