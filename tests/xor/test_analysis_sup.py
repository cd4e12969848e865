"""The per-input error bound and the one home of the grid's step-size constant."""

from __future__ import annotations

import itertools

import torch

from sxor.xor import analysis
from sxor.xor.model import predict_from_weights


def _sup_error(g, h, support):
    d = g.shape[-1]
    x = torch.tensor(list(itertools.product([-1.0, 1.0], repeat=d)), dtype=torch.float64)
    y = -x[:, support[0]] * x[:, support[1]]
    return float((predict_from_weights(x, g, h) - y).abs().max())


def test_sup_error_bound_holds_on_every_input_and_is_tight_for_pure_heads():
    gen = torch.Generator().manual_seed(0)
    support = torch.tensor([1, 4])
    for _ in range(50):
        g = torch.softmax(3 * torch.randn(7, generator=gen, dtype=torch.float64), -1)
        h = torch.softmax(3 * torch.randn(7, generator=gen, dtype=torch.float64), -1)
        assert _sup_error(g, h, support) <= float(analysis.sup_error_bound(g, h, support)) + 1e-12
    g, h = torch.zeros(7, dtype=torch.float64), torch.zeros(7, dtype=torch.float64)
    g[4], h[1] = 1.0, 1.0
    assert float(analysis.sup_error_bound(g, h, support)) == 0.0 == _sup_error(g, h, support)


def test_mass_09_on_different_targets_bounds_the_error_by_038():
    # the chapter's lemma: masses >= mu on different targets give |f - y| <= 2 (1 - mu^2) < 1
    g = torch.tensor([0.9, 0.0, 0.05, 0.05], dtype=torch.float64)
    h = torch.tensor([0.0, 0.9, 0.1, 0.0], dtype=torch.float64)
    bound = float(analysis.sup_error_bound(g, h, torch.tensor([0, 1])))
    assert abs(bound - 2 * (1 - 0.81)) < 1e-12


def test_grid_c_has_one_home():
    from sxor.experiments import one_step

    assert one_step.GRID_C == analysis.GRID_C == 100.0
    assert (
        analysis.grid_eta(64)
        == 100.0 * 64**2 * torch.log(torch.tensor(64.0, dtype=torch.float64)).item()
    )


def test_common_drift_is_the_head_symmetric_part_of_the_remainder():
    import sxor
    from sxor.xor.sweeps import random_instances

    inst = random_instances(20, 4096, 40, seed=1)
    grad, grad_t = sxor.population_grad(inst.V, inst.theta0, -inst.theta0, inst.support)
    pred = analysis.predicted_gradient(inst.V, inst.theta0, inst.support)
    common = ((grad - pred.grad) + (grad_t - pred.grad_tilde)) / 2
    anti = ((grad - pred.grad) - (grad_t - pred.grad_tilde)) / 2
    zeta = analysis.common_drift(inst.V, inst.theta0, inst.support)
    rel = ((common - zeta).norm(dim=-1) / zeta.norm(dim=-1)).median()
    assert rel < 0.1
    assert (anti.norm(dim=-1) / zeta.norm(dim=-1)).median() < 0.2  # smaller by about m^(-1/2)


def test_bootstrap_smallest_m_recovers_a_known_slope_and_covers_it():
    import numpy as np

    rng = np.random.default_rng(0)
    curves = {}
    ms = np.arange(4, 41, 2)
    for d in (64, 256, 1024, 4096):
        centre = 3 * np.log(d) - 2  # true smallest-m line: slope 3
        p = 1 / (1 + np.exp(-(ms - centre)))
        p = 0.95 + 0.05 * p - 0.95 * (1 - p)  # crosses 0.95 near centre
        n = np.full(len(ms), 2000)
        curves[d] = (ms, rng.binomial(n, np.clip(p, 0, 1)), n)
    boot = analysis.bootstrap_smallest_m(curves, resamples=300)
    assert boot.slope_low <= boot.slope <= boot.slope_high
    assert abs(boot.slope - 3) < 0.5 and boot.slope_low < 3 < boot.slope_high + 0.3
    assert np.all(boot.m_low <= boot.m_star + 1e-9) and np.all(boot.m_star <= boot.m_high + 1e-9)


def test_median_separating_step_separates_half_of_the_instances():
    lam = analysis.median_separating_step(30, samples=4000)
    assert abs(float(analysis.predicted_under_stepped(30, lam, samples=4000)) - 0.5) < 0.05
