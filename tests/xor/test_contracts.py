"""Contracts of Part I that a single mutation of the code could break unnoticed.

Each test here pins a constant, a comparison or a bound that, before it existed, only a stored
notebook number (or nothing) would have caught: the sphere density's normalisation, the two
thresholds of the success criterion taken apart, the upper bound of the off-target prediction on a
case computed independently, the size guard of ``all_inputs`` and the comparison in ``smallest_m``.
``tools/mutate.py`` checks that the mutations of ``tools/mutations.json`` die under the unit tests.
"""

from __future__ import annotations

import math

import mpmath
import pytest
import torch

import sxor
from sxor.xor import analysis
from sxor.xor.metrics import failure_modes, specialised, success, target_masses
from sxor.xor.sphere import inner_product_density, inner_product_tail

# --- the sphere law ---------------------------------------------------------------------------


@pytest.mark.parametrize("m", [2, 3, 4, 5, 8, 17, 64])
def test_inner_product_density_integrates_to_one(m):
    total = mpmath.quad(lambda t: inner_product_density(float(t), m), [-1, 0, 1])
    assert float(total) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("m", [3, 4, 5, 8, 17, 64])
@pytest.mark.parametrize("s", [0.05, 0.3, 0.6, 0.9])
def test_inner_product_density_is_minus_half_the_derivative_of_the_two_sided_tail(m, s):
    # tail(s) = P(|t| > s) = 2 int_s^1 p(t) dt, so -d/ds tail = 2 p(s) (central difference).
    h = 1e-5
    derivative = -(inner_product_tail(s + h, m) - inner_product_tail(s - h, m)) / (2 * h)
    assert derivative == pytest.approx(2 * inner_product_density(s, m), rel=1e-6)


def test_inner_product_density_closed_forms():
    # m = 3: t is uniform on [-1, 1] (Archimedes); m = 5: p(t) = 3/4 (1 - t^2); m = 2: arcsine law.
    assert inner_product_density(0.4, 3) == pytest.approx(0.5, rel=1e-12)
    assert inner_product_density(0.4, 5) == pytest.approx(0.75 * (1 - 0.16), rel=1e-12)
    assert inner_product_density(0.4, 2) == pytest.approx(
        1 / (math.pi * math.sqrt(1 - 0.16)), rel=1e-12
    )
    for m in (2, 3, 5):  # the closed interval's ends carry no density (no nan, no inf at m = 2, 3)
        assert inner_product_density(1.0, m) == 0.0 and inner_product_density(-1.0, m) == 0.0
    assert inner_product_density(-1.5, 5) == 0.0


def test_typical_max_inner_product_is_the_median_of_the_maximum():
    # The function returns the s with P(|t| > s) = ln 2 / P (then (1 - ln 2 / P)^P ~ 1/2). For
    # m = 3, |t| is uniform on [0, 1] (Archimedes), so P(|t| > s) = 1 - s and s = 1 - ln 2 / P.
    from sxor.xor.sphere import typical_max_inner_product

    for pairs in (1, 10, 1000):
        assert typical_max_inner_product(pairs, 3) == pytest.approx(
            1 - math.log(2) / pairs, abs=1e-9
        )
    s = typical_max_inner_product(45, 16)
    assert inner_product_tail(s, 16) == pytest.approx(math.log(2) / 45, rel=1e-8)


# --- the success criterion: loss threshold and mass threshold apart ---------------------------


def _spread_state(d: int = 16, a: int = 0, b: int = 1, top: float = 0.88, spread_over: int = 12):
    """One head ``top e_a`` plus ``1 - top`` spread evenly over ``spread_over`` non-targets, the other ``e_b``."""
    g = torch.zeros(d, dtype=torch.float64)
    g[a] = top
    g[2 : 2 + spread_over] = (1 - top) / spread_over
    h = torch.zeros(d, dtype=torch.float64)
    h[b] = 1.0
    return g, h, torch.tensor([a, b])


