r"""Softmax attention near hardmax, and ReLU "snap" layers that finish a collapse exactly.

This book's derivation (chapter "Softmax collapse"; the paper's text was not available). For a
query :math:`i` let :math:`C_i` be the hardmax argmax set, :math:`k_i = |C_i|`, and
:math:`g_i > 0` the *score gap*: the largest score minus the largest score outside :math:`C_i`.
The softmax weight outside :math:`C_i` is

.. math::
   \begin{aligned}
   \varepsilon_i(\tau) = \sum_{l \notin C_i} \pi_{il}
   &\le \frac{(n - k_i)\, e^{-g_i/\tau}}{k_i + (n - k_i)\, e^{-g_i/\tau}} \\
   &\le \frac{n - k_i}{k_i}\, e^{-g_i/\tau},
   \end{aligned}

and, because the weights on :math:`C_i` are equal, the softmax output differs from the hardmax
one by exactly :math:`\varepsilon_i V (\bar x_i - m_i)` with :math:`m_i` the mean of :math:`C_i`
and :math:`\bar x_i` the softmax-weighted mean outside :math:`C_i`.

A snap layer (:math:`\eta = 0`, width 3) maps the slab :math:`|\langle v, x \rangle - s| \le h`
exactly onto a point :math:`p` and the rest of space onto the line :math:`p + \mathbb{R} q`:

.. math::
   \operatorname{snap}(x) = p + q \big[\operatorname{relu}(\langle v, x \rangle - s - h)
   - \operatorname{relu}(s - h - \langle v, x \rangle)\big].
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import torch

from .layers import (
    Array,
    Scalar,
    _check_tau,
    _fractions,
    as_exact,
    attention_scores,
    attention_weights,
    is_exact,
    self_attention,
)

# --------------------------------------------------------------------------------------------
# softmax -> hardmax: gaps, weights, bounds
# --------------------------------------------------------------------------------------------


def score_gaps(X: Array, A: Array) -> tuple[list[int], list[object]]:
    r"""For each query of one sequence: the size :math:`k_i` of its argmax set and its score gap :math:`g_i`.

    :math:`g_i` is ``math.inf`` when every score ties. Exact (Fractions) for exact ``X``.

    Parameters
    ----------
    X
        One sequence ``[n, d]`` (float tensor/array or exact object array).
    A
        Key-query matrix ``[d, d]``.

    Raises
    ------
    ValueError
        for a batch of sequences and whatever :func:`sxor.interp.layers.attention_scores` refuses.
    """
    S = attention_scores(X, A)
    if S.ndim != 2:
        raise ValueError(f"score_gaps takes one sequence X [n, d], got scores of shape {tuple(S.shape)}")
    rows = S.tolist()
    sizes, gaps = [], []
    for row in rows:
        top = max(row)
        rest = [s for s in row if s != top]
        sizes.append(len(row) - len(rest))
        gaps.append(top - max(rest) if rest else math.inf)
    return sizes, gaps


def log_nonmax_weight(X: Array, A: Array, tau: float) -> torch.Tensor:
    r""":math:`\log \varepsilon_i(\tau)` per query, :math:`\varepsilon_i` the softmax weight outside the hardmax argmax set.

    Computed by log-sum-exp in float64 (no underflow even when :math:`\varepsilon_i < 10^{-300}`);
    ``-inf`` when every score ties. The argmax sets are exact for exact ``X``.

    Parameters
    ----------
    X
        One sequence ``[n, d]``.
    A
        Key-query matrix ``[d, d]``.
    tau
        Temperature :math:`\tau > 0`.

    Raises
    ------
    ValueError
        for ``tau <= 0``, NaN and infinity, and whatever
        :func:`sxor.interp.layers.attention_scores` refuses.
    """
    tau = _check_tau(tau)
    if tau == 0:
        raise ValueError("tau must be > 0 (at tau = 0 the weight outside the argmax set is 0)")
    S = attention_scores(X, A)
    top = np.equal(S, S.max(axis=-1, keepdims=True)) if is_exact(X) else None
    S = torch.as_tensor(np.asarray(S, dtype=np.float64)) if isinstance(S, np.ndarray) else S.to(torch.float64)
    top = torch.as_tensor(top) if top is not None else S == S.amax(-1, keepdim=True)
    z = S / float(tau)
    return torch.logsumexp(z.masked_fill(top, -math.inf), dim=-1) - torch.logsumexp(z, dim=-1)


def log_nonmax_weight_bound(n: int, k: object, gap: object, tau: float) -> torch.Tensor:
    r"""Log of the worst case of :math:`\varepsilon_i` over all score rows with :math:`k` maximisers and gap :math:`g`.

    The worst case is

    .. math::  \log \frac{(n - k)\, e^{-g/\tau}}{k + (n - k)\, e^{-g/\tau}},

    attained when every other score is exactly :math:`g` below the top. In logs, so it never
    underflows; ``-inf`` when :math:`k = n` (everything ties, softmax is hardmax).

    Parameters
    ----------
    n
        Number of tokens.
    k
        Number of maximisers, in ``[1, n]`` (scalar or tensor).
    gap
        Score gap :math:`g > 0` (scalar or tensor).
    tau
        Temperature :math:`\tau > 0`.

    Raises
    ------
    ValueError
        for ``tau <= 0``, ``k`` outside ``[1, n]`` and ``gap <= 0``.
    """
    if tau <= 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    k = torch.as_tensor(k, dtype=torch.float64)
    gap = torch.as_tensor(gap, dtype=torch.float64)
    if bool((k < 1).any()) or bool((k > n).any()):
        raise ValueError(f"k must lie in [1, n] = [1, {n}]")
    if bool((gap <= 0).any()):
        raise ValueError("gap must be > 0 (the gap between the top score and the next one)")
    log_e = torch.log(n - k) - gap / tau  # log of (n - k) e^{-gap/tau}
    return log_e - torch.logaddexp(torch.log(k), log_e)


def softmax_deviation(X: Array, A: Array, rho: Scalar, V: Array, tau: float) -> torch.Tensor:
    r"""Distance from hardmax, :math:`\lVert \mathrm{SA}_\tau(X)_i - \mathrm{SA}_0(X)_i \rVert` (Euclidean, float64), per token.

    Parameters
    ----------
    X
        One sequence ``[n, d]``, exact or float.
    A
        Key-query matrix ``[d, d]``.
    rho
        Weight :math:`\rho` of the skip connection.
    V
        Value matrix ``[d, d]``.
    tau
        Temperature, a float :math:`> 0`.

    Raises
    ------
    ValueError
        for what :func:`sxor.interp.layers.self_attention` refuses (non-finite entries, bad shapes,
        ``tau < 0``).
    """
    Xf = torch.as_tensor(np.asarray(X, dtype=np.float64)) if isinstance(X, np.ndarray) else X.to(torch.float64)
    hard = self_attention(X, A, rho, V, 0)
    hard = torch.as_tensor(np.asarray(hard, dtype=np.float64)) if isinstance(hard, np.ndarray) else hard
    soft = self_attention(Xf, np.asarray(A, dtype=np.float64), float(rho), np.asarray(V, dtype=np.float64), tau)
    return (soft - hard.to(soft)).norm(dim=-1)


# --------------------------------------------------------------------------------------------
# snap layers
# --------------------------------------------------------------------------------------------


def snap_layer(v: object, s: object, h: object, p: object, q: object) -> dict[str, object]:
    r"""Parameters of the width-3, :math:`\eta = 0` feed-forward snap layer, for ``feed_forward(X, **params)``.

    The layer is
    :math:`\operatorname{snap}(x) = p + q [\operatorname{relu}(\langle v, x \rangle - s - h) - \operatorname{relu}(s - h - \langle v, x \rangle)]`.
    On the slab :math:`|\langle v, x \rangle - s| \le h` both ReLUs are off, so the output is exactly
    :math:`p` (in float too: the two products are 0 and :math:`p \cdot 1`). Exact parameters
    (Fractions) when every argument is rational, float64 numpy arrays otherwise.

    Parameters
    ----------
    v
        Direction ``[d]`` of the slab, nonzero.
    s
        Centre of the slab along :math:`v`.
    h
        Half-width of the slab, :math:`h > 0`.
    p
        Point ``[d]`` that the slab is mapped onto.
    q
        Exit direction ``[d]`` for points outside the slab.

    Raises
    ------
    ValueError
        for vectors ``v, p, q`` of different lengths, ``h <= 0``, ``v = 0``, and NaN or infinite
        entries.
    """
    try:
        v, p, q = as_exact(v, "v"), as_exact(p, "p"), as_exact(q, "q")
        s, h = as_exact(s, "s").item(), as_exact(h, "h").item()
        one, zero = Fraction(1), Fraction(0)
        exact = True
    except ValueError:
        try:
            v, p, q = (np.asarray(a, dtype=np.float64) for a in (v, p, q))
            s, h, one, zero = float(s), float(h), 1.0, 0.0
        except (TypeError, ValueError):
            raise ValueError("v, p, q, s, h must be real numbers (vectors v, p, q; scalars s, h)") from None
        if not (np.isfinite(v).all() and np.isfinite(p).all() and np.isfinite(q).all()
                and math.isfinite(s) and math.isfinite(h)):
            raise ValueError("snap_layer parameters must be finite (got NaN or infinity)")
        exact = False
    d = v.shape[0] if v.ndim == 1 else -1
    if v.ndim != 1 or p.shape != (d,) or q.shape != (d,):
        raise ValueError(f"v, p, q must be vectors of one length d, got shapes {v.shape}, {p.shape}, {q.shape}")
    if h <= 0:
        raise ValueError(f"h (the half-width of the slab) must be > 0, got {h}")
    if all(x == 0 for x in v):
        raise ValueError("v must be nonzero (the direction across the slab)")
    U = np.stack([v, -v, np.full(d, zero, dtype=v.dtype)])
    b = np.array([-(s + h), s - h, one], dtype=v.dtype)
    W = np.stack([q, -q, p], axis=1)
    return {"eta": zero, "W": W, "U": U, "b": b}


def snap_temperature_bound(
    X: Array, A: Array, rho: Scalar, V: Array, v: object, s: float, h: float, tokens: list[int],
    kind: str = "gap",
) -> float:
    r"""Largest :math:`\tau` for which a bound guarantees that every token in ``tokens`` leaves the softmax layer inside the slab.

    The slab is :math:`|\langle v, y \rangle - s| \le h`. With
    :math:`a_i = |\langle v, y_i^0 \rangle - s|` for the hardmax image :math:`y_i^0` and the exact
    identity :math:`y_i^\tau - y_i^0 = \sum_{l \notin C_i} \pi_{il} V (x_l - m_i)`:

    * ``kind="gap"`` (closed form): with
      :math:`D_i = \max_{l \notin C_i} |\langle v, V (x_l - m_i) \rangle|` and
      :math:`r_i = (h - a_i) / D_i`, the worst-case :math:`\varepsilon_i` is at most :math:`r_i` as
      soon as :math:`\tau \le g_i / \log\big((n - k_i)(1 - r_i) / (r_i k_i)\big)`.
    * ``kind="per-token"``: :math:`\pi_{il} \le e^{-(s_\mathrm{top} - s_{il})/\tau} / k_i` for each
      :math:`l`, so the shift along :math:`v` is at most
      :math:`B_i(\tau) = \frac{1}{k_i} \sum_{l \notin C_i} |\langle v, V (x_l - m_i) \rangle|\, e^{-(s_\mathrm{top} - s_{il})/\tau}`,
      increasing in :math:`\tau`; the largest :math:`\tau` with :math:`B_i(\tau) \le h - a_i` is
      found by bisection (to relative :math:`10^{-12}`).

    Returns ``math.inf`` when every :math:`\tau` works.

    Parameters
    ----------
    X
        One sequence ``[n, d]``.
    A, rho, V
        Parameters of the softmax self-attention layer.
    v, s, h
        Direction, centre and half-width of the slab.
    tokens
        Indices of the tokens that must land in the slab.
    kind
        ``"gap"`` or ``"per-token"``.

    Raises
    ------
    ValueError
        when a hardmax image already lies outside the slab or ``kind`` is unknown.
    """
    if kind not in ("gap", "per-token"):
        raise ValueError(f"kind must be 'gap' or 'per-token', got {kind!r}")
    Xf = np.asarray(X, dtype=np.float64)
    Vf, vf = np.asarray(V, dtype=np.float64), np.asarray(v, dtype=np.float64)
    hard = np.asarray(self_attention(X, A, rho, V, 0), dtype=np.float64)
    pi = np.asarray(attention_weights(X, A, 0), dtype=np.float64)
    S = np.asarray(attention_scores(X, A), dtype=np.float64)
    sizes, gaps = score_gaps(X, A)
    n = Xf.shape[0]
    best = math.inf
    for i in tokens:
        a = abs(float(vf @ hard[i]) - float(s))
        if a > h:
            raise ValueError(f"the hardmax image of token {i} is already outside the slab")
        if sizes[i] == n:
            continue  # all scores tie: softmax equals hardmax
        outside = [l for l in range(n) if pi[i, l] == 0]
        m = pi[i] @ Xf
        shift = np.array([abs(float(vf @ Vf @ (Xf[l] - m))) for l in outside])
        room = float(h) - a
        if kind == "gap":
            D = shift.max()
            r = room / D if D > 0 else math.inf
            arg = (n - sizes[i]) * (1 - r) / (r * sizes[i]) if r < 1 else 0.0
            if arg > 1:
                best = min(best, float(gaps[i]) / math.log(arg))
            continue
        drops = S[i].max() - S[i, outside]

        def bound(tau: float) -> float:
            return float((shift * np.exp(-drops / tau)).sum()) / sizes[i]

        if bound(1e300) <= room:
            continue
        lo, hi = 1e-300, 1.0
        while bound(hi) <= room:
            lo, hi = hi, hi * 2
        while hi - lo > 1e-12 * hi:
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if bound(mid) <= room else (lo, mid)
        best = min(best, lo)
    return best


def lands_in_slab(X: Array, A: Array, rho: Scalar, V: Array, tau: float, v: object, s: float, h: float, tokens: list[int]) -> bool:
    r"""Whether every token in ``tokens`` leaves the float64 softmax layer inside the slab :math:`|\langle v, y \rangle - s| \le h`.

    Parameters
    ----------
    X
        One sequence ``[n, d]``.
    A, rho, V
        Parameters of the self-attention layer.
    tau
        Temperature.
    v, s, h
        Direction, centre and half-width of the slab.
    tokens
        Indices of the tokens to check.

    Raises
    ------
    ValueError
        for what :func:`sxor.interp.layers.self_attention` refuses.
    """
    Xf = torch.as_tensor(np.asarray(X, dtype=np.float64))
    out = self_attention(Xf, np.asarray(A, dtype=np.float64), float(rho), np.asarray(V, dtype=np.float64), tau)
    proj = out[tokens] @ torch.as_tensor(np.asarray(v, dtype=np.float64))
    return bool(((proj - float(s)).abs() <= float(h)).all())


def largest_snapping_temperature(
    X: Array, A: Array, rho: Scalar, V: Array, v: object, s: float, h: float, tokens: list[int],
    tau_min: float = 1e-4, tau_max: float = 1e2, num: int = 121, refine: int = 40,
) -> float:
    r"""Measured threshold: the largest :math:`\tau` at which the softmax layer still lands ``tokens`` in the slab.

    The largest :math:`\tau` such that :func:`~sxor.interp.softmax.lands_in_slab` holds at
    :math:`\tau` and at every smaller point of a log grid on ``[tau_min, tau_max]``, refined by
    bisection between the last success and the first failure. Returns ``tau_max`` if no grid point
    fails.

    Parameters
    ----------
    X, A, rho, V, v, s, h, tokens
        As in :func:`~sxor.interp.softmax.snap_temperature_bound`.
    tau_min, tau_max
        Ends of the log grid.
    num
        Number of grid points.
    refine
        Number of bisection steps.

    Raises
    ------
    ValueError
        if even ``tau_min`` fails.
    """
    grid = np.geomspace(tau_min, tau_max, num)
    ok = [lands_in_slab(X, A, rho, V, float(t), v, s, h, tokens) for t in grid]
    if not ok[0]:
        raise ValueError(f"the snap already fails at tau_min = {tau_min}")
    if all(ok):
        return float(tau_max)
    first_fail = ok.index(False)
    lo, hi = float(grid[first_fail - 1]), float(grid[first_fail])
    for _ in range(refine):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if lands_in_slab(X, A, rho, V, mid, v, s, h, tokens) else (lo, mid)
    return lo


# --------------------------------------------------------------------------------------------
# rigorous enclosures: softmax in interval arithmetic, FF layers on boxes, all with rational ends
# --------------------------------------------------------------------------------------------


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
