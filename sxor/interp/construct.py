r"""This book's exact interpolation construction (Part II, chapters 13 and 14), phase by phase.

Given inputs :math:`X_1, \dots, X_N` (``X_j [n_j, d]``) and targets :math:`Y_1, \dots, Y_N`
(``Y_j [m_j, d]``, :math:`1 \le m_j \le n_j`), :func:`~sxor.interp.construct.construct` returns a
transformer :math:`T` of blocks FF then SA with :math:`\{T(X_j)_i\} = \{y^j_k\}` as sets, for
every :math:`j`. Two routes:

**Mean route** (every :math:`m_j = 1`): separation moves make the sequence means pairwise
distinct (:func:`~sxor.interp.construct.separation_phase`), one FF translates everything away
from the targets and one SA with :math:`A = 0, \rho = 0, V = I` sends every token to its sequence
mean, exactly, at every temperature (:func:`~sxor.interp.construct.mean_collapse_phase`);
:math:`N` hats move the means onto the targets. :math:`L \le 2N` blocks.

**Leader route** (some :math:`m_j > 1`; :math:`d \ge 2`), four phases:

1. separation (:math:`s \le N - 1` blocks; none if the sequences are already disjoint): hat FFs
   make the sequence means distinct, then :math:`A = 0, \rho = 1, V = \lambda I` maps
   :math:`x \mapsto x + \lambda \operatorname{mean}(X_j)`;
2. leader selection (:math:`\sum_j m_j` FFs, :func:`~sxor.interp.construct.leader_phase`): a
   translation into :math:`[1, R]^d`; one leader of sequence :math:`j` to :math:`c_j \mathbf{1}`,
   :math:`m_j - 1` tokens to parking spots on a circle;
3. collapse (one SA :math:`A = I, \rho = 0, V = I` in the last leader block);
4. interpolation: hardmax, :math:`\sum_j m_j` flat-top hats
   (:func:`~sxor.interp.construct.hardmax_interpolation_phase`); softmax, one non-residual FF
   that puts every token on the :math:`e_1` axis and :math:`\sum_j m_j` snap-moves, each sending
   a whole cluster *exactly* onto its target
   (:func:`~sxor.interp.construct.softmax_interpolation_phase`).

Blocks: hardmax :math:`s + 2 \sum_j m_j`; softmax :math:`s + 2 \sum_j m_j + 1 \le 2 \sum_j m_j + N`,
against the paper's :math:`2 \sum_j m_j + 3N`. FF width :math:`\le 4`. Everything is exact in
:class:`fractions.Fraction`. Chapter 13 proves each phase; the certificate is in
:mod:`sxor.interp.certificate`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np

from .certificate import collapse_margins, interpolation_errors, softmax_certificate
from .dataset import check_dataset, distinct_indices, random_dataset
from .exact import Token, exact_scalar, fmt, mean, zeros
from .hats import conditioned_direction, hat_move, injective_direction, line_projection, snap_move
from .network import (
    ATTENTIONS,
    Block,
    FFLayer,
    InterpolatingTransformer,
    SALayer,
    check_temperature,
    identity_ff,
    identity_sa,
    mean_sa,
)

__all__ = [
    "Block",
    "FFLayer",
    "InterpolatingTransformer",
    "Leaders",
    "SALayer",
    "Separation",
    "block_bound",
    "check_dataset",
    "collapse_layer",
    "construct",
    "default_temperature",
    "ellipse_parking_spots",
    "hardmax_interpolation_phase",
    "hat_move",
    "identity_ff",
    "identity_sa",
    "injective_direction",
    "interpolation_errors",
    "leader_phase",
    "mean_collapse_phase",
    "parameter_bound",
    "random_dataset",
    "separation_phase",
    "snap_move",
    "softmax_certificate",
    "softmax_interpolation_phase",
]


def _values(states: list[np.ndarray]) -> set[Token]:
    return {tuple(row) for s in states for row in s}


def _replace(states: list[np.ndarray], old: Token, new: Token) -> list[np.ndarray]:
    """The states after a move ``old -> new`` as the hat lemma predicts it (every token equal to
    ``old`` becomes ``new``); :meth:`InterpolatingTransformer.map` checks it with the real layers."""
    out = []
    for s in states:
        s = s.copy()
        for i in range(s.shape[0]):
            if tuple(s[i]) == old:
                s[i] = np.array(new, dtype=object)
        out.append(s)
    return out


@dataclass(frozen=True)
class Separation:
    r"""Result of :func:`~sxor.interp.construct.separation_phase`.

    The move FFs, the shift SA (or None), the new states, and the next moment-curve parameter to try.
    """

    moves: tuple[FFLayer, ...]
    shift: SALayer | None
    states: list[np.ndarray]
    start: int


def separation_phase(
    states: list[np.ndarray], d: int, *, shift: bool, start: int = 1
) -> Separation:
    r"""Phase 1 (Lemmas 13.3-13.4): hat moves until the sequence means are pairwise distinct.

    At most :math:`N - 1` moves. With ``shift=True`` it then adds the SA
    :math:`x \mapsto x + \lambda \operatorname{mean}(X_j)` that makes the token sets pairwise
    disjoint, and does nothing at all when they already are. With ``shift=False`` (mean route) it
    always makes the means distinct and adds no SA.

    Parameters
    ----------
    states
        The current input sequences, ``[n_j, d]`` each (exact).
    d
        Token dimension.
    shift
        Whether to add the disjoining SA (leader route) or not (mean route).
    start
        First moment-curve parameter :math:`t` tried by
        :func:`~sxor.interp.hats.injective_direction`.
    """
    if shift:
        owners: dict[Token, int] = {}
        overlap = any(
            owners.setdefault(tuple(row), j) != j for j, s in enumerate(states) for row in s
        )
        if not overlap:
            return Separation((), None, states, start)
    direction = tuple(Fraction(c + 1) for c in range(d))
    moves: list[FFLayer] = []
    while True:
        means = [mean(s) for s in states]
        pair = next(
            ((j, k) for j in range(len(states)) for k in range(j) if means[j] == means[k]), None
        )
        if pair is None:
            break
        j, k = pair
        rows_k = {tuple(row) for row in states[k]}
        if states[j].shape[0] != states[k].shape[0]:
            p = tuple(states[j][0])
        else:  # equal sizes and distinct sets: X_j has a token that X_k lacks
            p = next(tuple(row) for row in states[j] if tuple(row) not in rows_k)
        values = _values(states)
        contains = [any(tuple(row) == p for row in s) for s in states]
        bad = (len(values) + 1) * len(states) ** 2 + 2  # Lemma 13.4: finitely many bad t
        for t in range(1, bad + 1):
            D = tuple(t * c for c in direction)
            new_p = tuple(a + b for a, b in zip(p, D))
            if new_p in values:
                continue
            new_means = [
                tuple(m + (Dc / s.shape[0] if contains[i] else 0) for m, Dc in zip(means[i], D))
                for i, s in enumerate(states)
            ]
            if new_means[j] != new_means[k] and all(
                means[a] == means[b] or new_means[a] != new_means[b]
                for a in range(len(states))
                for b in range(a)
            ):
                break
        else:  # pragma: no cover - excluded by Lemma 13.4
            raise AssertionError(f"no displacement separates the means of inputs {k} and {j}")
        layer = hat_move(
            values,
            p,
            D,
            d,
            flat=False,
            role=f"separate: move {fmt(p)}",
            direction=conditioned_direction(values, d),
        )
        moves.append(layer)
        states = _replace(states, p, new_p)
    if not shift:
        return Separation(tuple(moves), None, states, start)
    means = [mean(s) for s in states]
    total = sum(s.shape[0] for s in states)
    lam = 1
    while (
        len(
            {
                tuple(x + lam * m for x, m in zip(row, means[j]))
                for j, s in enumerate(states)
                for row in s
            }
        )
        != total
    ):
        lam += 1
    layer = mean_sa(d, Fraction(1), Fraction(lam), f"separate: x + {lam} mean")
    states = [s + np.array([lam * m for m in means[j]], dtype=object) for j, s in enumerate(states)]
    return Separation(tuple(moves), layer, states, start)


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
    r"""``count`` rational points of one :math:`A`-ellipse in the negative quadrant, :math:`A = a I + b \mathbf{1}\mathbf{1}^\top`.

    The points are :math:`q = (q_1, q_2, 0, \dots, 0)` with :math:`q_1, q_2 < 0` and
    :math:`q^\top A q = (a + b) s^2`, :math:`s = \varrho\,(a + 2b)/(a + b)` (``radius`` is
    :math:`\varrho`): the second intersection of the ellipse with the line through its point
    :math:`P_0 = (0, -s)` of direction :math:`(-1, k_i)`,

    .. math::
        q(k) = P_0 + \lambda(k)\,(-1, k), \qquad
        \lambda(k) = \frac{2 s\,(k (a + b) - b)}{a (1 + k^2) + b (k - 1)^2},

    at :math:`k_i = (b + a\,i/(\mathrm{count} + 1))/(a + b)`, :math:`i = 1, \dots, \mathrm{count}`,
    strictly between the tangent slope :math:`b/(a + b)` at :math:`P_0` and the slope :math:`1` of
    the chord to :math:`(-s, 0)` (:math:`q_1 < 0` iff :math:`k(a + b) > b`, :math:`q_2 < 0` iff
    :math:`k^2 < 1`). Rational, pairwise distinct (distinct lines through :math:`P_0` meet only
    there), all of Euclidean norm
    :math:`\ge \varrho` (as :math:`q^\top A q \le (a + 2b) \lVert q \rVert^2`). For
    :math:`b = 0` they are the circle spots of :func:`~sxor.interp.construct.leader_phase`.

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