def test_low_loss_without_enough_mass_is_not_a_success():
    g, h, support = _spread_state()
    loss = sxor.loss_from_weights(g, h, support)
    # By hand: L = ||g||^2 / 2 - g_a + 1/2 with ||g||^2 = 0.88^2 + 12 * 0.01^2.
    assert float(loss) == pytest.approx((0.88**2 + 12 * 0.01**2) / 2 - 0.88 + 0.5, abs=1e-15)
    assert float(loss) == pytest.approx(0.0078, abs=1e-12)
    assert float(loss) < 0.01  # the loss condition alone would call it a success
    masses = target_masses(g, h, support)
    assert not bool(specialised(masses))
    assert not bool(success(loss, g, h, support))
    assert int(failure_modes(loss, g, h, support)) == 3  # heads on different targets, mass short
    # The same state passes once the mass threshold is lowered below 0.88.
    assert bool(success(loss, g, h, support, mass_threshold=0.88))


def test_the_mass_threshold_is_inclusive():
    g, h, support = _spread_state(top=0.9, spread_over=10)  # mass exactly 0.9 on i*, loss 0.0055
    loss = sxor.loss_from_weights(g, h, support)
    assert float(loss) == pytest.approx(0.0055, abs=1e-12)
    assert bool(success(loss, g, h, support))
    assert bool(success(loss, h, g, support))  # crossed assignment
    assert not bool(success(loss, g, h, support, mass_threshold=0.9 + 1e-12))
    assert bool(specialised(torch.tensor([[0.9, 0.0], [0.0, 0.9]], dtype=torch.float64)))
    assert not bool(
        specialised(torch.tensor([[0.9, 0.0], [0.0, 0.9 - 1e-12]], dtype=torch.float64))
    )
    assert not bool(specialised(torch.tensor([[0.9, 0.9], [0.0, 0.0]], dtype=torch.float64)))


def test_the_loss_threshold_is_strict_and_defaults_to_one_hundredth():
    e_a = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)
    e_b = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    support = torch.tensor([0, 1])
    assert not bool(success(torch.tensor(0.01, dtype=torch.float64), e_a, e_b, support))
    assert bool(success(torch.tensor(0.0099999, dtype=torch.float64), e_a, e_b, support))
    assert not bool(success(torch.tensor(0.0100001, dtype=torch.float64), e_a, e_b, support))
    assert bool(
        success(torch.tensor(0.0149, dtype=torch.float64), e_a, e_b, support, loss_threshold=0.015)
    )
    # A specialised state whose loss is too large: (1 - eps) e_a + eps e_b against the mirror.
    g = torch.tensor([0.9, 0.1, 0.0], dtype=torch.float64)
    h = torch.tensor([0.1, 0.9, 0.0], dtype=torch.float64)
    loss = sxor.loss_from_weights(g, h, support)
    assert float(loss) == pytest.approx((2 * 0.1 * 0.9) ** 2, abs=1e-15)
    assert bool(specialised(target_masses(g, h, support))) and not bool(
        success(loss, g, h, support)
    )
    assert int(failure_modes(loss, g, h, support)) == 3


# --- the off-target prediction, pinned on an independent computation ---------------------------


def _tail_m5(tau: torch.Tensor) -> torch.Tensor:
    """``P(<v, u> > tau)`` on ``S^4`` in closed form: ``p_5(t) = 3/4 (1 - t^2)``."""
    return 0.5 - 0.75 * tau + 0.25 * tau**3


@pytest.mark.parametrize("d", [8, 40])
def test_predicted_off_target_bounds_on_an_independent_computation(d):
    m, samples, seed = 5, 4000, 3
    # The same draws of (v_a, v_b, theta0) as the function, the tail in closed form, the union
    # bound per competitor written out.
    z = torch.randn(
        samples, 3, m, generator=torch.Generator().manual_seed(seed), dtype=torch.float64
    )
    v_a, v_b, theta0 = (z / z.norm(dim=-1, keepdim=True)).unbind(-2)
    D = ((v_a - v_b) * theta0).sum(-1)
    M1 = float(mpmath.hyp0f1(m / 2, 0.25))  # E exp(<v, u>) = 0F1(; m/2; 1/4)
    beta = analysis.bulk_coefficient(D, m)
    q = []
    for sign in (1.0, -1.0):
        w = torch.exp(sign * D)[:, None] * v_a + torch.exp(-sign * D)[:, None] * v_b
        w = w - sign * (M1**2 * beta)[:, None] * theta0
        tau = torch.maximum((v_a * w).sum(-1), (v_b * w).sum(-1)) / w.norm(dim=-1)
        q.append(_tail_m5(tau))
    success_low = (1 - torch.clamp(q[0] + q[1], max=1.0)) ** (d - 2)
    success_high = (1 - torch.maximum(q[0], q[1])) ** (d - 2)
    out = analysis.predicted_off_target(d, m, samples=samples, seed=seed)
    assert float(out.upper) == pytest.approx(float(1 - success_low.mean()), abs=1e-4)
    assert float(out.lower) == pytest.approx(float(1 - success_high.mean()), abs=1e-4)
    assert float(out.lower) < float(out.upper)


