"""Contracts of Part II that a single mutation of the code could break unnoticed.

Each test pins a comparison that the mutations of ``tools/mutations.json`` change and that no
other unit test exercised: a leader attends to itself *only* (a tie with another token does not
make a leader), and rows exactly ``tol`` apart merge in :func:`sxor.interp.distinct_points`.
"""

from __future__ import annotations

import numpy as np
import torch

import sxor.interp as I


def test_a_token_tied_with_another_is_not_a_leader():
    # A = I: s_il = <x_i, x_l>. Token 0 = (1, 0) scores 1 against itself and 1 against (1, 1): a
    # tie, so it attends half to itself. Token 1 = (1, 1) scores 2 against itself: a leader.
    tokens = [[1, 0], [1, 1]]
    assert I.leaders(I.as_exact(tokens), I.identity_matrix(2)) == [1]
    assert I.leaders(
        torch.tensor(tokens, dtype=torch.float64), torch.eye(2, dtype=torch.float64)
    ) == [1]
    # Two copies of one token split their attention: neither is a leader.
    assert I.leaders(I.as_exact([[2, 0], [2, 0], [0, 1]]), I.identity_matrix(2)) == [2]


def test_distinct_points_merges_rows_within_tol_inclusive():
    X = np.array([[0.0, 0.0], [0.0, 0.0], [0.5, 0.0], [2.0, 0.0]])
    assert I.distinct_points(X).tolist() == [
        [0.0, 0.0],
        [0.5, 0.0],
        [2.0, 0.0],
    ]  # tol = 0: equal rows merge
    assert I.distinct_points(X, 0.5).tolist() == [
        [0.0, 0.0],
        [2.0, 0.0],
    ]  # exactly tol apart: merged
    assert I.distinct_points(X, 0.25).tolist() == [[0.0, 0.0], [0.5, 0.0], [2.0, 0.0]]
    exact = I.as_exact([[1, 2], [1, 2], [2, 1]])
    assert I.distinct_points(exact).tolist() == I.as_exact([[1, 2], [2, 1]]).tolist()


def test_tau_max_is_infinite_when_the_spread_does_not_exceed_the_radius():
    # tau_max = gap / log(spread / radius); at spread = radius the log is 0 and every tau > 0 works.
    import dataclasses
    import math
    from fractions import Fraction

    inputs, targets = I.random_dataset(2, 3, 2, 2, seed=0)
    T = I.construct(inputs, targets, "softmax")
    assert T.tau_max > 0
    assert dataclasses.replace(T, spread=T.radius).tau_max == math.inf
    assert dataclasses.replace(T, spread=T.radius / 2).tau_max == math.inf
    doubled = dataclasses.replace(T, spread=2 * T.radius, gap=Fraction(3))
    # rounded down, at most two ulps below, never above the exact 3 / log 2 = 4.32808512266689...
    import mpmath

    with mpmath.workdps(50):
        exact = mpmath.mpf(3) / mpmath.log(2)
        assert mpmath.mpf(doubled.tau_max) < exact
    assert math.nextafter(math.nextafter(doubled.tau_max, math.inf), math.inf) >= 3 / math.log(2)
