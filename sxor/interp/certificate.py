"""Checks of a built network: exact errors (hardmax) and the rigorous softmax certificate."""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

import mpmath
import numpy as np

from .dataset import check_dataset
from .exact import fractions, l1, sqrt_upper
from .layers import hausdorff_squared
from .network import ENCLOSURE_BITS, InterpolatingTransformer, SALayer, _apply_ff, check_temperature
from .enclosures import feed_forward_enclosure, mean_attention_enclosure, softmax_attention_enclosure


def collapse_margins(states: list[np.ndarray], collapse: SALayer) -> tuple[Fraction, Fraction]:
    r"""The score gap :math:`\Delta` and the spread of the collapse layer.

    :math:`\Delta` is the smallest score gap :math:`s_{i i^*} - \max_{l \ne i^*} s_{il}` over all
    tokens of all sequences at the collapse layer; :math:`\mathrm{spread} = \max_j (n_j - 1) D_j`
    with :math:`D_j` the largest :math:`\ell^1` distance between two tokens of sequence :math:`j` (an
    upper bound on the :math:`\ell^2` one).

    Parameters
    ----------
    states
        The sequences just before the collapse layer (exact).
    collapse
        The collapse attention layer.
    """
    A = collapse.A
    gap: Fraction | None = None
    spread = Fraction(0)
    for s in states:
        S = (s @ A.T) @ s.T
        n = s.shape[0]
        for i in range(n):
            row = sorted(S[i], reverse=True)
            if n > 1:
                gap = row[0] - row[1] if gap is None else min(gap, row[0] - row[1])
        diam = max((l1(a - b for a, b in zip(s[i], s[l])) for i in range(n) for l in range(n)), default=Fraction(0))
        spread = max(spread, (n - 1) * diam)
    return (gap if gap is not None else Fraction(1)), spread


def interpolation_errors(T: InterpolatingTransformer, inputs: Sequence, targets: Sequence) -> list[Fraction]:
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
        raise TypeError(f"T must be an InterpolatingTransformer (from construct), got {type(T).__name__}")
    X, Y = check_dataset(inputs, targets)
    return [hausdorff_squared(out, y) for out, y in zip(T.map(X), Y)]


def box_hausdorff_squared(lo: np.ndarray, hi: np.ndarray, Y: np.ndarray) -> Fraction:
    r"""Upper bound on :math:`d_H(P, Y)^2` for every :math:`P` with :math:`p_i` in the box :math:`[\mathrm{lo}_i, \mathrm{hi}_i]`.

    It is :math:`d_H^2` with :math:`\lVert p_i - y \rVert^2` replaced by its maximum over the box,
    :math:`\sum_c \max((\mathrm{lo}_{ic} - y_c)^2, (\mathrm{hi}_{ic} - y_c)^2)`. Exact; 0 iff every
    box is the single point of a target and every target is such a point.

    Parameters
    ----------
    lo, hi
        Corners of the boxes, ``[n, d]`` each (exact).
    Y
        Target tokens ``[m, d]`` (exact).
    """
    far = [[sum((max((a - c) ** 2, (b - c) ** 2) for a, b, c in zip(lo[i], hi[i], y)), Fraction(0))
            for y in Y] for i in range(lo.shape[0])]
    forward = max(min(row) for row in far)
    backward = max(min(far[i][k] for i in range(lo.shape[0])) for k in range(Y.shape[0]))
    return max(forward, backward)


def _temperature_dependent(sa: SALayer) -> bool:
    return not (sa.is_identity or sa.scores_constant)


