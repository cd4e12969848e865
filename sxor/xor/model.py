r"""The one-layer, two-head attention model of Part I.

Each head has a query :math:`\theta \in \mathbb{R}^m` and attends over the :math:`d` positions
through the scores :math:`s_i = \langle v_i, \theta \rangle` of the frozen keys :math:`v_i`:

.. math::  \gamma = \phi(V\theta), \qquad f(x) = -(\gamma\cdot x)(\tilde\gamma\cdot x),

where :math:`\phi` is the attention map. ``kind="softmax"`` is the paper's exact softmax
:math:`\gamma_i = e^{s_i} / \sum_j e^{s_j}`. Other kinds are registered in ``ATTENTION_KINDS``;
each one supplies its weights and the pullback (vector-Jacobian product) needed by the
closed-form population gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from .checks import (
    check_dtype,
    check_embeddings,
    check_finite,
    check_kind,
    check_query,
    check_query_batch,
    check_tensor,
    check_weights,
)


@dataclass(frozen=True)
class AttentionKind:
    r"""An attention map :math:`\phi`: scores ``[..., d]`` to weights ``[..., d]``, and its pullback.

    ``pullback(scores, weights, u)`` returns :math:`J_\phi(s)^\top u`, the gradient with respect
    to the scores :math:`s` of :math:`\langle u, \phi(s) \rangle`.
    """

    weights: Callable[[torch.Tensor], torch.Tensor]
    pullback: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
    description: str


def _softmax_pullback(scores: torch.Tensor, weights: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    # J = diag(gamma) - gamma gamma^T is symmetric, so J^T u = gamma * u - gamma <gamma, u>.
    return weights * (u - (weights * u).sum(-1, keepdim=True))


def _linear_weights(scores: torch.Tensor) -> torch.Tensor:
    # First-order Taylor expansion of softmax at s = 0: gamma = (1 + s - mean(s)) / d.
    d = scores.shape[-1]
    return (1 + scores - scores.mean(-1, keepdim=True)) / d


def _linear_pullback(scores: torch.Tensor, weights: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    # J = (I - 11^T / d) / d is constant and symmetric, so J^T u = (u - mean(u)) / d.
    return (u - u.mean(-1, keepdim=True)) / scores.shape[-1]


_SQRT2 = 2.0**0.5


def _log_one_plus_erf(scores: torch.Tensor) -> torch.Tensor:
    # 1 + erf(s) = 2 Phi(sqrt(2) s), and log Phi is evaluated stably by log_ndtr (no underflow).
    return torch.special.log_ndtr(_SQRT2 * scores) + torch.log(
        torch.tensor(2.0, dtype=scores.dtype)
    )


def _erf_gain(scores: torch.Tensor) -> torch.Tensor:
    # d/ds log(1 + erf(s)) = (2/sqrt(pi)) exp(-s^2) / (1 + erf(s)), in log space for stability.
    log_density = -(scores**2) + torch.log(torch.tensor(2.0 / torch.pi**0.5, dtype=scores.dtype))
    return torch.exp(log_density - _log_one_plus_erf(scores))


def _erf_weights(scores: torch.Tensor) -> torch.Tensor:
    # (1 + erf(s_i)) / sum_j (1 + erf(s_j)) = softmax(log(1 + erf(s))).
    return torch.softmax(_log_one_plus_erf(scores), dim=-1)


def _erf_pullback(scores: torch.Tensor, weights: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    # Chain rule through softmax(w(s)), w = log(1 + erf): J^T u = w'(s) * gamma * (u - <gamma, u>).
    return _erf_gain(scores) * _softmax_pullback(scores, weights, u)


ATTENTION_KINDS: dict[str, AttentionKind] = {
    "softmax": AttentionKind(
        # torch.softmax subtracts the max score first (log-sum-exp), so huge scores stay finite.
        weights=lambda s: torch.softmax(s, dim=-1),
        pullback=_softmax_pullback,
        description="exact softmax: gamma_i = exp(s_i) / sum_j exp(s_j)",
    ),
    "linear": AttentionKind(
        weights=_linear_weights,
        pullback=_linear_pullback,
        description=(
            "linearised softmax: gamma_i = (1 + s_i - mean_j s_j) / d, the first-order Taylor "
            "expansion of softmax at s = 0; sums to 1, defined for every s, constant Jacobian"
        ),
    ),
    "erf": AttentionKind(
        weights=_erf_weights,
        pullback=_erf_pullback,
        description=(
            "normalised erf: gamma_i = (1 + erf(s_i)) / sum_j (1 + erf(s_j)); softmax with exp "
            "replaced by the positive, increasing, saturating 1 + erf"
        ),
    ),
}


def attention_kind(kind: str) -> AttentionKind:
    """Look up an attention map by name.

    Parameters
    ----------
    kind
        A key of ``ATTENTION_KINDS`` (``"softmax"``, ``"linear"`` or ``"erf"``).

    Raises
    ------
    ArgumentTypeError
        (a TypeError and ValueError) for a name that is not a string.
    ValueError
        for an unknown name.
    """
    check_kind(kind)
    try:
        return ATTENTION_KINDS[kind]
    except KeyError:
        raise ValueError(
            f"unknown attention kind {kind!r}; choose one of {sorted(ATTENTION_KINDS)}"
        ) from None


def scores(V: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    r"""Attention scores :math:`s = V\theta`: ``[..., d]`` from ``V [..., d, m]`` and ``theta [..., m]``.

    Parameters
    ----------
    V
        Frozen key embeddings ``[..., d, m]`` (row :math:`i` is :math:`v_i`).
    theta
        Query ``[..., m]``; batch shapes broadcast against those of ``V``.

    Raises
    ------
    ArgumentTypeError
        unless both are real floating tensors.
    ValueError
        unless ``V`` has ``d >= 2`` rows, ``theta`` has length ``m``, both share one dtype and
        device and are finite.
    """
    _, m = check_embeddings(V)
    check_query("theta", theta, m, like=V)
    check_query_batch("theta", theta, V)
    return scores_unchecked(V, theta)


def scores_unchecked(V: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """:func:`~sxor.xor.model.scores` without input validation, for loops that check their inputs
    once (and for trajectories allowed to diverge, whose non-finite queries must not raise).

    Parameters
    ----------
    V
        Key embeddings ``[..., d, m]``.
    theta
        Query ``[..., m]``.
    """
    return (V @ theta.unsqueeze(-1)).squeeze(-1)


def attention(V: torch.Tensor, theta: torch.Tensor, kind: str = "softmax") -> torch.Tensor:
    r"""Weights :math:`\gamma = \phi(V\theta)` of one head, shape ``[..., d]``.

    Parameters
    ----------
    V
        Key embeddings ``[..., d, m]``.
    theta
        Query ``[..., m]``.
    kind
        Name of the attention map :math:`\phi` in ``ATTENTION_KINDS``.

    Raises
    ------
    ArgumentTypeError, ValueError
        as :func:`~sxor.xor.model.scores` does, and ValueError for an unknown ``kind``.
    """
    _, m = check_embeddings(V)
    check_query("theta", theta, m, like=V)
    check_query_batch("theta", theta, V)
    return attention_kind(kind).weights(scores_unchecked(V, theta))


def predict_from_weights(
    x: torch.Tensor, gamma: torch.Tensor, gamma_tilde: torch.Tensor
) -> torch.Tensor:
    r"""Model output :math:`f(x) = -(\gamma\cdot x)(\tilde\gamma\cdot x)` from the attention weights, shape ``[..., n]``.

    ``x`` is converted to the weights' dtype.

    Parameters
    ----------
    x
        Inputs ``[..., n, d]``.
    gamma
        Weights :math:`\gamma` of the first head, ``[..., d]``.
    gamma_tilde
        Weights :math:`\tilde\gamma` of the second head, ``[..., d]``.

    Raises
    ------
    ArgumentTypeError
        unless the weights are real floating tensors and ``x`` a real tensor.
    ValueError
        unless the weights share one dtype, device and length ``d``, ``x`` has last dimension
        ``d`` and everything is finite.
    """
    d = check_weights(gamma, gamma_tilde, ("gamma", "gamma_tilde"))
    check_finite("gamma", gamma)
    check_finite("gamma_tilde", gamma_tilde)
    check_tensor("x", x, 2)
    check_dtype("x", x.dtype, integer=True)
    if x.shape[-1] != d:
        raise ValueError(f"x has last dimension {x.shape[-1]} but the weights have d={d}")
    try:
        torch.broadcast_shapes(x.shape[:-2], gamma.shape[:-1], gamma_tilde.shape[:-1])
    except RuntimeError:
        raise ValueError(
            f"the batch shape {tuple(x.shape[:-2])} of x [..., n, d] does not broadcast against "
            f"the batch shapes {tuple(gamma.shape[:-1])} and {tuple(gamma_tilde.shape[:-1])} of "
            "the weights [..., d]"
        ) from None
    check_finite("x", x)
    x = x.to(gamma.dtype)
    return -(x @ gamma.unsqueeze(-1)).squeeze(-1) * (x @ gamma_tilde.unsqueeze(-1)).squeeze(-1)


def predict(
    x: torch.Tensor,
    V: torch.Tensor,
    theta: torch.Tensor,
    theta_tilde: torch.Tensor,
    kind: str = "softmax",
) -> torch.Tensor:
    r"""Model output :math:`f(x) = -(\gamma\cdot x)(\tilde\gamma\cdot x)` for inputs ``x [..., n, d]``, shape ``[..., n]``.

    Here :math:`\gamma = \phi(V\theta)` and :math:`\tilde\gamma = \phi(V\tilde\theta)`.

    Parameters
    ----------
    x
        Inputs ``[..., n, d]``.
    V
        Key embeddings ``[..., d, m]``.
    theta
        Query :math:`\theta` of the first head, ``[..., m]``.
    theta_tilde
        Query :math:`\tilde\theta` of the second head, ``[..., m]``.
    kind
        Name of the attention map :math:`\phi` in ``ATTENTION_KINDS``.

    Raises
    ------
    ArgumentTypeError
        unless ``V``, ``theta``, ``theta_tilde`` are real floating tensors and ``x`` a real tensor.
    ValueError
        unless the shapes agree (``V [..., d, m]``, queries ``[..., m]``, ``x [..., n, d]``),
        the queries share ``V``'s dtype and device, everything is finite and ``kind`` is
        registered.
    """
    d, m = check_embeddings(V)
    check_query("theta", theta, m, like=V)
    check_query("theta_tilde", theta_tilde, m, like=V)
    check_query_batch("theta", theta, V)
    check_query_batch("theta_tilde", theta_tilde, V)
    check_tensor("x", x, 2)
    check_dtype("x", x.dtype, integer=True)
    if x.shape[-1] != d:
        raise ValueError(f"x has last dimension {x.shape[-1]} but the embeddings have d={d}")
    check_finite("x", x)
    gamma = attention(V, theta, kind)
    gamma_tilde = attention(V, theta_tilde, kind)
    return predict_from_weights(x.to(gamma.dtype), gamma, gamma_tilde)
