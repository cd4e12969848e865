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

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import mpmath
import numpy as np

from .certificate import collapse_margins, interpolation_errors, softmax_certificate
from .dataset import check_dataset, distinct_indices, random_dataset
from .exact import Token, fmt, mean, zeros
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
    "FFLayer", "SALayer", "Block", "InterpolatingTransformer", "identity_ff", "identity_sa",
    "check_dataset", "random_dataset", "injective_direction", "hat_move", "snap_move", "construct",
    "interpolation_errors", "softmax_certificate", "block_bound", "parameter_bound",
    "separation_phase", "mean_collapse_phase", "leader_phase", "hardmax_interpolation_phase",
    "softmax_interpolation_phase", "collapse_layer", "default_temperature", "Separation", "Leaders",
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


def separation_phase(states: list[np.ndarray], d: int, *, shift: bool, start: int = 1) -> Separation:
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
        overlap = any(owners.setdefault(tuple(row), j) != j for j, s in enumerate(states) for row in s)
        if not overlap:
            return Separation((), None, states, start)
    direction = tuple(Fraction(c + 1) for c in range(d))
    moves: list[FFLayer] = []
    while True:
        means = [mean(s) for s in states]
        pair = next(((j, k) for j in range(len(states)) for k in range(j) if means[j] == means[k]), None)
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
            new_means = [tuple(m + (Dc / s.shape[0] if contains[i] else 0) for m, Dc in zip(means[i], D))
                         for i, s in enumerate(states)]
            if new_means[j] != new_means[k] and all(
                means[a] == means[b] or new_means[a] != new_means[b] for a in range(len(states)) for b in range(a)
            ):
                break
        else:  # pragma: no cover - excluded by Lemma 13.4
            raise AssertionError(f"no displacement separates the means of inputs {k} and {j}")
        layer = hat_move(values, p, D, d, flat=False, role=f"separate: move {fmt(p)}",
                         direction=conditioned_direction(values, d))
        moves.append(layer)
        states = _replace(states, p, new_p)
    if not shift:
        return Separation(tuple(moves), None, states, start)
    means = [mean(s) for s in states]
    total = sum(s.shape[0] for s in states)
    lam = 1
    while len({tuple(x + lam * m for x, m in zip(row, means[j])) for j, s in enumerate(states) for row in s}) != total:
        lam += 1
    layer = mean_sa(d, Fraction(1), Fraction(lam), f"separate: x + {lam} mean")
    states = [s + np.array([lam * m for m in means[j]], dtype=object) for j, s in enumerate(states)]
    return Separation(tuple(moves), layer, states, start)


def mean_collapse_phase(sep: Separation, Y: list[np.ndarray], d: int) -> tuple[list[Block], list[Token]]:
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
        moves[-1] = FFLayer(last.eta, U, b, W, last.role + f"; translate by {fmt(t)}", last.gap, last.v_l1)
    else:
        moves = [FFLayer(Fraction(1), zeros(1, d), np.array([Fraction(1)], dtype=object),
                         np.array(t, dtype=object).reshape(d, 1), f"translate by {fmt(t)}")]
    collapse = mean_sa(d, Fraction(0), Fraction(1), "collapse onto the sequence mean")
    blocks = [Block(ff, identity_sa(d), "separation") for ff in moves[:-1]]
    blocks.append(Block(moves[-1], collapse, "collapse"))
    return blocks, [tuple(a + b for a, b in zip(m, t)) for m in means]


def _parking_spot(i: int, count: int, radius: Fraction, d: int) -> Token:
    """A rational point of the circle ``|q| = radius`` with ``q_1, q_2 < 0`` and ``q_c = 0``
    for ``c > 2``: inverse stereographic projection at ``t = i / (count + 1)`` in ``(0, 1)``."""
    t = Fraction(i, count + 1)
    return tuple([-radius * 2 * t / (1 + t * t), -radius * (1 - t * t) / (1 + t * t)] + [Fraction(0)] * (d - 2))


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


