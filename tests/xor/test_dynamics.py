"""Multi-step population descent, the empirical gradient, mini-batch SGD and k-sparse parity,
each against an independent reference (the finite-sample experiment: tests/test_finite_samples.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import sxor
from sxor.xor.dynamics import (
    empirical_grad,
    empirical_one_step,
    first_success,
    minibatch_sgd,
    population_descent,
    sample_batch,
)
from sxor.xor.kparity import (
    parity_descent,
    parity_inits,
    parity_labels,
    parity_population_loss,
    parity_predict,
    parity_specialised,
)
from sxor.xor.reference import autograd_grad, empirical_loss
from sxor.xor.sweeps import random_instances


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --- population descent -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["softmax", "linear", "erf"])
def test_population_descent_matches_a_manual_loop(kind):
    inst = random_instances(3, 10, 4, seed=1)
    eta, steps = 200.0, 4
    tr = population_descent(inst.V, inst.theta0, -inst.theta0, inst.support, eta, steps, kind)
    assert tr.loss.shape == (steps + 1, 3) and tr.masses.shape == (steps + 1, 3, 2, 2)
    a, b = inst.theta0, -inst.theta0
    for t in range(steps + 1):
        torch.testing.assert_close(
            tr.loss[t], sxor.population_loss(inst.V, a, b, inst.support, kind)
        )
        if t < steps:
            ga, gb = sxor.population_grad(inst.V, a, b, inst.support, kind)
            a, b = a - eta * ga, b - eta * gb
    torch.testing.assert_close(tr.theta, a)
    torch.testing.assert_close(tr.theta_tilde, b)
    # one step of descent equals sxor.one_step
    one = sxor.one_step(inst.V, inst.theta0, inst.support, eta, kind)
    torch.testing.assert_close(
        population_descent(inst.V, inst.theta0, -inst.theta0, inst.support, eta, 1, kind).loss[1],
        one.loss,
    )


def test_population_descent_learns_with_softmax_and_records_success():
    inst = random_instances(8, 16, 8, seed=0)
    tr = population_descent(inst.V, inst.theta0, -inst.theta0, inst.support, 300.0, 40)
    assert float(tr.loss[-1].median()) < float(tr.loss[0].median())
    assert bool(tr.success[-1].any()) and not bool(tr.success[0].any())


def test_population_descent_bad_input():
    inst = random_instances(2, 6, 3)
    with pytest.raises(ValueError, match="steps"):
        population_descent(inst.V, inst.theta0, -inst.theta0, inst.support, 1.0, 0)
    with pytest.raises(ValueError, match="eta"):
        population_descent(inst.V, inst.theta0, -inst.theta0, inst.support, -1.0, 3)
    with pytest.raises(ValueError, match="unknown attention kind"):
        population_descent(inst.V, inst.theta0, -inst.theta0, inst.support, 1.0, 3, "relu")


def test_first_success_finds_the_first_true_or_minus_one():
    s = torch.tensor([[False, False, True], [False, True, True], [True, False, True]])
    assert first_success(s).tolist() == [2, 1, 0]
    assert first_success(torch.zeros(4, 2, dtype=torch.bool)).tolist() == [-1, -1]


# --- empirical gradient -------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["softmax", "linear", "erf"])
def test_empirical_grad_equals_autograd(kind):
    inst = random_instances(3, 7, 4, seed=2)
    x, y = sample_batch(50, inst.support, 7, generator=gen(3))
    theta, theta_tilde = 2 * inst.theta0, -inst.theta0 + 0.1
    got = empirical_grad(x, y, inst.V, theta, theta_tilde, kind)
    want = autograd_grad(lambda a, b: empirical_loss(x, y, inst.V, a, b, kind), theta, theta_tilde)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=1e-12, rtol=1e-9)


def test_empirical_grad_on_all_inputs_is_the_population_gradient():
    inst = random_instances(2, 6, 3, seed=4)
    x = sxor.all_inputs(6).expand(2, 64, 6)
    y = sxor.sparse_xor_labels(x, inst.support)
    got = empirical_grad(x, y, inst.V, inst.theta0, -inst.theta0)
    want = sxor.population_grad(inst.V, inst.theta0, -inst.theta0, inst.support)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=1e-14, rtol=1e-10)


def test_empirical_grad_bad_shapes():
    inst = random_instances(1, 5, 3)
    x, y = sample_batch(4, inst.support, 5, generator=gen())
    with pytest.raises(ValueError, match="last dimension"):
        empirical_grad(x[..., :4], y, inst.V, inst.theta0, -inst.theta0)
    with pytest.raises(ValueError, match="y must have shape"):
        empirical_grad(x, y[..., :3], inst.V, inst.theta0, -inst.theta0)


def test_sample_batch_labels_shapes_and_bad_input():
    support = torch.tensor([[0, 2], [1, 3]])
    x, y = sample_batch(100, support, 4, generator=gen())
    assert x.shape == (2, 100, 4) and y.shape == (2, 100) and x.dtype == torch.float64
    torch.testing.assert_close(y[1], -x[1, :, 1] * x[1, :, 3])
    with pytest.raises(ValueError, match="n must be"):
        sample_batch(0, support, 4)
    with pytest.raises(ValueError, match="support"):
        sample_batch(3, torch.tensor([0, 1]), 4)


def test_empirical_one_step_with_all_inputs_equals_one_step():
    inst = random_instances(3, 6, 4, seed=5)
    x = sxor.all_inputs(6).expand(3, 64, 6)
    y = sxor.sparse_xor_labels(x, inst.support)
    got = empirical_one_step(x, y, inst.V, inst.theta0, inst.support, 1e4)
    want = sxor.one_step(inst.V, inst.theta0, inst.support, 1e4)
    torch.testing.assert_close(got.loss, want.loss, atol=1e-10, rtol=1e-8)


def test_minibatch_sgd_shapes_and_progress():
    inst = random_instances(6, 16, 12, seed=0)
    run = minibatch_sgd(inst.V, inst.theta0, inst.support, 0.3 * 16**2, 64, 60, generator=gen(1))
    assert run.loss.shape == (61, 6) and run.success.shape == (61, 6)
    assert float(run.loss[-1].median()) < 0.1 < float(run.loss[0].median())
    with pytest.raises(ValueError, match="batch_size"):
        minibatch_sgd(inst.V, inst.theta0, inst.support, 1.0, 0, 3)


# --- k-sparse parity ------------------------------------------------------------------------


def test_parity_reduces_to_sparse_xor_for_k_2():
    inst = random_instances(2, 6, 3, seed=8)
    thetas = torch.stack([inst.theta0, -0.5 * inst.theta0], dim=-2)
    got = parity_population_loss(inst.V, thetas, inst.support)
    want = sxor.population_loss(inst.V, thetas[:, 0], thetas[:, 1], inst.support)
    torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-10)
    x = sxor.all_inputs(6)
    torch.testing.assert_close(
        parity_labels(x, inst.support[0]), sxor.sparse_xor_labels(x, inst.support[0])
    )


def test_parity_loss_is_zero_at_the_one_hot_solution():
    x = sxor.all_inputs(5)
    weights = torch.eye(5, dtype=torch.float64)[[1, 3, 4]]
    support = torch.tensor([1, 3, 4])
    assert float((parity_predict(x, weights) - parity_labels(x, support)).abs().max()) == 0.0


def test_parity_loss_bad_input():
    inst = random_instances(1, 6, 3)
    thetas = torch.stack([inst.theta0] * 3, dim=-2)
    with pytest.raises(ValueError, match="distinct"):
        parity_population_loss(inst.V, thetas, torch.tensor([[1, 1, 2]]))
    with pytest.raises(ValueError, match="one head per"):
        parity_population_loss(inst.V, thetas, torch.tensor([[1, 2]]))


def test_parity_specialised_needs_a_one_to_one_assignment():
    M = torch.tensor([[0.95, 0.0, 0.0], [0.0, 0.0, 0.92], [0.0, 0.91, 0.0]])
    assert bool(parity_specialised(M))
    M2 = torch.tensor([[0.95, 0.0, 0.0], [0.93, 0.0, 0.0], [0.0, 0.91, 0.0]])
    assert not bool(parity_specialised(M2))


def test_parity_inits_geometry():
    theta0 = sxor.sphere_embeddings(4, 6, generator=gen())
    star = parity_inits(theta0, "star", generator=gen(1))
    torch.testing.assert_close(
        star.sum(-2), torch.zeros(4, 6, dtype=torch.float64), atol=1e-12, rtol=0
    )
    torch.testing.assert_close(star.norm(dim=-1), torch.ones(4, 3, dtype=torch.float64))
    cos = (star[:, 0] * star[:, 1]).sum(-1)
    torch.testing.assert_close(cos, torch.full((4,), -0.5, dtype=torch.float64))
    anti = parity_inits(theta0, "antipodal")
    torch.testing.assert_close(anti[:, 1], -theta0)
    with pytest.raises(ValueError, match="unknown init scheme"):
        parity_inits(theta0, "spiral")


def test_parity_descent_step_uses_the_exact_gradient():
    inst = random_instances(1, 5, 3, seed=3)
    thetas = parity_inits(inst.theta0, "star", generator=gen(2))
    support = torch.tensor([[0, 2, 4]])
    eta = 0.5
    tr = parity_descent(inst.V, thetas, support, eta, 1)

    def loss(t):
        return parity_population_loss(inst.V, t, support)[0]

    # the gradient, by central finite differences coordinate by coordinate
    eps = 1e-6
    grad = torch.zeros_like(thetas)
    for idx in np.ndindex(*thetas.shape):
        e = torch.zeros_like(thetas)
        e[idx] = eps
        grad[idx] = (loss(thetas + e) - loss(thetas - e)) / (2 * eps)
    torch.testing.assert_close(tr.loss[1, 0], loss(thetas - eta * grad), atol=1e-8, rtol=1e-7)
    torch.testing.assert_close(tr.loss[0, 0], loss(thetas))


# --- experiment helpers ---------------------------------------------------------------------


def test_tuned_descent_prefers_success_then_speed():
    from sxor.experiments.why_softmax import tuned_descent

    base = {"mode": "descent", "kind": "softmax", "d": 8, "steps": 10}
    records = [
        {
            **base,
            "eta": 1.0,
            "success_rate": 0.5,
            "first_success": [3, -1],
            "median_final_loss": 0.1,
        },
        {
            **base,
            "eta": 10.0,
            "success_rate": 1.0,
            "first_success": [5, 7],
            "median_final_loss": 0.001,
        },
        {
            **base,
            "eta": 100.0,
            "success_rate": 1.0,
            "first_success": [2, 2],
            "median_final_loss": 0.001,
        },
        {
            **base,
            "kind": "linear",
            "eta": 1.0,
            "success_rate": 0.0,
            "first_success": [-1, -1],
            "median_final_loss": 0.4,
        },
        {
            **base,
            "kind": "linear",
            "eta": 10.0,
            "success_rate": 0.0,
            "first_success": [-1, -1],
            "median_final_loss": 0.3,
        },
        {
            **base,
            "kind": "linear",
            "eta": 100.0,
            "success_rate": 0.0,
            "first_success": [-1, -1],
            "median_final_loss": None,
        },
    ]
    tuned = tuned_descent(records, 8)
    assert tuned["softmax"]["eta"] == 100.0 and tuned["linear"]["eta"] == 10.0


def test_k3_instances():
    from sxor.experiments.beyond_two_bits import k3_instances

    V, thetas, support = k3_instances(5, 9, 4, "star")
    assert V.shape == (5, 9, 4) and thetas.shape == (5, 3, 4) and support.shape == (5, 3)
    assert all(len(set(row)) == 3 for row in support.tolist())


def test_plots_draw_labelled_figures_from_results():
    import matplotlib

    matplotlib.use("Agg")
    from sxor.experiments import beyond_two_bits, why_softmax

    rec = {
        "d": 8,
        "success_rate": 0.5,
        "median_loss": 0.1,
        "median_best_loss": 0.2,
        "median_final_loss": None,
        "steps": 5,
        "first_success": [1, -1],
    }
    var_results = {
        "params": {"m": 4, "seeds": 2, "kinds": ["softmax", "linear"]},
        "records": [
            {**rec, "mode": mode, "kind": kind, "eta": eta}
            for mode in ("one-step", "descent")
            for kind in ("softmax", "linear")
            for eta in (1.0, 10.0)
        ],
    }
    k3_results = {
        "params": {"d": 6, "m": 4, "seeds": 2, "schemes": ["star"]},
        "records": [
            {"scheme": "star", "eta": 1.0, "success_rate": 0.5, "median_loss": [0.5, 0.1, 0.01]}
        ],
    }
    figures = [
        why_softmax.plot_variants(var_results),
        beyond_two_bits.plot_k3(k3_results),
    ]
    for fig in figures:
        assert any(ax.get_xlabel() for ax in fig.axes) and any(ax.get_ylabel() for ax in fig.axes)
        assert all(ax.has_data() for ax in fig.axes)
        matplotlib.pyplot.close(fig)
