r"""Inner products of independent uniform vectors on the sphere :math:`S^{m-1}`.

For :math:`u, v` independent and uniform on :math:`S^{m-1}`, :math:`t = \langle u, v \rangle` has, for
:math:`t \in [-1, 1]`, the density

.. math::  p_m(t) = \frac{\Gamma(m/2)}{\sqrt{\pi}\,\Gamma((m-1)/2)}\,(1 - t^2)^{(m-3)/2},

mean 0 and variance exactly :math:`1/m`; :math:`\sqrt{m}\, t` tends to a standard normal. This
quantifies how nearly orthogonal the frozen positional embeddings are.
"""

from __future__ import annotations

import math

import mpmath

from .checks import check_int, check_real


def _check_m(m: int) -> None:
    check_int("m", m, 2)


def inner_product_density(t: float, m: int) -> float:
    r"""The density :math:`p_m(t)` of the module docstring (0 for :math:`|t| \ge 1`).

    Parameters
    ----------
    t
        The inner product, a real number.
    m
        Dimension of the ambient space, at least 2.

    Raises
    ------
    ArgumentTypeError
        unless ``m`` is an integer and ``t`` a real number.
    ValueError
        unless ``m >= 2`` and ``t`` is finite.
    """
    _check_m(m)
    t = check_real("t", t)
    if abs(t) >= 1:
        return 0.0
    log_norm = math.lgamma(m / 2) - math.lgamma((m - 1) / 2) - 0.5 * math.log(math.pi)
    return math.exp(log_norm + (m - 3) / 2 * math.log1p(-t * t))


def inner_product_tail(s: float, m: int) -> float:
    r"""Tail :math:`P(|\langle u, v \rangle| > s)` for :math:`0 \le s \le 1`.

    Since :math:`t^2 \sim \mathrm{Beta}(1/2, (m-1)/2)`, this is the regularised incomplete beta
    function :math:`I_{1-s^2}((m-1)/2, 1/2)`.

    Parameters
    ----------
    s
        Threshold in :math:`[0, 1]`.
    m
        Dimension of the ambient space, at least 2.

    Raises
    ------
    ArgumentTypeError
        unless ``m`` is an integer and ``s`` real.
    ValueError
        unless ``m >= 2`` and ``0 <= s <= 1``.
    """
    _check_m(m)
    s = check_real("s", s)
    if not 0 <= s <= 1:
        raise ValueError(f"s must lie in [0, 1], got s={s}")
    return float(mpmath.betainc((m - 1) / 2, 0.5, 0, 1 - s * s, regularized=True))


def typical_max_inner_product(num_pairs: int, m: int) -> float:
    r"""Median of :math:`\max |\langle v_i, v_j \rangle|` over ``num_pairs`` pairs, treating pairs as independent.

    It is the :math:`s` with :math:`P(|t| > s) = \ln 2 / P`, :math:`P` the number of pairs (so
    that :math:`(1 - p)^P \approx e^{-P p} = 1/2`).

    Parameters
    ----------
    num_pairs
        Number :math:`P` of pairs, at least 1.
    m
        Dimension of the ambient space, at least 2.

    Raises
    ------
    ArgumentTypeError
        unless both are integers.
    ValueError
        unless ``num_pairs >= 1``, ``m >= 2``.
    """
    _check_m(m)
    num_pairs = check_int("num_pairs", num_pairs, 1)
    target = math.log(2) / num_pairs
    return float(
        mpmath.findroot(
            lambda s: inner_product_tail(float(s), m) - target, (1e-9, 1 - 1e-12), solver="bisect"
        )
    )
