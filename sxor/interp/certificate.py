"""Checks of a built network: exact errors (hardmax) and the rigorous softmax certificate."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from fractions import Fraction
from typing import cast

import mpmath
import numpy as np

from ..progress import progress
from ._certificate_exact import box_hausdorff_squared, exact_states
from .dataset import check_dataset
from .enclosures import (
    MAX_PREC,
    _int_matmul,
    feed_forward_enclosure,
    integer_form,
    mean_attention_enclosure,
    softmax_attention_box,
    softmax_attention_enclosure,
)
from .exact import exact_scalar, fractions, short, sqrt_upper
from .layers import hausdorff_squared
from .network import (
    ENCLOSURE_BITS,
    Block,
    FFLayer,
    InterpolatingTransformer,
    SALayer,
    _apply_ff,
    check_temperature,
    identity_ff,
    identity_sa,
)

__all__ = [
    "box_hausdorff_squared",
    "collapse_margins",
    "enclosure_bits",
    "exact_states",
    "interpolation_errors",
    "propagate_boxes",
    "radius_absorbed",
    "softmax_certificate",
]


def collapse_margins(states: list[np.ndarray], collapse: SALayer) -> tuple[Fraction, Fraction]:
    r"""The score gap :math:`\Delta` and the spread of the collapse layer.

    :math:`\Delta` is the smallest score gap :math:`s_{i i^*} - \max_{l \ne i^*} s_{il}` over all
    tokens of all sequences at the collapse layer; :math:`\mathrm{spread} = \max_j (n_j - 1) D_j`
    with :math:`D_j` the largest :math:`\ell^1` distance between two tokens of sequence :math:`j` (an
    upper bound on the :math:`\ell^2` one). Exact, in integer arithmetic over one common
    denominator per sequence (:func:`~sxor.interp.enclosures.integer_form`).

    Parameters
    ----------
    states
        The sequences just before the collapse layer (exact).
    collapse
        The collapse attention layer.
    """
    Ai, Da = integer_form(collapse.A)
    gap: Fraction | None = None
    spread = Fraction(0)
    for s in states:
        P, D = integer_form(s)
        S = _int_matmul(_int_matmul(P, Ai.T), P.T)  # scores * D^2 Da
        n = s.shape[0]
        if n > 1:
            row_gap = min(int(a) - int(b) for a, b in (sorted(row, reverse=True)[:2] for row in S))
            g = Fraction(row_gap, D * D * Da)
            gap = g if gap is None else min(gap, g)
        big = max((abs(v) for v in P.flat), default=0)
        Q = P.astype(np.int64) if 2 * big * P.shape[1] < 2**62 else P
        diam = max((int(np.abs(Q - Q[i]).sum(axis=1).max()) for i in range(n)), default=0)
        spread = max(spread, (n - 1) * Fraction(diam, D))
    return (gap if gap is not None else Fraction(1)), spread


def interpolation_errors(
    T: InterpolatingTransformer, inputs: Sequence, targets: Sequence
) -> list[Fraction]:
    r"""Squared Hausdorff distances :math:`d_H(T(X_j), Y_j)^2`, exact Fractions.

    Hardmax: the exact outputs. Softmax: the outputs with every temperature-dependent layer replaced
    by the midpoint of its rigorous enclosure (see :class:`sxor.interp.network.SALayer`); the
    rigorous bound is :func:`~sxor.interp.certificate.softmax_certificate`.

    Parameters
    ----------
    T
        The network (an :class:`~sxor.interp.network.InterpolatingTransformer`).
    inputs
        Input sequences ``[n_j, d]``, exact.
    targets
        Target sequences ``[m_j, d]``, exact.

    Raises
    ------
    ValueError
        for datasets :func:`~sxor.interp.dataset.check_dataset` refuses and token dimensions other
        than ``T.d``.
    """
    if not isinstance(T, InterpolatingTransformer):
        raise TypeError(
            f"T must be an InterpolatingTransformer (from construct), got {type(T).__name__}"
        )
    X, Y = check_dataset(inputs, targets)
    # one exact sequence against one: hausdorff_squared gives a single Fraction
    return [cast(Fraction, hausdorff_squared(out, y)) for out, y in zip(T.map(X), Y)]


def _ball_feed_forward(
    centres: np.ndarray, r: Fraction, ff: FFLayer
) -> list[tuple[np.ndarray, np.ndarray]]:
    r"""Boxes holding the image of each :math:`\ell^1` ball :math:`B_1(c, r)` under ``ff``.

    Over the ball, :math:`u \cdot x` ranges exactly over :math:`u \cdot c \pm r \max_j |u_j|`: a
    constant activation pattern makes the layer an affine map :math:`M x + e` there, whose image
    lies in :math:`M c + e \pm r \max_j |M_{rj}|`; otherwise ReLU is bounded monotonically.
    """
    zero = Fraction(0)
    eta = Fraction(ff.eta)
    out = []
    for c in centres:
        pre = [sum((u * x for u, x in zip(row, c)), zero) + bk for row, bk in zip(ff.U, ff.b)]
        slack = [r * max((abs(u) for u in row), default=zero) for row in ff.U]
        if all(p - s >= 0 or p + s <= 0 for p, s in zip(pre, slack)):  # affine on the ball
            on = [k for k, (p, s) in enumerate(zip(pre, slack)) if p - s >= 0]
            M = [
                [
                    eta * (i == j) + sum((ff.W[i, k] * ff.U[k, j] for k in on), zero)
                    for j in range(len(c))
                ]
                for i in range(len(c))
            ]
            mid = [
                sum((m * x for m, x in zip(row, c)), zero)
                + sum((ff.W[i, k] * ff.b[k] for k in on), zero)
                for i, row in enumerate(M)
            ]
            half = [r * max(abs(m) for m in row) for row in M]
        else:
            h_lo = [max(p - s, zero) for p, s in zip(pre, slack)]
            h_hi = [max(p + s, zero) for p, s in zip(pre, slack)]
            h_mid = [(a + b) / 2 for a, b in zip(h_lo, h_hi)]
            h_half = [(b - a) / 2 for a, b in zip(h_lo, h_hi)]
            mid = [
                eta * x + sum((w * h for w, h in zip(ff.W[i], h_mid)), zero)
                for i, x in enumerate(c)
            ]
            half = [
                abs(eta) * r + sum((abs(w) * h for w, h in zip(ff.W[i], h_half)), zero)
                for i in range(len(c))
            ]
        out.append((np.array(mid, dtype=object), np.array(half, dtype=object)))
    lo = np.array([m - h for m, h in out], dtype=object).reshape(len(out), -1)
    hi = np.array([m + h for m, h in out], dtype=object).reshape(len(out), -1)
    return [(lo, hi)]


def radius_absorbed(
    later: Sequence, centres: list[np.ndarray], radius: Fraction, targets: list[np.ndarray]
) -> bool:
    r"""Whether ``later`` maps every point within :math:`\ell^1` distance ``radius`` of the collapse
    output onto the targets: checked, not assumed.

    For every sequence :math:`j`, the later layers act on the :math:`\ell^1` balls of radius
    ``radius`` around the exact hardmax outputs ``centres[j]`` of the collapse (exact interval
    arithmetic; the first layer sees the balls themselves, the others their bounding boxes,
    :func:`~sxor.interp.certificate.propagate_boxes`). ``True`` proves that any collapse output
    whose tokens deviate by at most ``radius`` (:math:`\ell^1`) from the hardmax ones is mapped
    exactly onto :math:`Y_j` as a set; ``False`` means only "not proved".

    Parameters
    ----------
    later
        The blocks after the collapse layer.
    centres
        Per sequence, the exact hardmax output ``[n_j, d]`` of the collapse.
    radius
        The radius to check, a Fraction :math:`\ge 0`.
    targets
        Per sequence, the target tokens ``[m_j, d]``.
    """
    radius = exact_scalar("radius", radius)
    if radius < 0 or len(centres) != len(targets):
        raise ValueError(
            f"radius_absorbed needs radius >= 0 and one target per centre sequence, got radius "
            f"{short(radius, 30)}, {len(centres)} centre and {len(targets)} target sequences"
        )
    if all(block.sa.is_identity for block in later):  # token-wise: one ball per distinct centre
        centres = [np.array(sorted(set(map(tuple, c))), dtype=object) for c in centres]
    later = list(later)
    if not later:
        boxes = [(c - radius, c + radius) for c in centres]
    elif later[0].ff.is_identity:
        boxes = propagate_boxes(later, [(c - radius, c + radius) for c in centres])
    else:
        first = [_ball_feed_forward(c, radius, later[0].ff)[0] for c in centres]
        rest = [Block(identity_ff(later[0].sa.d), later[0].sa, later[0].phase), *later[1:]]
        boxes = propagate_boxes(rest, first)
    return all(box_hausdorff_squared(lo, hi, y) == 0 for (lo, hi), y in zip(boxes, targets))


def _temperature_dependent(sa: SALayer) -> bool:
    return not (sa.is_identity or sa.scores_constant)


def propagate_boxes(
    blocks: Sequence, boxes: list[tuple[np.ndarray, np.ndarray]]
) -> list[tuple[np.ndarray, np.ndarray]]:
    r"""Push per-sequence boxes through ``blocks`` in exact interval arithmetic.

    FFs by :func:`sxor.interp.enclosures.feed_forward_enclosure`, attention layers with :math:`A = 0` by
    :func:`sxor.interp.enclosures.mean_attention_enclosure`, identities unchanged. The result contains
    the image of every point of the boxes.

    Parameters
    ----------
    blocks
        The blocks to apply, in order.
    boxes
        One ``(lo [n_j, d], hi [n_j, d])`` pair per sequence.

    Raises
    ------
    ValueError
        for a temperature-dependent attention layer (its image of a box is not computed here).
    """
    for block in progress(blocks, desc="certificate: layers", disable=len(blocks) < 10):
        ff = block.ff
        if not ff.is_identity:  # token-wise: one call on the stacked boxes of every sequence
            cuts = np.cumsum([0] + [lo.shape[0] for lo, _ in boxes])
            lo, hi = feed_forward_enclosure(
                np.concatenate([b[0] for b in boxes]),
                np.concatenate([b[1] for b in boxes]),
                ff.eta,
                ff.W,
                ff.U,
                ff.b,
            )
            boxes = [(lo[a:b], hi[a:b]) for a, b in itertools.pairwise(cuts)]
        if block.sa.is_identity:
            continue
        if not block.sa.scores_constant:
            raise ValueError(
                "the certificate handles one temperature-dependent attention layer per network"
            )
        boxes = [mean_attention_enclosure(lo, hi, block.sa.rho, block.sa.beta) for lo, hi in boxes]
    return boxes


def enclosure_bits(radius: Fraction | None) -> int:
    r"""Working precision of the certificate's softmax enclosure.

    ``ENCLOSURE_BITS``, plus :math:`\log_2(1 / \mathrm{radius})` when the radius is below 1, so that
    the enclosure's absolute error (about :math:`e^{-2\,\mathrm{bits}}`, see
    :func:`sxor.interp.enclosures.softmax_attention_enclosure`) stays far below the radius however close
    the targets are.

    Capped at :data:`sxor.interp.enclosures.MAX_PREC` (a radius below :math:`2^{-9800}`): the
    enclosure stays rigorous at any precision, only less tight.

    Parameters
    ----------
    radius
        The collapse error the later layers absorb.
    """
    if radius is None or radius >= 1:
        return ENCLOSURE_BITS
    return min(
        MAX_PREC,
        ENCLOSURE_BITS + radius.denominator.bit_length() - radius.numerator.bit_length() + 1,
    )


def softmax_certificate(
    T: InterpolatingTransformer,
    inputs: Sequence,
    targets: Sequence,
    tau=None,
    *,
    reference: bool = False,
) -> dict:
    r"""Rigorous check of a softmax network at temperature ``tau`` (default ``T.tau``).

    Runs the layers exactly up to the temperature-dependent attention layer (the collapse; every
    earlier SA has :math:`A = 0` or is the identity, so it is exact at every :math:`\tau`), encloses
    its output in rational boxes (:func:`sxor.interp.enclosures.softmax_attention_enclosure`: exact
    hardmax centre plus an outward-rounded enclosure of the deviation, at
    :func:`~sxor.interp.certificate.enclosure_bits` bits, so the boxes stay tight for coordinates of
    any size and targets at any distance), and pushes the boxes through every later layer in exact
    interval arithmetic (:func:`sxor.interp.enclosures.feed_forward_enclosure`). Every :math:`\tau > 0`
    is supported: the enclosure clamps huge exponents, so the work does not grow as
    :math:`\tau \to 0`.

    Parameters
    ----------
    T
        A softmax :class:`~sxor.interp.network.InterpolatingTransformer`.
    inputs
        Input sequences ``[n_j, d]``, exact.
    targets
        Target sequences ``[m_j, d]``, exact.
    tau
        Temperature, an int or Fraction :math:`> 0`; ``T.tau`` if ``None``.
    reference
        ``False`` (default): first the fast path below; ``True``: only the reference path (the
        tight ``mpmath`` enclosure for every token, the implementation the fast path is
        benchmarked and tested against).

    Notes
    -----
    **Fast path.** The same argument with cheaper arithmetic, equally rigorous: the exact layers
    before the collapse run in integer arithmetic over a common denominator
    (:func:`~sxor.interp.certificate.exact_states`); the collapse is enclosed by
    :func:`sxor.interp.enclosures.softmax_attention_box` (exact hardmax centre, outward-rounded
    float64 radius); tokens with the same centre share one box (the union of their boxes) when
    every later attention layer is the identity, so each later FF acts on :math:`\sum_j m_j` boxes
    instead of :math:`\sum_j n_j`. The boxes are wider than the reference ones, so when the fast
    path does not prove exactness the reference path runs and its (tight) result is returned:
    the answer is ``exact`` whenever either path proves it, and every other field then comes from
    the reference path. On an exact network at :math:`\tau < \tau_\mathrm{max}` the fast path
    succeeds (its deviation bound is at most the collapse error :math:`\epsilon(\tau)` of the
    theorem, times :math:`1 + O(2^{-50})`).

    Returns
    -------
    dict
        * ``hausdorff_bound``: a rigorous rational upper bound on
          :math:`\max_j d_H(T_\tau(X_j), Y_j)` (``Fraction(0)`` exactly when every output box is a
          single target point);
        * ``exact``: ``hausdorff_bound == 0``. ``True`` *proves* exact interpolation at
          :math:`\tau`; ``False`` means only "not certified" (the boxes did not shrink to the
          targets), **not** "not exact": the bound is an upper bound;
        * ``deviation``: a rigorous upper bound on
          :math:`\max_i \lVert \mathrm{SA}_\tau(Z)_i - \mathrm{SA}_0(Z)_i \rVert_1` at the collapse;
        * ``bound``: :math:`\epsilon(\tau)` as a float; ``radius``: the collapse error the later
          layers absorb;
        * ``certified``: ``deviation <= radius`` *and* the radius checked
          (:func:`~sxor.interp.certificate.radius_absorbed`: the later layers map every point within
          ``radius`` of the hardmax collapse output exactly onto the targets), so the theorem's
          argument applies; a stored ``radius`` is never trusted. ``False`` likewise means "not
          certified", not that the theorem fails; with no temperature-dependent layer it is
          ``exact``;
        * ``hausdorff``: :math:`d_H` of the rational midpoint path, per sequence (floats);
        * ``box_width``: the largest :math:`\ell^1` width of an output box (exact). The true output
          lies in its box, so when ``box_width`` is small the midpoint ``hausdorff`` is the true
          distance to within ``box_width``: a tight box turns "not certified" into evidence of real
          inexactness.

    Raises
    ------
    ValueError
        for a hardmax network, ``tau`` that is not an int or Fraction :math:`> 0` (floats, NaN and
        inf included), datasets :func:`~sxor.interp.dataset.check_dataset` refuses, and a network
        with two temperature-dependent attention layers.
    """
    if not isinstance(T, InterpolatingTransformer):
        raise TypeError(
            f"T must be an InterpolatingTransformer (from construct), got {type(T).__name__}"
        )
    if T.attention != "softmax":
        raise ValueError("softmax_certificate needs a transformer built with attention='softmax'")
    if not isinstance(reference, bool):
        raise TypeError(f"reference must be True or False, got {reference!r}")
    tau = check_temperature(T.tau if tau is None else tau)
    X, Y = check_dataset(inputs, targets)
    for s in X:
        T._check(s)
    if not reference:
        fast = _certificate(T, X, Y, tau, fast=True)
        if fast["exact"]:
            return fast
    return _certificate(T, X, Y, tau, fast=False)


def _certificate(
    T: InterpolatingTransformer, X: list, Y: list, tau: Fraction, *, fast: bool
) -> dict:
    at = next(
        (k for k, block in enumerate(T.blocks) if _temperature_dependent(block.sa)), len(T.blocks)
    )
    boxes = None  # per sequence (lo, hi) once the temperature-dependent layer has acted
    deviation = Fraction(0)
    if fast:
        states = exact_states(T.blocks[:at], list(X))
    else:
        states = list(X)
        for block in T.blocks[:at]:
            states = [block.sa(s, 0) for s in _apply_ff(block.ff, states)]
    if at < len(T.blocks):
        sa = T.blocks[at].sa
        later = T.blocks[at + 1 :]
        boxes, centres = [], []
        pre = (
            exact_states([Block(T.blocks[at].ff, identity_sa(T.d), "")], states)
            if fast
            else _apply_ff(T.blocks[at].ff, states)
        )
        for s in progress(pre, desc="certificate: collapse", disable=len(pre) < 2):
            if fast:
                centre, radius, _ = softmax_attention_box(s, sa.A, sa.rho, sa.V, tau)
                centres.append(centre)
                lo, hi = centre - radius, centre + radius
                for i in range(s.shape[0]):
                    deviation = max(deviation, sum(radius[i], Fraction(0)))
                if all(block.sa.is_identity for block in later):  # one box per distinct centre
                    merged: dict[tuple, int] = {}
                    keep = [merged.setdefault(tuple(row), i) for i, row in enumerate(centre)]
                    idx = sorted(set(keep))
                    lo = np.array(
                        [
                            [
                                min(lo[i, r] for i in range(s.shape[0]) if keep[i] == j)
                                for r in range(T.d)
                            ]
                            for j in idx
                        ],
                        dtype=object,
                    )
                    hi = np.array(
                        [
                            [
                                max(hi[i, r] for i in range(s.shape[0]) if keep[i] == j)
                                for r in range(T.d)
                            ]
                            for j in idx
                        ],
                        dtype=object,
                    )
            else:
                hard = sa(s, 0)
                centres.append(hard)
                lo, hi = softmax_attention_enclosure(
                    s, sa.A, sa.rho, sa.V, tau, enclosure_bits(T.radius)
                )
                for i in range(s.shape[0]):
                    dev = sum(
                        (max(abs(a - c), abs(b - c)) for a, b, c in zip(lo[i], hi[i], hard[i])),
                        Fraction(0),
                    )
                    deviation = max(deviation, dev)
            boxes.append((lo, hi))
        boxes = propagate_boxes(later, boxes)
    if boxes is None:
        boxes = [(fractions(s), fractions(s)) for s in states]
    bound_sq = max(box_hausdorff_squared(lo, hi, y) for (lo, hi), y in zip(boxes, Y))
    box_width = max(
        (
            sum((b - a for a, b in zip(lo[i], hi[i])), Fraction(0))
            for lo, hi in boxes
            for i in range(lo.shape[0])
        ),
        default=Fraction(0),
    )
    hausdorff_bound = sqrt_upper(bound_sq)
    midpoints = [
        cast(Fraction, hausdorff_squared((lo + hi) / 2, y)) for (lo, hi), y in zip(boxes, Y)
    ]
    absorbed = T.radius
    if at < len(T.blocks):  # the stored radius is checked, never trusted
        r = Fraction(0) if absorbed is None else Fraction(absorbed)
        certified = deviation <= r and radius_absorbed(T.blocks[at + 1 :], centres, r, Y)
    else:  # nothing depends on the temperature: the exact outputs decide
        certified = hausdorff_bound == 0
    return {
        "tau": tau,
        "hausdorff_bound": hausdorff_bound,
        "exact": hausdorff_bound == 0,
        "deviation": deviation,
        "bound": float(T.error_bound(tau)),
        "radius": absorbed,
        "certified": certified,
        "hausdorff": [
            float(mpmath.sqrt(mpmath.mpf(h.numerator) / h.denominator)) for h in midpoints
        ],
        "box_width": box_width,
    }
