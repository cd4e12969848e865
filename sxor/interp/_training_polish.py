r"""A Gauss-Newton (Levenberg-Marquardt) polish for :func:`sxor.interp.deep_training.train`.

Near an interpolant the Chamfer objective is a sum of squares of smooth residuals: with every
output token :math:`t_i` of sequence :math:`j` matched to its nearest target :math:`y_{a(i)}`
and every target :math:`y_k` to its nearest output token :math:`t_{b(k)}`,

.. math::

   \frac1N \sum_j \Big(\frac1n \sum_i |t_i - y_{a(i)}|^2 + \frac1m \sum_k |t_{b(k)} - y_k|^2\Big)
   = |r(\theta)|^2,

with the residuals :math:`r` the differences weighted by :math:`(nN)^{-1/2}` and
:math:`(mN)^{-1/2}`. The matching is fixed within a step and recomputed after it. A step solves
:math:`(J^\top J + \lambda\,\mathrm{diag}(J^\top J) + \lambda\mu I)\,\delta = -J^\top r` with the
full Jacobian :math:`J = \partial r / \partial\theta` (``torch.func.jacrev``; the networks of
section 15c have a few hundred parameters and residuals) and is kept when it lowers the
objective, with :math:`\lambda` lowered after a kept step and raised after a refused one
(Marquardt's rule). Near an interpolant at which the output map :math:`\theta \mapsto T_\theta`
has a Jacobian of full row rank (the residuals themselves repeat rows where the matching is one to
one, so :math:`J` is rank-deficient there), the steps converge fast as :math:`\lambda` shrinks
(not proved here; the tests check a start near a teacher); near a minimum with a nonzero
residual no step is kept and :math:`\lambda` grows until the polish stops, or its budget of
steps runs out first. Either way it only ever lowers the Chamfer objective; the verdict of
:func:`sxor.interp.deep_training.train` is :math:`d_H`, recomputed after it, which a step that
lowers the Chamfer objective can raise slightly.
"""

from __future__ import annotations

import math

import torch
from torch.func import jacrev

__all__ = ["gauss_newton_polish"]


def _unflatten(vec: torch.Tensor, like: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out, start = {}, 0
    for name, p in like.items():
        out[name] = vec[start : start + p.numel()].view_as(p)
        start += p.numel()
    return out


def _match(T: torch.Tensor, Y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Nearest target of every output token ``[N, n]`` and nearest output token of every target
    ``[N, m]``."""
    D = ((T.unsqueeze(-2) - Y.unsqueeze(-3)) ** 2).sum(-1)  # [N, n, m]
    return D.argmin(-1), D.argmin(-2)


def gauss_newton_polish(
    forward,
    X: torch.Tensor,
    Y: torch.Tensor,
    theta: dict[str, torch.Tensor],
    iterations: int,
    *,
    mu: float = 1e-12,
) -> dict:
    """At most ``iterations`` Levenberg-Marquardt steps on the Chamfer residuals of
    ``forward(X, theta)`` against ``Y`` (see the module), updating ``theta`` in place (its
    tensors keep ``requires_grad``). Returns ``steps`` (kept steps), ``tried`` (steps tried) and
    ``objective`` (the Chamfer objective at the end). Stops early when the objective is 0, when it
    is not finite, or when ``lambda`` exceeds ``1e16`` (no step lowers the objective)."""
    names = list(theta)
    like = {k: theta[k].detach() for k in names}
    vec = torch.cat([like[k].reshape(-1) for k in names]).clone()
    N, n, m = X.shape[0], X.shape[1], Y.shape[1]
    wt, wy = 1 / math.sqrt(n * N), 1 / math.sqrt(m * N)
    rows = torch.arange(N, device=X.device).unsqueeze(-1)

    def residuals(v: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        T = forward(X, _unflatten(v, like))
        r_out = (T - Y[rows, a]) * wt  # every output token against its nearest target
        r_tgt = (T[rows, b] - Y) * wy  # every target against its nearest output token
        return torch.cat([r_out.reshape(-1), r_tgt.reshape(-1)])

    def objective(v: torch.Tensor) -> tuple[float, torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            T = forward(X, _unflatten(v, like))
            a, b = _match(T, Y)
            return float((residuals(v, a, b) ** 2).sum()), a, b

    value, a, b = objective(vec)
    lam, kept, tried = 1e-3, 0, 0
    eye = torch.eye(vec.numel(), dtype=vec.dtype, device=vec.device)
    while tried < iterations and value > 0 and math.isfinite(value) and lam <= 1e16:
        r = residuals(vec, a, b).detach()
        J = jacrev(residuals)(vec, a, b).detach()
        H, g = J.T @ J, J.T @ r
        while tried < iterations and lam <= 1e16:
            tried += 1
            A = H + lam * torch.diag(torch.diagonal(H)) + lam * mu * eye
            try:
                step = torch.linalg.solve(A, -g)
            except RuntimeError:  # singular even with the damping: damp more
                lam *= 4
                continue
            new_value, new_a, new_b = objective(vec + step)
            if math.isfinite(new_value) and new_value < value:
                vec, value, a, b = vec + step, new_value, new_a, new_b
                lam, kept = max(lam / 3, 1e-15), kept + 1
                break
            lam *= 4
    with torch.no_grad():
        for name, p in _unflatten(vec, like).items():
            theta[name].copy_(p)
    return {"steps": kept, "tried": tried, "objective": value}
