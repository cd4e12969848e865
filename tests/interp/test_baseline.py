"""Tests of the hat move and of the flattened-sequence ResNet baseline (sxor.interp.baseline)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from sxor.interp import feed_forward, hausdorff_squared
from sxor.interp.baseline import resnet_interpolate
from sxor.interp.construct import hat_move, random_dataset


def test_hat_move_moves_one_point_and_fixes_the_rest():
    rng = np.random.default_rng(0)
    K = {tuple(Fraction(int(v), 3) for v in rng.integers(-9, 10, size=3)) for _ in range(30)}
    p = sorted(K)[7]
    D = (Fraction(1), Fraction(-2), Fraction(5, 7))
    for flat in (False, True):
        layer = hat_move(K, p, D, 3, flat=flat)
        assert layer.width == (4 if flat else 3)
        pts = np.array(sorted(K), dtype=object)
        out = feed_forward(pts, layer.eta, layer.W, layer.U, layer.b)
        for a, b in zip(pts, out):
            expected = tuple(x + y for x, y in zip(a, D)) if tuple(a) == p else tuple(a)
            assert tuple(b) == expected


def test_hat_move_bad_input():
    K = {(Fraction(0), Fraction(0)), (Fraction(1), Fraction(0))}
    with pytest.raises(ValueError, match="not in values"):
        hat_move(K, (Fraction(5), Fraction(5)), (Fraction(1), Fraction(1)), 2, flat=False)
    with pytest.raises(ValueError, match="coordinates"):
        hat_move(K, (Fraction(0), Fraction(0)), (Fraction(1),), 2, flat=False)


def test_resnet_baseline_targets_of_different_lengths_are_sets():
    X, Y = random_dataset(3, 4, [1, 3, 2], 2, seed=4)
    R = resnet_interpolate(X, Y)
    for x, y in zip(X, Y):
        out = R(x)
        assert out.shape == (3, 2) and hausdorff_squared(out, y) == 0


@pytest.mark.parametrize("n", [2, 5, 12])
def test_resnet_baseline_interpolates_exactly_and_grows_with_n(n):
    X, Y = random_dataset(4, n, 2, 2, seed=n)
    R = resnet_interpolate(X, Y)
    for x, y in zip(X, Y):
        out = R(x)
        assert out.shape == y.shape and np.array_equal(out, y)
    assert R.num_blocks == 4
    assert R.num_parameters == 4 * (6 * n * 2 + 4)


def test_resnet_baseline_bad_input():
    X, Y = random_dataset(2, [3, 4], 1, 2, seed=0)
    with pytest.raises(ValueError, match="one length n"):
        resnet_interpolate(X, Y)
    X = [
        np.array([[Fraction(0), Fraction(0)]], dtype=object),
        np.array([[Fraction(1), Fraction(0)]], dtype=object),
    ]
    Y = [
        np.array([[Fraction(1), Fraction(0)]], dtype=object),
        np.array([[Fraction(2), Fraction(0)]], dtype=object),
    ]
    with pytest.raises(ValueError, match="padded target equals"):
        resnet_interpolate(X, Y)
