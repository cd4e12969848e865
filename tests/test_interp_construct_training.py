"""Tests of sxor.interp.training (chapter 15's Tikhonov experiment) and its registered sweep."""

from __future__ import annotations

import pytest
import torch

from sxor.experiments.regularised_training import plot_regularised, run_grid
from sxor.interp.training import block, init_parameters, loss, perturbed, sq_norm, tikhonov_data, train

torch.set_num_threads(1)


def reference_block(X, th, tau=1.0):
    """Independent plain-torch reference: SA (rank-one softmax) then FF."""
    A = torch.outer(th["q"], th["k"])
    S = (X @ A.T) @ X.transpose(-1, -2) / tau
    Z = th["rho"] * X + torch.softmax(S, dim=-1) @ X @ th["V"].T
    return th["eta"] * Z + torch.relu(Z @ th["U"].T + th["b"]) @ th["W"].T


def test_theta_star_interpolates_exactly():
    data = tikhonov_data(N=4, n=7, d=5, seed=3)
    assert data.X.shape == (4, 7, 5) and data.Y.shape == (4, 1, 5)
    assert float(loss(data.X, data.Y, data.theta_star)) < 1e-24
    out = block(data.X, data.theta_star)
    assert torch.allclose(out, out[:, :1].expand_as(out), atol=1e-12, rtol=0)  # one point per sequence
    manual = sum(float((p ** 2).sum()) for p in data.theta_star.values())
    assert abs(data.theta_star_sq_norm - manual) < 1e-12
    assert data.theta_star["rho"] == 0 and data.theta_star["eta"] == 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_block_and_loss_match_reference(dtype):
    data = tikhonov_data(N=3, n=6, d=4, seed=1, dtype=dtype)
    th = init_parameters(4, seed=2, dtype=dtype, scale=2.0)
    with torch.no_grad():
        th["rho"].fill_(0.3)
        th["eta"].fill_(-0.7)
    for tau in (1.0, 0.25):
        out = block(data.X, th, tau)
        ref = reference_block(data.X, th, tau)
        assert out.dtype == dtype
        assert torch.allclose(out, ref, atol=1e-5 if dtype == torch.float32 else 1e-12)
        J = loss(data.X, data.Y, th, tau)
        J_ref = ((ref - data.Y) ** 2).sum(-1).amax(-1).mean()
        assert torch.allclose(J, J_ref, atol=1e-4 if dtype == torch.float32 else 1e-10)


def test_gradients_reach_residual_weights():
    data = tikhonov_data(N=3, n=5, d=4, seed=0)
    th = init_parameters(4, seed=0)
    loss(data.X, data.Y, th).backward()
    for name in ("rho", "eta", "V", "W", "U", "b", "q", "k"):
        assert th[name].grad is not None and float(th[name].grad.abs().sum()) > 0, name


def test_training_respects_the_tikhonov_bound_near_theta_star():
    data = tikhonov_data(N=5, n=8, d=6, seed=0)
    eps = 1e-2
    th = perturbed(data.theta_star, 0.01, seed=1)
    out = train(data, th, eps, 200, lr=1e-2, record_every=50)
    J_star_eps = eps / 2 * data.theta_star_sq_norm
    assert out["loss"] <= out["objective"] <= J_star_eps  # J <= J_eps(theta) <= J_eps(theta*)
    assert out["loss"] <= eps * data.theta_star_sq_norm
    assert out["min_loss"] <= out["loss"] and len(out["curve"]) == 5
    assert abs(out["sq_norm"] - sq_norm(th)) < 1e-12


def test_training_decreases_loss_from_default_init():
    data = tikhonov_data(N=4, n=6, d=5, seed=2)
    th = init_parameters(5, seed=3)
    start = float(loss(data.X, data.Y, th).detach())
    out = train(data, th, 1e-3, 100, lr=1e-2)
    assert out["loss"] < start


def test_bad_arguments():
    data = tikhonov_data(N=2, n=3, d=2)
    with pytest.raises(ValueError, match="epsilon >= 0"):
        train(data, init_parameters(2), -1.0, 10)
    with pytest.raises(ValueError, match="steps >= 1"):
        train(data, init_parameters(2), 0.1, 0)
    with pytest.raises(ValueError, match="sigma"):
        perturbed(data.theta_star, -0.1)
    with pytest.raises(ValueError, match=">= 1"):
        tikhonov_data(N=0)


def test_init_and_perturbed():
    th = init_parameters(6, width=3, seed=0)
    assert float(th["rho"].detach()) == 0 and float(th["eta"].detach()) == 0 and th["W"].shape == (6, 3)
    assert all(p.requires_grad for p in th.values())
    data = tikhonov_data(N=2, n=3, d=6, width=3)
    copy = perturbed(data.theta_star, 0.0)
    assert all(torch.equal(copy[k], data.theta_star[k]) for k in copy)
    assert all(p.requires_grad for p in copy.values())


def test_regularised_grid_records_and_plot():
    records = run_grid(N=3, n=4, d=3, epsilons=[1e-1, 1e-2], steps=20, lr=1e-2, sigma=0.01, curve_every=5)
    assert len(records) == 4 and {r["init"] for r in records} == {"near", "default"}
    for r in records:
        assert r["loss"] >= 0 and abs(r["bound"] - 2 * r["objective_star"]) < 1e-12
        assert bool(r["curve"]) == (r["epsilon"] == 1e-2)
    import matplotlib

    matplotlib.use("Agg")
    fig = plot_regularised({"params": {"size": "test", "steps": 20}, "records": records})
    assert len(fig.axes) == 2
