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
  every token on the first coordinate axis.
* :func:`~sxor.interp.hats.snap_move`: residual width 4; on the segment
  :math:`\{p + a e_1 : |a| \le g/4\}` it equals the constant ``goal`` (so a whole small cluster
  on the axis lands *exactly* on its target) and it fixes every value projecting
  :math:`\ge g/2` away.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

import numpy as np

from .exact import Token, dot, fmt, zeros
from .network import FFLayer


def injective_direction(values: Sequence[Token], d: int, start: int = 1) -> tuple[Fraction, ...]:
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
    raise AssertionError("unreachable: more bad t than the polynomial bound allows")  # pragma: no cover


def _gap(values: set[Token], v: Sequence[Fraction], p: Token) -> Fraction:
    s = dot(v, p)
    others = [abs(dot(v, x) - s) for x in values if x != p]
    return min(others) if others else Fraction(1)


def _check_move(values: set[Token], p: Token, vector: Sequence, d: int, what: str) -> None:
    if p not in values:
        raise ValueError(f"the point to move {fmt(p)} is not in values")
    if len(p) != d or len(vector) != d:
        raise ValueError(f"p and {what} must have d = {d} coordinates, got {len(p)} and {len(vector)}")


def hat_move(values: set[Token], p: Token, displacement: Sequence[Fraction], d: int, *, flat: bool,
             translation: Sequence[Fraction] | None = None, role: str = "", start: int = 1) -> FFLayer:
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

    Raises
    ------
    ValueError
        for a ``p`` that is not in ``values`` and vectors of the wrong length.
    """
    _check_move(values, p, displacement, d, "displacement")
    v = injective_direction(values, d, start)
    s, g = dot(v, p), _gap(values, v, p)
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
    return FFLayer(Fraction(1), U, b, W, role, g, sum(abs(c) for c in v))


def snap_move(values: set[Token], p: Token, goal: Sequence[Fraction], d: int, *, role: str = "",
              start: int = 1) -> FFLayer:
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

    Raises
    ------
    ValueError
        for a ``p`` that is not in ``values`` and ``p``, ``goal`` of the wrong length.
    """
    _check_move(values, p, goal, d, "goal")
    u = injective_direction(values, d, start)
    s, gap = dot(u, p), _gap(values, u, p)
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


def line_projection(values: set[Token], d: int, floor: Fraction, *, role: str = "",
                    start: int = 1) -> tuple[FFLayer, tuple[Fraction, ...], Fraction]:
    r"""The non-residual width-1 FF :math:`x \mapsto \operatorname{relu}(\langle v, x \rangle - c)\, e_1`.

    :math:`v` is injective on ``values`` and :math:`c = \min \langle v, x \rangle - \mathrm{floor}`
    (floor :math:`> 0`), so every value lands at :math:`t e_1` with :math:`t \ge \mathrm{floor}`, at
    pairwise distinct :math:`t`. Returns ``(layer, v, c)``.

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
        First :math:`t` tried by :func:`~sxor.interp.hats.injective_direction`.
    """
    if not floor > 0:
        raise ValueError(f"floor must be > 0, got {floor}")
    v = injective_direction(values, d, start)
    c = min(dot(v, x) for x in values) - Fraction(floor)
    W = zeros(d, 1)
    W[0, 0] = Fraction(1)
    layer = FFLayer(Fraction(0), np.array([list(v)], dtype=object), np.array([-c], dtype=object), W, role)
    return layer, v, c