# --- sizes and comparisons --------------------------------------------------------------------


def test_all_inputs_refuses_more_than_two_to_the_24():
    # On the meta device nothing is allocated, so a broken guard fails here without using memory.
    for d in (25, 40):
        with pytest.raises(ValueError, match="d <= 24"):
            sxor.all_inputs(d, device="meta")
        with pytest.raises(ValueError, match="d <= 24"):
            sxor.all_inputs(d)
    assert sxor.all_inputs(24, device="meta").shape == (2**24, 24)


def test_smallest_m_a_last_rate_exactly_at_target_counts_as_reached():
    # rates >= target reach it: the crossing lies at the last grid point, not "never" (nan).
    assert analysis.smallest_m([4, 8], [0.5, 0.95], 0.95) == pytest.approx(8.0)
    assert analysis.smallest_m([4, 8, 12], [0.95, 0.5, 0.95], 0.95) == pytest.approx(12.0)
    assert math.isnan(analysis.smallest_m([4, 8], [0.5, 0.9499], 0.95))
    assert analysis.smallest_m([4, 8], [0.95, 1.0], 0.95) == 4.0
    assert analysis.smallest_m([4, 8], [0.5, 1.0]) == pytest.approx(
        4 + 0.45 / 0.5 * 4
    )  # default 0.95


# --- predictions pinned on independent computations -------------------------------------------


@pytest.mark.parametrize("m, lam", [(5, 1.0), (8, 2.0)])
def test_predicted_under_stepped_on_an_independent_computation(m, lam):
    samples, seed, threshold = 4000, 1, 0.01
    # The same draws, the gap Delta = 2 lam sinh(D) (1 - rho) + D (1 - lam M^2 beta) written out,
    # M(1) = 0F1(; m/2; 1/4) and the critical split solved numerically from (2 eps (1 - eps))^2 = 0.01.
    z = torch.randn(
        samples, 3, m, generator=torch.Generator().manual_seed(seed), dtype=torch.float64
    )
    v_a, v_b, theta0 = (z / z.norm(dim=-1, keepdim=True)).unbind(-2)
    D, rho = ((v_a - v_b) * theta0).sum(-1), (v_a * v_b).sum(-1)
    M1 = float(mpmath.hyp0f1(m / 2, 0.25))
    gap = 2 * lam * torch.sinh(D) * (1 - rho) + D * (
        1 - lam * M1**2 * analysis.bulk_coefficient(D, m)
    )
    eps = float(mpmath.findroot(lambda e: (2 * e * (1 - e)) ** 2 - threshold, 0.05))
    expected = float((gap.abs() < math.log((1 - eps) / eps)).double().mean())
    got = float(
        analysis.predicted_under_stepped(
            m, lam, loss_threshold=threshold, samples=samples, seed=seed
        )
    )
    assert got == pytest.approx(expected, abs=1.5 / samples)


def test_predicted_same_target_counts_the_non_targets():
    # d = 3: one non-target, sigma = sqrt(d - 2) / d = 1/3; d = 102: sigma = 10 / 102.
    assert float(analysis.predicted_same_target(3)) == pytest.approx(
        2 / math.pi * math.atan(1 / 3), rel=1e-12
    )
    assert float(analysis.predicted_same_target(102)) == pytest.approx(
        2 / math.pi * math.atan(10 / 102), rel=1e-12
    )
    with pytest.raises(ValueError, match="d must be >= 3"):
        analysis.predicted_same_target(2)


def test_parity_specialised_mass_threshold_is_inclusive():
    from sxor.xor.kparity import parity_specialised

    exact = torch.tensor([[0.9, 0.05, 0.0], [0.0, 0.0, 0.9], [0.05, 0.9, 0.0]], dtype=torch.float64)
    assert bool(
        parity_specialised(exact)
    )  # heads (0, 1, 2) -> targets (0, 2, 1), every mass exactly 0.9
    assert not bool(parity_specialised(exact, mass_threshold=0.9 + 1e-12))
    assert not bool(parity_specialised(exact[[0, 0, 2]]))  # two heads on one target: no assignment
