"""Tests of sxor.interp.exact: the one float policy and the exact helpers."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch

from sxor.interp import exact


def test_as_exact_refuses_floats_and_from_floats_converts_exactly():
    assert exact.as_exact([[1, "1/3"]]).tolist() == [[Fraction(1), Fraction(1, 3)]]
    for bad in ([0.5], np.array([1.0]), torch.tensor([1.0]), [True], [1j]):
        with pytest.raises(ValueError):
            exact.as_exact(bad)
    out = exact.from_floats([0.1, 2, Fraction(1, 3)])
    assert out.tolist() == [Fraction(0.1), Fraction(2), Fraction(1, 3)] and Fraction(
        0.1
    ) != Fraction(1, 10)
    for bad in ([float("nan")], [float("inf")], torch.tensor([1j])):
        with pytest.raises(ValueError):
            exact.from_floats(bad)


def test_dot_mean_projections_l1():
    X = exact.as_exact([[1, 2], [3, -4]])
    assert exact.dot([1, 2], X[1]) == -5
    assert exact.mean(X) == (Fraction(2), Fraction(-1)) and exact.mean(X, [1]) == (3, -4)
    assert exact.projections(X, [1, 1]) == [3, -1]
    assert exact.l1(X[1]) == 7
    with pytest.raises(ValueError):
        exact.mean(X, [])
    with pytest.raises(ValueError):
        exact.dot([1, 2, 3], X[0])
    with pytest.raises(ValueError, match="2-D"):
        exact.exact_tokens([1, 2])


@pytest.mark.parametrize(
    "x", [Fraction(0), Fraction(4, 9), Fraction(2), Fraction(10**40 + 7, 3), Fraction(1, 10**30)]
)
def test_sqrt_upper_is_an_upper_bound_and_tight(x):
    r = exact.sqrt_upper(x)
    assert isinstance(r, Fraction) and r * r >= x
    assert (r - Fraction(1, 2**64)) ** 2 < x or r == 0
    assert exact.sqrt_upper(Fraction(0)) == 0 and exact.sqrt_upper(Fraction(9, 4)) == Fraction(3, 2)
    with pytest.raises(ValueError):
        exact.sqrt_upper(Fraction(-1))
