"""Leading-order predictions of sxor.xor.analysis, each against an independent reference."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import torch

import sxor
from sxor.xor import analysis
from sxor.xor.sweeps import random_instances


@pytest.mark.parametrize("m", [2, 3, 10, 40])
@pytest.mark.parametrize("t", [0.0, 0.5, 1.0, 2.0])
def test_sphere_mgf_matches_hypergeometric_0f1(m, t):
    exact = float(mpmath.hyp0f1(m / 2, t * t / 4))
    assert abs(float(analysis.sphere_mgf(t, m)) - exact) < 1e-13 * exact
    step = 1e-5
    fd = (
        float(mpmath.hyp0f1(m / 2, (t + step) ** 2 / 4))
        - float(mpmath.hyp0f1(m / 2, (t - step) ** 2 / 4))
    ) / (2 * step)
    assert abs(float(analysis.sphere_mgf(t, m, derivative=1)) - fd) < 1e-8


def test_sphere_mgf_matches_monte_carlo_and_batches():
    gen = torch.Generator().manual_seed(0)
    v = sxor.sphere_embeddings(200_000, 5, generator=gen)
    s = v[:, 0]
    t = torch.tensor([[0.5, 1.0], [1.5, 2.0]], dtype=torch.float64)
    mc = torch.exp(t.unsqueeze(-1) * s).mean(-1)
    out = analysis.sphere_mgf(t, 5)
    assert out.shape == (2, 2) and out.dtype == torch.float64
    torch.testing.assert_close(out, mc, rtol=1e-2, atol=0)


def test_sphere_mgf_rejects_bad_input():
    with pytest.raises(ValueError, match="m must be"):
        analysis.sphere_mgf(1.0, 0)
    with pytest.raises(ValueError, match="derivative"):
        analysis.sphere_mgf(1.0, 5, derivative=2)


def test_bulk_coefficient_tends_to_one_over_m():
    for m in (100, 400):
        assert abs(float(analysis.bulk_coefficient(0.0, m)) * m - 1) < 5 / m
    assert analysis.bulk_coefficient(torch.zeros(3, 2), 10).shape == (3, 2)


def _relative_error(d, m=20, num=40):
    inst = random_instances(num, d, m, seed=1)
    grad, grad_tilde = sxor.population_grad(inst.V, inst.theta0, -inst.theta0, inst.support)
    pred = analysis.predicted_gradient(inst.V, inst.theta0, inst.support)
    err = (grad - pred.grad).norm(dim=-1) / grad.norm(dim=-1)
    err_tilde = (grad_tilde - pred.grad_tilde).norm(dim=-1) / grad_tilde.norm(dim=-1)
    return float(err.median()), float(err_tilde.median())


def test_predicted_gradient_error_shrinks_like_inverse_sqrt_d():
    small, large = _relative_error(256), _relative_error(4096)
    for e_small, e_large in zip(small, large):
        assert e_large < 0.04
        assert 2.5 < e_small / e_large < 6.5  # d grows 16x: sqrt(16) = 4


def test_predicted_gradient_needs_the_bulk_term():
    inst = random_instances(40, 4096, 20, seed=1)
    grad, _ = sxor.population_grad(inst.V, inst.theta0, -inst.theta0, inst.support)
    pred = analysis.predicted_gradient(inst.V, inst.theta0, inst.support)
    no_bulk = pred.grad - pred.beta.unsqueeze(-1) * inst.theta0 / 4096**2
    err = ((grad - pred.grad).norm(dim=-1) / grad.norm(dim=-1)).median()
    err_no_bulk = ((grad - no_bulk).norm(dim=-1) / grad.norm(dim=-1)).median()
    assert err_no_bulk > 1.5 * err


def test_predicted_gradient_batches_dtype_and_bad_input():
    inst = random_instances(3, 16, 5, seed=0)
    V = inst.V.float()
    pred = analysis.predicted_gradient(V, inst.theta0.float(), inst.support)
    assert pred.grad.shape == (3, 5) and pred.grad.dtype == torch.float32
    assert pred.signal.shape == (3, 2) and pred.beta.shape == (3,)
    one = analysis.predicted_gradient(inst.V[1], inst.theta0[1], inst.support[1])
    torch.testing.assert_close(
        one.grad, analysis.predicted_gradient(inst.V, inst.theta0, inst.support).grad[1]
    )
    with pytest.raises(ValueError, match="theta0"):
        analysis.predicted_gradient(inst.V, inst.theta0[:, :4], inst.support)
    with pytest.raises(ValueError, match="support"):
        analysis.predicted_gradient(inst.V, inst.theta0, inst.support + 100)


def test_natural_step_and_grid_eta():
    lam = analysis.natural_step(torch.tensor([1.0, 2.0]) * 64**2, 64, 10)
    m1 = float(mpmath.hyp0f1(5, 0.25))
    torch.testing.assert_close(lam, torch.tensor([1.0, 2.0], dtype=torch.float64) / m1**2)
    assert analysis.grid_eta(1024, 3.0) == pytest.approx(3.0 * 1024**2 * math.log(1024))
    with pytest.raises(ValueError, match="c must"):
        analysis.grid_eta(1024, 0.0)
    with pytest.raises(ValueError, match="d must"):
        analysis.natural_step(1.0, 1, 4)


def test_critical_split_gives_the_threshold_loss():
    for threshold in (0.01, 0.05):
        eps = analysis.critical_split(threshold)
        g = torch.tensor([1 - eps, eps, 0.0], dtype=torch.float64)
        h = torch.tensor([eps, 1 - eps, 0.0], dtype=torch.float64)
        loss = sxor.loss_from_weights(g, h, torch.tensor([0, 1]))
        assert float(loss) == pytest.approx(threshold, rel=1e-12)
    with pytest.raises(ValueError, match="loss_threshold"):
        analysis.critical_split(0.3)


def test_argmax_limit_matches_a_huge_step():
    inst = random_instances(30, 64, 12, seed=3)
    limit = analysis.argmax_limit(inst.V, inst.theta0, inst.support)
    huge = sxor.one_step(inst.V, inst.theta0, inst.support, 1e9 * 64**2)
    assert torch.equal(limit.head, huge.attention.argmax(-1))
    assert torch.equal(limit.head_tilde, huge.attention_tilde.argmax(-1))
    assert torch.equal(limit.success, huge.loss < 1e-6)
    assert 0 < int(limit.success.sum()) < 30  # both outcomes occur at this small m


def test_sphere_upper_tail_against_exact_and_monte_carlo():
    tau = torch.tensor([-0.3, 0.0, 0.2, 0.5, 0.9], dtype=torch.float64)
    out = analysis.sphere_upper_tail(tau, 7)
    exact = [1 - 0.5 * float(mpmath.betainc(3, 0.5, 0, 1 - 0.09, regularized=True)), 0.5] + [
        0.5 * float(mpmath.betainc(3, 0.5, 0, 1 - t * t, regularized=True)) for t in (0.2, 0.5, 0.9)
    ]
    torch.testing.assert_close(out, torch.tensor(exact, dtype=torch.float64), rtol=1e-3, atol=1e-12)
    v = sxor.sphere_embeddings(200_000, 7, generator=torch.Generator().manual_seed(0))
    mc = (v[:, 0].unsqueeze(-1) > tau).double().mean(0)
    torch.testing.assert_close(out, mc, rtol=0, atol=5e-3)


def test_predicted_off_target_matches_the_leading_order_model():
    d, m = 64, 8
    inst = random_instances(3000, d, m, seed=0)
    pred = analysis.predicted_gradient(inst.V, inst.theta0, inst.support)
    head = (inst.V @ -pred.grad.unsqueeze(-1)).squeeze(-1).argmax(-1)
    head_tilde = (inst.V @ -pred.grad_tilde.unsqueeze(-1)).squeeze(-1).argmax(-1)
    a, b = inst.support[:, 0], inst.support[:, 1]
    off = ~((head == a) | (head == b)) | ~((head_tilde == a) | (head_tilde == b))
    measured = float(off.double().mean())
    bounds = analysis.predicted_off_target(d, m, samples=20000)
    assert 0 <= float(bounds.lower) <= float(bounds.upper) <= 1
    assert float(bounds.lower) - 0.03 < measured < float(bounds.upper) + 0.03
    assert float(analysis.predicted_off_target(d, 24, samples=5000).upper) < float(bounds.lower)


def test_predicted_same_target_matches_the_argmax_limit():
    d = 64
    inst = random_instances(4000, d, 16, seed=0)
    limit = analysis.argmax_limit(inst.V, inst.theta0, inst.support)
    a, b = inst.support[:, 0], inst.support[:, 1]
    same = (limit.head == limit.head_tilde) & ((limit.head == a) | (limit.head == b))
    assert abs(float(same.double().mean()) - float(analysis.predicted_same_target(d))) < 0.025
    assert analysis.predicted_same_target(np.array([16, 1024])).shape == (2,)
    with pytest.raises(ValueError, match="d must"):
        analysis.predicted_same_target(2)


def test_predicted_under_stepped_limits():
    assert float(analysis.predicted_under_stepped(20, 0.0, samples=2000)) == 1.0
    values = [
        float(analysis.predicted_under_stepped(20, lam, samples=4000)) for lam in (5.0, 50.0, 500.0)
    ]
    assert values[0] > values[1] > values[2] and values[2] < 0.02
    with pytest.raises(ValueError, match="lam"):
        analysis.predicted_under_stepped(20, -1.0)


def test_smallest_m_interpolates():
    assert analysis.smallest_m([4, 8, 12], [0.5, 0.9, 1.0], 0.95) == pytest.approx(10.0)
    assert analysis.smallest_m([4, 8, 12], [0.96, 0.97, 1.0], 0.95) == 4.0
    assert analysis.smallest_m([4, 8, 12], [0.96, 0.9, 1.0], 0.95) == pytest.approx(
        8 + 0.05 / 0.1 * 4
    )
    assert math.isnan(analysis.smallest_m([4, 8], [0.5, 0.6], 0.95))
    with pytest.raises(ValueError, match="increasing"):
        analysis.smallest_m([8, 4], [0.5, 0.6])


def test_fits_recover_the_generating_law():
    d = np.array([2.0**k for k in range(6, 15)])
    m_star = 3.0 + 2.5 * np.log(d)
    fits = analysis.fit_log_models(d, m_star)
    assert fits["log d"].slope == pytest.approx(2.5) and fits["log d"].intercept == pytest.approx(
        3.0
    )
    assert fits["log d"].rms_residual < 1e-10 < fits["log^2 d"].rms_residual
    nan_free = analysis.fit_log_models(np.append(d, 2.0**15), np.append(m_star, np.nan))
    assert nan_free["log d"].slope == pytest.approx(2.5)
    with pytest.raises(ValueError, match="distinct"):
        analysis.fit_line([1.0, 1.0], [2.0, 3.0])


def test_wilson_interval_known_values():
    low, high = analysis.wilson_interval(np.array([0, 5, 10]), 10)
    assert low[0] == 0.0 and high[0] == pytest.approx(0.2775, abs=1e-4)
    assert low[1] < 0.5 < high[1] and high[2] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="trials"):
        analysis.wilson_interval(np.array([0]), 0)


def test_symmetric_infimum_is_attained_by_the_midpoint():
    g = torch.tensor([0.5, 0.5, 0.0, 0.0], dtype=torch.float64)
    assert float(sxor.loss_from_weights(g, g, torch.tensor([0, 1]))) == pytest.approx(
        analysis.SYMMETRIC_INFIMUM
    )
    gen = torch.Generator().manual_seed(0)
    w = torch.softmax(3 * torch.randn(1000, 4, generator=gen, dtype=torch.float64), -1)
    assert (
        float(sxor.loss_from_weights(w, w, torch.tensor([0, 1])).min())
        >= analysis.SYMMETRIC_INFIMUM
    )
