r"""Rigorous enclosures with rational ends: softmax attention, FF layers and mean attention on boxes.

The certificate of :mod:`sxor.interp.certificate` pushes boxes through a network with these
functions. Every enclosure *contains* the true image: outward rounding wherever a float or a
multi-precision number is involved, and exact rational arithmetic elsewhere.

* :func:`~sxor.interp.enclosures.softmax_attention_enclosure`: the reference enclosure of softmax
  self-attention, in ``mpmath.iv`` interval arithmetic at a chosen precision (tight, slow:
  :math:`O(n^3 d)` interval operations per sequence).
* :func:`~sxor.interp.enclosures.softmax_attention_box`: the fast enclosure the certificate uses, a
  box centred on the exact hardmax output with a rigorous radius (exact integer scores over a
  common denominator, vectorised float64 with directed rounding; :math:`O(n^2 d)`).
* :func:`~sxor.interp.enclosures.feed_forward_enclosure`,
  :func:`~sxor.interp.enclosures.mean_attention_enclosure`: FF and mean-attention layers on boxes,
  exact.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import mpmath
import numpy as np

from .exact import exact_item
from .layers import _fractions, as_exact, attention_scores

#: Largest working precision (bits) :func:`~sxor.interp.enclosures.softmax_attention_enclosure`
#: accepts. Its cost grows like ``prec**1.6`` per operation and :math:`n^3 d` operations per
#: sequence; ``prec = 10**7`` would run for hours, so it is refused. The certificate never needs
#: more than a few hundred bits (see :func:`sxor.interp.certificate.enclosure_bits`).
MAX_PREC = 10_000


def check_precision(prec: object) -> int:
    r"""A working precision in bits: an integer in ``[2, MAX_PREC]``.

    Parameters
    ----------
    prec
        The precision to check.

    Raises
    ------
    TypeError
        for a bool or a non-integer type (floats included, even ``200.0``).
    ValueError
        for ``prec < 2`` and ``prec > MAX_PREC``.
    """
    if isinstance(prec, bool) or not isinstance(prec, numbers.Integral):
        raise TypeError(
            f"prec must be an integer number of bits, got {prec!r} of type {type(prec).__name__}"
        )
    prec = int(prec)
    if prec < 2:
        raise ValueError(f"prec must be >= 2 bits, got prec={prec}")
    if prec > MAX_PREC:
        raise ValueError(
            f"prec={prec} bits is above the documented limit MAX_PREC = {MAX_PREC} "
            "(the interval softmax would not finish in reasonable time)"
        )
    return prec


def _to_interval(x: Fraction) -> mpmath.ctx_iv.ivmpf:
    return mpmath.iv.mpf(x.numerator) / mpmath.iv.mpf(x.denominator)


def _mpf_tuple_to_fraction(t: tuple) -> Fraction:
    sign, man, exp, _ = t
    if man == 0:
        if exp != 0:
            raise ValueError("the enclosure is not finite (increase prec)")
        return Fraction(0)
    value = Fraction(man) * (Fraction(2) ** exp)
    return -value if sign else value


def _interval_ends(x: mpmath.ctx_iv.ivmpf) -> tuple[Fraction, Fraction]:
    lo, hi = x._mpi_
    return _mpf_tuple_to_fraction(lo), _mpf_tuple_to_fraction(hi)


def softmax_attention_enclosure(
    X: object, A: object, rho: object, V: object, tau: object, prec: int = 200
) -> tuple[np.ndarray, np.ndarray]:
    r"""Rigorous bounds ``lo <= SA_tau(X) <= hi`` (entrywise, exact Fractions) on softmax self-attention.

    For one exact sequence ``X [n, d]`` and a rational :math:`\tau > 0`.

    **Deviation form.** With :math:`C_i` the hardmax argmax set of query :math:`i` and :math:`m_i`
    the mean of its tokens (exact),
    :math:`\sum_l \pi_{il} x_l = m_i + \sum_{l \notin C_i} \pi_{il} (x_l - m_i)`, because the weights
    on :math:`C_i` are equal and :math:`\sum_{l \in C_i} (x_l - m_i) = 0`. So

    .. math::
       \mathrm{SA}_\tau(X)_i = [\rho x_i + V m_i] + V \sum_{l \notin C_i} \pi_{il} (x_l - m_i):

    the first term (the hardmax output) is computed exactly, and only the small deviation is
    enclosed, in ``mpmath.iv`` interval arithmetic at ``prec`` bits with outward rounding. The box
    is therefore centred on an exact point and its width is about :math:`2^{-\mathrm{prec}}` times
    the size of the *deviation* (not of the tokens): it does not grow with the coordinates, so a box
    is tight for coordinates of any size.

    The weights :math:`\pi_{il} = 1 / \sum_k \exp((s_{ik} - s_{il}) / \tau)` are enclosed without
    evaluating any huge exponential: a term with exponent below :math:`-M` is enclosed by
    :math:`[0, e^{-M}]`, and a weight whose normaliser has an exponent above :math:`M` by
    :math:`[0, e^{-M}]` (both rigorous, since :math:`\exp` is increasing), with

    .. math::
       M = 2\,\mathrm{prec} + \log_2(1 + \max_l \lVert x_l - m_i \rVert_1 |V|)

    (rounded up) so that a clamped weight moves the output by at most about :math:`e^{-2\,\mathrm{prec}}`. The work
    is bounded for every :math:`\tau > 0`.

    Parameters
    ----------
    X
        One exact sequence ``[n, d]``.
    A
        Key-query matrix ``[d, d]`` (exact).
    rho
        Weight :math:`\rho` of the skip connection (exact).
    V
        Value matrix ``[d, d]`` (exact).
    tau
        Rational temperature :math:`\tau > 0`.
    prec
        Working precision of the interval arithmetic, in bits: an integer in ``[2, MAX_PREC]``
        (:data:`~sxor.interp.enclosures.MAX_PREC`, 10 000).

    Raises
    ------
    ValueError
        for ``tau <= 0``, floats anywhere (see :mod:`sxor.interp.exact`), ``X`` that is not
        ``[n, d]``, ``V`` that is not ``[d, d]``, and ``prec`` outside ``[2, MAX_PREC]``.
    TypeError
        for a ``prec`` that is not an integer.
    """
    prec = check_precision(prec)
    X, A, V = as_exact(X, "X"), as_exact(A, "A"), as_exact(V, "V")
    rho, tau = exact_item(rho, "rho"), exact_item(tau, "tau")
    if X.ndim != 2:
        raise ValueError(f"X must have shape [n, d], got {X.shape}")
    if tau <= 0:
        raise ValueError(f"tau must be > 0 for softmax, got {tau}")
    if V.shape != (X.shape[1],) * 2:
        raise ValueError(f"V must have shape {(X.shape[1],) * 2}, got {V.shape}")
    S = attention_scores(X, A)
    n, d = X.shape
    zero = Fraction(0)
    # |V| (l_inf -> l_inf)
    v_norm = max((sum((abs(a) for a in row), zero) for row in V), default=zero)
    lo, hi = np.empty((n, d), dtype=object), np.empty((n, d), dtype=object)
    saved, mpmath.iv.prec = mpmath.iv.prec, int(prec)
    try:
        Vi = [[_to_interval(x) for x in row] for row in V]
        for i in range(n):
            top = max(S[i])
            C = [l for l in range(n) if S[i, l] == top]
            m = [sum((X[l, c] for l in C), zero) / len(C) for c in range(d)]
            centre = [
                rho * X[i, r] + sum((V[r, c] * m[c] for c in range(d)), zero) for r in range(d)
            ]
            outside = [l for l in range(n) if S[i, l] != top]
            if not outside:  # every score ties: softmax equals hardmax
                for r in range(d):
                    lo[i, r] = hi[i, r] = centre[r]
                continue
            diffs = {l: [X[l, c] - m[c] for c in range(d)] for l in outside}
            size = 1 + v_norm * max(sum((abs(a) for a in diffs[l]), zero) for l in outside)
            M = 2 * int(prec) + max(
                0, size.numerator.bit_length() - size.denominator.bit_length() + 1
            )  # >= ln(size)
            tiny = mpmath.iv.mpf([0, mpmath.iv.exp(-M).b])  # [0, e^-M], rigorous

            def weight(
                l: int, i: int = i, M: int = M, tiny: mpmath.ctx_iv.ivmpf = tiny
            ) -> mpmath.ctx_iv.ivmpf:
                exponents = [(S[i, k] - S[i, l]) / tau for k in range(n)]
                if max(exponents) > M:  # pi_il <= 1 / e^M
                    return tiny
                terms = [mpmath.iv.exp(_to_interval(z)) if z >= -M else tiny for z in exponents]
                return 1 / sum(terms)

            dev = [mpmath.iv.mpf(0)] * d
            for l in outside:
                w = weight(l)
                dev = [dev[c] + w * _to_interval(diffs[l][c]) for c in range(d)]
            for r in range(d):
                shift = sum((Vi[r][c] * dev[c] for c in range(d)), mpmath.iv.mpf(0))
                a, b = _interval_ends(shift)
                lo[i, r], hi[i, r] = centre[r] + a, centre[r] + b
    finally:
        mpmath.iv.prec = saved
    return lo, hi


def feed_forward_enclosure(
    lo: object, hi: object, eta: object, W: object, U: object, b: object
) -> tuple[np.ndarray, np.ndarray]:
    r"""Rigorous interval image of the boxes ``[lo_i, hi_i]`` under :math:`\mathrm{FF}(x) = \eta x + W \operatorname{relu}(Ux + b)`.

    One box per token, exact Fraction endpoints. Each pre-activation :math:`U_k x + b_k` is bounded
    over the box by choosing ``lo`` or ``hi`` by the sign of :math:`U_{kj}`. When every
    pre-activation has one sign on the box (the activation pattern is constant), the layer *is* the
    affine map :math:`x \mapsto (\eta I + W_\mathrm{on} U_\mathrm{on}) x + W_\mathrm{on} b_\mathrm{on}`
    there, and the enclosure is the exact bounding box of the image (no dependency loss: a layer that
    is constant on the box, e.g. a snap layer on its slab, gives ``lo == hi``, and a layer that is
    the identity on the box returns the box). Otherwise ReLU is bounded monotonically and the output
    sums by the signs of :math:`W` and :math:`\eta`.

    Parameters
    ----------
    lo, hi
        Lower and upper corners of the boxes, ``[n, d]`` each (exact).
    eta
        Weight :math:`\eta` of the skip connection.
    W
        Output weights ``[d, w]``.
    U
        Input weights ``[w, d]``.
    b
        Hidden biases ``[w]``.

    Raises
    ------
    ValueError
        for floats (see :mod:`sxor.interp.exact`), ``lo > hi`` anywhere, and other shapes.
    """
    lo, hi = as_exact(lo, "lo"), as_exact(hi, "hi")
    W, U, b, eta = as_exact(W, "W"), as_exact(U, "U"), as_exact(b, "b"), exact_item(eta, "eta")
    if lo.shape != hi.shape or lo.ndim != 2:
        raise ValueError(f"lo and hi must have one shape [n, d], got {lo.shape} and {hi.shape}")
    if any(a > c for a, c in zip(lo.flat, hi.flat)):
        raise ValueError("lo must be <= hi entrywise")
    n, d = lo.shape
    w = U.shape[0] if U.ndim == 2 else -1
    if U.shape != (w, d) or b.shape != (w,) or W.shape != (d, w):
        raise ValueError(
            f"need U [w, d], b [w], W [d, w] with d = {d}; got {U.shape}, {b.shape}, {W.shape}"
        )
    zero = Fraction(0)

    def affine(coef, const, lo_row, hi_row):  # bounds of sum_j coef_j x_j + const over the box
        low = const + sum(
            (c * (lo_row[j] if c >= 0 else hi_row[j]) for j, c in enumerate(coef)), zero
        )
        high = const + sum(
            (c * (hi_row[j] if c >= 0 else lo_row[j]) for j, c in enumerate(coef)), zero
        )
        return low, high

    out_lo, out_hi = np.empty((n, d), dtype=object), np.empty((n, d), dtype=object)
    patterns: dict[tuple[int, ...], list[int]] = {}  # activation pattern -> the boxes that have it
    # pre-activation bounds of every box at once, exactly, in integers over common denominators
    corners, D = integer_form(np.concatenate([lo, hi]))
    L, H = corners[:n], corners[n:]
    UB, Du = integer_form(np.concatenate([U, b.reshape(w, 1)], axis=1))
    Ui, bD = UB[:, :d], UB[:, d] * D
    Upos = np.where(Ui > 0, Ui, 0).astype(object)
    Uneg = (Ui - Upos).astype(object)
    pre_lo = _int_matmul(L, Upos.T) + _int_matmul(H, Uneg.T) + bD  # [n, w], times Du * D
    pre_hi = _int_matmul(H, Upos.T) + _int_matmul(L, Uneg.T) + bD
    for i in range(n):
        # constant pattern: affine here
        if all(a >= 0 or c <= 0 for a, c in zip(pre_lo[i], pre_hi[i])):
            on = tuple(
                k
                for k in range(w)
                if pre_lo[i, k] >= 0 and not (pre_lo[i, k] == 0 and pre_hi[i, k] == 0)
            )
            if not on:  # every ReLU is off: the layer is x -> eta x
                for r in range(d):
                    a, c = eta * lo[i, r], eta * hi[i, r]
                    out_lo[i, r], out_hi[i, r] = (a, c) if eta >= 0 else (c, a)
                continue
            patterns.setdefault(on, []).append(i)
            continue
        pre = [
            (Fraction(int(a), Du * D), Fraction(int(c), Du * D))
            for a, c in zip(pre_lo[i], pre_hi[i])
        ]
        hidden = [(max(a, zero), max(c, zero)) for a, c in pre]
        h_lo, h_hi = [a for a, _ in hidden], [c for _, c in hidden]
        for r in range(d):
            low, high = affine(W[r], zero, h_lo, h_hi)
            e_lo, e_hi = (
                (eta * lo[i, r], eta * hi[i, r]) if eta >= 0 else (eta * hi[i, r], eta * lo[i, r])
            )
            out_lo[i, r], out_hi[i, r] = low + e_lo, high + e_hi
    # the affine map x -> M x + c of the pattern, on all its boxes at once
    for on, rows in patterns.items():
        M = np.array(
            [
                [eta * (r == j) + sum((W[r, k] * U[k, j] for k in on), zero) for j in range(d)]
                + [sum((W[r, k] * b[k] for k in on), zero)]
                for r in range(d)
            ],
            dtype=object,
        )
        Mc, Dm = integer_form(M)
        Mi, cD = Mc[:, :d], Mc[:, d] * D
        Mpos = np.where(Mi > 0, Mi, 0).astype(object)
        Mneg = (Mi - Mpos).astype(object)
        low = _int_matmul(L[rows], Mpos.T) + _int_matmul(H[rows], Mneg.T) + cD  # times Dm * D
        high = _int_matmul(H[rows], Mpos.T) + _int_matmul(L[rows], Mneg.T) + cD
        for t, i in enumerate(rows):
            for r in range(d):
                out_lo[i, r], out_hi[i, r] = (
                    Fraction(int(low[t, r]), Dm * D),
                    Fraction(int(high[t, r]), Dm * D),
                )
    return _fractions(out_lo), _fractions(out_hi)


def mean_attention_enclosure(
    lo: object, hi: object, rho: object, beta: object
) -> tuple[np.ndarray, np.ndarray]:
    r"""Rigorous interval image of the boxes ``[lo_i, hi_i]`` under mean attention.

    The attention layer with :math:`A = 0` (equal scores, so :math:`\pi_{il} = 1/n` at every
    temperature) and :math:`V = \beta I` maps :math:`x_i \mapsto \rho x_i + \beta \frac{1}{n} \sum_l x_l`.
    Exact Fraction endpoints.

    Parameters
    ----------
    lo, hi
        Lower and upper corners of the boxes of one sequence, ``[n, d]`` each.
    rho
        Weight :math:`\rho` of the skip connection.
    beta
        Scale :math:`\beta` of the value matrix.

    Raises
    ------
    ValueError
        for floats and mismatched shapes.
    """
    lo, hi = as_exact(lo, "lo"), as_exact(hi, "hi")
    rho, beta = exact_item(rho, "rho"), exact_item(beta, "beta")
    if lo.shape != hi.shape or lo.ndim != 2:
        raise ValueError(f"lo and hi must have one shape [n, d], got {lo.shape} and {hi.shape}")
    n = lo.shape[0]
    m_lo, m_hi = lo.sum(axis=0) / n, hi.sum(axis=0) / n
    a_lo, a_hi = (rho * lo, rho * hi) if rho >= 0 else (rho * hi, rho * lo)
    c_lo, c_hi = (beta * m_lo, beta * m_hi) if beta >= 0 else (beta * m_hi, beta * m_lo)
    return _fractions(a_lo + c_lo), _fractions(a_hi + c_hi)


# --------------------------------------------------------------------------------------------
# the fast enclosure: exact integer scores, vectorised float64 with directed rounding
# --------------------------------------------------------------------------------------------

_TINY = float(np.nextafter(0.0, 1.0))  # 2^-1074, the least positive float64


def integer_form(X: np.ndarray) -> tuple[np.ndarray, int]:
    r"""``(P, D)`` with ``X == P / D`` exactly: ``P`` an object array of Python ints, ``D > 0`` the least common denominator.

    Parameters
    ----------
    X
        An object array of Fractions (or ints).
    """
    flat = [Fraction(v) for v in X.flat]
    D = math.lcm(*(v.denominator for v in flat)) if flat else 1
    P = np.empty(X.shape, dtype=object)
    P.flat[:] = [v.numerator * (D // v.denominator) for v in flat]
    return P, D


def _int_matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Exact ``A @ B`` of object arrays of Python ints (int64 arithmetic when it cannot overflow)."""
    big_a = max((abs(v) for v in A.flat), default=0)
    big_b = max((abs(v) for v in B.flat), default=0)
    if big_a < 2**62 and big_b < 2**62 and big_a * big_b * max(A.shape[-1], 1) < 2**62:
        return (A.astype(np.int64) @ B.astype(np.int64)).astype(object)
    return A @ B


