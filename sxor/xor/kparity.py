"""The ``k``-sparse parity model of chapter 9: ``k`` heads on :math:`y = \\prod_{i \\in S} x_i`.

Labels and predictions (:func:`parity_labels`, :func:`parity_predict`), the exact population
loss by enumeration of all :math:`2^d` inputs (:func:`parity_population_loss`, :math:`d \\le 16`),
the success criterion (one head per target, :func:`parity_target_masses`,
:func:`parity_specialised`), population gradient descent (:func:`parity_descent`) and the
three-head initialisations (:func:`parity_inits`). The two-head sparse-XOR dynamics are in
:mod:`sxor.xor.dynamics`.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import torch

from .checks import (
    as_support,
    check_embeddings,
    check_eta,
    check_generator,
    check_int,
    check_query,
    check_real,
    check_signs,
    check_support,
    check_tensor,
)
from .data import all_inputs
from .model import attention_kind


def parity_labels(x: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    r"""Parity labels :math:`y = -\prod_{i \in S} x_i`, shape ``[..., n]`` (:math:`k = 2`: sparse XOR).

    Parameters
    ----------
    x
        Inputs ``[..., n, d]``.
    support
        Positions :math:`S`, ``[..., k]``.

    Raises
    ------
    ArgumentTypeError
        unless ``x`` is a tensor and ``support`` an integer tensor.
    ValueError
        unless ``x`` has entries :math:`\pm 1` only (0, 0.5, NaN and infinities are refused) and
        ``support`` holds pairwise distinct positions in ``[0, d)``.
    """
    check_tensor("x", x, 2)
    check_signs("x", x)
    support = as_support(support, x.device)
    check_support(support, x.shape[-1], k=None)
    support = torch.as_tensor(support, device=x.device)
    batch = torch.broadcast_shapes(x.shape[:-2], support.shape[:-1])
    n, d = x.shape[-2:]
    k = support.shape[-1]
    picked = x.expand(*batch, n, d).gather(-1, support.long().unsqueeze(-2).expand(*batch, n, k))
    return -picked.prod(-1)


def parity_predict(x: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    r"""Output :math:`f(x) = -\prod_h (\gamma_h \cdot x)` of ``k`` heads.

    Parameters
    ----------
    x
        Inputs ``[..., n, d]``.
    weights
        Attention weights of the heads, ``[..., k, d]``.
    """
    return -(x @ weights.transpose(-1, -2)).prod(-1)


def check_parity_support(support: torch.Tensor, d: int) -> None:
    r"""Check ``support [..., k]``: integer positions in ``[0, d)``, pairwise distinct.

    :func:`sxor.xor.checks.check_support` with any ``k``.

    Parameters
    ----------
    support
        Positions ``[..., k]``.
    d
        Input dimension.
    """
    check_support(support, d, k=None)


def parity_population_loss(
    V: torch.Tensor, thetas: torch.Tensor, support: torch.Tensor, kind: str = "softmax"
) -> torch.Tensor:
    r"""Exact :math:`\frac{1}{2} E_x[(f(x) - y)^2]` for ``k`` heads by enumerating all :math:`2^d` inputs.

    :math:`y = -\prod_{i \in S} x_i`. Differentiable.

    Parameters
    ----------
    V
        Key embeddings ``[..., d, m]``, :math:`d \le 16`.
    thetas
        Queries of the heads, ``[..., k, m]``.
    support
        Positions :math:`S`, ``[..., k]``: one head per position.
    kind
        Name of the attention map.

    Raises
    ------
    ArgumentTypeError, ValueError
        as :func:`~sxor.xor.population.population_loss` does, and ValueError unless ``d <= 16`` and
        there is one head per support position.
    """
    d, m = check_embeddings(V)
    check_query("thetas", thetas, m, like=V)
    check_tensor("thetas", thetas, 2)
    check_parity_support(support, d)
    if d > 16:
        raise ValueError(f"exact enumeration is limited to d <= 16, got d={d}")
    if thetas.shape[-2] != support.shape[-1]:
        raise ValueError(
            f"need one head per support position: {thetas.shape[-2]} heads, k={support.shape[-1]}"
        )
    weights = attention_kind(kind).weights((V.unsqueeze(-3) @ thetas.unsqueeze(-1)).squeeze(-1))
    x = all_inputs(d, dtype=weights.dtype, device=weights.device)
    residual = parity_predict(x, weights) - parity_labels(x, support)
    return 0.5 * (residual**2).mean(-1)


def parity_target_masses(weights: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    r"""Masses ``M[..., head, target]``: weight of head ``h`` on support position ``t``, ``[..., k, k]``.

    Parameters
    ----------
    weights
        Attention weights of the heads, ``[..., k, d]``.
    support
        Positions ``[..., k]``.
    """
    k = support.shape[-1]
    idx = support.to(weights.device, torch.int64).unsqueeze(-2).expand(*weights.shape[:-1], k)
    return weights.gather(-1, idx)


def parity_specialised(masses: torch.Tensor, mass_threshold: float = 0.9) -> torch.Tensor:
    r"""True where some one-to-one assignment of heads to targets has every mass ``>= mass_threshold``.

    Parameters
    ----------
    masses
        Masses ``[..., k, k]`` from :func:`~sxor.xor.kparity.parity_target_masses`.
    mass_threshold
        Least mass of each head on its assigned target.
    """
    k = masses.shape[-1]
    hit = masses >= mass_threshold
    out = torch.zeros(masses.shape[:-2], dtype=torch.bool, device=masses.device)
    for perm in itertools.permutations(range(k)):
        ok = torch.ones_like(out)
        for head, target in enumerate(perm):
            ok = ok & hit[..., head, target]
        out = out | ok
    return out


class ParityTrajectory(NamedTuple):
    """Population gradient descent on ``k``-sparse parity, recorded at every step."""

    loss: torch.Tensor  #: ``[T + 1, ...]``
    masses: torch.Tensor  #: ``[T + 1, ..., k, k]``
    success: (
        torch.Tensor
    )  #: loss ``< 0.01`` and one head per target with mass ``>= 0.9``, ``[T + 1, ...]``
    thetas: torch.Tensor  #: final queries, ``[..., k, m]``


def parity_descent(
    V: torch.Tensor,
    thetas0: torch.Tensor,
    support: torch.Tensor,
    eta: float,
    steps: int,
    kind: str = "softmax",
    *,
    loss_threshold: float = 0.01,
    mass_threshold: float = 0.9,
) -> ParityTrajectory:
    r"""``steps`` steps of population gradient descent for ``k`` heads on ``k``-sparse parity.

    The gradient is taken by autograd through the exact enumerated loss
    :func:`~sxor.xor.kparity.parity_population_loss`.

    Parameters
    ----------
    V
        Key embeddings ``[..., d, m]``.
    thetas0
        Initial queries ``[..., k, m]``.
    support
        Positions ``[..., k]``.
    eta
        Step size, a finite real ``>= 0``.
    steps
        Number of steps, an integer ``>= 1``.
    kind
        Name of the attention map.
    loss_threshold, mass_threshold
        Thresholds of the success criterion, as in :func:`sxor.xor.metrics.success`.

    Raises
    ------
    ArgumentTypeError, ValueError
        as :func:`~sxor.xor.kparity.parity_population_loss` does, and unless ``steps >= 1`` is an
        integer and ``eta`` a finite real ``>= 0``.
    """
    check_int("steps", steps, 1)
    check_tensor("thetas0", thetas0, 2, real=True)
    eta_t = check_eta(eta, thetas0)
    check_real("loss_threshold", loss_threshold, minimum=0, strict=True)
    check_real("mass_threshold", mass_threshold, minimum=0, strict=True)
    phi = attention_kind(kind)
    thetas = thetas0.detach()
    losses, masses, wins = [], [], []
    for t in range(steps + 1):
        thetas.requires_grad_(True)
        loss = parity_population_loss(V, thetas, support, kind)
        with torch.no_grad():
            weights = phi.weights((V.unsqueeze(-3) @ thetas.unsqueeze(-1)).squeeze(-1))
            M = parity_target_masses(weights, support)
            losses.append(loss.detach())
            masses.append(M)
            wins.append((loss < loss_threshold) & parity_specialised(M, mass_threshold))
        if t < steps:
            (grad,) = torch.autograd.grad(loss.sum(), thetas)
            thetas = (thetas - eta_t * grad).detach()
    return ParityTrajectory(
        torch.stack(losses), torch.stack(masses), torch.stack(wins), thetas.detach()
    )


def parity_inits(
    theta0: torch.Tensor, scheme: str, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    r"""Three initial queries ``[..., 3, m]`` built from ``theta0 [..., m]`` (unit norm).

    * ``"star"``: ``theta0`` and its rotations by 120 and 240 degrees in a random plane through it
      (:math:`\sum_h \theta_h = 0`, the 3-head analogue of :math:`(\theta, -\theta)`);
    * ``"antipodal"``: :math:`(\theta_0, -\theta_0, 0)`;
    * ``"random"``: ``theta0`` and two further independent uniform directions on the sphere.

    Parameters
    ----------
    theta0
        Unit query ``[..., m]``, :math:`m \ge 2`.
    scheme
        ``"star"``, ``"antipodal"`` or ``"random"``.
    generator
        Random generator for the random plane or directions.

    Raises
    ------
    ArgumentTypeError
        unless ``theta0`` is a real floating tensor.
    ValueError
        for an unknown ``scheme``, ``m < 2`` or a non-finite ``theta0``.
    """
    check_tensor("theta0", theta0, 1, real=True, finite=True)
    check_generator(generator)
    m = theta0.shape[-1]
    if m < 2:
        raise ValueError(f"three-head inits need m >= 2, got m={m}")
    if scheme == "antipodal":
        return torch.stack([theta0, -theta0, torch.zeros_like(theta0)], dim=-2)
    z = torch.randn(
        *theta0.shape[:-1], 2, m, generator=generator, dtype=theta0.dtype, device=theta0.device
    )
    if scheme == "random":
        z = z / z.norm(dim=-1, keepdim=True)
        return torch.cat([theta0.unsqueeze(-2), z], dim=-2)
    if scheme == "star":
        u = theta0 / theta0.norm(dim=-1, keepdim=True)
        w = z[..., 0, :] - (z[..., 0, :] * u).sum(-1, keepdim=True) * u
        w = w / w.norm(dim=-1, keepdim=True) * theta0.norm(dim=-1, keepdim=True)
        angles = [0.0, 2 * math.pi / 3, 4 * math.pi / 3]
        return torch.stack([math.cos(a) * theta0 + math.sin(a) * w for a in angles], dim=-2)
    raise ValueError(f"unknown init scheme {scheme!r}; choose 'star', 'antipodal' or 'random'")