def hardmax_interpolation_phase(
    points: Sequence[Token], goals: Sequence[Token], d: int, *, flat: bool, start: int = 1
) -> list[FFLayer]:
    r"""Phase 4 (hardmax): one hat per collapsed point, ``points[k] -> goals[k]`` (Lemma 13.2).

    Parameters
    ----------
    points
        The collapsed points, pairwise distinct, none of them a goal.
    goals
        The target tokens, one per point.
    d
        Token dimension.
    flat
        Use flat-top (trapezoid) hats instead of triangles.
    start
        First moment-curve parameter tried by :func:`~sxor.interp.hats.injective_direction`.
    """
    values, moves = set(points), []
    for p, goal in zip(points, goals):
        D = tuple(a - b for a, b in zip(goal, p))
        layer = hat_move(
            values,
            p,
            D,
            d,
            flat=flat,
            role=f"interpolate {fmt(p)} -> {fmt(goal)}",
            direction=conditioned_direction(values, d),
        )  # injective, well spread
        moves.append(layer)
        values = (values - {p}) | {goal}
    return moves


def softmax_interpolation_phase(
    points: Sequence[Token], goals: Sequence[Token], d: int, start: int = 1
) -> tuple[FFLayer, list[FFLayer], Fraction]:
    r"""Phase 4 (softmax, Theorem 13.B): project onto the :math:`e_1` axis, then one snap-move per cluster.

    The non-residual FF :math:`x \mapsto \operatorname{relu}(\langle v, x \rangle - c)\, e_1` puts the
    clusters on the :math:`e_1` axis at :math:`t_k \ge 1 + \max \lVert y \rVert_\infty` (so no point
    of the axis is a goal), then one snap-move per cluster sends the segment
    :math:`t_k e_1 \pm \mathrm{gap}_k/4` exactly to its goal. Returns the projection, the snap-moves
    and the radius :math:`\min(1 + \max \lVert y \rVert_\infty, \min_k \mathrm{gap}_k / 4) / \lVert v \rVert_\infty`:
    the :math:`\ell^1` collapse error every cluster may have (Theorem 13.B).

    Parameters
    ----------
    points
        The collapsed points (cluster centres), pairwise distinct.
    goals
        The target tokens, one per point.
    d
        Token dimension.
    start
        First moment-curve parameter tried by :func:`~sxor.interp.hats.injective_direction`.
    """
    ybig = max(abs(v) for g in goals for v in g)
    projection, v, c = line_projection(
        set(points), d, 1 + ybig, role="project onto the e_1 axis", start=start
    )
    line = [
        tuple([sum((a * b for a, b in zip(v, p)), Fraction(0)) - c] + [Fraction(0)] * (d - 1))
        for p in points
    ]
    values, moves = set(line), []
    e1 = tuple(Fraction(int(i == 0)) for i in range(d))
    for p, goal in zip(
        line, goals
    ):  # on e_1, p is >= 1 from every goal and > 2 (1 + ybig) from the other t_l
        layer = snap_move(values, p, goal, d, role=f"snap {fmt(p)} -> {fmt(goal)}", direction=e1)
        moves.append(layer)
        values = (values - {p}) | {goal}
    radius = min([1 + ybig] + [layer.gap / 4 for layer in moves]) / max(abs(a) for a in v)
    return projection, moves, radius


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