def _up(x):
    """The next float64 towards +inf: an upper bound of the exact result of one rounded-to-nearest operation."""
    return np.nextafter(x, np.inf)


def _down(x):
    return np.nextafter(x, -np.inf)


def _matmul_up(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    r"""An entrywise upper bound on the exact product of two **nonnegative** float64 matrices.

    For any summation order (BLAS blocking, FMA), :math:`|\mathrm{fl}(AB) - AB| \le \gamma_K AB +
    K \cdot 2^{-1074}` with :math:`K` the inner dimension and :math:`\gamma_K = K u / (1 - K u)`,
    :math:`u = 2^{-53}` (the second term covers underflow). The bound used,
    :math:`\mathrm{fl}(AB) (1 + 2 (K + 2) u) + (K + 2) 2^{-1074}`, each step rounded up, exceeds it.
    """
    K = A.shape[-1]
    M = A @ B
    return _up(_up(M * _up(1.0 + (K + 2) * 2.0**-52)) + (K + 2) * _TINY)


_LOG2E_LO = float(np.nextafter(1.4426950408889634, 0.0))  # < log2(e) = 1.44269504088896340736...
_LN2_LO = float(np.nextafter(0.6931471805599453, 0.0))  # < ln 2 = 0.69314718055994530941...
_EXP_TAYLOR = [(-1.0) ** k / math.factorial(k) for k in range(17)]  # degree 16: ends on a + term


def exp_neg_upper(a: np.ndarray) -> np.ndarray:
    r"""A rigorous upper bound on :math:`e^{-a}` for float64 :math:`a \ge 0`, vectorised; never 0.

    Needs no accuracy promise from the platform's ``exp``: with :math:`y \le a \log_2 e` (rounded
    down), :math:`j = \lfloor y \rfloor`, :math:`w \le (y - j) \ln 2 \in [0, 0.7)` (rounded down),
    :math:`e^{-a} \le 2^{-y} = 2^{-j} e^{-(y - j) \ln 2}` :math:`\le 2^{-j} e^{-w}`, and
    :math:`e^{-w}` is at
    most its Taylor polynomial of degree 16 (an alternating series with decreasing terms, cut after a
    positive term). Horner's rule in float64 evaluates that polynomial with an error below
    :math:`32 u e^{w} + 17 u < 10^{-14}` for :math:`w < 0.7`; :math:`10^{-13}` is added. The scaling by
    :math:`2^{-j}` is exact except in the subnormal range, where one more step up covers it.

    Parameters
    ----------
    a
        Nonnegative float64 array (a lower bound of the true exponent's size).
    """
    a = np.asarray(a, dtype=np.float64)
    y = np.maximum(_down(a * _LOG2E_LO), 0.0)
    j = np.floor(y)
    w = np.maximum(_down((y - j) * _LN2_LO), 0.0)  # y - j is exact
    p = np.full_like(w, _EXP_TAYLOR[-1])
    for c in _EXP_TAYLOR[-2::-1]:
        p = p * w + c
    p = p + 1e-13
    big = j > 2000  # 2^-2000 underflows anyway
    out = _up(np.ldexp(p, -np.where(big, 2000, j).astype(np.int64)))
    return np.maximum(out, _TINY)


def _ratios_up(numerators: list[int], den: int) -> np.ndarray:
    """Upper bounds (float64) of ``num / den`` for nonnegative ints; ``inf`` beyond the float range.

    Python's int true division is correctly rounded, so one step up bounds the exact ratio."""
    out = np.empty(len(numerators), dtype=np.float64)
    for i, num in enumerate(numerators):
        try:
            out[i] = num / den
        except OverflowError:
            out[i] = math.inf
    return _up(out)


def softmax_attention_box(
    X: object, A: object, rho: object, V: object, tau: object
) -> tuple[np.ndarray, np.ndarray, bool]:
    r"""A fast rigorous box around softmax self-attention: ``|SA_tau(X) - centre| <= radius`` entrywise.

    ``centre`` is the exact hardmax output :math:`\rho x_i + V m_i` (:math:`m_i` the mean of the
    argmax set :math:`C_i` of query :math:`i`, :math:`k_i = |C_i|`), and, from the deviation form of
    :func:`~sxor.interp.enclosures.softmax_attention_enclosure` and
    :math:`\pi_{il} = e^{(s_{il} - s_{i,\max})/\tau} / Z_i` with :math:`Z_i \ge k_i`,

    .. math::
       &|\mathrm{SA}_\tau(X)_{ir} - \mathrm{centre}_{ir}| \\
       &\quad\le \sum_c |V_{rc}| \, \frac{1}{k_i} \sum_{l \notin C_i} e^{-(s_{i,\max} - s_{il})/\tau} \\
       &\qquad \cdot |x_{lc} - m_{ic}| =: \mathrm{radius}_{ir}.

    How it is computed, and why it is rigorous:

    * the scores, the argmax sets and :math:`m_i` are **exact**: the tokens are written over one
      common denominator (:func:`~sxor.interp.enclosures.integer_form`) and the scores are integer
      matrix products (int64 when no overflow is possible, Python integers otherwise);
    * every float in the radius is an **upper bound** of the exact quantity: integer ratios are
      rounded correctly by Python and then stepped up (or down, for the exponents, whose size is
      under-estimated), :math:`e^{-a}` by :func:`~sxor.interp.enclosures.exp_neg_upper`, products
      and sums by ``_matmul_up`` (outward rounding with the standard
      error bound of a floating-point dot product, underflow included);
    * the radius is returned as the exact rational value of those floats.

    Cost :math:`O(n^2 d + n d^2)` operations on machine numbers, against :math:`O(n^3 d)`
    multi-precision interval operations for the reference enclosure. The box is wider than the
    reference one (its width is about the deviation itself, not :math:`2^{-\mathrm{prec}}` times it),
    which is all a certificate of exactness needs: the box must fit in the slab a later snap layer
    maps to one point.

    Parameters
    ----------
    X
        One exact sequence ``[n, d]``.
    A
        Key-query matrix ``[d, d]`` (exact).
    rho
        Weight :math:`\rho` of the skip connection (exact).
    V
        Value matrix ``[d, d]`` (exact).
    tau
        Rational temperature :math:`\tau > 0`.

    Returns
    -------
    tuple
        ``(centre, radius, finite)``: two ``[n, d]`` object arrays of Fractions, and whether every
        float64 radius was finite. When the tokens
        are beyond the float64 range (about :math:`10^{308}`) the radius is ``inf`` there,
        ``finite`` is ``False``, and that radius is replaced by the reference enclosure's (exact)
        one at 200 bits, so the box is rigorous in every case.

    Raises
    ------
    ValueError
        as :func:`~sxor.interp.enclosures.softmax_attention_enclosure`.
    """
    X, A, V = as_exact(X, "X"), as_exact(A, "A"), as_exact(V, "V")
    rho, tau = exact_item(rho, "rho"), exact_item(tau, "tau")
    if X.ndim != 2:
        raise ValueError(f"X must have shape [n, d], got {X.shape}")
    if tau <= 0:
        raise ValueError(f"tau must be > 0 for softmax, got {tau}")
    n, d = X.shape
    if A.shape != (d, d):
        raise ValueError(f"A must have shape {(d, d)}, got {A.shape}")
    if V.shape != (d, d):
        raise ValueError(f"V must have shape {(d, d)}, got {V.shape}")
    P, D = integer_form(X)
    Ai, Da = integer_form(A)
    S = _int_matmul(_int_matmul(P, Ai.T), P.T)  # scores * D^2 Da, exact
    top = S.max(axis=1)
    argmax = top[:, None] == S
    tau = Fraction(tau)
    den = D * D * Da * tau.numerator  # (top - s) / tau = (top - s) * tau.denominator / den
    cap = den * 746  # exponents beyond -746 are bounded by the least positive float
    Vi, Dv = integer_form(V)
    V_up = _ratios_up([abs(int(v)) for v in Vi.flat], Dv).reshape(d, d)
    centre = np.empty((n, d), dtype=object)
    radius = np.zeros((n, d), dtype=np.float64)
    groups: dict[bytes, list[int]] = {}
    for i in range(n):
        groups.setdefault(argmax[i].tobytes(), []).append(i)
    for rows in groups.values():
        C = argmax[rows[0]]
        k = int(C.sum())
        total = P[C].sum(axis=0)  # k D m, exact ints
        m = [Fraction(int(t), k * D) for t in total]
        Vm = [
            sum((Fraction(V[r, c]) * m[c] for c in range(d) if V[r, c] != 0), Fraction(0))
            for r in range(d)
        ]
        for i in rows:
            centre[i] = [rho * X[i, r] + Vm[r] for r in range(d)] if rho != 0 else list(Vm)
        out = np.flatnonzero(~C)
        if out.size == 0:  # every score ties: softmax equals hardmax
            continue
        kD = k * D
        a_up = _ratios_up(
            [abs(int(p) * k - int(t)) for row in P[out] for p, t in zip(row, total)], kD
        )
        a_up = a_up.reshape(out.size, d)  # |x_l - m| <= a_up
        gaps = [(int(top[i]) - int(s)) * tau.denominator for i in rows for s in S[i, out]]
        # Python: correctly rounded
        a_lo = np.array([746.0 if e >= cap else e / den for e in gaps], dtype=np.float64)
        E = exp_neg_upper(np.maximum(_down(a_lo), 0.0)).reshape(len(rows), out.size)
        B = _up(_matmul_up(E, a_up) / k)  # |deviation_c| <= B_c
        radius[rows] = _matmul_up(B, V_up.T)
    finite = bool(np.isfinite(radius).all())
    exact_radius = np.empty((n, d), dtype=object)
    if not finite:
        lo, hi = softmax_attention_enclosure(X, A, rho, V, tau, 200)
    for i in range(n):
        for r in range(d):
            if math.isfinite(radius[i, r]):
                exact_radius[i, r] = Fraction(float(radius[i, r]))
            else:
                exact_radius[i, r] = max(hi[i, r] - centre[i, r], centre[i, r] - lo[i, r])
    return centre, exact_radius, finite
