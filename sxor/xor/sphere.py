"""Inner products of independent uniform vectors on the sphere ``S^(m-1)``.

For ``u, v`` independent and uniform on ``S^(m-1)``, ``t = <u, v>`` has density

.. math::  p_m(t) = \\frac{\\Gamma(m/2)}{\\sqrt{\\pi}\\,\\Gamma((m-1)/2)}\\,(1 - t^2)^{(m-3)/2},
           \\qquad t \\in [-1, 1],

mean 0 and variance exactly ``1/m``; ``sqrt(m) t`` tends to a standard normal. This quantifies
how nearly orthogonal the frozen positional embeddings are.
"""

from __future__ import annotations

import math

import mpmath

from .checks import check_int, check_real


def _check_m(m: int) -> None:
    check_int("m", m, 2)


def inner_product_density(t: float, m: int) -> float:
    """The density ``p_m(t)`` of the module docstring. Raises ArgumentTypeError unless ``m`` is an
    integer and ``t`` a real number; ValueError unless ``m >= 2`` and ``t`` is finite."""
    _check_m(m)
    t = check_real("t", t)
    if abs(t) >= 1:
        return 0.0
    log_norm = math.lgamma(m / 2) - math.lgamma((m - 1) / 2) - 0.5 * math.log(math.pi)
    return math.exp(log_norm + (m - 3) / 2 * math.log1p(-t * t))


def inner_product_tail(s: float, m: int) -> float:
    """``P(|<u, v>| > s)`` for ``0 <= s <= 1``: since ``t^2 ~ Beta(1/2, (m-1)/2)``, this is the
    regularised incomplete beta function ``I_{1-s^2}((m-1)/2, 1/2)``. Raises ArgumentTypeError
    unless ``m`` is an integer and ``s`` real; ValueError unless ``m >= 2`` and ``0 <= s <= 1``."""
    _check_m(m)
    s = check_real("s", s)
    if not 0 <= s <= 1:
        raise ValueError(f"s must lie in [0, 1], got s={s}")
    return float(mpmath.betainc((m - 1) / 2, 0.5, 0, 1 - s * s, regularized=True))


def typical_max_inner_product(num_pairs: int, m: int) -> float:
    """Median of ``max |<v_i, v_j>|`` over ``num_pairs`` pairs, treating pairs as independent:
    the ``s`` with ``P(|t| > s) = ln 2 / num_pairs`` (so ``(1 - p)^P ~ e^(-P p) = 1/2``).
    Raises ArgumentTypeError unless both are integers; ValueError unless ``num_pairs >= 1``, ``m >= 2``."""
    _check_m(m)
    num_pairs = check_int("num_pairs", num_pairs, 1)
    target = math.log(2) / num_pairs
    return float(mpmath.findroot(lambda s: inner_product_tail(float(s), m) - target, (1e-9, 1 - 1e-12), solver="bisect"))
