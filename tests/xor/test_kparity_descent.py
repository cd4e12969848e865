"""Population gradient descent of k heads through the closed form, one huge step in the limit,
and the readers of the kparity-scale sweep."""

from __future__ import annotations

import math

import pytest
import torch

from sxor.experiments.kparity_scale import slope_uncertainty, smallest_m
from sxor.xor.kparity import parity_descent, parity_inits, parity_population_loss
from sxor.xor.kparity_descent import (
    classify_failures,
    kparity_descent_rule,
    kparity_inits,
    kparity_instances,
)
from sxor.xor.kparity_one_step import (
    limit_heads,
    limit_success,
    per_head_grad,
    separating_step,
)
from sxor.xor.kparity_population import kparity_population_grad


def test_star_init_is_chapter_9s_for_three_heads_and_antisymmetric_for_two():
    theta0 = torch.nn.functional.normalize(torch.randn(4, 5, dtype=torch.float64), dim=-1)
    mine = kparity_inits(theta0, 3, "star", generator=torch.Generator().manual_seed(1))
    theirs = parity_inits(theta0, "star", generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(mine, theirs, rtol=0, atol=1e-15)
    two = kparity_inits(theta0, 2, "star")
    torch.testing.assert_close(two[:, 1], -theta0, rtol=0, atol=0)
    rand = kparity_inits(theta0, 4, "random", generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(rand.norm(dim=-1), torch.ones(4, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="unknown init scheme"):
        kparity_inits(theta0, 3, "antipodal")
    with pytest.raises(ValueError, match="k <= d"):
        kparity_instances(2, 3, 2, 4, "star")


def test_fixed_rule_follows_the_enumerated_descent_step_by_step():
    V, thetas0, support = kparity_instances(6, 8, 5, 3, "star", seed=3)
    c = 30.0 / 8**3  # eta = c d^k = 30, as chapter 9's CI run
    run = kparity_descent_rule(V, thetas0, support, "fixed", c, 25, loss_threshold=1e-300)
    ref = parity_descent(V, thetas0, support, 30.0, 25, loss_threshold=1e-300)
    torch.testing.assert_close(run.loss, ref.loss.median(-1).values, rtol=0, atol=1e-12)
    assert bool((run.first_success == -1).all())


def test_runs_stop_at_success_and_rises_are_counted():
    V, thetas0, support = kparity_instances(8, 16, 6, 3, "star")
    run = kparity_descent_rule(V, thetas0, support, "normalised", 1.0, 300)
    assert bool((run.first_success >= 0).all())
    assert bool((run.final_loss < 0.01).all())
    wild = kparity_descent_rule(V, thetas0, support, "fixed", 10.0, 30)
    assert int((wild.rises > 0).sum()) > 0  # a step of 10 d^3 overshoots
    with pytest.raises(ValueError, match="unknown step rule"):
        kparity_descent_rule(V, thetas0, support, "adam", 1.0, 3)


def test_classify_failures_names_each_cause():
    support = torch.tensor([[0, 1, 2]] * 5)
    eye = torch.eye(6, dtype=torch.float64)
    weights = torch.stack(
        [
            eye[[0, 0, 2]],  # collision
            eye[[0, 1, 5]],  # off the support
            torch.stack([eye[0], eye[1], torch.full((6,), 1 / 6, dtype=torch.float64)]),
            0.6 * eye[[0, 1, 2]] + 0.4 / 6,  # on distinct targets, not done
            eye[[0, 1, 2]],  # a success
        ]
    )
    failed = torch.tensor([True, True, True, True, False])
    assert classify_failures(weights, support, failed) == {
        "collision": 1,
        "off_support": 1,
        "frozen": 1,
        "slow": 1,
    }


def test_limit_heads_is_where_a_huge_enumerated_step_lands():
    V, thetas0, support = kparity_instances(20, 8, 5, 3, "star", seed=5)
    th = thetas0.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(parity_population_loss(V, th, support).sum(), th)
    after = (thetas0 - 1e8 * g) @ V.transpose(-1, -2)
    Vs = V.unsqueeze(-3).expand(20, 3, 8, 5)
    torch.testing.assert_close(limit_heads(Vs, thetas0, support), after.argmax(-1))
    _, g_pop = kparity_population_grad(V, thetas0, support)
    torch.testing.assert_close(per_head_grad(Vs, thetas0, support)[1], g_pop)
    heads = torch.tensor([[2, 0, 1], [0, 0, 1]])
    assert limit_success(heads, torch.tensor([[0, 1, 2], [0, 1, 2]])).tolist() == [True, False]
    moved = separating_step(Vs, thetas0, support, 0.5)
    torch.testing.assert_close(
        (moved - thetas0).flatten(1).norm(dim=-1), torch.full((20,), 0.5, dtype=torch.float64)
    )
    with pytest.raises(ValueError, match="must match"):
        per_head_grad(Vs, thetas0[..., :4], support)


def _scan(k, d, m, won):
    return {
        "part": "scan",
        "k": k,
        "scheme": "star",
        "d": d,
        "m": m,
        "seeds": len(won),
        "successes": sum(won),
        "first_success": [5 if w else -1 for w in won],
    }


def test_smallest_m_and_the_slope_read_the_scan():
    recs = []
    for d, m_star in [(16, 3), (64, 4), (256, 5), (1024, 6)]:
        recs.append(_scan(3, d, m_star - 1, [True] * 20 + [False] * 20))
        recs.append(_scan(3, d, m_star, [True] * 40))
        recs.append(_scan(3, d, m_star + 1, [True] * 40))
    assert [smallest_m(recs, 3, "star", d) for d in (16, 64, 256, 1024)] == [3, 4, 5, 6]
    u = slope_uncertainty(recs, 3, "star", reps=50)
    assert abs(u["slope"] - 1 / math.log(4.0)) < 1e-9
    assert u["se"] < 1e-9 and u["dof"] == 2  # the four points lie on a line
    assert u["shift"][0] < u["slope"] < u["shift"][1]
    assert u["boot"][0] <= u["slope"] <= u["boot"][1]
    assert 0 < u["boot_at_point"] <= 1
    # a d whose only scanned m fails in a resample counts as censored above, not dropped
    cens = [r for r in recs if r["d"] != 1024 or r["m"] == 6]
    cens[-1] = _scan(3, 1024, 6, [True] * 36 + [False] * 4)
    low = slope_uncertainty(cens, 3, "star", reps=200)
    assert low["boot"][1] > low["slope"]  # resamples with m = 7 at d = 1024 raise the slope
    recs[1]["successes"] = 30  # m = 3 fails at d = 16 now, m = 4 passes
    assert smallest_m(recs, 3, "star", 16) == 4
