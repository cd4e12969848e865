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

from fractions import Fraction

import mpmath
import numpy as np

from .layers import _fractions, as_exact, attention_scores

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
    :math:`M = 2\,\mathrm{prec} + \log_2(1 + \max_l \lVert x_l - m_i \rVert_1 |V|)` (rounded up) so
    that a clamped weight moves the output by at most about :math:`e^{-2\,\mathrm{prec}}`. The work
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
        Working precision of the interval arithmetic, in bits.

    Raises
    ------
    ValueError
        for ``tau <= 0``, floats anywhere (see :mod:`sxor.interp.exact`), ``X`` that is not
        ``[n, d]`` and ``V`` that is not ``[d, d]``.
    """
    X, A, V = as_exact(X, "X"), as_exact(A, "A"), as_exact(V, "V")
    rho, tau = as_exact(rho, "rho").item(), as_exact(tau, "tau").item()
    if X.ndim != 2:
        raise ValueError(f"X must have shape [n, d], got {X.shape}")
    if tau <= 0:
        raise ValueError(f"tau must be > 0 for softmax, got {tau}")
    if V.shape != (X.shape[1],) * 2:
        raise ValueError(f"V must have shape {(X.shape[1],) * 2}, got {V.shape}")
    S = attention_scores(X, A)
    n, d = X.shape
    zero = Fraction(0)
    v_norm = max((sum((abs(a) for a in row), zero) for row in V), default=zero)  # |V| (l_inf -> l_inf)
    lo, hi = np.empty((n, d), dtype=object), np.empty((n, d), dtype=object)
    saved, mpmath.iv.prec = mpmath.iv.prec, int(prec)
    try:
        Vi = [[_to_interval(x) for x in row] for row in V]
        for i in range(n):
            top = max(S[i])
            C = [l for l in range(n) if S[i, l] == top]
            m = [sum((X[l, c] for l in C), zero) / len(C) for c in range(d)]
            centre = [rho * X[i, r] + sum((V[r, c] * m[c] for c in range(d)), zero) for r in range(d)]
            outside = [l for l in range(n) if S[i, l] != top]
            if not outside:  # every score ties: softmax equals hardmax
                for r in range(d):
                    lo[i, r] = hi[i, r] = centre[r]
                continue
            diffs = {l: [X[l, c] - m[c] for c in range(d)] for l in outside}
            size = 1 + v_norm * max(sum((abs(a) for a in diffs[l]), zero) for l in outside)
            M = 2 * int(prec) + max(0, size.numerator.bit_length() - size.denominator.bit_length() + 1)  # >= ln(size)
            tiny = mpmath.iv.mpf([0, mpmath.iv.exp(-M).b])  # [0, e^-M], rigorous

            def weight(l: int):
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
    W, U, b, eta = as_exact(W, "W"), as_exact(U, "U"), as_exact(b, "b"), as_exact(eta, "eta").item()
    if lo.shape != hi.shape or lo.ndim != 2:
        raise ValueError(f"lo and hi must have one shape [n, d], got {lo.shape} and {hi.shape}")
    if any(a > c for a, c in zip(lo.flat, hi.flat)):
        raise ValueError("lo must be <= hi entrywise")
    n, d = lo.shape
    w = U.shape[0] if U.ndim == 2 else -1
    if U.shape != (w, d) or b.shape != (w,) or W.shape != (d, w):
        raise ValueError(f"need U [w, d], b [w], W [d, w] with d = {d}; got {U.shape}, {b.shape}, {W.shape}")
    zero = Fraction(0)

    def affine(coef, const, lo_row, hi_row):  # bounds of sum_j coef_j x_j + const over the box
        low = const + sum((c * (lo_row[j] if c >= 0 else hi_row[j]) for j, c in enumerate(coef)), zero)
        high = const + sum((c * (hi_row[j] if c >= 0 else lo_row[j]) for j, c in enumerate(coef)), zero)
        return low, high

    out_lo, out_hi = np.empty((n, d), dtype=object), np.empty((n, d), dtype=object)
    for i in range(n):
        pre = [affine(U[k], b[k], lo[i], hi[i]) for k in range(w)]
        if all(a >= 0 or c <= 0 for a, c in pre):  # constant pattern: the layer is affine here
            on = [k for k, (a, _) in enumerate(pre) if a >= 0 and not (a == 0 and pre[k][1] == 0)]
            for r in range(d):
                coef = [eta * (r == j) + sum((W[r, k] * U[k, j] for k in on), zero) for j in range(d)]
                const = sum((W[r, k] * b[k] for k in on), zero)
                out_lo[i, r], out_hi[i, r] = affine(coef, const, lo[i], hi[i])
            continue
        hidden = [(max(a, zero), max(c, zero)) for a, c in pre]
        h_lo, h_hi = [a for a, _ in hidden], [c for _, c in hidden]
        for r in range(d):
            low, high = affine(W[r], zero, h_lo, h_hi)
            e_lo, e_hi = (eta * lo[i, r], eta * hi[i, r]) if eta >= 0 else (eta * hi[i, r], eta * lo[i, r])
            out_lo[i, r], out_hi[i, r] = low + e_lo, high + e_hi
    return _fractions(out_lo), _fractions(out_hi)


def mean_attention_enclosure(lo: object, hi: object, rho: object, beta: object) -> tuple[np.ndarray, np.ndarray]:
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
    rho, beta = as_exact(rho, "rho").item(), as_exact(beta, "beta").item()
    if lo.shape != hi.shape or lo.ndim != 2:
        raise ValueError(f"lo and hi must have one shape [n, d], got {lo.shape} and {hi.shape}")
    n = lo.shape[0]
    m_lo, m_hi = lo.sum(axis=0) / n, hi.sum(axis=0) / n
    a_lo, a_hi = (rho * lo, rho * hi) if rho >= 0 else (rho * hi, rho * lo)
    c_lo, c_hi = (beta * m_lo, beta * m_hi) if beta >= 0 else (beta * m_hi, beta * m_lo)
    return _fractions(a_lo + c_lo), _fractions(a_hi + c_hi)
