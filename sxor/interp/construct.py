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
from fractions import Fraction
from typing import cast

import mpmath

from ._construct_collapse import (
    COLLAPSES,
    Leaders,
    _low_rank_weights,
    collapse_layer,
    ellipse_parking_spots,
    leader_phase,
    mean_collapse_phase,
)
from ._construct_collapse import _parking_spot as _parking_spot
from ._construct_separation import Separation, separation_phase
from ._construct_separation import _replace as _replace
from ._construct_separation import _values as _values
from .certificate import collapse_margins, interpolation_errors, softmax_certificate
from .dataset import check_dataset, distinct_indices, random_dataset
from .exact import Token, fmt
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
    and the radius

    .. math::
       \min(1 + \max \lVert y \rVert_\infty, \min_k \mathrm{gap}_k / 4) / \lVert v \rVert_\infty,

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
    gaps = [cast(Fraction, layer.gap) for layer in moves]  # snap_move records every gap
    radius = min([1 + ybig] + [gap / 4 for gap in gaps]) / max(abs(a) for a in v)
    return projection, moves, radius


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