def propagate_boxes(blocks: Sequence, boxes: list[tuple[np.ndarray, np.ndarray]]) -> list[tuple[np.ndarray, np.ndarray]]:
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
    for block in blocks:
        ff = block.ff
        boxes = [(lo, hi) if ff.is_identity else feed_forward_enclosure(lo, hi, ff.eta, ff.W, ff.U, ff.b)
                 for lo, hi in boxes]
        if block.sa.is_identity:
            continue
        if not block.sa.scores_constant:
            raise ValueError("the certificate handles one temperature-dependent attention layer per network")
        boxes = [mean_attention_enclosure(lo, hi, block.sa.rho, block.sa.beta) for lo, hi in boxes]
    return boxes


def enclosure_bits(radius: Fraction | None) -> int:
    r"""Working precision of the certificate's softmax enclosure.

    ``ENCLOSURE_BITS``, plus :math:`\log_2(1 / \mathrm{radius})` when the radius is below 1, so that
    the enclosure's absolute error (about :math:`e^{-2\,\mathrm{bits}}`, see
    :func:`sxor.interp.enclosures.softmax_attention_enclosure`) stays far below the radius however close
    the targets are.

    Parameters
    ----------
    radius
        The collapse error the later layers absorb.
    """
    if radius is None or radius >= 1:
        return ENCLOSURE_BITS
    return ENCLOSURE_BITS + radius.denominator.bit_length() - radius.numerator.bit_length() + 1


def softmax_certificate(T: InterpolatingTransformer, inputs: Sequence, targets: Sequence, tau=None) -> dict:
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
        * ``certified``: ``deviation <= radius`` (then the theorem's argument applies); ``False``
          likewise means "not certified", not that the theorem fails;
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
        raise TypeError(f"T must be an InterpolatingTransformer (from construct), got {type(T).__name__}")
    if T.attention != "softmax":
        raise ValueError("softmax_certificate needs a transformer built with attention='softmax'")
    tau = check_temperature(T.tau if tau is None else tau)
    X, Y = check_dataset(inputs, targets)
    states = list(X)
    for s in states:
        T._check(s)
    at = next((k for k, block in enumerate(T.blocks) if _temperature_dependent(block.sa)), len(T.blocks))
    for block in T.blocks[:at]:
        states = [block.sa(s, 0) for s in _apply_ff(block.ff, states)]
    boxes = None  # per sequence (lo, hi) once the temperature-dependent layer has acted
    deviation = Fraction(0)
    if at < len(T.blocks):
        sa = T.blocks[at].sa
        bits = enclosure_bits(T.radius)
        boxes = []
        for s in _apply_ff(T.blocks[at].ff, states):
            hard = sa(s, 0)
            lo, hi = softmax_attention_enclosure(s, sa.A, sa.rho, sa.V, tau, bits)
            for i in range(s.shape[0]):
                dev = sum((max(abs(a - c), abs(b - c)) for a, b, c in zip(lo[i], hi[i], hard[i])), Fraction(0))
                deviation = max(deviation, dev)
            boxes.append((lo, hi))
        boxes = propagate_boxes(T.blocks[at + 1:], boxes)
    if boxes is None:
        boxes = [(fractions(s), fractions(s)) for s in states]
    bound_sq = max(box_hausdorff_squared(lo, hi, y) for (lo, hi), y in zip(boxes, Y))
    box_width = max((sum((b - a for a, b in zip(lo[i], hi[i])), Fraction(0)) for lo, hi in boxes
                     for i in range(lo.shape[0])), default=Fraction(0))
    hausdorff_bound = sqrt_upper(bound_sq)
    midpoints = [hausdorff_squared((lo + hi) / 2, y) for (lo, hi), y in zip(boxes, Y)]
    radius = T.radius
    return {
        "tau": tau,
        "hausdorff_bound": hausdorff_bound,
        "exact": hausdorff_bound == 0,
        "deviation": deviation,
        "bound": float(T.error_bound(tau)),
        "radius": radius,
        "certified": radius is None or deviation <= radius,
        "hausdorff": [float(mpmath.sqrt(mpmath.mpf(h.numerator) / h.denominator)) for h in midpoints],
        "box_width": box_width,
    }
