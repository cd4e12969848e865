"""What the certificate trusts: nothing stored in a hand-built network, and no rounding claim it
does not keep (tau_max near spread = radius, sqrt_upper for small x, the stored radius)."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import mpmath
import pytest

import sxor.interp as I
from sxor.interp.certificate import radius_absorbed
from sxor.interp.exact import sqrt_upper


@pytest.fixture(scope="module")
def network():
    X, Y = I.random_dataset(3, 4, [1, 2, 2], 2, seed=1)
    return I.construct(X, Y, "softmax"), X, Y


def _exact(x: mpmath.mpf) -> Fraction:
    man, exp = x.man_exp
    return Fraction(man) * Fraction(2) ** exp


@pytest.mark.parametrize("k", [30, 41, 60, 78, 79, 100, 1000])
def test_tau_max_is_a_finite_lower_bound_when_spread_is_close_to_radius(network, k):
    T = network[0]
    H = dataclasses.replace(T, radius=T.spread / (1 + Fraction(1, 2**k)))
    low = H.tau_max_mp
    assert mpmath.isfinite(low) and low > 0
    ratio = H.spread / H.radius
    with mpmath.workprec(4 * k + 200):  # the true value, far more precisely
        true = (mpmath.mpf(H.gap.numerator) / H.gap.denominator) / mpmath.log(
            mpmath.mpf(ratio.numerator) / ratio.denominator
        )
        assert low <= true
        assert low >= true * (1 - mpmath.mpf(2) ** -40)
    # and a temperature above it is refused (before: -inf, and every tau was accepted)
    with pytest.raises(ValueError, match="tau_max"):
        H.at_temperature(_exact(low) * 2)


def test_tau_max_admits_no_temperature_without_a_positive_gap(network):
    T = network[0]
    H = dataclasses.replace(T, gap=Fraction(0))
    assert H.tau_max_mp == 0
    with pytest.raises(ValueError, match="tau_max"):
        H.at_temperature(Fraction(1, 10**9))


@pytest.mark.parametrize(
    "x",
    [
        Fraction(1, 10**40),
        Fraction(2, 3 * 10**300),
        Fraction(1, 2**200),
        Fraction(1, 3),
        Fraction(2),
        Fraction(10**50 + 7, 3),
    ],
)
def test_sqrt_upper_is_within_its_relative_accuracy_for_every_size(x):
    for bits in (8, 64):
        r = sqrt_upper(x, bits)
        assert r * r >= x  # an upper bound
        below = r / (1 + Fraction(1, 2**bits))
        assert below * below <= x  # within 2^-bits relative, also far below 2^-bits absolute


def test_sqrt_upper_is_exact_on_dyadic_squares_and_checks_its_arguments():
    assert sqrt_upper(Fraction(9, 16)) == Fraction(3, 4)
    assert sqrt_upper(Fraction(1, 2**100)) == Fraction(1, 2**50)
    assert sqrt_upper(Fraction(0)) == 0
    with pytest.raises(ValueError, match="x >= 0"):
        sqrt_upper(Fraction(-1))
    with pytest.raises(ValueError, match="bits"):
        sqrt_upper(Fraction(2), 0)


def test_certified_checks_the_stored_radius(network):
    T, X, Y = network
    honest = I.softmax_certificate(T, X, Y)
    assert honest["certified"] and honest["exact"]
    for fast in (False, True):
        tampered = dataclasses.replace(T, radius=Fraction(10**6))
        c = I.softmax_certificate(tampered, X, Y, reference=not fast)
        assert c["deviation"] <= c["radius"]  # the stored radius would have passed
        assert not c["certified"]  # ... but a ball of radius 10^6 is not absorbed
    # no stored radius on a network that depends on the temperature: nothing is trusted either
    c = I.softmax_certificate(dataclasses.replace(T, radius=None), X, Y)
    assert not c["certified"]


def test_radius_absorbed_on_the_collapse_output(network):
    T, X, Y = network
    at = next(k for k, b in enumerate(T.blocks) if not (b.sa.is_identity or b.sa.scores_constant))
    states = list(X)
    for block in T.blocks[: at + 1]:
        states = [block.sa(block.ff(s), 0) for s in states]
    later = T.blocks[at + 1 :]
    assert radius_absorbed(later, states, T.radius, Y)
    assert radius_absorbed(later, states, Fraction(0), Y)
    assert not radius_absorbed(later, states, Fraction(10**6), Y)
    wrong = [y + 1 for y in Y]
    assert not radius_absorbed(later, states, Fraction(0), wrong)
