"""Exact arithmetic behind the hull and depth certificates: the exact solve, the exact signs and
the LP-greedy depth bound."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch

from sxor.xor._depth import _int_rows, exact_signs, solve_exact
from sxor.xor.representation import depth_two_certified, depth_upper_bound_lp, origin_in_hull


def test_solve_exact_satisfies_the_system_in_rationals():
    gen = torch.Generator().manual_seed(0)
    for n in (1, 2, 5, 13):
        A = torch.randn(n, n, generator=gen, dtype=torch.float64) * 10.0 ** torch.randint(
            -8, 8, (n, 1), generator=gen
        )
        b = torch.randn(n, generator=gen, dtype=torch.float64)
        x = solve_exact(A, b)
        assert x is not None
        for row, rhs in zip(A.tolist(), b.tolist()):
            assert sum(Fraction(a) * xi for a, xi in zip(row, x)) == Fraction(rhs)
    # nearly singular: the exact solution is (0, 2)
    A = torch.tensor([[1.0, 1.0], [1.0, 1.0 + 2.0**-52]], dtype=torch.float64)
    x = solve_exact(A, torch.tensor([2.0, 2.0 + 2.0**-51], dtype=torch.float64))
    assert x == [Fraction(0), Fraction(2)]
    singular = torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=torch.float64)
    assert solve_exact(singular, torch.ones(2, dtype=torch.float64)) is None
    with pytest.raises(ValueError):
        solve_exact(torch.ones(2, 3, dtype=torch.float64), torch.ones(2, dtype=torch.float64))


def test_exact_signs_see_a_difference_below_rounding():
    pts = _int_rows([[1.0, 1.0], [1e-300, 0.0]])
    theta = torch.tensor([1.0, -1.0 + 2.0**-53], dtype=torch.float64)  # a float64 number
    assert exact_signs(pts, theta) == [1, 1]  # 2^-53 and 1e-300: both positive, exactly
    assert exact_signs(pts, torch.tensor([1.0, -1.0], dtype=torch.float64)) == [0, 1]


def test_near_the_boundary_the_verdicts_are_exact():
    # 0 just inside a triangle, by 1e-12: certified by the exact solve of the barycentric system
    inside = torch.tensor([[1.0, -1e-12], [-1.0, -1e-12], [0.0, 1.0]], dtype=torch.float64)
    assert origin_in_hull(inside) == 1
    # Just outside: the floating-point min-norm point's last bits vary from call to call (LAPACK's
    # least squares on differently aligned memory) and can miss by its rounding; the exact
    # min-norm point of the corral's affine hull then separates, checked in rationals. Every call.
    outside = torch.tensor([[1.0, 1e-12], [-1.0, 1e-12], [0.0, 1.0]], dtype=torch.float64)
    assert all(origin_in_hull(outside) == -1 for _ in range(50))


def test_lp_greedy_depth_bound_on_known_point_sets():
    gen = torch.Generator().manual_seed(0)
    for m in (2, 3, 5):
        cross = torch.cat([torch.eye(m), -torch.eye(m)]).double()  # depth exactly m
        count, theta = depth_upper_bound_lp(cross, torch.randn(4, m, generator=gen).double())
        assert count == m and int(((cross @ theta) >= 0).sum()) == m
    simplex = torch.tensor(
        [[1.0, 0.0], [-0.5, 3**0.5 / 2], [-0.5, -(3**0.5) / 2]], dtype=torch.float64
    )
    assert depth_upper_bound_lp(simplex, torch.tensor([[1.0, 0.0]]).double())[0] == 1
    half = torch.tensor([[1.0, 0.2], [0.5, -0.3], [2.0, 1.0]], dtype=torch.float64)
    assert depth_upper_bound_lp(half, torch.tensor([[1.0, 0.0]]).double())[0] == 0
    with pytest.raises(ValueError):
        depth_upper_bound_lp(half, torch.zeros(1, 3, dtype=torch.float64))
    with pytest.raises(TypeError):
        depth_upper_bound_lp([[1.0, 0.0]], torch.zeros(1, 2))


def test_lp_greedy_is_an_upper_bound_counted_exactly():
    gen = torch.Generator().manual_seed(5)
    for trial in range(30):
        P = torch.randn(5 + trial % 8, 2 + trial % 2, generator=gen, dtype=torch.float64)
        P[:, 0] += 0.1 * (trial % 7)
        if P.shape[1] == 2:  # exact depth in the plane: constant between the points' normals
            ang = torch.atan2(P[:, 1], P[:, 0])
            crit = torch.cat([ang + math.pi / 2, ang - math.pi / 2])
            dirs = torch.cat([crit + 1e-7, crit - 1e-7])
            depth = int(((P @ torch.stack([dirs.cos(), dirs.sin()], -1).T) >= 0).sum(0).min())
        else:
            depth = None
        count, th = depth_upper_bound_lp(P, torch.randn(3, P.shape[1], generator=gen).double())
        assert count == sum(s >= 0 for s in exact_signs(_int_rows(P.tolist()), th))
        if depth is not None:
            assert count >= depth
        if depth_two_certified(P) == 1:  # depth >= 2 is certified: no query has fewer
            assert count >= 2