def leader_phase(states: list[np.ndarray], Y: list[np.ndarray], d: int, start: int = 1) -> Leaders:
    r"""Phase 2: leader selection, one hat FF per target.

    The first FF also translates every token into :math:`[1, R]^d`; token 0 of :math:`X_j` goes to
    :math:`c_j \mathbf{1}` with :math:`c_j = \max(R, \max \lVert y \rVert_\infty) + j + 1`; tokens
    :math:`1, \dots, m_j - 1` go to parking spots on the circle
    :math:`\lVert q \rVert = 1 + \max(R, \max \lVert y \rVert_1)` in the negative quadrant of the
    first two coordinates. :math:`\sum_j m_j` hat FFs.

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
    for j, (s, y) in enumerate(zip(states, Y)):
        plan.append((tuple(v + t for v, t in zip(s[0], translation)), tuple([max(box, ybig) + j + 1] * d)))
        for i in range(1, y.shape[0]):
            parked += 1
            plan.append((tuple(v + t for v, t in zip(s[i], translation)),
                         _parking_spot(parked, num_parked, park_radius, d)))
    moves: list[FFLayer] = []
    values = _values(states)  # kept up to date move by move (a move replaces one value by another)
    # One direction for the whole phase. Every value set met during the phase is a subset of the
    # translated initial values and the destinations (a move replaces a value by its destination),
    # and projections are translation invariant up to a constant, so a direction injective on that
    # union separates every move, with every gap at least the union's and a range at most the
    # union's: at least as well conditioned as one chosen move by move, for one search instead of
    # one per move.
    union = {tuple(v + t for v, t in zip(x, translation)) for x in values} | {dest for _, dest in plan}
    direction = conditioned_direction(union, d)
    for idx, (p, dest) in enumerate(plan):
        D = tuple(a - b for a, b in zip(dest, p))
        if idx == 0:
            p0 = tuple(v - t for v, t in zip(p, translation))
            layer = hat_move(values, p0, D, d, flat=False, translation=translation, direction=direction,
                             role=f"translate by {fmt(translation)}; leader {fmt(p)} -> {fmt(dest)}")
            states = [s + np.array(translation, dtype=object) for s in states]
            values = {tuple(v + t for v, t in zip(x, translation)) for x in values}
        else:
            layer = hat_move(values, p, D, d, flat=False, role=f"select {fmt(p)} -> {fmt(dest)}",
                             direction=direction)
        moves.append(layer)
        states = _replace(states, p, dest)
        values = (values - {p}) | {dest}
    return Leaders(tuple(moves), tuple(dest for _, dest in plan), states, box, park_radius, start)


def hardmax_interpolation_phase(points: Sequence[Token], goals: Sequence[Token], d: int, *, flat: bool,
                                start: int = 1) -> list[FFLayer]:
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
        layer = hat_move(values, p, D, d, flat=flat, role=f"interpolate {fmt(p)} -> {fmt(goal)}",
                         direction=conditioned_direction(values, d))  # injective, well spread
        moves.append(layer)
        values = (values - {p}) | {goal}
    return moves


def softmax_interpolation_phase(points: Sequence[Token], goals: Sequence[Token], d: int,
                                start: int = 1) -> tuple[FFLayer, list[FFLayer], Fraction]:
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
    projection, v, c = line_projection(set(points), d, 1 + ybig, role="project onto the e_1 axis", start=start)
    line = [tuple([sum((a * b for a, b in zip(v, p)), Fraction(0)) - c] + [Fraction(0)] * (d - 1)) for p in points]
    values, moves = set(line), []
    e1 = tuple(Fraction(int(i == 0)) for i in range(d))
    for p, goal in zip(line, goals):  # on e_1, p is >= 1 from every goal and > 2 (1 + ybig) from the other t_l
        layer = snap_move(values, p, goal, d, role=f"snap {fmt(p)} -> {fmt(goal)}", direction=e1)
        moves.append(layer)
        values = (values - {p}) | {goal}
    radius = min([1 + ybig] + [layer.gap / 4 for layer in moves]) / max(abs(a) for a in v)
    return projection, moves, radius


COLLAPSES = ("identity", "rank-one")


def collapse_layer(d: int, kind: str = "identity") -> SALayer:
    r"""Phase 3's attention layer, :math:`\rho = 0`, :math:`V = I`.

    ``kind="identity"``: :math:`A = I` (Lemma 13.5). ``kind="rank-one"``:
    :math:`A = \mathbf{1}\mathbf{1}^\top` (Lemma A of chapter 11: every token with
    :math:`\langle \mathbf{1}, x \rangle > 0` goes to the token of largest
    :math:`\langle \mathbf{1}, x \rangle`, the leader, and a token with
    :math:`\langle \mathbf{1}, x \rangle < 0` to the one of smallest, which keeps one parked token
    per sequence, so it needs every :math:`m_j \le 2`).

    Parameters
    ----------
    d
        Token dimension.
    kind
        ``"identity"`` or ``"rank-one"``.

    Raises
    ------
    ValueError
        for another ``kind``.
    """
    if kind == "identity":
        return SALayer(Fraction(0), Fraction(1), zeros(d), zeros(d), Fraction(1), "collapse onto leaders (A = I)")
    if kind == "rank-one":
        ones = np.array([Fraction(1)] * d, dtype=object)
        return SALayer(Fraction(0), Fraction(0), ones, ones.copy(), Fraction(1), "collapse onto leaders (A = 1 1^T)")
    raise ValueError(f"collapse must be one of {COLLAPSES}, got {kind!r}")


def construct(inputs: Sequence, targets: Sequence, attention: str = "hardmax", tau=None, *,
              collapse: str = "identity") -> InterpolatingTransformer:
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
        every :math:`m_j \le 2`); same block count.

    Raises
    ------
    ValueError
        for an unknown ``attention`` or ``collapse``, ``"rank-one"`` with some :math:`m_j > 2`,
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
    X_all, Y_all = check_dataset(inputs, targets)
    if collapse == "rank-one" and any(y.shape[0] > 2 for y in Y_all):
        raise ValueError("the rank-one collapse keeps at most one parked token per sequence: it needs every m_j <= 2")
    keep = distinct_indices(X_all)
    X, Y = [X_all[j] for j in keep], [Y_all[j] for j in keep]
    d = X[0].shape[1]
    info = {"N": len(X_all), "n": [x.shape[0] for x in X_all], "m": [y.shape[0] for y in Y_all],
            "distinct_inputs": len(X)}
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
        lead = leader_phase(sep.states, Y, d, sep.start)
        collapse_sa = collapse_layer(d, collapse)
        blocks = []
        if sep.shift is not None:
            ffs = list(sep.moves) or [identity_ff(d)]
            blocks += [Block(ff, sep.shift if i == len(ffs) - 1 else identity_sa(d), "separation")
                       for i, ff in enumerate(ffs)]
        blocks += [Block(ff, identity_sa(d), "leaders") for ff in lead.moves[:-1]]
        blocks.append(Block(lead.moves[-1], collapse_sa, "collapse"))
        if attention == "hardmax":
            moves = hardmax_interpolation_phase(lead.destinations, goals, d, flat=True, start=lead.start)
            blocks += [Block(ff, identity_sa(d), "interpolation") for ff in moves]
        else:
            projection, moves, radius = softmax_interpolation_phase(lead.destinations, goals, d, lead.start)
            blocks.append(Block(projection, identity_sa(d), "projection"))
            blocks += [Block(ff, identity_sa(d), "interpolation") for ff in moves]
            gap, spread = collapse_margins(lead.states, collapse_sa)
        info.update(route="leaders", collapse=collapse, separation_moves=len(sep.moves), shift=sep.shift is not None,
                    box=lead.box, park_radius=lead.park_radius)
    if attention == "hardmax":
        return InterpolatingTransformer(tuple(blocks), d, "hardmax", 0, info=info)
    T = InterpolatingTransformer(tuple(blocks), d, "softmax", Fraction(1), gap, spread, radius, info)
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
    return tau if 0 < tau and mpmath.mpf(tau.numerator) / tau.denominator < tau_max else exact


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
