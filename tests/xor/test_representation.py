"""The best-loss tools and the representation floors of the chapter "Why exact softmax"."""

from __future__ import annotations

import math

import pytest
import torch

import sxor
from sxor.xor.model import attention
from sxor.xor.representation import (
    ERF_LOSS_FLOOR,
    START_NAMES,
    best_losses,
    erf_floor_probability,
    linear_loss_floor,
    minimise_loss,
    starts,
    wendel,
)
from sxor.xor.sweeps import random_instances


def test_starts_aim_at_the_targets_and_least_squares_is_exact_when_m_is_d_minus_1():
    inst = random_instances(1, 9, 8, seed=2)
    V, theta0, support = inst.V[0], inst.theta0[0], inst.support[0]
    out = starts(V, theta0, support, generator=torch.Generator().manual_seed(0))
    assert out.shape == (len(START_NAMES), 2, 8)
    torch.testing.assert_close(out[0], torch.stack([theta0, -theta0]))
    a, b = support.tolist()
    torch.testing.assert_close(
        out[START_NAMES.index("aimed c=4")], torch.stack([4 * V[a], 4 * V[b]])
    )
    g = attention(V, out[-1][0], "linear")
    h = attention(V, out[-1][1], "linear")
    torch.testing.assert_close(
        g, torch.nn.functional.one_hot(torch.tensor(a), 9).double(), atol=1e-10, rtol=0
    )
    torch.testing.assert_close(
        h, torch.nn.functional.one_hot(torch.tensor(b), 9).double(), atol=1e-10, rtol=0
    )


def test_minimise_loss_reaches_zero_where_representable_and_never_increases():
    inst = random_instances(1, 8, 8, seed=1)
    V, theta0, support = inst.V[0], inst.theta0[0], inst.support[0]
    aim = starts(V, theta0, support)[-1]
    loss, q = minimise_loss(V, support, aim, "linear", max_iter=50)
    assert loss < 1e-12
    assert float(sxor.population_loss(V, q[0], q[1], support, "linear")) == pytest.approx(
        loss, abs=1e-15
    )
    start = torch.stack([theta0, -theta0])
    before = float(sxor.population_loss(V, start[0], start[1], support, "softmax"))
    after, _ = minimise_loss(V, support, start, "softmax", max_iter=100)
    assert after <= before and after < 1e-6


def test_best_losses_shape_and_names():
    inst = random_instances(2, 6, 3, seed=0)
    out = best_losses(
        inst.V,
        inst.theta0,
        inst.support,
        "linear",
        names=("antisymmetric", "least squares"),
        max_iter=20,
    )
    assert out.shape == (2, 2) and bool((out >= 0).all())
    with pytest.raises(ValueError, match="names"):
        best_losses(inst.V, inst.theta0, inst.support, "linear", names=("nope",))
    with pytest.raises(ValueError, match="start"):
        minimise_loss(inst.V[0], inst.support[0], torch.zeros(3), "linear")


def test_erf_floor_holds_when_the_origin_is_in_the_hull():
    # non-target embeddings that contain +u and -u: the origin is in their hull for every draw
    gen = torch.Generator().manual_seed(3)
    d, m = 10, 4
    V = torch.randn(d, m, generator=gen, dtype=torch.float64)
    V[5] = -V[4]
    V = V / V.norm(dim=-1, keepdim=True)
    support = torch.tensor([0, 1])
    thetas = torch.randn(4000, 2, m, generator=gen, dtype=torch.float64) * torch.logspace(
        -1, 3, 4000
    ).view(-1, 1, 1)
    losses = sxor.population_loss(V, thetas[:, 0], thetas[:, 1], support, "erf")
    assert float(losses.min()) >= ERF_LOSS_FLOOR
    aimed = torch.stack([30 * V[0], 30 * V[1]])
    assert minimise_loss(V, support, aimed, "erf", max_iter=100)[0] >= ERF_LOSS_FLOOR
    assert pytest.approx(0.5 * (1 - 104 / 225) ** 2) == ERF_LOSS_FLOOR