def construct(
    inputs: Sequence,
    targets: Sequence,
    attention: str = "hardmax",
    tau=None,
    *,
    collapse: str = "identity",
    low_rank=None,
) -> InterpolatingTransformer:
    r"""Build a transformer that interpolates ``inputs[j] -> targets[j]`` exactly (as sets).

    Parameters
    ----------
    inputs
        Input sequences ``[n_j, d]`` with exact entries (int, Fraction; floats are refused, convert
        them with :func:`sxor.interp.exact.from_floats`); hypotheses checked by
        :func:`~sxor.interp.dataset.check_dataset` (repeated input sets with equal targets are
        allowed).
    targets
        Target sequences ``[m_j, d]``, exact entries.
    attention
        ``"hardmax"`` (``tau`` must be None or 0): :math:`T(X_j) = Y_j` exactly; or ``"softmax"``:
        :math:`T(X_j) = Y_j` exactly for every :math:`0 < \tau < \tau_\mathrm{max}` (``T.tau_max``,
        ``inf`` on the mean route).
    tau
        Temperature stored in a softmax ``T`` (int or Fraction; default a rational near
        :math:`\tau_\mathrm{max}/2`, or 1; see :func:`~sxor.interp.construct.default_temperature`).
    collapse
        Phase 3's attention (:func:`~sxor.interp.construct.collapse_layer`): ``"identity"``
        (:math:`A = I`, any :math:`m_j`) or ``"rank-one"`` (:math:`A = \mathbf{1}\mathbf{1}^\top`,
        every :math:`m_j \le 2`) or ``"low-rank"`` (:math:`A = a I + b \mathbf{1}\mathbf{1}^\top`, any
        :math:`m_j`, parked tokens on one :math:`A`-ellipse); same block count.
    low_rank
        ``(a, b)`` with :math:`a > 0`, :math:`b \ge 0` exact, for ``collapse="low-rank"`` only
        (default ``(1, 1)``). When every :math:`m_j = 1` the network takes the mean route, which has
        no collapse layer: ``collapse`` and ``low_rank`` are then checked but unused.

    Raises
    ------
    ValueError
        for an unknown ``attention`` or ``collapse``, ``"rank-one"`` with some :math:`m_j > 2`,
        ``low_rank`` with another collapse or not a pair with :math:`a > 0`, :math:`b \ge 0`,
        ``tau != 0`` for hardmax, ``tau <= 0``, NaN, inf or a float ``tau`` for softmax, and every
        dataset :func:`~sxor.interp.dataset.check_dataset` refuses.
    """
    if attention not in ATTENTIONS:
        raise ValueError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
    if attention == "hardmax" and not (tau is None or (not isinstance(tau, bool) and tau == 0)):
        raise ValueError(f"hardmax attention has tau = 0, got tau={tau}")
    if attention == "softmax" and tau is not None:
        tau = check_temperature(tau)
    if collapse not in COLLAPSES:
        raise ValueError(f"collapse must be one of {COLLAPSES}, got {collapse!r}")
    if low_rank is not None and collapse != "low-rank":
        raise ValueError(
            f"low_rank is the (a, b) of collapse='low-rank'; got it with collapse={collapse!r}"
        )
    metric = (
        _low_rank_weights((1, 1) if low_rank is None else low_rank)
        if collapse == "low-rank"
        else None
    )
    X_all, Y_all = check_dataset(inputs, targets)
    if collapse == "rank-one" and any(y.shape[0] > 2 for y in Y_all):
        raise ValueError(
            "the rank-one collapse keeps at most one parked token per sequence: it needs every m_j <= 2"
        )
    keep = distinct_indices(X_all)
    X, Y = [X_all[j] for j in keep], [Y_all[j] for j in keep]
    d = X[0].shape[1]
    info = {
        "N": len(X_all),
        "n": [x.shape[0] for x in X_all],
        "m": [y.shape[0] for y in Y_all],
        "distinct_inputs": len(X),
    }
    goals = [tuple(row) for y in Y for row in y]
    gap = spread = radius = None
    if all(y.shape[0] == 1 for y in Y):
        sep = separation_phase([x.copy() for x in X], d, shift=False)
        blocks, points = mean_collapse_phase(sep, Y, d)
        moves = hardmax_interpolation_phase(points, goals, d, flat=False, start=sep.start)
        blocks += [Block(ff, identity_sa(d), "interpolation") for ff in moves]
        info.update(route="mean", separation_moves=len(sep.moves), shift=False)
    else:
        sep = separation_phase([x.copy() for x in X], d, shift=True)
        lead = leader_phase(sep.states, Y, d, sep.start, metric=metric)
        collapse_sa = collapse_layer(d, collapse, metric)
        blocks = []
        if sep.shift is not None:
            ffs = list(sep.moves) or [identity_ff(d)]
            blocks += [
                Block(ff, sep.shift if i == len(ffs) - 1 else identity_sa(d), "separation")
                for i, ff in enumerate(ffs)
            ]
        blocks += [Block(ff, identity_sa(d), "leaders") for ff in lead.moves[:-1]]
        blocks.append(Block(lead.moves[-1], collapse_sa, "collapse"))
        if attention == "hardmax":
            moves = hardmax_interpolation_phase(
                lead.destinations, goals, d, flat=True, start=lead.start
            )
            blocks += [Block(ff, identity_sa(d), "interpolation") for ff in moves]
        else:
            projection, moves, radius = softmax_interpolation_phase(
                lead.destinations, goals, d, lead.start
            )
            blocks.append(Block(projection, identity_sa(d), "projection"))
            blocks += [Block(ff, identity_sa(d), "interpolation") for ff in moves]
            gap, spread = collapse_margins(lead.states, collapse_sa)
        info.update(
            route="leaders",
            collapse=collapse,
            **({"low_rank": metric} if metric else {}),
            separation_moves=len(sep.moves),
            shift=sep.shift is not None,
            box=lead.box,
            park_radius=lead.park_radius,
        )
    if attention == "hardmax":
        return InterpolatingTransformer(tuple(blocks), d, "hardmax", 0, info=info)
    T = InterpolatingTransformer(
        tuple(blocks), d, "softmax", Fraction(1), gap, spread, radius, info
    )
    if tau is None:
        tau = default_temperature(T.tau_max_mp)
    return T.at_temperature(tau)


