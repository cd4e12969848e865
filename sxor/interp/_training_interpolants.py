"""Interpolants of chapter 15's training data with uniform attention: a float one and an exact one.

Part of :mod:`sxor.interp.training`, which re-exports it.
"""

from __future__ import annotations

from fractions import Fraction

import torch

from ._training_model import (
    TikhonovData,
    _check_theta,
    _check_X,
    _positive_int,
    _real,
)


def uniform_attention_interpolant(
    data: TikhonovData,
    *,
    epsilons: tuple[float, ...] = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5),
    max_iter: int = 500,
) -> dict[str, torch.Tensor]:
    """An exact interpolant of ``data`` with **uniform attention** and a small norm (chapter 15).

    With ``q = k = 0`` every attention score is 0, softmax weights are ``1/n`` at every temperature,
    and with ``rho = 0`` the block is ``T(X_j) = FF(V m_j)`` for every token, ``m_j`` the mean of
    ``X_j``. Interpolation is then the ``N`` vector equations ``FF(V m_j) = y_j``. Two steps:

    1. *search* (only chooses a good point, proves nothing): from ``theta*``, minimise
       ``(1/N) sum_j |FF(V m_j) - y_j|^2 + (eps/2)|theta|^2`` over ``(V, eta, W, U, b)`` by L-BFGS in
       float64, for each ``eps`` of ``epsilons`` in turn (at most ``max_iter`` iterations each);
    2. *exact correction* (a least-squares problem): where every hidden unit is active at every
       ``V m_j`` (checked), ``FF(V m_j) = G V m_j + W b`` with ``G = eta I + W U``, so the equations
       are linear in ``V``; ``V`` is replaced by ``V + G^{-1} R (M^T)^+``, the minimum-norm
       correction that solves them, ``R`` the residuals and ``M [N, d]`` the means.

    Returns a float64 parameter dict (keys ``PARAMETER_NAMES``, ``q = k = rho = 0``, no grad)
    whose loss :func:`loss` on ``data`` (in float64) is at rounding level; it upper-bounds the
    squared norm of a minimum-norm interpolant of the block by its :func:`sq_norm`.

    Raises ``TypeError`` for ``data`` that is not a :class:`TikhonovData`, ``ValueError`` for
    ``epsilons`` that are not a non-empty sequence of finite reals ``> 0``, a ``max_iter < 1``,
    targets that are not one point per sequence, and when the correction does not apply: means
    that are not linearly independent (``N > d`` or degenerate data), a singular ``G``, or a hidden
    unit that is inactive at some mean after the correction.
    """
    if not isinstance(data, TikhonovData):
        raise TypeError(
            f"data must be a TikhonovData (from tikhonov_data), got {type(data).__name__}"
        )
    if not isinstance(epsilons, (list, tuple)) or not epsilons:
        raise ValueError(
            f"epsilons must be a non-empty list or tuple of reals > 0, got {epsilons!r}"
        )
    eps_list = [_real("epsilons", e, positive=True) for e in epsilons]
    max_iter = _positive_int("max_iter", max_iter)
    X = _check_X(data.X).detach().double()
    Y = data.Y.detach().double()
    if tuple(Y.shape) != (X.shape[0], 1, X.shape[2]):
        raise ValueError(
            f"data.Y must have shape [N, 1, d] = {(X.shape[0], 1, X.shape[2])}, got {tuple(Y.shape)}"
        )
    N, d = X.shape[0], X.shape[2]
    M, Yp = X.mean(dim=1), Y[:, 0, :]
    if d < N or int(torch.linalg.matrix_rank(M)) < N:
        raise ValueError(
            f"the {N} sequence means must be linearly independent in R^{d} for the correction"
        )
    th = {k: v.detach().double().clone() for k, v in data.theta_star.items()}
    free = ("V", "eta", "W", "U", "b")
    params = [th[k].requires_grad_(True) for k in free]

    def ff(Z: torch.Tensor) -> torch.Tensor:
        return th["eta"] * Z + torch.relu(Z @ th["U"].T + th["b"]) @ th["W"].T

    for eps in eps_list:
        opt = torch.optim.LBFGS(
            params,
            max_iter=max_iter,
            tolerance_grad=1e-13,
            tolerance_change=1e-16,
            history_size=50,
            line_search_fn="strong_wolfe",
        )

        def closure(opt: torch.optim.LBFGS = opt, eps: float = eps) -> torch.Tensor:
            opt.zero_grad()
            objective = ((ff(M @ th["V"].T) - Yp) ** 2).sum(-1).mean() + eps / 2 * sum(
                (p**2).sum() for p in params
            )
            objective.backward()
            return objective

        opt.step(closure)
    th = {k: v.detach() for k, v in th.items()}
    G = th["eta"] * torch.eye(d, dtype=torch.float64) + th["W"] @ th["U"]
    if int(torch.linalg.matrix_rank(G)) < d:
        raise ValueError(
            "G = eta I + W U is singular at the search's end point; the correction does not apply"
        )
    if not bool((M @ th["V"].T @ th["U"].T + th["b"] > 0).all()):
        raise ValueError(
            "a hidden unit is inactive at some mean after the search; the correction does not apply"
        )
    R = Yp.T - G @ th["V"] @ M.T - (th["W"] @ th["b"])[:, None]  # [d, N]
    th["V"] = th["V"] + torch.linalg.solve(G, R) @ torch.linalg.pinv(M.T)
    if not bool((M @ th["V"].T @ th["U"].T + th["b"] > 0).all()):
        raise ValueError("a hidden unit became inactive at some mean after the correction")
    th["q"], th["k"], th["rho"] = (
        torch.zeros_like(th["q"]),
        torch.zeros_like(th["k"]),
        torch.zeros_like(th["rho"]),
    )
    return th


