"""Exact pieces of the certificate: the layers before the collapse in integer arithmetic (the
fast path) and the Hausdorff bound of output boxes.

Private: :func:`exact_states` and :func:`box_hausdorff_squared` are public in
:mod:`sxor.interp.certificate`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from .enclosures import _int_matmul, integer_form


def exact_states(blocks: Sequence, states: list[np.ndarray]) -> list[np.ndarray]:
    r"""The exact outputs of ``blocks`` on ``states``, in integer arithmetic over a common denominator.

    The same values as applying each block's layers exactly (``FFLayer.__call__``,
    ``SALayer.__call__`` at :math:`\tau = 0`), computed on the stacked tokens of all sequences
    written as ``P / D`` (Python integers): an FF is two integer matrix products and one ReLU; an
    attention layer must have :math:`A = 0` (then :math:`x \mapsto \rho x + \beta
    \operatorname{mean}(X_j)`, the same at every temperature) or be the identity.

    Parameters
    ----------
    blocks
        The blocks to apply, in order (every SA the identity or with :math:`A = 0`).
    states
        The input sequences ``[n_j, d]`` (exact).

    Raises
    ------
    ValueError
        for an attention layer whose scores are not constant.
    """
    sizes = [s.shape[0] for s in states]
    cuts = np.cumsum([0, *sizes])
    P, D = integer_form(np.concatenate(states, axis=0).T)  # [d, K]: tokens as columns
    for block in blocks:
        ff, sa = block.ff, block.sa
        if not ff.is_identity:
            UB = np.concatenate([ff.U, ff.b.reshape(-1, 1)], axis=1)
            UBi, Du = integer_form(UB)
            Wi, Dw = integer_form(ff.W)
            eta = Fraction(ff.eta)
            ones = np.full((1, P.shape[1]), D, dtype=object)
            pre = _int_matmul(UBi, np.concatenate([P, ones], axis=0))  # (U x + b) * Du * D
            hidden = np.where(pre > 0, pre, 0).astype(object)
            P = eta.numerator * Dw * Du * P + eta.denominator * _int_matmul(Wi, hidden)
            D = eta.denominator * Dw * Du * D
            P, D = _reduce(P, D)
        if sa.is_identity:
            continue
        if not sa.scores_constant:
            raise ValueError(
                "exact_states handles attention layers with A = 0 (or the identity) only"
            )
        rho, beta = Fraction(sa.rho), Fraction(sa.beta)
        L = math.lcm(*sizes)
        parts = []
        for a, b, n in zip(cuts[:-1], cuts[1:], sizes):
            block_sum = P[:, a:b].sum(axis=1).reshape(-1, 1)
            parts.append(
                rho.numerator * beta.denominator * L * P[:, a:b]
                + rho.denominator * beta.numerator * (L // n) * block_sum
            )
        P = np.concatenate(parts, axis=1)
        D = rho.denominator * beta.denominator * L * D
        P, D = _reduce(P, D)
    out = np.empty(P.T.shape, dtype=object)
    out.flat[:] = [Fraction(int(v), D) for v in P.T.flat]
    return [out[a:b] for a, b in itertools.pairwise(cuts)]


def _reduce(P: np.ndarray, D: int) -> tuple[np.ndarray, int]:
    g = math.gcd(D, *(int(v) for v in P.flat))
    return (P // g, D // g) if g > 1 else (P, D)


def box_hausdorff_squared(lo: np.ndarray, hi: np.ndarray, Y: np.ndarray) -> Fraction:
    r"""Upper bound on :math:`d_H(P, Y)^2` for every :math:`P` with :math:`p_i` in the box :math:`[\mathrm{lo}_i, \mathrm{hi}_i]`.

    It is :math:`d_H^2` with :math:`\lVert p_i - y \rVert^2` replaced by its maximum over the box,
    :math:`\sum_c \max((\mathrm{lo}_{ic} - y_c)^2, (\mathrm{hi}_{ic} - y_c)^2)`. Exact; 0 iff every
    box is the single point of a target and every target is such a point.

    Parameters
    ----------
    lo, hi
        Corners of the boxes, ``[n, d]`` each (exact).
    Y
        Target tokens ``[m, d]`` (exact).
    """
    far = [
        [
            sum((max((a - c) ** 2, (b - c) ** 2) for a, b, c in zip(lo[i], hi[i], y)), Fraction(0))
            for y in Y
        ]
        for i in range(lo.shape[0])
    ]
    forward = max(min(row) for row in far)
    backward = max(min(far[i][k] for i in range(lo.shape[0])) for k in range(Y.shape[0]))
    return max(forward, backward)
