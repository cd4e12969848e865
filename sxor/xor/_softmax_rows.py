"""The elementwise work of a softmax step, fused over the two stacked heads.

For :func:`sxor.xor.population.one_step` with softmax heads of scores ``s`` and ``-s``: the
gradient pulled back through both softmaxes and the loss after the step, computed on the stacked
weights ``W = [g, h] [..., 2, d]`` in a few passes instead of one per formula (equal to rounding).
"""

from __future__ import annotations

import torch

from .checks import batch_shape


def _gram_and_pair(W: torch.Tensor, support: torch.Tensor):
    """For stacked weights ``W = [g, h] [..., 2, d]``: ``W`` expanded to the support's batch, the
    Gram matrix ``W W^T [..., 2, 2]`` (``g.g, g.h, h.h`` in one product), ``P = g * h`` and the
    support indices ``[..., 2, 2]`` (the same pair for both rows)."""
    shape = batch_shape(W.shape[:-2], support.shape[:-1])
    W = W.expand(*shape, *W.shape[-2:])
    sup = support.to(W.device, torch.int64).unsqueeze(-2).expand(*shape, 2, 2)  # any integer dtype
    return W, W @ W.transpose(-1, -2), W[..., 0, :] * W[..., 1, :], sup


def _softmax_pullback_rows(s: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """``[J^T dL/dg, J^T dL/dh] [..., 2, d]`` for softmax heads with scores ``s`` and ``-s``: the
    formulas of :func:`~sxor.xor.population.grad_from_weights` and the softmax pullback ``g * (u - <g, u>)``, fused into
    a few passes over ``[..., 2, d]`` (equal to rounding).

    With ``P = g h``: ``dL/dg = ||h||^2 g + h (2 g.h - 2 P)`` and ``dL/dh = ||g||^2 h + g (2 g.h - 2 P)``,
    less the label terms at the support.
    """
    W = torch.softmax(torch.stack([s, -s], -2), -1)  # [..., 2, d]: g, h
    W, G, P, sup = _gram_and_pair(W, support)
    T = torch.add(2 * G[..., 0, 1:2], P, alpha=-2)  # 2 g.h - 2 P, [..., d]
    du = W * torch.stack([G[..., 1, 1], G[..., 0, 0]], -1).unsqueeze(-1)  # [hh g, gg h]
    du[..., 0, :].addcmul_(W[..., 1, :], T)
    du[..., 1, :].addcmul_(W[..., 0, :], T)
    du.scatter_add_(-1, sup, -W.gather(-1, sup.flip(-1)).flip(-2))  # -(h_b, h_a) and -(g_b, g_a)
    dots = (W.unsqueeze(-2) @ du.unsqueeze(-1)).squeeze(-1)  # <g, du_g>, <h, du_h>: [..., 2, 1]
    return (du - dots) * W  # out of place: the product above saved du for autograd


def _loss_rows(W: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """:func:`~sxor.xor.population.loss_from_weights` for stacked weights ``W = [g, h] [..., 2, d]`` (three passes over
    ``[..., d]`` instead of seven; equal to rounding)."""
    W, G, P, sup = _gram_and_pair(W, support)
    diag = (P.unsqueeze(-2) @ P.unsqueeze(-1))[..., 0, 0]
    picked = W.gather(-1, sup)  # [[g_a, g_b], [h_a, h_b]]
    label = picked[..., 0, 0] * picked[..., 1, 1] + picked[..., 0, 1] * picked[..., 1, 0]
    gg, gh, hh = G[..., 0, 0], G[..., 0, 1], G[..., 1, 1]
    return 0.5 * (gg * hh + 2 * gh**2 - 2 * diag) - label + 0.5
