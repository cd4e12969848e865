"""Closed-form population loss and gradient, and the one-step update of Part I.

For ``x`` uniform on ``{+1,-1}^d`` the Rademacher fourth moment is

.. math::  \\mathbb E[x_i x_j x_k x_l] = \\delta_{ij}\\delta_{kl} + \\delta_{ik}\\delta_{jl}
           + \\delta_{il}\\delta_{jk} - 2\\,\\delta_{ijkl},

so for any weight vectors ``g, h`` (not only softmax ones) and ``y = -x_a x_b``, ``a != b``:

.. math::  L(g, h) = \\tfrac12\\mathbb E[(f(x) - y)^2]
           = \\tfrac12\\big(\\|g\\|^2\\|h\\|^2 + 2(g\\cdot h)^2 - 2\\textstyle\\sum_i g_i^2 h_i^2\\big)
             - (g_a h_b + g_b h_a) + \\tfrac12 .

Everything here costs ``O(d)`` per instance once the weights are known, and ``O(d m)`` to get
them, with no sampling and no enumeration.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .checks import as_support, batch_shape, check_embeddings, check_eta, check_query, check_support, check_tensor, check_weights
from .model import attention_kind
from .model import scores_unchecked as scores


def _pair(w: torch.Tensor, support: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(w_a, w_b)`` at the support ``(a, b) = (i*, j*)``, broadcasting the batch shapes."""
    shape = batch_shape(w.shape[:-1], support.shape[:-1])
    w = w.expand(*shape, w.shape[-1])
    picked = w.gather(-1, support.to(w.device).expand(*shape, 2))
    return picked[..., 0], picked[..., 1]


