"""Unit tests of the Part I core: shapes, batching, dtype, device, bad input, and correctness of
the closed forms against exact enumeration and autograd."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import sxor
from sxor.xor.reference import autograd_grad, enumerated_loss, monte_carlo_loss
from sxor.xor.sweeps import random_instances


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --- data -------------------------------------------------------------------------------------


def test_sphere_embeddings_are_unit_rows_with_requested_shape_and_dtype():
    V = sxor.sphere_embeddings(7, 3, generator=gen(), batch=(2,))
    assert V.shape == (2, 7, 3) and V.dtype == torch.float64
    torch.testing.assert_close(V.norm(dim=-1), torch.ones(2, 7, dtype=torch.float64))
    assert sxor.sphere_embeddings(4, 2, dtype=torch.float32).dtype == torch.float32


def test_sphere_embeddings_are_uniform_on_the_sphere():
    # E[v v^T] = I / m for the uniform distribution on S^(m-1).
    V = sxor.sphere_embeddings(20000, 4, generator=gen(1))
    second_moment = V.T @ V / V.shape[0]
    torch.testing.assert_close(
        second_moment, torch.eye(4, dtype=torch.float64) / 4, atol=0.01, rtol=0
    )


def test_sample_sparse_xor_labels_and_balance():
    x, y = sxor.sample_sparse_xor(4000, 6, (1, 4), generator=gen())
    assert x.shape == (4000, 6) and y.shape == (4000,)
    assert set(x.unique().tolist()) == {-1.0, 1.0}
    torch.testing.assert_close(y, -x[:, 1] * x[:, 4])
    assert abs(x.mean().item()) < 0.05 and abs(y.mean().item()) < 0.05


def test_all_inputs_enumerates_the_hypercube():
    x = sxor.all_inputs(4)
    assert x.shape == (16, 4)
    assert len({tuple(row) for row in x.tolist()}) == 16


def test_random_support_is_a_pair_of_distinct_positions():
    s = sxor.random_support(5, batch=(1000,), generator=gen())
    assert s.shape == (1000, 2)
    assert bool((s[:, 0] != s[:, 1]).all()) and int(s.min()) >= 0 and int(s.max()) < 5
    assert len({tuple(p) for p in s.tolist()}) == 20  # every ordered pair occurs


# --- model ------------------------------------------------------------------------------------


def test_attention_is_softmax_of_scores():
    V = sxor.sphere_embeddings(5, 3, generator=gen())
    theta = torch.randn(3, generator=gen(1), dtype=torch.float64)
    torch.testing.assert_close(sxor.attention(V, theta), torch.softmax(V @ theta, -1))


def test_predict_matches_its_definition_and_batches():
    V = sxor.sphere_embeddings(5, 3, generator=gen(), batch=(4,))
    theta, theta_t = torch.randn(2, 4, 3, generator=gen(1), dtype=torch.float64)
    x = sxor.all_inputs(5)
    out = sxor.predict(x, V, theta, theta_t)
    assert out.shape == (4, 32)
    g, h = sxor.attention(V, theta), sxor.attention(V, theta_t)
    torch.testing.assert_close(out[2], -(x @ g[2]) * (x @ h[2]))


# --- closed form vs references ----------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    d=st.integers(2, 7),
    m=st.integers(1, 5),
    seed=st.integers(0, 2**31 - 1),
    scale=st.sampled_from([0.1, 1.0, 10.0]),
)
def test_closed_form_loss_and_grad_equal_exact_enumeration(d, m, seed, scale):
    g = gen(seed)
    V = sxor.sphere_embeddings(d, m, generator=g)
    theta = scale * torch.randn(m, generator=g, dtype=torch.float64)
    theta_t = scale * torch.randn(m, generator=g, dtype=torch.float64)
    support = sxor.random_support(d, generator=g)
    closed = sxor.population_loss(V, theta, theta_t, support)
    exact = enumerated_loss(V, theta, theta_t, support)
    assert abs(closed.item() - exact.item()) < 1e-12
    grads = sxor.population_grad(V, theta, theta_t, support)
    refs = autograd_grad(lambda a, b: enumerated_loss(V, a, b, support), theta, theta_t)
    for got, ref in zip(grads, refs):
        torch.testing.assert_close(got, ref, atol=1e-12, rtol=1e-9)


@settings(max_examples=30, deadline=None)
@given(d=st.integers(2, 8), seed=st.integers(0, 2**31 - 1))
def test_loss_from_weights_holds_for_arbitrary_weight_vectors(d, seed):
    # The fourth-moment formula never uses sum(g) = 1 or g >= 0.
    g = gen(seed)
    w, w_t = torch.randn(2, d, generator=g, dtype=torch.float64)
    support = sxor.random_support(d, generator=g)
    x = sxor.all_inputs(d)
    y = sxor.sparse_xor_labels(x, support)
    exact = 0.5 * ((sxor.predict_from_weights(x, w, w_t) - y) ** 2).mean()
    assert abs(sxor.loss_from_weights(w, w_t, support).item() - exact.item()) < 1e-12
    dg, dh = sxor.grad_from_weights(w, w_t, support)
    ag, ah = autograd_grad(lambda a, b: sxor.loss_from_weights(a, b, support), w, w_t)
    torch.testing.assert_close(dg, ag)
    torch.testing.assert_close(dh, ah)


def test_monte_carlo_agrees_within_error_bars():
    inst = random_instances(1, 12, 4, seed=3)
    theta_t = -inst.theta0
    exact = sxor.population_loss(inst.V, inst.theta0, theta_t, inst.support)
    est, se = monte_carlo_loss(
        inst.V[0], inst.theta0[0], theta_t[0], inst.support[0], 200_000, generator=gen(5)
    )
    assert abs(est.item() - exact.item()) < 5 * se.item()


def test_batched_equals_per_instance():
    inst = random_instances(5, 9, 3, seed=11)
    theta_t = torch.randn(5, 3, generator=gen(2), dtype=torch.float64)
    batched = sxor.population_loss(inst.V, inst.theta0, theta_t, inst.support)
    grads = sxor.population_grad(inst.V, inst.theta0, theta_t, inst.support)
    for k in range(5):
        single = sxor.population_loss(inst.V[k], inst.theta0[k], theta_t[k], inst.support[k])
        assert batched[k].item() == pytest.approx(single.item(), abs=1e-15)
        single_grad = sxor.population_grad(inst.V[k], inst.theta0[k], theta_t[k], inst.support[k])
        torch.testing.assert_close(grads[0][k], single_grad[0])


def test_shared_embeddings_broadcast_over_many_queries():
    V = sxor.sphere_embeddings(6, 3, generator=gen())
    theta = torch.randn(10, 3, generator=gen(1), dtype=torch.float64)
    loss = sxor.population_loss(V, theta, -theta, torch.tensor([0, 3]))
    assert loss.shape == (10,)


def test_float32_close_to_float64():
    inst = random_instances(3, 16, 4, seed=0)
    l64 = sxor.population_loss(inst.V, inst.theta0, -inst.theta0, inst.support)
    l32 = sxor.population_loss(
        inst.V.float(), inst.theta0.float(), -inst.theta0.float(), inst.support
    )
    assert l32.dtype == torch.float32
    torch.testing.assert_close(l32.double(), l64, atol=1e-6, rtol=0)


# --- one step ---------------------------------------------------------------------------------


def test_one_step_is_a_gradient_step_from_the_antisymmetric_init():
    inst = random_instances(4, 10, 3, seed=7)
    eta = 123.0
    res = sxor.one_step(inst.V, inst.theta0, inst.support, eta)
    g, g_t = sxor.population_grad(inst.V, inst.theta0, -inst.theta0, inst.support)
    torch.testing.assert_close(res.theta, inst.theta0 - eta * g)
    torch.testing.assert_close(res.theta_tilde, -inst.theta0 - eta * g_t)
    torch.testing.assert_close(
        res.loss, sxor.population_loss(inst.V, res.theta, res.theta_tilde, inst.support)
    )
    torch.testing.assert_close(res.attention, sxor.attention(inst.V, res.theta))


def test_one_step_accepts_per_instance_step_sizes():
    inst = random_instances(3, 10, 3, seed=7)
    eta = torch.tensor([0.0, 1e3, 1e6], dtype=torch.float64)
    res = sxor.one_step(inst.V, inst.theta0, inst.support, eta)
    torch.testing.assert_close(res.theta[0], inst.theta0[0])
    assert res.loss.shape == (3,)


@pytest.mark.parametrize("eta", [1e8, 1e10, 1e12])
def test_one_step_stays_finite_for_huge_steps(eta):
    inst = random_instances(8, 64, 8, seed=1)
    res = sxor.one_step(inst.V, inst.theta0, inst.support, eta)
    for t in res:
        assert bool(torch.isfinite(t).all())
    assert bool(((res.loss >= -1e-12) & (res.loss <= 1.0)).all())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cuda_matches_cpu():
    inst = random_instances(4, 32, 4, seed=0)
    cpu = sxor.one_step(inst.V, inst.theta0, inst.support, 1e4)
    gpu = sxor.one_step(inst.V.cuda(), inst.theta0.cuda(), inst.support.cuda(), 1e4)
    torch.testing.assert_close(gpu.loss.cpu(), cpu.loss)


def test_default_device_is_cuda_exactly_when_available():
    assert sxor.default_device().type == ("cuda" if torch.cuda.is_available() else "cpu")


# --- bad input --------------------------------------------------------------------------------


def test_bad_dimensions_raise():
    with pytest.raises(ValueError, match="d must be"):
        sxor.sphere_embeddings(1, 3)
    with pytest.raises(ValueError, match="m must be"):
        sxor.sphere_embeddings(4, 0)
    with pytest.raises(ValueError, match="d must be"):
        sxor.sample_sparse_xor(10, 1, (0, 0))


@pytest.mark.parametrize(
    "support, message",
    [
        ((0, 0), "i\\* != j\\*"),
        ((0, 5), "out of range"),
        ((-1, 2), "out of range"),
        ((0, 1, 2), "last dimension 2"),
    ],
)
def test_bad_support_raises(support, message):
    V = sxor.sphere_embeddings(5, 2, generator=gen())
    theta = torch.zeros(2, dtype=torch.float64)
    with pytest.raises(ValueError, match=message):
        sxor.population_loss(V, theta, theta, torch.tensor(support))


def test_float_support_raises():
    V = sxor.sphere_embeddings(5, 2, generator=gen())
    theta = torch.zeros(2, dtype=torch.float64)
    with pytest.raises(ValueError, match="integer"):
        sxor.population_grad(V, theta, theta, torch.tensor([0.0, 1.0]))


def test_mismatched_shapes_raise():
    V = sxor.sphere_embeddings(5, 3, generator=gen())
    with pytest.raises(ValueError, match="m=3"):
        sxor.attention(V, torch.zeros(4, dtype=torch.float64))
    theta = torch.zeros(2, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match="broadcast"):
        sxor.population_loss(V, theta, theta, torch.tensor([[0, 1]] * 3))
    with pytest.raises(ValueError, match="d=5"):
        sxor.predict(torch.ones(2, 4, dtype=torch.float64), V, theta[0], theta[0])


def test_non_finite_values_raise():
    V = sxor.sphere_embeddings(5, 3, generator=gen())
    theta = torch.tensor([0.0, math.nan, 0.0], dtype=torch.float64)
    with pytest.raises(ValueError, match="non-finite"):
        sxor.attention(V, theta)
    with pytest.raises(ValueError, match="eta"):
        sxor.one_step(V, torch.zeros(3, dtype=torch.float64), torch.tensor([0, 1]), math.inf)
    with pytest.raises(ValueError, match="non-negative"):
        sxor.one_step(V, torch.zeros(3, dtype=torch.float64), torch.tensor([0, 1]), -1.0)


def test_unknown_attention_kind_raises():
    V = sxor.sphere_embeddings(5, 3, generator=gen())
    with pytest.raises(ValueError, match="unknown attention kind"):
        sxor.attention(V, torch.zeros(3, dtype=torch.float64), kind="nope")
