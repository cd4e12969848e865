"""The one-layer, two-head attention model of Part I.

Each head has a query ``theta in R^m`` and attends over the ``d`` positions through the scores
``s_i = <v_i, theta>`` of the frozen keys ``v_i``:

.. math::  \\gamma = \\phi(V\\theta), \\qquad f(x) = -(\\gamma\\cdot x)(\\tilde\\gamma\\cdot x),

where ``phi`` is the attention map. ``kind="softmax"`` is the paper's exact softmax
``gamma_i = exp(s_i) / sum_j exp(s_j)``. Other kinds are registered in :data:`ATTENTION_KINDS`;
each one supplies its weights and the pullback (vector-Jacobian product) needed by the
closed-form population gradient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from ._checks import check_embeddings, check_query, check_tensor


@dataclass(frozen=True)
class AttentionKind:
    """An attention map ``phi: scores [..., d] -> weights [..., d]`` and its pullback.

    ``pullback(scores, weights, u)`` returns ``J_phi(scores)^T u``, the gradient with respect to
    the scores of ``<u, phi(scores)>``.
    """

    weights: Callable[[torch.Tensor], torch.Tensor]
    pullback: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
    description: str


def _softmax_pullback(scores: torch.Tensor, weights: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    # J = diag(gamma) - gamma gamma^T is symmetric, so J^T u = gamma * u - gamma <gamma, u>.
    return weights * (u - (weights * u).sum(-1, keepdim=True))


ATTENTION_KINDS: dict[str, AttentionKind] = {
    "softmax": AttentionKind(
        # torch.softmax subtracts the max score first (log-sum-exp), so huge scores stay finite.
        weights=lambda s: torch.softmax(s, dim=-1),
        pullback=_softmax_pullback,
        description="exact softmax: gamma_i = exp(s_i) / sum_j exp(s_j)",
    ),
}


def attention_kind(kind: str) -> AttentionKind:
    """Look up an attention map by name, raising ValueError for an unknown one."""
    try:
        return ATTENTION_KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown attention kind {kind!r}; choose one of {sorted(ATTENTION_KINDS)}") from None


def scores(V: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Attention scores ``s = V theta``: ``[..., d]`` from ``V [..., d, m]`` and ``theta [..., m]``."""
    return (V @ theta.unsqueeze(-1)).squeeze(-1)


def attention(V: torch.Tensor, theta: torch.Tensor, kind: str = "softmax") -> torch.Tensor:
    """Weights ``gamma = phi(V theta)`` of one head, shape ``[..., d]``."""
    _, m = check_embeddings(V)
    check_query("theta", theta, m)
    return attention_kind(kind).weights(scores(V, theta))


def predict_from_weights(x: torch.Tensor, gamma: torch.Tensor, gamma_tilde: torch.Tensor) -> torch.Tensor:
    """``f(x) = -(gamma . x)(gamma~ . x)`` for ``x [..., n, d]`` and weights ``[..., d]``."""
    return -(x @ gamma.unsqueeze(-1)).squeeze(-1) * (x @ gamma_tilde.unsqueeze(-1)).squeeze(-1)


def predict(
    x: torch.Tensor,
    V: torch.Tensor,
    theta: torch.Tensor,
    theta_tilde: torch.Tensor,
    kind: str = "softmax",
) -> torch.Tensor:
    """Model output ``f(x) = -(gamma . x)(gamma~ . x)`` for inputs ``x [..., n, d]``, shape ``[..., n]``."""
    d, m = check_embeddings(V)
    check_query("theta_tilde", theta_tilde, m)
    check_tensor("x", x, 2)
    if x.shape[-1] != d:
        raise ValueError(f"x has last dimension {x.shape[-1]} but the embeddings have d={d}")
    gamma = attention(V, theta, kind)
    gamma_tilde = attention(V, theta_tilde, kind)
    return predict_from_weights(x.to(gamma.dtype), gamma, gamma_tilde)
