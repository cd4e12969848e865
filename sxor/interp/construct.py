"""This book's exact interpolation construction (Part II, chapters 13 and 14), phase by phase.

Given inputs ``X_1..X_N`` (``X_j [n_j, d]``) and targets ``Y_1..Y_N`` (``Y_j [m_j, d]``,
``1 <= m_j <= n_j``), :func:`construct` returns a transformer ``T`` of blocks ``FF -> SA`` with
``{T(X_j)_i} = {y^j_k}`` as sets, for every ``j``. Two routes:

**Mean route** (every ``m_j = 1``): separation moves make the sequence means pairwise distinct
(:func:`separation_phase`), one FF translates everything away from the targets and one SA with
``A = 0, rho = 0, V = I`` sends every token to its sequence mean, exactly, at every temperature
(:func:`mean_collapse_phase`); ``N`` hats move the means onto the targets. ``L <= 2N`` blocks.

**Leader route** (some ``m_j > 1``; ``d >= 2``), four phases:

1. separation (``s <= N - 1`` blocks; none if the sequences are already disjoint): hat FFs make
   the sequence means distinct, then ``A = 0, rho = 1, V = lam I`` maps ``x -> x + lam mean(X_j)``;
2. leader selection (``sum m_j`` FFs, :func:`leader_phase`): a translation into ``[1, R]^d``;
   one leader of sequence ``j`` to ``c_j 1``, ``m_j - 1`` tokens to parking spots on a circle;
3. collapse (one SA ``A = I, rho = 0, V = I`` in the last leader block);
4. interpolation: hardmax, ``sum m_j`` flat-top hats (:func:`hardmax_interpolation_phase`);
   softmax, one non-residual FF that puts every token on the ``e_1`` axis and ``sum m_j``
   snap-moves, each sending a whole cluster *exactly* onto its target
   (:func:`softmax_interpolation_phase`).

Blocks: hardmax ``s + 2 sum m_j``; softmax ``s + 2 sum m_j + 1 <= 2 sum m_j + N``, against the
paper's ``2 sum m_j + 3N``. FF width ``<= 4``. Everything is exact in :class:`fractions.Fraction`.
Chapter 13 proves each phase; the certificate is in :mod:`sxor.interp.certificate`.
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
from .hats import hat_move, injective_direction, line_projection, snap_move
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
    """Result of :func:`separation_phase`: the move FFs, the shift SA (or None), the new states,
    and the next moment-curve parameter to try."""

    moves: tuple[FFLayer, ...]
    shift: SALayer | None
    states: list[np.ndarray]
    start: int


def separation_phase(states: list[np.ndarray], d: int, *, shift: bool, start: int = 1) -> Separation:
    """Phase 1 (Lemmas 13.3-13.4). Moves token values with hats until the sequence means are
    pairwise distinct (at most ``N - 1`` moves); with ``shift=True`` it then adds the SA
    ``x -> x + lam mean(X_j)`` that makes the token sets pairwise disjoint, and does nothing at
    all when they already are. With ``shift=False`` (mean route) it always makes the means
    distinct and adds no SA."""
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
        layer = hat_move(values, p, D, d, flat=False, role=f"separate: move {fmt(p)}", start=start)
        start = int(layer.U[0, 1]) if d > 1 else start
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
    """Mean route (every ``m_j = 1``): the separation moves, the last one carrying a translation
    ``t = c 1`` (``c = 1 + max|y|_inf + max|mean|_inf``, so no mean lands on a target), then the
    SA ``A = 0, rho = 0, V = I``: every token of ``X_j`` goes to ``mean_j + t``, exactly, for
    hardmax and for every softmax temperature. Returns the blocks and the collapsed points."""
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
    """Result of :func:`leader_phase`: the FFs, the destinations (leaders and parking spots, in
    target order), the states just before the collapse, the box size ``R``, the parking radius."""

    moves: tuple[FFLayer, ...]
    destinations: tuple[Token, ...]
    states: list[np.ndarray]
    box: Fraction
    park_radius: Fraction
    start: int


def leader_phase(states: list[np.ndarray], Y: list[np.ndarray], d: int, start: int = 1) -> Leaders:
    """Phase 2: the first FF also translates every token into ``[1, R]^d``; token 0 of ``X_j``
    goes to ``c_j 1`` with ``c_j = max(R, max|y|_inf) + j + 1``; tokens ``1..m_j-1`` go to
    parking spots on the circle ``|q| = 1 + max(R, max|y|_1)`` in the negative quadrant of the
    first two coordinates. ``sum m_j`` hat FFs."""
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
    for idx, (p, dest) in enumerate(plan):
        D = tuple(a - b for a, b in zip(dest, p))
        if idx == 0:
            p0 = tuple(v - t for v, t in zip(p, translation))
            layer = hat_move(_values(states), p0, D, d, flat=False, translation=translation, start=start,
                             role=f"translate by {fmt(translation)}; leader {fmt(p)} -> {fmt(dest)}")
            states = [s + np.array(translation, dtype=object) for s in states]
        else:
            layer = hat_move(_values(states), p, D, d, flat=False, start=start, role=f"select {fmt(p)} -> {fmt(dest)}")
        start = int(layer.U[0, 1])
        moves.append(layer)
        states = _replace(states, p, dest)
    return Leaders(tuple(moves), tuple(dest for _, dest in plan), states, box, park_radius, start)


def hardmax_interpolation_phase(points: Sequence[Token], goals: Sequence[Token], d: int, *, flat: bool,
                                start: int = 1) -> list[FFLayer]:
    """Phase 4 (hardmax): one hat per collapsed point, ``points[k] -> goals[k]`` (Lemma 13.2).
    ``points`` are pairwise distinct and none is a goal."""
    values, moves = set(points), []
    for p, goal in zip(points, goals):
        D = tuple(a - b for a, b in zip(goal, p))
        layer = hat_move(values, p, D, d, flat=flat, role=f"interpolate {fmt(p)} -> {fmt(goal)}", start=start)
        start = int(layer.U[0, 1]) if d > 1 else start
        moves.append(layer)
        values = (values - {p}) | {goal}
    return moves


def softmax_interpolation_phase(points: Sequence[Token], goals: Sequence[Token], d: int,
                                start: int = 1) -> tuple[FFLayer, list[FFLayer], Fraction]:
    """Phase 4 (softmax, Theorem 13.B): the non-residual FF ``x -> relu(<v, x> - c) e_1`` puts the
    clusters on the ``e_1`` axis at ``t_k >= 1 + max|y|_inf`` (so no point of the axis is a goal),
    then one snap-move per cluster sends the segment ``t_k e_1 +- gap_k/4`` exactly to its goal.
    Returns the projection, the snap-moves and the radius ``min(1 + max|y|_inf, min_k gap_k / 4) / |v|_inf``:
    the l1 collapse error every cluster may have (Theorem 13.B)."""
    ybig = max(abs(v) for g in goals for v in g)
    projection, v, c = line_projection(set(points), d, 1 + ybig, role="project onto the e_1 axis", start=start)
    line = [tuple([sum((a * b for a, b in zip(v, p)), Fraction(0)) - c] + [Fraction(0)] * (d - 1)) for p in points]
    values, moves = set(line), []
    start = int(v[1]) if d > 1 else start
    for p, goal in zip(line, goals):
        layer = snap_move(values, p, goal, d, role=f"snap {fmt(p)} -> {fmt(goal)}", start=start)
        start = int(layer.U[0, 1]) if d > 1 else start
        moves.append(layer)
        values = (values - {p}) | {goal}
    radius = min([1 + ybig] + [layer.gap / 4 for layer in moves]) / max(abs(a) for a in v)
    return projection, moves, radius


COLLAPSES = ("identity", "rank-one")


def collapse_layer(d: int, kind: str = "identity") -> SALayer:
    """Phase 3's attention layer, ``rho = 0``, ``V = I``: ``A = I`` (``kind="identity"``, Lemma 13.5)
    or the rank-one ``A = 1 1^T`` (``kind="rank-one"``, Lemma A of chapter 11: every token with
    ``<1, x> > 0`` goes to the token of largest ``<1, x>``, the leader, and a token with
    ``<1, x> < 0`` to the one of smallest, which keeps one parked token per sequence, so it needs
    every ``m_j <= 2``). Refuses another ``kind``."""
    if kind == "identity":
        return SALayer(Fraction(0), Fraction(1), zeros(d), zeros(d), Fraction(1), "collapse onto leaders (A = I)")
    if kind == "rank-one":
        ones = np.array([Fraction(1)] * d, dtype=object)
        return SALayer(Fraction(0), Fraction(0), ones, ones.copy(), Fraction(1), "collapse onto leaders (A = 1 1^T)")
    raise ValueError(f"collapse must be one of {COLLAPSES}, got {kind!r}")


def construct(inputs: Sequence, targets: Sequence, attention: str = "hardmax", tau=None, *,
              collapse: str = "identity") -> InterpolatingTransformer:
    """Build a transformer that interpolates ``inputs[j] -> targets[j]`` exactly (as sets).

    ``inputs[j] [n_j, d]``, ``targets[j] [m_j, d]``: exact entries (int, Fraction; floats are
    refused, convert them with :func:`sxor.interp.exact.from_floats`), hypotheses checked by
    :func:`check_dataset` (repeated input sets with equal targets are allowed). ``attention``:

    * ``"hardmax"`` (``tau`` must be None or 0): ``T(X_j) = Y_j`` exactly;
    * ``"softmax"``: ``T(X_j) = Y_j`` exactly for every ``0 < tau < T.tau_max`` (``inf`` on the
      mean route); ``tau`` (int or Fraction, default a rational near ``tau_max / 2``, or 1) is
      the temperature stored in ``T``.

    ``collapse`` chooses phase 3's attention (:func:`collapse_layer`): ``"identity"`` (``A = I``,
    any ``m_j``) or ``"rank-one"`` (``A = 1 1^T``, every ``m_j <= 2``); same block count.

    Refuses an unknown ``attention`` or ``collapse``, ``"rank-one"`` with some ``m_j > 2``,
    ``tau != 0`` for hardmax, ``tau <= 0``, NaN, inf or a float ``tau`` for softmax, and every
    dataset :func:`check_dataset` refuses."""
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
    """The temperature :func:`construct` stores when none is given: 1 when ``tau_max`` is
    infinite, else a rational near ``tau_max / 2`` (denominator ``<= 10^6`` when that stays in
    ``(0, tau_max)``, the exact binary value of ``tau_max / 2`` otherwise). Works in ``mpmath``,
    so a ``tau_max`` far outside the float range (coordinates ~1e200 give scores ~1e400) is fine."""
    if not mpmath.isfinite(tau_max):
        return Fraction(1)
    half = tau_max / 2
    man, exp = mpmath.mpf(half).man_exp
    exact = Fraction(int(man)) * Fraction(2) ** int(exp)
    tau = exact.limit_denominator(10**6)
    return tau if 0 < tau and mpmath.mpf(tau.numerator) / tau.denominator < tau_max else exact


def block_bound(m: Sequence[int], attention: str = "hardmax") -> int:
    """The paper's block counts as reported in summaries of the paper (not checked against its
    text): ``2 sum m_j + 2N + 1`` (hardmax), ``2 sum m_j + 3N`` (softmax)."""
    if attention not in ATTENTIONS:
        raise ValueError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
    N = len(m)
    return 2 * sum(m) + (2 * N + 1 if attention == "hardmax" else 3 * N)


def parameter_bound(m: Sequence[int], d: int, attention: str = "hardmax") -> int:
    """This construction's parameter bound: ``(2 sum m_j + N - 1)(10 d + 8)`` for hardmax (at most
    ``(30 d + 24) sum m_j``) and ``(2 sum m_j + N)(10 d + 8)`` for softmax (one block more, the
    projection). Every block costs at most ``10 d + 8`` stored numbers: an FF of width ``<= 4``,
    ``4 (2d + 1) + 1``, and an SA, ``2d + 3``."""
    if attention not in ATTENTIONS:
        raise ValueError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
    return (2 * sum(m) + len(m) - (1 if attention == "hardmax" else 0)) * (10 * d + 8)
