"""Phases 2 and 3 of the construction: the collapse (mean route) and leader selection (leader route).

The mean route's collapse onto the sequence means; the leader route's leader selection with its
parking spots (circle or :math:`A`-ellipse) and its collapse layer. Part of
:mod:`sxor.interp.construct`, which re-exports it (see there for the phases and routes).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ._construct_separation import Separation, _replace, _values
from .exact import Token, exact_scalar, fmt, mean, zeros
from .hats import conditioned_direction, hat_move
from .network import Block, FFLayer, SALayer, identity_sa, mean_sa


def mean_collapse_phase(
    sep: Separation, Y: list[np.ndarray], d: int
) -> tuple[list[Block], list[Token]]:
    r"""Mean route (every :math:`m_j = 1`): collapse every sequence onto its translated mean.

    The separation moves, the last one carrying a translation :math:`t = c \mathbf{1}`
    (:math:`c = 1 + \max \lVert y \rVert_\infty + \max \lVert \mathrm{mean} \rVert_\infty`, so no
    mean lands on a target), then the SA :math:`A = 0, \rho = 0, V = I`: every token of :math:`X_j`
    goes to :math:`\mathrm{mean}_j + t`, exactly, for hardmax and for every softmax temperature.
    Returns the blocks and the collapsed points.

    Parameters
    ----------
    sep
        Result of :func:`~sxor.interp.construct.separation_phase` with ``shift=False``.
    Y
        The targets, ``[1, d]`` each.
    d
        Token dimension.
    """
    means = [mean(s) for s in sep.states]
    c = 1 + max(abs(v) for y in Y for v in y.flat) + max(abs(v) for m in means for v in m)
    t = tuple(Fraction(c) for _ in range(d))
    moves = list(sep.moves)
    if moves:
        last = moves[-1]
        U = np.concatenate([last.U, zeros(1, d)])
        b = np.concatenate([last.b, np.array([Fraction(1)], dtype=object)])
        W = np.concatenate([last.W, np.array(t, dtype=object).reshape(d, 1)], axis=1)
        moves[-1] = FFLayer(
            last.eta, U, b, W, last.role + f"; translate by {fmt(t)}", last.gap, last.v_l1
        )
    else:
        moves = [
            FFLayer(
                Fraction(1),
                zeros(1, d),
                np.array([Fraction(1)], dtype=object),
                np.array(t, dtype=object).reshape(d, 1),
                f"translate by {fmt(t)}",
            )
        ]
    collapse = mean_sa(d, Fraction(0), Fraction(1), "collapse onto the sequence mean")
    blocks = [Block(ff, identity_sa(d), "separation") for ff in moves[:-1]]
    blocks.append(Block(moves[-1], collapse, "collapse"))
    return blocks, [tuple(a + b for a, b in zip(m, t)) for m in means]


def _parking_spot(i: int, count: int, radius: Fraction, d: int) -> Token:
    """A rational point of the circle ``|q| = radius`` with ``q_1, q_2 < 0`` and ``q_c = 0``
    for ``c > 2``: inverse stereographic projection at ``t = i / (count + 1)`` in ``(0, 1)``."""
    t = Fraction(i, count + 1)
    return tuple(
        [-radius * 2 * t / (1 + t * t), -radius * (1 - t * t) / (1 + t * t)]
        + [Fraction(0)] * (d - 2)
    )


def ellipse_parking_spots(count: int, radius, d: int, a, b) -> list[Token]:
    r"""``count`` rational points of one :math:`A`-ellipse in the negative quadrant.

    Here :math:`A = a I + b \mathbf{1}\mathbf{1}^\top` (section 13c, full rank: parking on an
    ellipse). The points are :math:`\xi = (\xi_1, \xi_2, 0, \dots, 0)` with
    :math:`\xi_1, \xi_2 < 0` and

    .. math::
        \xi^\top A \xi &= (a + b)\,\hat\varrho^2, \\
        \hat\varrho &= \varrho\,(a + 2b)/(a + b)

    (``radius`` is :math:`\varrho`): the second intersection of the ellipse with the line through
    its point :math:`\xi^\circ = (0, -\hat\varrho)` of direction :math:`(-1, \psi_i)`,

    .. math::
        \tilde\xi(\psi) &= \xi^\circ + \chi(\psi)\,(-1, \psi), \\
        \chi(\psi) &= \frac{2 \hat\varrho\,(\psi (a + b) - b)}
        {a (1 + \psi^2) + b (\psi - 1)^2},

    at

    .. math::
        \psi_i = \frac{b + a\,i/(\mathrm{count} + 1)}{a + b},

    :math:`i = 1, \dots, \mathrm{count}`, strictly between the direction parameter
    :math:`b/(a + b)` of the tangent at :math:`\xi^\circ` and the parameter :math:`1` of the
    chord to :math:`(-\hat\varrho, 0)` (:math:`\tilde\xi_1 < 0` iff :math:`\psi(a + b) > b`,
    :math:`\tilde\xi_2 < 0` iff :math:`\psi^2 < 1`). Rational, pairwise distinct (distinct lines
    through :math:`\xi^\circ` meet only there), all of Euclidean norm :math:`\ge \varrho` (as
    :math:`\xi^\top A \xi \le (a + 2b) \lVert \xi \rVert^2`). For :math:`b = 0` they are the
    circle spots of :func:`~sxor.interp.construct.leader_phase`.

    Parameters
    ----------
    count
        Number of spots, an int :math:`\ge 1`.
    radius
        :math:`\varrho > 0`, exact.
    d
        Token dimension, an int :math:`\ge 2`.
    a, b
        Weights of :math:`A`, exact, :math:`a > 0`, :math:`b \ge 0`.

    Raises
    ------
    ValueError
        for ``count < 1``, ``d < 2``, ``radius <= 0``, :math:`a \le 0`, :math:`b < 0` and floats;
        TypeError for a non-int ``count`` or ``d``.
    """
    for name, value, low in (("count", count, 1), ("d", d, 2)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {value!r} of type {type(value).__name__}")
        if value < low:
            raise ValueError(f"{name} must be >= {low}, got {value}")
    a, b = _low_rank_weights((a, b), ("a", "b"))
    radius = exact_scalar("radius", radius)
    if not radius > 0:
        raise ValueError(f"radius must be > 0, got {radius}")
    s = radius * (a + 2 * b) / (a + b)
    spots = []
    for i in range(1, count + 1):
        k = (b + a * Fraction(i, count + 1)) / (a + b)
        lam = 2 * s * (k * (a + b) - b) / (a * (1 + k * k) + b * (k - 1) ** 2)
        q = (-lam, -s + lam * k)
        if not (q[0] < 0 and q[1] < 0):  # proved: q_1 < 0 iff k (a + b) > b, q_2 < 0 iff k^2 < 1
            raise RuntimeError(f"parking spot {i} left the negative quadrant: {q}")
        spots.append(tuple(list(q) + [Fraction(0)] * (d - 2)))
    return spots


@dataclass(frozen=True)
class Leaders:
    r"""Result of :func:`~sxor.interp.construct.leader_phase`.

    The FFs, the destinations (leaders and parking spots, in target order), the states just before
    the collapse, the box size :math:`R`, the parking radius.
    """

    moves: tuple[FFLayer, ...]
    destinations: tuple[Token, ...]
    states: list[np.ndarray]
    box: Fraction
    park_radius: Fraction
    start: int


def leader_phase(
    states: list[np.ndarray],
    Y: list[np.ndarray],
    d: int,
    start: int = 1,
    *,
    metric: tuple[Fraction, Fraction] | None = None,
) -> Leaders:
    r"""Phase 2: leader selection, one hat FF per target.

    The first FF also translates every token into :math:`[1, R]^d`; token 0 of :math:`X_j` goes to
    :math:`c_j \mathbf{1}` with :math:`c_j = \max(R, \max \lVert y \rVert_\infty) + j + 1`; tokens
    :math:`1, \dots, m_j - 1` go to parking spots on the circle
    :math:`\lVert q \rVert = 1 + \max(R, \max \lVert y \rVert_1)` in the negative quadrant of the
    first two coordinates (with ``metric=(a, b)``: on the ellipse of
    :func:`~sxor.interp.construct.ellipse_parking_spots`, every spot of the same
    :math:`A`-norm, :math:`A = a I + b \mathbf{1}\mathbf{1}^\top`). :math:`\sum_j m_j` hat FFs.

    Parameters
    ----------
    states
        The separated input sequences (exact).
    Y
        The targets, ``[m_j, d]`` each.
    d
        Token dimension, at least 2.
    start
        First moment-curve parameter tried by :func:`~sxor.interp.hats.injective_direction`.
    metric
        ``None`` (the circle, for :math:`A = I`) or the weights ``(a, b)`` of the low-rank collapse,
        exact, :math:`a > 0`, :math:`b \ge 0`.

    Raises
    ------
    ValueError
        for a ``metric`` that is not a pair of exact numbers with :math:`a > 0`, :math:`b \ge 0`.
    """
    lows = [min(s[:, c].min() for s in states) for c in range(d)]
    translation = tuple(1 - lo for lo in lows)
    box = max(max(s[:, c].max() for s in states) + translation[c] for c in range(d))
    ybig = max(abs(v) for y in Y for v in y.flat)
    y1 = max(sum(abs(v) for v in row) for y in Y for row in y)
    num_parked = sum(y.shape[0] - 1 for y in Y)
    park_radius = 1 + max(box, y1)  # > |y|_1 >= |y|_2: parking spots differ from every target
    plan: list[tuple[Token, Token]] = []  # (post-translation value, destination)
    parked = 0
    if (
        metric is not None
    ):  # checked even when nothing is parked: a bad metric is never silently ignored
        metric = _low_rank_weights(metric, ("metric[0]", "metric[1]"))
    spots = (
        None
        if metric is None
        else ellipse_parking_spots(num_parked, park_radius, d, metric[0], metric[1])
        if num_parked
        else []
    )
    for j, (s, y) in enumerate(zip(states, Y)):
        plan.append(
            (tuple(v + t for v, t in zip(s[0], translation)), tuple([max(box, ybig) + j + 1] * d))
        )
        for i in range(1, y.shape[0]):
            parked += 1
            plan.append(
                (
                    tuple(v + t for v, t in zip(s[i], translation)),
                    _parking_spot(parked, num_parked, park_radius, d)
                    if spots is None
                    else spots[parked - 1],
                )
            )
    moves: list[FFLayer] = []
    values = _values(states)  # kept up to date move by move (a move replaces one value by another)
    # One direction for the whole phase. Every value set met during the phase is a subset of the
    # translated initial values and the destinations (a move replaces a value by its destination),
    # and projections are translation invariant up to a constant, so a direction injective on that
    # union separates every move, with every gap at least the union's and a range at most the
    # union's: at least as well conditioned as one chosen move by move, for one search instead of
    # one per move.
    union = {tuple(v + t for v, t in zip(x, translation)) for x in values} | {
        dest for _, dest in plan
    }
    direction = conditioned_direction(union, d)
    for idx, (p, dest) in enumerate(plan):
        D = tuple(a - b for a, b in zip(dest, p))
        if idx == 0:
            p0 = tuple(v - t for v, t in zip(p, translation))
            layer = hat_move(
                values,
                p0,
                D,
                d,
                flat=False,
                translation=translation,
                direction=direction,
                role=f"translate by {fmt(translation)}; leader {fmt(p)} -> {fmt(dest)}",
            )
            states = [s + np.array(translation, dtype=object) for s in states]
            values = {tuple(v + t for v, t in zip(x, translation)) for x in values}
        else:
            layer = hat_move(
                values,
                p,
                D,
                d,
                flat=False,
                role=f"select {fmt(p)} -> {fmt(dest)}",
                direction=direction,
            )
        moves.append(layer)
        states = _replace(states, p, dest)
        values = (values - {p}) | {dest}
    return Leaders(tuple(moves), tuple(dest for _, dest in plan), states, box, park_radius, start)


COLLAPSES = ("identity", "rank-one", "low-rank")


def _low_rank_weights(
    low_rank, names: tuple[str, str] = ("low_rank[0]", "low_rank[1]")
) -> tuple[Fraction, Fraction]:
    """``(a, b)`` as exact Fractions with ``a > 0`` and ``b >= 0``, or a ValueError naming the argument."""
    if (
        isinstance(low_rank, (str, bytes))
        or not isinstance(low_rank, (tuple, list))
        or len(low_rank) != 2
    ):
        raise ValueError(f"low_rank must be a pair (a, b) (A = a I + b 1 1^T), got {low_rank!r}")
    a, b = (exact_scalar(name, v) for name, v in zip(names, low_rank))
    if not a > 0:
        raise ValueError(
            f"low_rank = (a, b) needs a > 0 (a = 0 is rank one: at most three values survive), got a = {a}"
        )
    if b < 0:
        raise ValueError(f"low_rank = (a, b) needs b >= 0 (A entrywise nonnegative), got b = {b}")
    return a, b


def collapse_layer(d: int, kind: str = "identity", low_rank=(1, 1)) -> SALayer:
    r"""Phase 3's attention layer, :math:`\rho = 0`, :math:`V = I`.

    ``kind="identity"``: :math:`A = I` (Lemma 13.5). ``kind="rank-one"``:
    :math:`A = \mathbf{1}\mathbf{1}^\top` (Lemma A of chapter 11: every token with
    :math:`\langle \mathbf{1}, x \rangle > 0` goes to the token of largest
    :math:`\langle \mathbf{1}, x \rangle`, the leader, and a token with
    :math:`\langle \mathbf{1}, x \rangle < 0` to the one of smallest, which keeps one parked token
    per sequence, so it needs every :math:`m_j \le 2`). ``kind="low-rank"``:
    :math:`A = a I + b \mathbf{1}\mathbf{1}^\top` with ``low_rank=(a, b)``, :math:`a > 0`,
    :math:`b \ge 0` (the low-rank collapse lemma of chapter 13: any :math:`m_j`, with the parked
    tokens on one :math:`A`-ellipse), stored as :math:`\alpha = a`, :math:`q = b \mathbf{1}`,
    :math:`k = \mathbf{1}`.

    Parameters
    ----------
    d
        Token dimension.
    kind
        ``"identity"``, ``"rank-one"`` or ``"low-rank"``.
    low_rank
        ``(a, b)`` for ``kind="low-rank"`` (ignored otherwise), exact.

    Raises
    ------
    ValueError
        for another ``kind``, and for ``low_rank`` that is not a pair of exact numbers with
        :math:`a > 0`, :math:`b \ge 0`.
    """
    if kind == "identity":
        return SALayer(
            Fraction(0),
            Fraction(1),
            zeros(d),
            zeros(d),
            Fraction(1),
            "collapse onto leaders (A = I)",
        )
    if kind == "rank-one":
        ones = np.array([Fraction(1)] * d, dtype=object)
        return SALayer(
            Fraction(0),
            Fraction(0),
            ones,
            ones.copy(),
            Fraction(1),
            "collapse onto leaders (A = 1 1^T)",
        )
    if kind == "low-rank":
        a, b = _low_rank_weights(low_rank)
        ones = np.array([Fraction(1)] * d, dtype=object)
        return SALayer(
            Fraction(0),
            a,
            ones * b,
            ones.copy(),
            Fraction(1),
            f"collapse onto leaders (A = {a} I + {b} 1 1^T)",
        )
    raise ValueError(f"collapse must be one of {COLLAPSES}, got {kind!r}")