def _solve_exact(A: list[list[Fraction]], B: list[list[Fraction]]) -> list[list[Fraction]]:
    """``A^{-1} B`` for a square invertible ``A`` (lists of Fractions), by Gauss-Jordan elimination;
    ``ValueError`` if ``A`` is singular."""
    n = len(A)
    rows = [list(A[i]) + list(B[i]) for i in range(n)]
    for col in range(n):
        pivot = next((r for r in range(col, n) if rows[r][col] != 0), None)
        if pivot is None:
            raise ValueError("singular matrix in the exact solve")
        rows[col], rows[pivot] = rows[pivot], rows[col]
        inv = 1 / rows[col][col]
        rows[col] = [x * inv for x in rows[col]]
        for r in range(n):
            if r != col and rows[r][col] != 0:
                f = rows[r][col]
                rows[r] = [x - f * y for x, y in zip(rows[r], rows[col])]
    return [row[n:] for row in rows]


def exact_uniform_interpolant(
    data: TikhonovData, theta: dict[str, torch.Tensor]
) -> tuple[dict, Fraction]:
    r"""An **exact** rational interpolant of ``data`` next to the float one of
    :func:`uniform_attention_interpolant`, and its squared norm, exactly.

    The data (floats, hence rationals) are converted exactly to Fractions. Keeping ``eta, W, U, b``
    of ``theta`` (converted exactly), the linear system ``G V M^T = Y^T - W b 1^T`` of
    :func:`uniform_attention_interpolant` (``G = eta I + W U``, ``M`` the exact sequence means) is
    solved in exact arithmetic for its minimum-norm solution ``V = G^{-1} R (M M^T)^{-1} M``. The
    function then checks, exactly, that every hidden unit is active at every ``V m_j`` and that
    ``FF(V m_j) = y_j`` for every ``j``. With ``q = k = rho = 0`` the softmax weights are exactly
    ``1/n`` at every temperature, so every token of ``T(X_j)`` is ``FF(V m_j) = y_j``: the returned
    point interpolates exactly, and its squared norm bounds that of a minimum-norm interpolant.

    Returns ``(params, sq_norm)``: a dict with the keys ``PARAMETER_NAMES`` of Fraction numpy
    arrays (object dtype; ``rho``, ``eta`` as Fractions) and the exact ``|theta|^2`` as a Fraction.

    Raises ``TypeError`` for ``data`` that is not a :class:`TikhonovData` or a ``theta`` that is not
    a parameter dict of :func:`block`'s shapes, and ``ValueError`` when ``q``, ``k`` or ``rho`` is
    nonzero, the means are linearly dependent, ``G`` is singular, or a hidden unit is inactive at
    some mean (then the exact system does not describe the block).
    """
    import numpy as np

    if not isinstance(data, TikhonovData):
        raise TypeError(
            f"data must be a TikhonovData (from tikhonov_data), got {type(data).__name__}"
        )
    X = _check_X(data.X).detach().double()
    th = {k: v.detach().double() for k, v in theta.items()} if isinstance(theta, dict) else theta
    _check_theta(th, X)
    if any(float(th[name].abs().max()) != 0 for name in ("q", "k", "rho")):
        raise ValueError(
            "theta must have q = k = rho = 0 (uniform attention, as uniform_attention_interpolant returns)"
        )
    N, n, d = X.shape
    w = th["W"].shape[1]
    fr = Fraction
    Xf = [[[fr(v) for v in row] for row in seq] for seq in X.tolist()]
    M = [[sum((seq[i][c] for i in range(n)), fr(0)) / n for c in range(d)] for seq in Xf]
    Y = [[fr(v) for v in row] for row in data.Y.detach().double()[:, 0, :].tolist()]
    W = [[fr(v) for v in row] for row in th["W"].tolist()]
    U = [[fr(v) for v in row] for row in th["U"].tolist()]
    b = [fr(v) for v in th["b"].tolist()]
    eta = fr(float(th["eta"]))
    G = [
        [
            (eta if r == c else fr(0)) + sum((W[r][k] * U[k][c] for k in range(w)), fr(0))
            for c in range(d)
        ]
        for r in range(d)
    ]
    Wb = [sum(W[r][k] * b[k] for k in range(w)) for r in range(d)]
    R = [[Y[j][r] - Wb[r] for j in range(N)] for r in range(d)]  # [d, N]
    MMt = [[sum((M[a][c] * M[e][c] for c in range(d)), fr(0)) for e in range(N)] for a in range(N)]
    try:
        S = _solve_exact(G, R)  # G^{-1} R, [d, N]
        Z = _solve_exact(MMt, M)  # (M M^T)^{-1} M, [N, d]
    except ValueError:
        raise ValueError(
            "G is singular or the sequence means are linearly dependent: no exact solve"
        ) from None
    V = [[sum(S[r][j] * Z[j][c] for j in range(N)) for c in range(d)] for r in range(d)]
    for j in range(N):
        z = [sum(V[r][c] * M[j][c] for c in range(d)) for r in range(d)]
        pre = [sum(U[k][c] * z[c] for c in range(d)) + b[k] for k in range(w)]
        if min(pre) <= 0:
            raise ValueError(
                f"a hidden unit is inactive at the mean of sequence {j}: the exact system does not apply"
            )
        out = [eta * z[r] + sum(W[r][k] * pre[k] for k in range(w)) for r in range(d)]
        if out != Y[j]:  # pragma: no cover - guaranteed by the solve
            raise AssertionError(f"exact solve failed for sequence {j}")
    zero = [fr(0)] * d
    params = {
        "q": np.array(zero, dtype=object),
        "k": np.array(zero, dtype=object),
        "rho": fr(0),
        "V": np.array(V, dtype=object),
        "eta": eta,
        "W": np.array(W, dtype=object),
        "U": np.array(U, dtype=object),
        "b": np.array(b, dtype=object),
    }
    sq = (
        eta**2
        + sum(x * x for row in V for x in row)
        + sum(x * x for row in W for x in row)
        + sum(x * x for row in U for x in row)
        + sum(x * x for x in b)
    )
    return params, sq