def default_temperature(tau_max: mpmath.mpf) -> Fraction:
    r"""The temperature :func:`~sxor.interp.construct.construct` stores when none is given.

    1 when :math:`\tau_\mathrm{max}` is infinite, else a rational near :math:`\tau_\mathrm{max} / 2`
    (denominator :math:`\le 10^6` when that stays in :math:`(0, \tau_\mathrm{max})`, the exact binary
    value of :math:`\tau_\mathrm{max} / 2` otherwise). Works in ``mpmath``, so a
    :math:`\tau_\mathrm{max}` far outside the float range (coordinates :math:`\sim 10^{200}` give
    scores :math:`\sim 10^{400}`) is fine.

    Parameters
    ----------
    tau_max
        The network's largest admissible temperature, an ``mpmath.mpf``.
    """
    if not mpmath.isfinite(tau_max):
        return Fraction(1)
    half = tau_max / 2
    man, exp = mpmath.mpf(half).man_exp
    exact = Fraction(int(man)) * Fraction(2) ** int(exp)
    tau = exact.limit_denominator(10**6)
    return tau if tau > 0 and mpmath.mpf(tau.numerator) / tau.denominator < tau_max else exact


def block_bound(m: Sequence[int], attention: str = "hardmax") -> int:
    r"""The paper's block counts as reported in summaries of the paper (not checked against its text).

    :math:`2 \sum_j m_j + 2N + 1` (hardmax), :math:`2 \sum_j m_j + 3N` (softmax).

    Parameters
    ----------
    m
        Target lengths :math:`m_j`.
    attention
        ``"hardmax"`` or ``"softmax"``.
    """
    if attention not in ATTENTIONS:
        raise ValueError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
    N = len(m)
    return 2 * sum(m) + (2 * N + 1 if attention == "hardmax" else 3 * N)


def parameter_bound(m: Sequence[int], d: int, attention: str = "hardmax") -> int:
    r"""This construction's parameter bound.

    :math:`(2 \sum_j m_j + N - 1)(10 d + 8)` for hardmax (at most :math:`(30 d + 24) \sum_j m_j`)
    and :math:`(2 \sum_j m_j + N)(10 d + 8)` for softmax (one block more, the projection). Every
    block costs at most :math:`10 d + 8` stored numbers: an FF of width :math:`\le 4`,
    :math:`4 (2d + 1) + 1`, and an SA, :math:`2d + 3`.

    Parameters
    ----------
    m
        Target lengths :math:`m_j`.
    d
        Token dimension.
    attention
        ``"hardmax"`` or ``"softmax"``.
    """
    if attention not in ATTENTIONS:
        raise ValueError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
    return (2 * sum(m) + len(m) - (1 if attention == "hardmax" else 0)) * (10 * d + 8)
