r"""Population gradient descent of ``k`` heads at any ``d``, through the closed form.

The gradient is :func:`~sxor.xor.kparity_population.kparity_population_grad` (no enumeration), so
a step costs :math:`O(kdm)` per instance. Three step-size rules (:data:`STEP_RULES`), with
:math:`g_t` the gradient with respect to all ``k`` queries of one instance:

* ``"fixed"``: :math:`\theta_{t+1} = \theta_t - c\,d^k g_t`. At a start with near-uniform
  heads the gradient scales like :math:`d^{-k}` (each head's signal at a target is a product of
  the other :math:`k-1` heads' weights, :math:`d^{-(k-1)}`, times the softmax Jacobian,
  :math:`d^{-1}`), so :math:`c` is the step in units of that scale;
* ``"normalised"``: :math:`\theta_{t+1} = \theta_t - c\,g_t/\|g_t\|` (a step of length ``c``);
* ``"decaying"``: :math:`\theta_{t+1} = \theta_t - c\,(1+t)^{-1/2}g_t/\|g_t\|`;
* ``"relative"``: :math:`\theta_{t+1} = \theta_t - c\,\bar\rho_t\,g_t/\|g_t\|` with
  :math:`\bar\rho_t = \|\theta_t\|_F/\sqrt k` the heads' root-mean-square norm: small steps while
  the heads sort themselves, geometric growth of the norm once they have.

Success is chapter 9's: loss below ``0.01`` and a one-to-one assignment of heads to targets,
each with mass at least ``0.9`` (:func:`sxor.xor.kparity.parity_specialised`). A run stops at
its first success; :func:`classify_failures` names why the others failed.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from .checks import check_generator, check_int, check_real, check_tensor
from .kparity import parity_specialised, parity_target_masses
from .kparity_population import kparity_grad_from_weights, kparity_population_grad
from .model import _softmax_pullback
from .sweeps import random_instances

#: The step-size rules of :func:`kparity_descent_rule`.
STEP_RULES = ("fixed", "normalised", "decaying", "relative")
#: The initialisations of :func:`kparity_inits`.
INIT_SCHEMES = ("star", "random")
#: Names of :func:`classify_failures`, in the order they are tested.
FAILURES = ("collision", "off_support", "frozen", "slow")


def kparity_inits(
    theta0: torch.Tensor, k: int, scheme: str, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    r"""``k`` initial queries ``[..., k, m]`` from ``theta0 [..., m]``.

    ``"star"``: ``theta0`` rotated by :math:`2\pi j/k`, :math:`j = 0..k-1`, in a random plane
    through it (:math:`(\theta_0, -\theta_0)` for ``k = 2``; for ``k = 3`` the draws and the
    result of :func:`sxor.xor.kparity.parity_inits`); ``"random"``: ``theta0`` and ``k - 1``
    independent uniform directions.

    Raises
    ------
    ArgumentTypeError, ValueError
        unless ``theta0`` is a finite real tensor with ``m >= 2``, ``k >= 1`` an integer and
        ``scheme`` one of :data:`INIT_SCHEMES`.
    """
    check_tensor("theta0", theta0, 1, real=True, finite=True)
    check_int("k", k, 1)
    check_generator(generator)
    m = theta0.shape[-1]
    if m < 2:
        raise ValueError(f"k-head inits need m >= 2, got m={m}")
    if scheme not in INIT_SCHEMES:
        raise ValueError(f"unknown init scheme {scheme!r}; choose one of {INIT_SCHEMES}")
    if k == 1:
        return theta0.unsqueeze(-2)
    if k == 2 and scheme == "star":
        return torch.stack([theta0, -theta0], -2)
    z = torch.randn(
        *theta0.shape[:-1], k - 1, m, generator=generator, dtype=theta0.dtype, device=theta0.device
    )
    if scheme == "random":
        return torch.cat([theta0.unsqueeze(-2), z / z.norm(dim=-1, keepdim=True)], -2)
    u = theta0 / theta0.norm(dim=-1, keepdim=True)
    w = z[..., 0, :] - (z[..., 0, :] * u).sum(-1, keepdim=True) * u
    w = w / w.norm(dim=-1, keepdim=True) * theta0.norm(dim=-1, keepdim=True)
    angles = [2 * math.pi * j / k for j in range(k)]
    return torch.stack([math.cos(a) * theta0 + math.sin(a) * w for a in angles], -2)


def kparity_instances(num: int, d: int, m: int, k: int, scheme: str, *, seed: int = 0, device=None):
    """``(V [num, d, m], thetas0 [num, k, m], support [num, k])``: ``V`` and ``theta0`` from
    :func:`sxor.xor.sweeps.random_instances`, the support (``k`` distinct positions) and the
    initial queries from one generator seeded with ``seed`` (for ``k = 3`` the instances of
    :func:`~sxor.experiments.beyond_two_bits.k3_instances`)."""
    check_int("k", k, 1)
    if k > d:
        raise ValueError(f"need k <= d distinct positions, got k={k}, d={d}")
    inst = random_instances(num, d, m, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    support = torch.stack([torch.randperm(d, generator=gen)[:k] for _ in range(num)])
    thetas0 = kparity_inits(inst.theta0, k, scheme, generator=gen)
    return inst.V.to(device), thetas0.to(device), support.to(device)


class ScaleRun(NamedTuple):
    """A batch of runs of :func:`kparity_descent_rule`."""

    loss: torch.Tensor  #: per step, the median over the batch, ``[T + 1]``
    first_success: torch.Tensor  #: first step with success, ``-1`` if none, ``[B]``
    rises: torch.Tensor  #: steps before success at which the loss rose, ``[B]``
    final_loss: torch.Tensor  #: loss at the end of each run, ``[B]``
    weights: torch.Tensor  #: attention weights at the end of each run, ``[B, k, d]``


def _success(loss, weights, support, loss_threshold, mass_threshold):
    masses = parity_target_masses(weights, support)
    return (loss < loss_threshold) & parity_specialised(masses, mass_threshold)


def kparity_descent_rule(
    V: torch.Tensor,
    thetas0: torch.Tensor,
    support: torch.Tensor,
    rule: str,
    c: float,
    steps: int,
    *,
    loss_threshold: float = 0.01,
    mass_threshold: float = 0.9,
) -> ScaleRun:
    """Population gradient descent (softmax heads) with a step rule of the module docstring.

    Each run stops at its first success; the batch stops when every run has. A rise is a step
    at which the loss grows by more than ``1e-12`` relative.

    Raises
    ------
    ValueError
        for an unknown ``rule``, ``c`` not finite and ``> 0`` or ``steps < 1``; and as
        :func:`~sxor.xor.kparity_population.kparity_population_grad` for the instances.
    """
    if rule not in STEP_RULES:
        raise ValueError(f"unknown step rule {rule!r}; choose one of {STEP_RULES}")
    check_real("c", c, minimum=0, strict=True)
    check_int("steps", steps, 1)
    kparity_population_grad(V, thetas0, support)  # validates the instances once
    d, k = V.shape[-2], thetas0.shape[-2]
    B = thetas0.shape[0]
    thetas = thetas0.clone()
    dev = V.device
    first = torch.full((B,), -1, dtype=torch.long, device=dev)
    rises = torch.zeros(B, dtype=torch.long, device=dev)
    active = torch.ones(B, dtype=torch.bool, device=dev)
    final_loss = torch.full((B,), math.nan, dtype=V.dtype, device=dev)
    weights = torch.zeros(B, k, d, dtype=V.dtype, device=dev)
    medians, prev = [], None
    Vt = V.transpose(-1, -2)
    for t in range(steps + 1):
        s = thetas @ Vt  # [B, k, d]
        w = torch.softmax(s, -1)
        loss, du = kparity_grad_from_weights(w, support)
        final_loss = torch.where(active, loss, final_loss)
        weights = torch.where(active.view(-1, 1, 1), w, weights)
        medians.append(float(final_loss.median()))
        if prev is not None:
            rises += (active & (loss > prev + 1e-12 * prev.abs().clamp(min=1))).long()
        prev = loss
        won = active & _success(loss, w, support, loss_threshold, mass_threshold)
        first[won] = t
        active &= ~won
        if t == steps or not bool(active.any()):
            break
        grad = _softmax_pullback(s, w, du) @ V  # [B, k, m]
        norm = grad.flatten(1).norm(dim=-1).clamp(min=1e-300).view(-1, 1, 1)
        if rule == "fixed":
            step = c * float(d) ** k * grad
        elif rule == "normalised":
            step = c * grad / norm
        elif rule == "decaying":
            step = c / math.sqrt(1 + t) * grad / norm
        else:
            size = thetas.flatten(1).norm(dim=-1).view(-1, 1, 1) / math.sqrt(k)
            step = c * size * grad / norm
        thetas = thetas - active.view(-1, 1, 1) * step
    return ScaleRun(
        torch.tensor(medians, dtype=torch.float64),
        first.cpu(),
        rises.cpu(),
        final_loss.cpu(),
        weights,
    )


def classify_failures(weights: torch.Tensor, support: torch.Tensor, failed: torch.Tensor) -> dict:
    """Counts of the failed runs by cause, tested in the order of :data:`FAILURES`.

    ``collision``: two heads put their largest weight, at least 0.5, on one position;
    ``off_support``: a head puts its largest weight, at least 0.5, off the support;
    ``frozen``: some head's largest weight is below 0.5 (it never concentrated); ``slow``: the
    heads sit on distinct targets but the thresholds were not reached within the steps.
    """
    mass, top = weights.max(-1)
    k = weights.shape[-2]
    sharp = mass >= 0.5
    same = torch.zeros_like(failed)
    for a in range(k):
        for b in range(a + 1, k):
            same |= sharp[:, a] & sharp[:, b] & (top[:, a] == top[:, b])
    off = (sharp & ~(top.unsqueeze(-1) == support.unsqueeze(-2)).any(-1)).any(-1)
    frozen = (~sharp).any(-1)
    out, left = {}, failed.clone()
    for name, hit in zip(FAILURES, [same, off, frozen, torch.ones_like(failed)]):
        out[name] = int((left & hit).sum())
        left &= ~hit
    return out
