"""The hull certificate behind the erf floor: certified inside, certified outside, undecided."""

from __future__ import annotations

import pytest
import torch

from sxor.xor.representation import erf_floor_certified, min_norm_point, origin_in_hull
from sxor.xor.sweeps import random_instances


def test_a_simplex_around_the_origin_is_certified_inside():
    tri = torch.tensor([[1.0, 0.0], [-0.5, 0.8], [-0.5, -0.8], [2.0, 2.0]], dtype=torch.float64)
    assert origin_in_hull(tri) == 1
    x, corral, w = min_norm_point(tri)
    assert float(x.norm()) < 1e-12 and len(corral) == 3 and bool((w > 0).all())


def test_points_in_an_open_half_space_are_certified_outside():
    gen = torch.Generator().manual_seed(0)
    pts = torch.randn(40, 5, generator=gen, dtype=torch.float64)
    pts[:, 0] = pts[:, 0].abs() + 0.01  # all in the half-space x_0 > 0
    assert origin_in_hull(pts) == -1
    x, _, _ = min_norm_point(pts)
    assert float((pts @ x).min()) > 0  # the min-norm point separates


def test_a_degenerate_configuration_is_left_undecided():
    # 0 lies on the segment between two points: in the hull, but on its boundary
    pts = torch.tensor([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    assert origin_in_hull(pts) == 0


def test_the_certificate_agrees_with_a_brute_force_separation_search():
    # in 2 dimensions the origin is outside iff some direction on a fine circle separates the points
    gen = torch.Generator().manual_seed(3)
    angles = torch.linspace(0, 2 * torch.pi, 20001, dtype=torch.float64)
    dirs = torch.stack([angles.cos(), angles.sin()], -1)
    for _ in range(40):
        pts = torch.randn(5, 2, generator=gen, dtype=torch.float64) + 0.5 * torch.randn(
            2, generator=gen, dtype=torch.float64
        )
        separated = bool(((pts @ dirs.T).min(0).values > 1e-9).any())
        verdict = origin_in_hull(pts)
        assert verdict != 0
        assert (verdict == -1) == separated


def test_erf_floor_certified_drops_the_targets_and_checks_shapes():
    inst = random_instances(4, 12, 3, seed=0)
    out = erf_floor_certified(inst.V, inst.support)
    assert out.shape == (4,) and out.dtype == torch.int8
    for s in range(4):
        keep = torch.ones(12, dtype=torch.bool)
        keep[inst.support[s]] = False
        assert int(out[s]) == origin_in_hull(inst.V[s][keep])
    with pytest.raises(ValueError):
        erf_floor_certified(inst.V[0], inst.support[0])
    with pytest.raises(ValueError):
        min_norm_point(torch.zeros(0, 3, dtype=torch.float64))
