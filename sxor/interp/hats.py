r"""Feed-forward layers of chapter 13 that move one point: hats, snap-moves, and the line projection.

All parameters are exact Fractions. ``values`` is always the finite set of token values present
(as ``sxor.interp.exact.Token`` tuples); a layer is designed so that it acts on one value and
fixes every other one.

* :func:`~sxor.interp.hats.injective_direction`: :math:`v = (1, t, \dots, t^{d-1})` injective on
  the values (Lemma 13.1).
* :func:`~sxor.interp.hats.hat_move`: residual
  :math:`x \mapsto x + h(\langle v, x \rangle) D`, :math:`h` a triangle (width 3) or trapezoid
  (width 4) hat (Lemma 13.2).
* :func:`~sxor.interp.hats.line_projection`: non-residual
  :math:`x \mapsto \operatorname{relu}(\langle v, x \rangle - c)\, e_1` (width 1), which puts
  every token on the first coordinate axis, with a well-conditioned direction
  (:func:`~sxor.interp.hats.conditioned_direction`).
* :func:`~sxor.interp.hats.snap_move`: residual width 4; on the segment
  :math:`\{p + a e_1 : |a| \le g/4\}` it equals the constant ``goal`` (so a whole small cluster
  on the axis lands *exactly* on its target) and it fixes every value projecting
  :math:`\ge g/2` away.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Sequence
from fractions import Fraction

import numpy as np

from .exact import Token, dot, fmt, l1, zeros
from .network import FFLayer


def injective_direction(values: Collection[Token], d: int, start: int = 1) -> tuple[Fraction, ...]:
    r"""The first :math:`v = (1, t, \dots, t^{d-1})`, :math:`t = \mathrm{start}, \mathrm{start} + 1, \dots`, injective on ``values``.

    That is, whose projections :math:`\langle v, x \rangle` are pairwise distinct on ``values``. It
    exists: two distinct points have equal projections for at most :math:`d - 1` values of
    :math:`t` (a nonzero polynomial of degree :math:`\le d - 1` in :math:`t`), so at most
    :math:`(d - 1) K (K - 1) / 2` values of :math:`t` fail for :math:`K` points; the search is
    bounded by that.

    Parameters
    ----------
    values
        A collection of ``d``-tuples of rationals.
    d
        Token dimension, at least 1.
    start
        First :math:`t` tried, at least 1.

    Raises
    ------
    ValueError
        for ``d < 1``, ``start < 1`` and values of the wrong length.
    """
    if int(d) != d or d < 1:
        raise ValueError(f"d must be a positive integer, got {d}")
    if int(start) != start or start < 1:
        raise ValueError(f"start must be a positive integer, got {start}")
    values = list(set(values))
    if any(len(x) != d for x in values):
        raise ValueError(f"every value must have d = {d} coordinates")
    limit = (d - 1) * len(values) * (len(values) - 1) // 2 + 1
    for t in range(int(start), int(start) + limit + 1):
        v = tuple(Fraction(t) ** i for i in range(d))
        if len({dot(v, x) for x in values}) == len(values):
            return v
    raise AssertionError(
        "unreachable: more bad t than the polynomial bound allows"
    )  # pragma: no cover


#: Number of small-integer candidate directions :func:`conditioned_direction` tries.
CANDIDATES = 48


def _projection_spacing(values: list[Token], v: Sequence[Fraction]) -> tuple[Fraction, Fraction]:
    """``(smallest gap, range)`` of the sorted projections ``<v, x>`` (gap 0 when two coincide)."""
    proj = sorted(dot(v, x) for x in values)
    if len(proj) < 2:
        return Fraction(1), Fraction(0)
    return min(b - a for a, b in itertools.pairwise(proj)), proj[-1] - proj[0]


def conditioned_direction(values: Collection[Token], d: int) -> tuple[Fraction, ...]:
    r"""An injective direction :math:`v` on ``values`` whose projections are well spread.

    The proof (Theorem 13.B) needs only that :math:`\langle v, \cdot \rangle` is injective on the
    :math:`K` values, so that after the line projection the clusters sit at pairwise distinct
    points :math:`t_k e_1` with a positive gap :math:`G = \min_{k \ne l} |t_k - t_l|`. How well a
    float64 evaluation follows the exact network depends on the ratio :math:`R / G` of the range
    :math:`R` of the projections to that gap: a snap-move at :math:`t_k` has slopes
    :math:`\sim t_k / G` and cancels terms of size :math:`t_k`, so its rounding error is about
    :math:`2^{-53} t_k^2 / G`. The moment curve :math:`(1, t, \dots, t^{d-1})` of
    :func:`~sxor.interp.hats.injective_direction` is always injective but has
    :math:`R / G` growing like :math:`t^{d-1}` (:math:`\sim 10^7` at :math:`d = 20`).

    This function tries the coordinate axes and :data:`CANDIDATES` fixed pseudo-random integer
    vectors with entries in :math:`[-4, 4]` (the same list on every machine), keeps those that are
    injective on ``values`` (checked exactly, in Fractions), and returns the one with the largest
    :math:`G / R` (ties: the first); when none is injective it falls back to
    :func:`~sxor.interp.hats.injective_direction`, so an injective direction is always returned.
    A direction in general position has :math:`G / R \gtrsim 1/K^2`, so :math:`R/G` stays near
    :math:`K^2` whatever :math:`d`.

    Parameters
    ----------
    values
        A collection of ``d``-tuples of rationals.
    d
        Token dimension, at least 1.

    Raises
    ------
    ValueError
        for ``d < 1`` and values of the wrong length.
    """
    if int(d) != d or d < 1:
        raise ValueError(f"d must be a positive integer, got {d}")
    values = list(set(values))
    if any(len(x) != d for x in values):
        raise ValueError(f"every value must have d = {d} coordinates")
    if len(values) < 2:
        return tuple(Fraction(int(i == 0)) for i in range(d))
    rng = np.random.default_rng(20260101 + d)
    candidates = [tuple(int(i == k) for i in range(d)) for k in range(d)]
    candidates += [tuple(int(a) for a in rng.integers(-4, 5, size=d)) for _ in range(CANDIDATES)]
    # exact integer arithmetic: x = n / L with L the common denominator (G / R does not change)
    L = math.lcm(*(Fraction(c).denominator for x in values for c in x))
    ints = [[int(Fraction(c) * L) for c in x] for x in values]
    best, best_score = None, Fraction(0)
    for cand in candidates:
        if not any(cand):
            continue
        proj = sorted(sum(a * c for a, c in zip(cand, n) if a) for n in ints)
        gap, spread = min(b - a for a, b in itertools.pairwise(proj)), proj[-1] - proj[0]
        if gap > 0 and Fraction(gap, spread) > best_score:
            best, best_score = cand, Fraction(gap, spread)
    if best is None:
        return injective_direction(values, d)
    return tuple(Fraction(a) for a in best)


def _gap(values: set[Token], v: Sequence[Fraction], p: Token) -> Fraction:
    s = dot(v, p)
    others = [abs(dot(v, x) - s) for x in values if x != p]
    return min(others) if others else Fraction(1)


def _check_move(values: set[Token], p: Token, vector: Sequence, d: int, what: str) -> None:
    if p not in values:
        raise ValueError(f"the point to move {fmt(p)} is not in values")
    if len(p) != d or len(vector) != d:
        raise ValueError(
            f"p and {what} must have d = {d} coordinates, got {len(p)} and {len(vector)}"
        )


def hat_move(
    values: set[Token],
    p: Token,
    displacement: Sequence[Fraction],
    d: int,
    *,
    flat: bool,
    translation: Sequence[Fraction] | None = None,
    role: str = "",
    start: int = 1,
    direction: Sequence[Fraction] | None = None,
) -> FFLayer:
    r"""A residual hat FF :math:`x \mapsto x + h(\langle v, x \rangle) D\, (+\, t)` with :math:`h(\langle v, p \rangle) = 1` and :math:`h = 0` at every other value.

    :math:`v` is :func:`~sxor.interp.hats.injective_direction` of ``values``; :math:`g` the
    distance from :math:`s = \langle v, p \rangle` to the nearest other projection.

    Parameters
    ----------
    values
        The set of token values present.
    p
        The value to move; must be in ``values``.
    displacement
        The displacement :math:`D`, a vector of length ``d``.
    d
        Token dimension.
    flat
        ``False``: triangle of half-width :math:`g/2` (3 ReLUs); ``True``: trapezoid equal to 1 on
        :math:`|t - s| \le g/4` and 0 for :math:`|t - s| \ge g/2` (4 ReLUs).
    translation
        If given, a constant translation :math:`t` added by one more neuron (:math:`U = 0, b = 1`).
    role
        Name of the layer's job in the construction.
    start
        First :math:`t` tried by :func:`~sxor.interp.hats.injective_direction`.
    direction
        Use this :math:`v` instead (e.g. :func:`~sxor.interp.hats.conditioned_direction`); it only
        has to separate ``p`` from the other values, since :math:`h` vanishes at every projection
        :math:`\ge g/2` away from :math:`s`.

    Raises
    ------
    ValueError
        for a ``p`` that is not in ``values``, vectors of the wrong length, and a ``direction``
        that does not separate ``p`` from the other values.
    """
    _check_move(values, p, displacement, d, "displacement")
    if direction is None:
        v = injective_direction(values, d, start)
    else:
        v = tuple(Fraction(a) for a in direction)
        if len(v) != d:
            raise ValueError(f"direction must have d = {d} coordinates, got {len(v)}")
    s, g = dot(v, p), _gap(values, v, p)
    if g <= 0:
        raise ValueError(f"direction {fmt(v)} does not separate {fmt(p)} from the other values")
    if flat:
        r = g / 4
        offsets, coefs = [2 * r, r, -r, -2 * r], [1 / r, -1 / r, -1 / r, 1 / r]
    else:
        r = g / 2
        offsets, coefs = [r, Fraction(0), -r], [1 / r, -2 / r, 1 / r]
    rows = [list(v) for _ in offsets]
    biases = [o - s for o in offsets]
    cols = [[c * D for D in displacement] for c in coefs]
    if translation is not None:
        rows.append([Fraction(0)] * d)
        biases.append(Fraction(1))
        cols.append(list(translation))
    U = np.array(rows, dtype=object)
    b = np.array(biases, dtype=object)
    W = np.array(cols, dtype=object).T.copy()
    return FFLayer(Fraction(1), U, b, W, role, g, l1(v))


def snap_move(
    values: set[Token],
    p: Token,
    goal: Sequence[Fraction],
    d: int,
    *,
    role: str = "",
    start: int = 1,
    direction: Sequence[Fraction] | None = None,
) -> FFLayer:
    r"""A residual width-4 FF :math:`x \mapsto x + g(\langle u, x \rangle)` that sends a whole segment through ``p`` exactly to ``goal``.

    The segment is :math:`\{p + a e_1 : |a| \le \mathrm{gap}/4\}`; every point whose projection is
    :math:`\ge \mathrm{gap}/2` away from :math:`\langle u, p \rangle` is fixed.
    :math:`u = (1, t, \dots)` is :func:`~sxor.interp.hats.injective_direction` of ``values`` (so
    :math:`\langle u, e_1 \rangle = 1`) and gap the distance from :math:`s = \langle u, p \rangle` to
    the nearest other projection. :math:`g` is piecewise linear with kinks
    :math:`s \mp \mathrm{gap}/2, s \mp \mathrm{gap}/4`: zero outside
    :math:`(s - \mathrm{gap}/2, s + \mathrm{gap}/2)`, equal to
    :math:`\mathrm{goal} - p - (\langle u, x \rangle - s) e_1` on
    :math:`[s - \mathrm{gap}/4, s + \mathrm{gap}/4]`. The layer records ``gap`` and ``v_l1 = 1``
    (the half-width it absorbs is :math:`\mathrm{gap}/4` along :math:`e_1`).

    Parameters
    ----------
    values
        The set of token values present.
    p
        The centre of the segment; must be in ``values``.
    goal
        Where the segment goes, a vector of length ``d``.
    d
        Token dimension.
    role
        Name of the layer's job in the construction.
    start
        First :math:`t` tried by :func:`~sxor.interp.hats.injective_direction`.
    direction
        Use this :math:`u` (with :math:`u_1 = 1`) instead; it only has to separate ``p`` from the
        other values (every other value is then fixed, since its projection is
        :math:`\ge \mathrm{gap}` away). The softmax construction passes :math:`u = e_1`: its axis
        points are :math:`\ge 1` away from every goal's first coordinate.

    Raises
    ------
    ValueError
        for a ``p`` that is not in ``values``, ``p``, ``goal`` of the wrong length, and a
        ``direction`` that does not separate ``p`` from the other values or has :math:`u_1 \ne 1`.
    """
    _check_move(values, p, goal, d, "goal")
    if direction is None:
        u = injective_direction(values, d, start)
    else:
        u = tuple(Fraction(a) for a in direction)
        if len(u) != d or u[0] != 1:
            raise ValueError(
                f"direction must have d = {d} coordinates and first coordinate 1, got {fmt(u)}"
            )
    s, gap = dot(u, p), _gap(values, u, p)
    if gap <= 0:
        raise ValueError(f"direction {fmt(u)} does not separate {fmt(p)} from the other values")
    r, delta = gap / 2, gap / 4
    a = [gc - pc for gc, pc in zip(goal, p)]
    e1 = [Fraction(1)] + [Fraction(0)] * (d - 1)
    sigma1 = [(ac + delta * ec) / (r - delta) for ac, ec in zip(a, e1)]
    sigma2 = [-ec for ec in e1]
    sigma3 = [-(ac - delta * ec) / (r - delta) for ac, ec in zip(a, e1)]
    slopes = [sigma1, sigma2, sigma3, [Fraction(0)] * d]
    weights = [sigma1] + [[x - y for x, y in zip(slopes[i], slopes[i - 1])] for i in (1, 2, 3)]
    kinks = [s - r, s - delta, s + delta, s + r]
    U = np.array([list(u) for _ in kinks], dtype=object)
    b = np.array([-k for k in kinks], dtype=object)
    W = np.array(weights, dtype=object).T.copy()
    return FFLayer(Fraction(1), U, b, W, role, gap, Fraction(1))


def line_projection(
    values: set[Token], d: int, floor: Fraction, *, role: str = "", start: int = 1
) -> tuple[FFLayer, tuple[Fraction, ...], Fraction]:
    r"""The non-residual width-1 FF :math:`x \mapsto \operatorname{relu}(\langle v, x \rangle - c)\, e_1`.

    :math:`v = \lambda w` with :math:`w` = :func:`~sxor.interp.hats.conditioned_direction` of
    ``values`` (injective on them; projections of range :math:`R` and least gap :math:`G`) and
    :math:`\lambda` the largest power of two with :math:`\lambda G \le 1`, and
    :math:`c = \min \langle v, x \rangle - \mathrm{floor}` (floor :math:`> 0`). So every value
    lands at :math:`t e_1`, :math:`\mathrm{floor} \le t \le \mathrm{floor} + R/G`, at pairwise
    distinct :math:`t` between :math:`1/2` and :math:`1` apart or more: the separation the
    snap-moves need, at unit scale whatever :math:`d` (the moment curve's :math:`t^{d-1}` put the
    clusters near :math:`10^7` at :math:`d = 20`, with gaps below 1). Why unit scale: a snap-move at
    :math:`t_k` absorbs an axis error up to a quarter of its gap, which is at most
    :math:`\min(\lambda G, t_k - \max |y_1|)` with :math:`t_k - \max|y_1| \ge 1` at the lowest
    cluster, and a collapse error :math:`\epsilon` (in :math:`\ell^1`) moves the axis point by at
    most :math:`\lambda \lVert w \rVert_\infty \epsilon`; the admissible :math:`\epsilon` is
    :math:`\min(\lambda G, 1) / (4 \lambda \lVert w \rVert_\infty)`, largest for
    :math:`\lambda G \approx 1`. Returns ``(layer, v, c)``.

    Parameters
    ----------
    values
        The set of token values present.
    d
        Token dimension.
    floor
        Least coordinate on the axis, :math:`> 0`.
    role
        Name of the layer's job in the construction.
    start
        Unused (kept for the signature shared with the other moves).

    Raises
    ------
    ValueError
        for ``floor <= 0``.
    """
    if not floor > 0:
        raise ValueError(f"floor must be > 0, got {floor}")
    floor = Fraction(floor)
    w = conditioned_direction(values, d)
    gap, _ = _projection_spacing(list(set(values)), w)
    scale = Fraction(1)
    while scale * gap > 1:
        scale /= 2
    while 2 * scale * gap <= 1:
        scale *= 2
    v = tuple(scale * a for a in w)
    c = min(dot(v, x) for x in values) - floor
    W = zeros(d, 1)
    W[0, 0] = Fraction(1)
    layer = FFLayer(
        Fraction(0), np.array([list(v)], dtype=object), np.array([-c], dtype=object), W, role
    )
    return layer, v, c
