r"""Exact arithmetic behind the hull and depth certificates of :mod:`sxor.xor.representation`.

Every float64 number is a dyadic rational, so a matrix of float64 entries is, row by row, an
integer matrix divided by a power of two. On such matrices:

* :func:`solve_exact` solves a square system exactly (fraction-free Gaussian elimination on
  Python integers, then back substitution in :class:`fractions.Fraction`);
* :func:`exact_signs` gives the exact signs of the scores :math:`\langle p_j, \theta\rangle`;
* :func:`depth_upper_bound_lp` is the LP-greedy search for a query with few non-negative scores,
  whose count is exact.
"""

from __future__ import annotations

from fractions import Fraction

import torch


def _int_rows(rows: list[list[float]]) -> list[list[int]]:
    """Each row multiplied by the smallest power of two that makes it integer (exactly)."""
    out = []
    for row in rows:
        ratios = [float(x).as_integer_ratio() for x in row]
        den = max(q for _, q in ratios)  # every q is a power of two, so den is their lcm
        out.append([p * (den // q) for p, q in ratios])
    return out


def solve_exact(A: torch.Tensor, b: torch.Tensor) -> list[Fraction] | None:
    r"""The exact solution of :math:`A x = b` for float64 ``A [n, n]`` and ``b [n]``, read as
    rationals; ``None`` if ``A`` is exactly singular.

    Each row of ``[A | b]`` is scaled by a power of two to integers (the solution is unchanged),
    eliminated fraction-free (Bareiss: every division is exact), and the triangular system is
    solved in :class:`~fractions.Fraction`. No rounding anywhere.
    """
    n = A.shape[0]
    if A.shape != (n, n) or b.shape != (n,):
        raise ValueError(f"need A [n, n] and b [n], got {tuple(A.shape)}, {tuple(b.shape)}")
    aug = torch.cat([A, b.unsqueeze(-1)], -1).to("cpu", torch.float64).tolist()
    M = _int_rows(aug)
    prev = 1
    for k in range(n):
        p = next((i for i in range(k, n) if M[i][k] != 0), None)
        if p is None:
            return None
        M[k], M[p] = M[p], M[k]
        for i in range(k + 1, n):
            for j in range(k + 1, n + 1):
                M[i][j] = (M[i][j] * M[k][k] - M[i][k] * M[k][j]) // prev
            M[i][k] = 0
        prev = M[k][k]
    x = [Fraction(0)] * n
    for i in reversed(range(n)):
        s = M[i][n] - sum((M[i][j] * x[j] for j in range(i + 1, n)), Fraction(0))
        x[i] = s / M[i][i]
    return x


def exact_signs(points: list[list[int]], theta: torch.Tensor) -> list[int]:
    r"""Exact signs (-1, 0, +1) of :math:`\langle p_j, \theta\rangle` for integer-scaled points
    (:func:`_int_rows`) and a float64 ``theta`` read as a rational."""
    t = _int_rows([theta.tolist()])[0]
    out = []
    for row in points:
        s = sum(a * c for a, c in zip(row, t))
        out.append((s > 0) - (s < 0))
    return out


def depth_upper_bound_lp(points: torch.Tensor, starts: torch.Tensor) -> tuple[int, torch.Tensor]:
    r"""An upper bound on the Tukey depth of 0 in ``points [N, m]`` by an LP-greedy search, counted exactly.

    From each start direction ``starts [K, m]`` the search keeps a set :math:`S` of points whose
    scores a query makes strictly negative, and a query :math:`\theta` that does so. It tries the
    other points one at a time, the one with the smallest score under the current :math:`\theta`
    first, and adds a point :math:`j` when the linear system :math:`\langle p_i, \theta\rangle < 0`
    (:math:`i \in S \cup \{j\}`) is certified feasible. By Gordan's theorem that system is feasible
    exactly when 0 is not in the convex hull of those points, which
    :func:`~sxor.xor.representation.origin_in_hull` certifies (a strictly separating direction,
    its margin checked in exact rational arithmetic); the new query is minus that direction, and
    every point it makes strictly negative joins :math:`S`. A point that cannot be added now
    cannot be added later (a larger system is infeasible too), so each point is tried once.

    Returns ``(count, theta)``: ``count`` is the number of scores :math:`\langle p_j,\theta\rangle
    \ge 0` of the best query found, counted in exact rational arithmetic on the float64 points and
    ``theta``, so the depth is at most ``count``. The search decides nothing else: a point it fails
    to add (rounding, or an undecided certificate) only makes the bound weaker.

    Parameters
    ----------
    points
        The points ``[N, m]``.
    starts
        Start directions ``[K, m]``, ``K >= 1`` (for example random ones, or the query of
        :func:`~sxor.xor.representation.depth_upper_bound`).
    """
    from .representation import _origin_in_hull

    if not isinstance(points, torch.Tensor) or not isinstance(starts, torch.Tensor):
        raise TypeError("points and starts must be torch.Tensors")
    P = points.detach().to("cpu", torch.float64)
    if P.dim() != 2 or P.shape[0] < 1:
        raise ValueError(f"points must have shape [N, m] with N >= 1, got {tuple(P.shape)}")
    if starts.dim() != 2 or starts.shape[0] < 1 or starts.shape[1] != P.shape[1]:
        raise ValueError(
            f"starts must have shape [K, {P.shape[1]}] with K >= 1, got {tuple(starts.shape)}"
        )
    ints = _int_rows(P.tolist())
    best: tuple[int, torch.Tensor] | None = None
    for th0 in starts.detach().to("cpu", torch.float64):
        theta = th0.clone()
        signs = exact_signs(ints, theta)
        S = {j for j, s in enumerate(signs) if s < 0}
        tried: set[int] = set()
        while True:
            rest = [j for j in range(P.shape[0]) if j not in S and j not in tried]
            if not rest:
                break
            scores = P[rest] @ theta
            j = rest[int(scores.argmin())]
            tried.add(j)
            idx = sorted(S | {j})
            verdict, _, x = _origin_in_hull(P[idx])
            if verdict != -1:  # not certified feasible: j stays out
                continue
            new = -x
            new_signs = exact_signs(ints, new)
            if all(new_signs[i] < 0 for i in idx):  # the certificate, re-checked on this query
                theta, signs = new, new_signs
                S = {i for i, s in enumerate(signs) if s < 0}
        count = sum(s >= 0 for s in signs)
        if best is None or count < best[0]:
            best = (count, theta)
    assert best is not None
    return best


def exact_corral_separates(points: torch.Tensor, corral: list[int]) -> bool:
    r"""Whether the exact min-norm point :math:`x` of the affine hull of ``points[corral]`` has
    :math:`\langle p_j, x\rangle > 0` for every row :math:`p_j` of ``points [N, m]``, all in rational
    arithmetic on the float64 values (so ``True`` certifies that 0 is outside the convex hull).

    :math:`x = \sum_i w_i p_i` with :math:`\sum_i w_i = 1` minimises :math:`\|x\|^2`:
    :math:`G w = \mu \mathbf 1`, with :math:`G` the exact Gram matrix of the corral. It is the
    fallback of :func:`~sxor.xor.representation.origin_in_hull` when the floating-point min-norm
    point misses by its rounding.
    """
    rows = [[Fraction(v) for v in r] for r in points.detach().to("cpu", torch.float64).tolist()]
    k = len(corral)
    if k == 0:
        return False
    S = [rows[i] for i in corral]
    # [G 1; 1^T 0] [w; -mu] = [0; 1], solved by Gauss-Jordan elimination in rationals.
    M: list[list[Fraction]] = [
        [sum((a * b for a, b in zip(S[i], S[j])), Fraction(0)) for j in range(k)]
        + [Fraction(1), Fraction(0)]
        for i in range(k)
    ]
    M.append([Fraction(1)] * k + [Fraction(0), Fraction(1)])
    n = k + 1
    for col in range(n):
        pivot = next((r for r in range(col, n) if M[r][col] != 0), None)
        if pivot is None:
            return False
        M[col], M[pivot] = M[pivot], M[col]
        for r in range(n):
            if r != col and M[r][col] != 0:
                f = M[r][col] / M[col][col]
                M[r] = [a - f * b for a, b in zip(M[r], M[col])]
    w = [M[i][n] / M[i][i] for i in range(k)]
    x = [sum((w[i] * S[i][c] for i in range(k)), Fraction(0)) for c in range(len(S[0]))]
    return all(sum((a * b for a, b in zip(r, x)), Fraction(0)) > 0 for r in rows)