def test_linear_floor_is_a_lower_bound_and_vacuous_for_small_d():
    inst = random_instances(1, 2048, 3, seed=0)
    floor = float(linear_loss_floor(inst.V, inst.support)[0])
    assert 0.49 < floor < 0.5
    gen = torch.Generator().manual_seed(0)
    thetas = torch.randn(2000, 2, 3, generator=gen, dtype=torch.float64) * torch.logspace(
        0, 4, 2000
    ).view(-1, 1, 1)
    losses = sxor.population_loss(inst.V[0], thetas[:, 0], thetas[:, 1], inst.support[0], "linear")
    assert float(losses.min()) >= floor
    aim = starts(inst.V[0], inst.theta0[0], inst.support[0])[-1]
    assert minimise_loss(inst.V[0], inst.support[0], aim, "linear", max_iter=100)[0] >= floor
    small = random_instances(3, 16, 6, seed=0)
    assert bool(torch.isnan(linear_loss_floor(small.V, small.support)).all())


def test_wendel():
    assert wendel(3, 2) == pytest.approx(
        0.75
    )  # three points on a circle lie in a half-plane w.p. 3/4
    assert wendel(5, 5) == 1.0 and wendel(4, 9) == 1.0
    assert erf_floor_probability(128, 24) == pytest.approx(1 - wendel(126, 24))
    assert wendel(63, 24) == pytest.approx(sum(math.comb(62, k) for k in range(24)) / 2**62)
    with pytest.raises(ValueError):
        wendel(0, 3)


def test_floor_plot_draws_every_kind_and_cell():
    import matplotlib

    matplotlib.use("Agg")
    from sxor.experiments.why_softmax import FLOOR_SIZES, plot_floor

    assert (
        all(m <= d for d, m in FLOOR_SIZES["full"]["cells"])
        and (16, 16) in FLOOR_SIZES["full"]["cells"]
    )
    records = [
        {"d": d, "m": m, "kind": kind, "best_loss": [0.0, 0.4]}
        for d, m in [(16, 16), (64, 24)]
        for kind in ["softmax", "erf"]
    ]
    fig = plot_floor(
        {"params": {"cells": [[16, 16], [64, 24]], "kinds": ["softmax", "erf"]}, "records": records}
    )
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and len(ax.get_xticklabels()) == 2
    assert (
        len(ax.get_lines()) == 4 + 2
    )  # one set of dots per (kind, cell), plus the two reference lines
    matplotlib.pyplot.close(fig)


def test_depth_floor_is_certified_between_the_old_floor_and_its_attained_value():
    from fractions import Fraction

    from sxor.xor.representation import erf_depth_floor

    lower1, attained1 = erf_depth_floor(1)
    assert attained1 == Fraction(19649, 101250)  # the vertex g = (2/3, 2/15), h = (2/15, 2/3)
    assert ERF_LOSS_FLOOR < lower1 <= attained1 < lower1 + Fraction(1, 10**4)
    floors = [erf_depth_floor(k)[0] for k in (1, 2, 3, 10)]
    assert floors == sorted(floors) and floors[-1] < Fraction(1, 2)
    # the relaxation's objective at random points of its feasible set is never below the bound
    gen = torch.Generator().manual_seed(0)
    c, u = 2 / 3, 4 / 5
    g = torch.rand(20000, 2, 2, generator=gen, dtype=torch.float64) * c
    g = g * torch.clamp(u / g.sum(-1, keepdim=True), max=1.0)  # g_a, g_b <= 2/3, g_a + g_b <= 4/5
    p, q = g[:, 0, 0] * g[:, 1, 1], g[:, 0, 1] * g[:, 1, 0]
    F = ((1 - p - q) ** 2 + (p * p + q * q) / 2) / 2
    assert float(F.min()) >= float(lower1)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError):
            erf_depth_floor(bad)


def test_depth_floor_holds_for_erf_attention_on_a_certified_instance():
    from sxor.xor.representation import depth_two_certified, erf_depth_floor, erf_floor_certified

    inst = random_instances(2, 16, 6, seed=0)  # instance 0: hull certified, depth two not
    assert int(erf_floor_certified(inst.V, inst.support)[0]) == 1
    keep = torch.ones(16, dtype=torch.bool)
    keep[inst.support[0]] = False
    assert depth_two_certified(inst.V[0][keep]) == -1
    lower = float(erf_depth_floor(1)[0])
    gen = torch.Generator().manual_seed(1)
    for scale in (0.5, 4.0, 64.0):
        q = scale * torch.randn(500, 2, 6, generator=gen, dtype=torch.float64)
        V = inst.V[0].expand(500, 16, 6)
        loss = sxor.population_loss(V, q[:, 0], q[:, 1], inst.support[0].expand(500, 2), "erf")
        assert float(loss.min()) >= lower


