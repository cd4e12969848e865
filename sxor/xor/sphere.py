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


def _check_m(m: int) -> None:
    if int(m) != m or m < 2:
        raise ValueError(f"m must be an integer >= 2 for inner products on the sphere, got m={m}")


def inner_product_density(t: float, m: int) -> float:
    """The density ``p_m(t)`` of the module docstring."""
    _check_m(m)
    if abs(t) >= 1:
        return 0.0
    log_norm = math.lgamma(m / 2) - math.lgamma((m - 1) / 2) - 0.5 * math.log(math.pi)
    return math.exp(log_norm + (m - 3) / 2 * math.log1p(-t * t))


def inner_product_tail(s: float, m: int) -> float:
    """``P(|<u, v>| > s)`` for ``0 <= s <= 1``: since ``t^2 ~ Beta(1/2, (m-1)/2)``, this is the
    regularised incomplete beta function ``I_{1-s^2}((m-1)/2, 1/2)``."""
    _check_m(m)
    if not 0 <= s <= 1:
        raise ValueError(f"s must lie in [0, 1], got s={s}")
    return float(mpmath.betainc((m - 1) / 2, 0.5, 0, 1 - s * s, regularized=True))


def typical_max_inner_product(num_pairs: int, m: int) -> float:
    """Median of ``max |<v_i, v_j>|`` over ``num_pairs`` pairs, treating pairs as independent:
    the ``s`` with ``P(|t| > s) = ln 2 / num_pairs`` (so ``(1 - p)^P ~ e^(-P p) = 1/2``)."""
    _check_m(m)
    if num_pairs < 1:
        raise ValueError(f"num_pairs must be >= 1, got {num_pairs}")
    target = math.log(2) / num_pairs
    return float(mpmath.findroot(lambda s: inner_product_tail(float(s), m) - target, (1e-9, 1 - 1e-12), solver="bisect"))
