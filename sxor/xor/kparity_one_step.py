r"""One huge population step for ``k`` heads, and the candidates of the section "Three bits at
scale" for making it work.

In the limit :math:`\eta\to\infty` of :math:`\theta_r \leftarrow \theta_r - \eta g_r` the scores
of head ``r`` become :math:`-\eta\,V_r g_r` up to a bounded term, so head ``r`` ends one-hot on
:math:`\arg\max_i (-V_r g_r)_i` (:func:`limit_heads`), and the step succeeds in the limit exactly
when these positions are the ``k`` targets in some order (:func:`limit_success`: the loss then
tends to 0 and every mass to 1). Heads may have keys of their own, ``Vs [..., k, d, m]``.
"""

from __future__ import annotations

import torch

from .checks import check_real, check_tensor
from .kparity_population import kparity_grad_from_weights
from .model import _softmax_pullback


def per_head_grad(
    Vs: torch.Tensor, thetas: torch.Tensor, support: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Loss ``[...]`` and gradient ``[..., k, m]`` for softmax heads with keys ``Vs [..., k, d, m]``
    (head ``r`` scores :math:`V_r\theta_r`), from the closed form.

    Raises
    ------
    ArgumentTypeError, ValueError
        unless ``Vs`` is a finite real tensor ``[..., k, d, m]``, ``thetas [..., k, m]`` matches it
        and ``support [..., k]`` holds ``k`` distinct positions.
    """
    check_tensor("Vs", Vs, 3, real=True, finite=True)
    check_tensor("thetas", thetas, 2, real=True, finite=True)
    if thetas.shape[-2:] != (Vs.shape[-3], Vs.shape[-1]):
        raise ValueError(
            f"thetas [..., k, m] must match Vs [..., k, d, m]: {tuple(thetas.shape)} vs "
            f"{tuple(Vs.shape)}"
        )
    s = (Vs @ thetas.unsqueeze(-1)).squeeze(-1)
    w = torch.softmax(s, -1)
    loss, du = kparity_grad_from_weights(w, support)
    r = _softmax_pullback(s, w, du)
    return loss, (r.unsqueeze(-2) @ Vs).squeeze(-2)


def limit_heads(Vs: torch.Tensor, thetas: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """Where each head sits after one step from ``thetas`` as :math:`\\eta\\to\\infty`, ``[..., k]``.
    Raises as :func:`per_head_grad` does."""
    _, g = per_head_grad(Vs, thetas, support)
    return (Vs @ (-g).unsqueeze(-1)).squeeze(-1).argmax(-1)


def limit_success(heads: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """True where the heads' positions ``[..., k]`` are the targets ``[..., k]`` in some order."""
    return (heads.sort(-1).values == support.sort(-1).values).all(-1)


def separating_step(
    Vs: torch.Tensor, thetas: torch.Tensor, support: torch.Tensor, length: float
) -> torch.Tensor:
    """A first, normalised step of the given ``length``:
    :math:`\\theta - \\ell\\,g/\\|g\\|` with the gradient ``g`` of all heads of an instance.
    Raises as :func:`per_head_grad` does, and unless ``length`` is finite and ``>= 0``."""
    check_real("length", length, minimum=0)
    _, g = per_head_grad(Vs, thetas, support)
    norm = g.flatten(-2).norm(dim=-1).clamp(min=1e-300)
    return thetas - length * g / norm.unsqueeze(-1).unsqueeze(-1)
