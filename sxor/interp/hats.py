"""Feed-forward layers of chapter 13 that move one point: hats, snap-moves, and the line projection.

All parameters are exact Fractions. ``values`` is always the finite set of token values present
(as :data:`sxor.interp.exact.Token` tuples); a layer is designed so that it acts on one value and
fixes every other one.

* :func:`injective_direction`: ``v = (1, t, ..., t^(d-1))`` injective on the values (Lemma 13.1).
* :func:`hat_move`: residual ``x -> x + h(<v, x>) D``, ``h`` a triangle (width 3) or trapezoid
  (width 4) hat (Lemma 13.2).
* :func:`line_projection`: non-residual ``x -> relu(<v, x> - c) e_1`` (width 1), which puts every
  token on the first coordinate axis.
* :func:`snap_move`: residual width 4; on the segment ``{p + a e_1 : |a| <= g/4}`` it equals the
  constant ``goal`` (so a whole small cluster on the axis lands *exactly* on its target) and it
  fixes every value projecting ``>= g/2`` away.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

import numpy as np

from .exact import Token, dot, fmt, zeros
from .network import FFLayer


def injective_direction(values: Sequence[Token], d: int, start: int = 1) -> tuple[Fraction, ...]:
    """The first ``v = (1, t, ..., t^(d-1))``, ``t = start, start + 1, ...``, whose projections
    ``<v, x>`` are pairwise distinct on ``values`` (a collection of ``d``-tuples of rationals).

    It exists: two distinct points have equal projections for at most ``d - 1`` values of ``t``
    (a nonzero polynomial of degree ``<= d - 1`` in ``t``), so at most ``(d - 1) K (K - 1) / 2``
    values of ``t`` fail for ``K`` points; the search is bounded by that. Refuses ``d < 1``,
    ``start < 1`` and values of the wrong length."""
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
    """A residual hat FF ``x -> x + h(<v, x>) D (+ t)`` with ``h(<v, p>) = 1`` and ``h = 0`` at
    every other value in ``values``.

    ``v`` is :func:`injective_direction` of ``values``; ``g`` the distance from ``s = <v, p>`` to
    the nearest other projection. ``flat=False``: triangle of half-width ``g/2`` (3 ReLUs);
    ``flat=True``: trapezoid equal to 1 on ``|t - s| <= g/4`` and 0 for ``|t - s| >= g/2``
    (4 ReLUs). ``translation`` adds a constant neuron (``U = 0, b = 1``). ``start``: first ``t``
    tried by :func:`injective_direction`. Refuses a ``p`` that is not in ``values`` and vectors of
    the wrong length."""
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
    """A residual width-4 FF ``x -> x + g(<u, x>)`` that sends the whole segment
    ``{p + a e_1 : |a| <= gap/4}`` *exactly* to ``goal`` and fixes every point whose projection
    is ``>= gap/2`` away from ``<u, p>``.

    ``u = (1, t, ...)`` is :func:`injective_direction` of ``values`` (so ``<u, e_1> = 1``) and
    ``gap`` the distance from ``s = <u, p>`` to the nearest other projection. ``g`` is piecewise
    linear with kinks ``s -+ gap/2, s -+ gap/4``: zero outside ``(s - gap/2, s + gap/2)``, equal to
    ``goal - p - (<u, x> - s) e_1`` on ``[s - gap/4, s + gap/4]``. The layer records ``gap`` and
    ``v_l1 = 1`` (the half-width it absorbs is ``gap/4`` along ``e_1``). Refuses a ``p`` that is
    not in ``values`` and ``p``, ``goal`` of the wrong length."""
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
    """The non-residual width-1 FF ``x -> relu(<v, x> - c) e_1``, ``v`` injective on ``values``
    and ``c = min <v, x> - floor`` (``floor > 0``), so every value lands at ``t e_1`` with
    ``t >= floor``, at pairwise distinct ``t``. Returns ``(layer, v, c)``."""
    if not floor > 0:
        raise ValueError(f"floor must be > 0, got {floor}")
    v = injective_direction(values, d, start)
    c = min(dot(v, x) for x in values) - Fraction(floor)
    W = zeros(d, 1)
    W[0, 0] = Fraction(1)
    layer = FFLayer(Fraction(0), np.array([list(v)], dtype=object), np.array([-c], dtype=object), W, role)
    return layer, v, c
