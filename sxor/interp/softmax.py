r"""Softmax attention near hardmax (collapse bounds), and ReLU "snap" layers that finish a collapse exactly.

The rigorous interval enclosures the certificate uses are in :mod:`sxor.interp.enclosures`.

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
   \operatorname{snap}(x) = p + q \big[&\operatorname{relu}(\langle v, x \rangle - s - h) \\
   &- \operatorname{relu}(s - h - \langle v, x \rangle)\big].
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import torch

from .exact import exact_item
from .layers import (
    Array,
    Scalar,
    _check_tau,
    as_exact,
    attention_scores,
    attention_weights,
    is_exact,
    self_attention,
)

# --------------------------------------------------------------------------------------------
# softmax -> hardmax: gaps, weights, bounds
# --------------------------------------------------------------------------------------------


def score_gaps(X: Array, A: Array) -> tuple[list[int], list[Fraction | float]]:
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
        raise ValueError(
            f"score_gaps takes one sequence X [n, d], got scores of shape {tuple(S.shape)}"
        )
    rows = S.tolist()
    sizes: list[int] = []
    gaps: list[Fraction | float] = []
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
    top = np.equal(S, S.max(axis=-1, keepdims=True)) if is_exact(S) else None  # exact iff X is
    S = (
        torch.as_tensor(np.asarray(S, dtype=np.float64))
        if isinstance(S, np.ndarray)
        else S.to(torch.float64)
    )
    top = torch.as_tensor(top) if top is not None else S.amax(-1, keepdim=True) == S
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
    Xf = (
        torch.as_tensor(np.asarray(X, dtype=np.float64))
        if isinstance(X, np.ndarray)
        else X.to(torch.float64)
    )
    hard = self_attention(X, A, rho, V, 0)
    hard = (
        torch.as_tensor(np.asarray(hard, dtype=np.float64))
        if isinstance(hard, np.ndarray)
        else hard
    )
    soft = self_attention(
        Xf, np.asarray(A, dtype=np.float64), float(rho), np.asarray(V, dtype=np.float64), tau
    )
    return (soft - hard.to(soft)).norm(dim=-1)


# --------------------------------------------------------------------------------------------
# snap layers
# --------------------------------------------------------------------------------------------


def snap_layer(v: object, s: Scalar, h: Scalar, p: object, q: object) -> dict[str, object]:
    r"""Parameters of the width-3, :math:`\eta = 0` feed-forward snap layer, for ``feed_forward(X, **params)``.

    The layer is

    .. math::
       \operatorname{snap}(x) = p + q [&\operatorname{relu}(\langle v, x \rangle - s - h) \\
       &- \operatorname{relu}(s - h - \langle v, x \rangle)].

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
    one: Fraction | float
    zero: Fraction | float
    try:
        v, p, q = as_exact(v, "v"), as_exact(p, "p"), as_exact(q, "q")
        s, h = exact_item(s, "s"), exact_item(h, "h")
        one, zero = Fraction(1), Fraction(0)
    except ValueError:
        try:
            v, p, q = (np.asarray(a, dtype=np.float64) for a in (v, p, q))
            s, h, one, zero = float(s), float(h), 1.0, 0.0
        except (TypeError, ValueError):
            raise ValueError(
                "v, p, q, s, h must be real numbers (vectors v, p, q; scalars s, h)"
            ) from None
        if not (
            np.isfinite(v).all()
            and np.isfinite(p).all()
            and np.isfinite(q).all()
            and math.isfinite(s)
            and math.isfinite(h)
        ):
            raise ValueError("snap_layer parameters must be finite (got NaN or infinity)") from None
    d = v.shape[0] if v.ndim == 1 else -1
    if v.ndim != 1 or p.shape != (d,) or q.shape != (d,):
        raise ValueError(
            f"v, p, q must be vectors of one length d, got shapes {v.shape}, {p.shape}, {q.shape}"
        )
    if h <= 0:
        raise ValueError(f"h (the half-width of the slab) must be > 0, got {h}")
    if all(x == 0 for x in v):
        raise ValueError("v must be nonzero (the direction across the slab)")
    U = np.stack([v, -v, np.full(d, zero, dtype=v.dtype)])
    b = np.array([-(s + h), s - h, one], dtype=v.dtype)
    W = np.stack([q, -q, p], axis=1)
    return {"eta": zero, "W": W, "U": U, "b": b}


def snap_temperature_bound(
    X: Array,
    A: Array,
    rho: Scalar,
    V: Array,
    v: object,
    s: Scalar,
    h: Scalar,
    tokens: list[int],
    kind: str = "gap",
) -> float:
    r"""Largest :math:`\tau` for which a bound guarantees that every token in ``tokens`` leaves the softmax layer inside the slab.

    The slab is :math:`|\langle v, y \rangle - s| \le h`. With
    :math:`a_i = |\langle v, y_i^0 \rangle - s|` for the hardmax image :math:`y_i^0` and the exact
    identity :math:`y_i^\tau - y_i^0 = \sum_{l \notin C_i} \pi_{il} V (x_l - m_i)`:

    * ``kind="gap"`` (closed form): with
      :math:`D_i = \max_{l \notin C_i} |\langle v, V (x_l - m_i) \rangle|` and
      :math:`r_i = (h - a_i) / D_i`, the worst-case :math:`\varepsilon_i` is at most :math:`r_i` as
      soon as

      .. math::
         \tau \le g_i / \log\big((n - k_i)(1 - r_i) / (r_i k_i)\big).

    * ``kind="per-token"``: :math:`\pi_{il} \le e^{-(s_\mathrm{top} - s_{il})/\tau} / k_i` for each
      :math:`l`, so the shift along :math:`v` is at most

      .. math::
         B_i(\tau) = \frac{1}{k_i} \sum_{l \notin C_i} &|\langle v, V (x_l - m_i) \rangle| \\
         &\cdot e^{-(s_\mathrm{top} - s_{il})/\tau},

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

        def bound(
            tau: float, shift: np.ndarray = shift, drops: np.ndarray = drops, i: int = i
        ) -> float:
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


def lands_in_slab(
    X: Array,
    A: Array,
    rho: Scalar,
    V: Array,
    tau: float,
    v: object,
    s: Scalar,
    h: Scalar,
    tokens: list[int],
) -> bool:
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
    out = self_attention(
        Xf, np.asarray(A, dtype=np.float64), float(rho), np.asarray(V, dtype=np.float64), tau
    )
    proj = out[tokens] @ torch.as_tensor(np.asarray(v, dtype=np.float64))
    return bool(((proj - float(s)).abs() <= float(h)).all())


def largest_snapping_temperature(
    X: Array,
    A: Array,
    rho: Scalar,
    V: Array,
    v: object,
    s: Scalar,
    h: Scalar,
    tokens: list[int],
    tau_min: float = 1e-4,
    tau_max: float = 1e2,
    num: int = 121,
    refine: int = 40,
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