def loss_from_weights(g: torch.Tensor, h: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """Population loss ``L(g, h)`` of the module docstring for weights ``g, h [..., d]``, shape ``[...]``.

    Raises ArgumentTypeError unless ``g``, ``h`` are real floating tensors and ``support`` an
    integer tensor; ValueError unless ``g`` and ``h`` share one length ``d``, dtype and device, and
    ``support [..., 2]`` holds distinct positions ``i* != j*`` in ``[0, d)`` with broadcasting batch
    shapes. Non-finite weights are not refused: they give a non-finite loss (a diverging run).
    """
    support = _check_weights_and_support(g, h, support)
    gg, hh, gh = (g * g).sum(-1), (h * h).sum(-1), (g * h).sum(-1)
    diag = (g * g * h * h).sum(-1)
    g_a, g_b = _pair(g, support)
    h_a, h_b = _pair(h, support)
    return 0.5 * (gg * hh + 2 * gh**2 - 2 * diag) - (g_a * h_b + g_b * h_a) + 0.5


def grad_from_weights(
    g: torch.Tensor, h: torch.Tensor, support: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradients of ``L(g, h)`` with respect to the weights:

    ``dL/dg = ||h||^2 g + 2 (g.h) h - 2 g h^2 - (h_b e_a + h_a e_b)`` and the same with
    ``g`` and ``h`` swapped. Raises as :func:`loss_from_weights` does.
    """
    support = _check_weights_and_support(g, h, support)
    shape = batch_shape(g.shape[:-1], h.shape[:-1], support.shape[:-1])
    g, h = g.expand(*shape, g.shape[-1]), h.expand(*shape, h.shape[-1])
    support = support.to(g.device).expand(*shape, 2)
    gg, hh = (g * g).sum(-1, keepdim=True), (h * h).sum(-1, keepdim=True)
    gh = (g * h).sum(-1, keepdim=True)
    du_g = hh * g + 2 * gh * h - 2 * g * h * h
    du_h = gg * h + 2 * gh * g - 2 * h * g * g
    # The label term -(g_a h_b + g_b h_a) touches only the two support coordinates.
    h_at = h.gather(-1, support.flip(-1))  # (h_b, h_a)
    g_at = g.gather(-1, support.flip(-1))  # (g_b, g_a)
    du_g = du_g.scatter_add(-1, support, -h_at)
    du_h = du_h.scatter_add(-1, support, -g_at)
    return du_g, du_h


def _check_weights_and_support(g, h, support) -> torch.Tensor:
    d = check_weights(g, h)
    support = as_support(support)
    check_support(support, d)
    batch_shape(g.shape[:-1], h.shape[:-1], support.shape[:-1])
    return support


def check_model_inputs(V, theta, theta_tilde, support) -> None:
    """Validate embeddings, both queries and the support together (types, shapes, ranges, dtypes,
    finiteness), raising as :func:`population_loss` documents."""
    d, m = check_embeddings(V)
    check_query("theta", theta, m, like=V)
    check_query("theta_tilde", theta_tilde, m, like=V)
    check_support(support, d)
    batch_shape(V.shape[:-2], theta.shape[:-1], theta_tilde.shape[:-1], support.shape[:-1])


def population_loss(
    V: torch.Tensor,
    theta: torch.Tensor,
    theta_tilde: torch.Tensor,
    support: torch.Tensor,
    kind: str = "softmax",
) -> torch.Tensor:
    """Exact ``L = 1/2 E_x[(f(x) - y)^2]`` over ``x`` uniform on ``{+1,-1}^d``, shape ``[...]``.

    Raises ArgumentTypeError unless ``V``, ``theta``, ``theta_tilde`` are real floating tensors,
    ``support`` an integer tensor and ``kind`` a string; ValueError unless ``V [..., d, m]`` has
    ``d >= 2``, the queries are ``[..., m]`` in ``V``'s dtype and device, everything is finite,
    ``support [..., 2]`` holds ``i* != j*`` in ``[0, d)``, the batch shapes broadcast and ``kind``
    is registered.
    """
    check_model_inputs(V, theta, theta_tilde, support)
    phi = attention_kind(kind)
    return loss_from_weights(phi.weights(scores(V, theta)), phi.weights(scores(V, theta_tilde)), support)


def population_grad(
    V: torch.Tensor,
    theta: torch.Tensor,
    theta_tilde: torch.Tensor,
    support: torch.Tensor,
    kind: str = "softmax",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact gradient ``(dL/dtheta, dL/dtheta~)``, each ``[..., m]``.

    Chain rule through ``s = V theta``: ``dL/dtheta = V^T J_phi(s)^T dL/dg``; for softmax
    ``J^T u = g * u - g <g, u>``. Raises as :func:`population_loss` does.
    """
    check_model_inputs(V, theta, theta_tilde, support)
    return population_grad_unchecked(V, theta, theta_tilde, support, kind)


def population_grad_unchecked(
    V: torch.Tensor,
    theta: torch.Tensor,
    theta_tilde: torch.Tensor,
    support: torch.Tensor,
    kind: str = "softmax",
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`population_grad` without input validation, for loops that check their inputs once
    (and for trajectories allowed to diverge, whose non-finite queries must not raise)."""
    phi = attention_kind(kind)
    s, s_tilde = scores(V, theta), scores(V, theta_tilde)
    g, h = phi.weights(s), phi.weights(s_tilde)
    du_g, du_h = grad_from_weights(g, h, support)
    r, r_tilde = phi.pullback(s, g, du_g), phi.pullback(s_tilde, h, du_h)
    Vt = V.transpose(-1, -2)
    return (Vt @ r.unsqueeze(-1)).squeeze(-1), (Vt @ r_tilde.unsqueeze(-1)).squeeze(-1)


class OneStepResult(NamedTuple):
    """State after one population gradient step from the antisymmetric init ``(theta0, -theta0)``."""

    theta: torch.Tensor  #: query of the first head after the step, ``[..., m]``
    theta_tilde: torch.Tensor  #: query of the second head after the step, ``[..., m]``
    loss: torch.Tensor  #: population loss after the step, ``[...]``
    attention: torch.Tensor  #: weights of the first head after the step, ``[..., d]``
    attention_tilde: torch.Tensor  #: weights of the second head after the step, ``[..., d]``


def one_step(
    V: torch.Tensor,
    theta0: torch.Tensor,
    support: torch.Tensor,
    eta: float | torch.Tensor,
    kind: str = "softmax",
) -> OneStepResult:
    """One population gradient step of size ``eta`` from ``(theta0, -theta0)``:

    ``theta1 = theta0 - eta dL/dtheta``, ``theta1~ = -theta0 - eta dL/dtheta~``.
    Finite for ``eta`` up to ``1e12`` because softmax is evaluated with log-sum-exp.

    Raises as :func:`population_loss` does (with ``theta_tilde = -theta0``), and
    ArgumentTypeError unless ``eta`` is a real number or tensor (not complex, bool or str);
    ValueError unless ``eta`` is finite, ``>= 0`` and broadcasts against the batch shape.
    """
    check_tensor("theta0", theta0, 1, real=True)
    theta_tilde0 = -theta0
    check_model_inputs(V, theta0, theta_tilde0, support)
    eta = check_eta(eta, theta0, batch_shape(V.shape[:-2], theta0.shape[:-1], support.shape[:-1]))
    phi = attention_kind(kind)
    grad, grad_tilde = population_grad_unchecked(V, theta0, theta_tilde0, support, kind)
    step = eta.unsqueeze(-1)
    theta1, theta_tilde1 = theta0 - step * grad, theta_tilde0 - step * grad_tilde
    g, h = phi.weights(scores(V, theta1)), phi.weights(scores(V, theta_tilde1))
    return OneStepResult(theta1, theta_tilde1, loss_from_weights(g, h, support), g, h)