def test_depth_two_and_its_upper_bound_on_known_point_sets():
    from sxor.xor.representation import depth_two_certified, depth_upper_bound

    cross = torch.cat([torch.eye(3), -torch.eye(3)]).double()  # every closed half-space holds >= 3
    assert depth_two_certified(cross) in (0, 1)  # degenerate (0 is on segments): may stay undecided
    spread = torch.randn(40, 3, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    assert depth_two_certified(spread) == 1
    assert (
        depth_upper_bound(
            spread, restarts=64, steps=200, generator=torch.Generator().manual_seed(0)
        )[0]
        >= 2
    )
    count, theta = depth_upper_bound(
        cross, restarts=16, steps=100, generator=torch.Generator().manual_seed(0)
    )
    assert count == 3 and int(((cross @ theta) >= 0).sum()) == 3
    simplex = torch.tensor(
        [[1.0, 0.0], [-0.5, 3**0.5 / 2], [-0.5, -(3**0.5) / 2]], dtype=torch.float64
    )
    assert depth_two_certified(simplex) == -1  # depth exactly 1: removing a vertex leaves 0 outside
    assert (
        depth_upper_bound(
            simplex, restarts=16, steps=100, generator=torch.Generator().manual_seed(0)
        )[0]
        == 1
    )
    half = torch.tensor([[1.0, 0.2], [0.5, -0.3], [2.0, 1.0]], dtype=torch.float64)
    assert depth_two_certified(half) == -1
    assert (
        depth_upper_bound(half, restarts=8, steps=50, generator=torch.Generator().manual_seed(0))[0]
        == 0
    )
    with pytest.raises(ValueError):
        depth_two_certified(torch.zeros(3))
    with pytest.raises(ValueError):
        depth_upper_bound(cross, restarts=0)


def test_depth_lemma_inequality_holds_pointwise_for_erf_weights():
    # L >= F_k(p, q) for any erf-attention weights with k anchors (phi >= 1) in each head: random
    # phi in (0, 2), and the extremal pattern (targets near 2, anchors at 1, the rest near 0)
    from sxor.xor.representation import erf_depth_floor

    gen = torch.Generator().manual_seed(4)
    support = torch.tensor([0, 1])
    worst = 1.0
    for trial in range(400):
        d = 4 + trial % 13
        k = 1 + trial % (d - 2)

        def head(d=d, k=k, trial=trial):
            phi = 2 * torch.rand(d, generator=gen, dtype=torch.float64) ** (1 + trial % 5)
            anchors = 2 + torch.randperm(d - 2, generator=gen)[:k]
            if trial % 2:
                phi[:2], phi[2:] = 2 - 1e-9, 1e-12
                phi[anchors] = 1.0
            else:
                phi[anchors] = phi[anchors].clamp(min=1.0)
            return phi / phi.sum()

        g, h = head(), head()
        p, q = float(g[0] * h[1]), float(g[1] * h[0])
        loss = float(sxor.loss_from_weights(g, h, support))
        worst = min(worst, loss - ((1 - p - q) ** 2 + k * (p * p + q * q) / 2) / 2)
        if k <= 3:
            assert loss >= float(erf_depth_floor(k)[0])
    assert worst >= -1e-12


def test_depth_two_agrees_with_the_exact_depth_in_the_plane():
    from sxor.xor.representation import depth_two_certified, depth_upper_bound

    gen = torch.Generator().manual_seed(5)
    for trial in range(30):
        P = torch.randn(5 + trial % 8, 2, generator=gen, dtype=torch.float64)
        P[:, 0] += 0.1 * (trial % 7)
        # exact depth in 2-D: the count is constant between the normals of the points
        ang = torch.atan2(P[:, 1], P[:, 0])
        crit = torch.cat([ang + math.pi / 2, ang - math.pi / 2])
        dirs = torch.cat([crit + 1e-7, crit - 1e-7])
        theta = torch.stack([dirs.cos(), dirs.sin()], -1)
        depth = int(((P @ theta.T) >= 0).sum(0).min())
        cert = depth_two_certified(P)
        assert cert != 0 and (cert == 1) == (depth >= 2)
        count, th = depth_upper_bound(P, restarts=32, steps=100, generator=gen)
        assert count >= depth and int(((P @ th) >= 0).sum()) <= count
    with pytest.raises(TypeError):
        depth_two_certified([[1.0, 0.0]])
    with pytest.raises(TypeError):
        depth_upper_bound(P, restarts=2.5)
