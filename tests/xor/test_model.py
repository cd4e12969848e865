"""The linear and erf attention kinds: definitions, exact pullbacks (against autograd), batching,
dtype, numerical stability, and the closed-form population loss and gradient for them."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import sxor
from sxor.xor.model import attention_kind
from sxor.xor.reference import autograd_grad, enumerated_loss
from sxor.xor.sweeps import random_instances

NEW_KINDS = ["linear", "erf"]


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_new_kinds_are_registered_with_descriptions():
    for kind in NEW_KINDS:
        assert kind in sxor.ATTENTION_KINDS
        assert len(sxor.ATTENTION_KINDS[kind].description) > 20


def test_linear_weights_match_their_definition_and_sum_to_one():
    s = torch.tensor([[0.3, -0.2, 0.5, 0.0]], dtype=torch.float64)
    w = attention_kind("linear").weights(s)
    expected = (1 + s - s.mean()) / 4
    torch.testing.assert_close(w, expected)
    torch.testing.assert_close(w.sum(-1), torch.ones(1, dtype=torch.float64))


def test_linear_is_the_first_order_expansion_of_softmax():
    s = 1e-4 * torch.randn(3, 7, generator=gen(), dtype=torch.float64)
    lin = attention_kind("linear").weights(s)
    soft = torch.softmax(s, -1)
    assert float((lin - soft).abs().max()) < 1e-8  # error O(|s|^2 / d)


def test_erf_weights_match_their_definition_elementwise():
    s = torch.tensor([[0.3, -0.2, 1.5, -2.0]], dtype=torch.float64)
    w = attention_kind("erf").weights(s)
    raw = 1 + torch.erf(s)
    torch.testing.assert_close(w, raw / raw.sum(-1, keepdim=True))


def test_erf_weights_stay_finite_where_one_plus_erf_underflows():
    # 1 + erf(-40) underflows to 0 in float64; the log-space evaluation keeps the ratio.
    s = torch.tensor([-40.0, -41.0], dtype=torch.float64)
    w = attention_kind("erf").weights(s)
    assert bool(torch.isfinite(w).all()) and float(w[0]) > 0.99
    torch.testing.assert_close(w.sum(), torch.tensor(1.0, dtype=torch.float64))


@pytest.mark.parametrize("kind", NEW_KINDS)
@pytest.mark.parametrize("scale", [0.3, 3.0, 30.0])
def test_pullback_equals_autograd_vjp(kind, scale):
    phi = attention_kind(kind)
    s = (scale * torch.randn(4, 9, generator=gen(1), dtype=torch.float64)).requires_grad_(True)
    u = torch.randn(4, 9, generator=gen(2), dtype=torch.float64)
    w = phi.weights(s)
    (expected,) = torch.autograd.grad((w * u).sum(), s)
    torch.testing.assert_close(
        phi.pullback(s.detach(), w.detach(), u), expected, atol=1e-12, rtol=1e-9
    )


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_weights_are_batched_and_keep_dtype(kind):
    V = sxor.sphere_embeddings(6, 3, batch=(2, 5), generator=gen())
    theta = torch.randn(5, 3, generator=gen(1), dtype=torch.float64)
    w = sxor.attention(V, theta, kind)
    assert w.shape == (2, 5, 6)
    for i in range(2):
        for j in range(5):
            torch.testing.assert_close(w[i, j], sxor.attention(V[i, j], theta[j], kind))
    assert sxor.attention(V.float(), theta.float(), kind).dtype == torch.float32


def test_unknown_kind_raises_a_named_error():
    V = sxor.sphere_embeddings(4, 2, generator=gen())
    with pytest.raises(ValueError, match="unknown attention kind"):
        sxor.attention(V, V[0], "cosine")


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_population_loss_equals_enumeration(kind):
    inst = random_instances(3, 8, 4, seed=3)
    theta, theta_tilde = 2 * inst.theta0, -inst.theta0 + 0.5
    closed = sxor.population_loss(inst.V, theta, theta_tilde, inst.support, kind)
    for k in range(3):
        exact = enumerated_loss(inst.V[k], theta[k], theta_tilde[k], inst.support[k], kind)
        torch.testing.assert_close(closed[k], exact, atol=1e-12, rtol=1e-10)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(2, 7))
def test_closed_form_loss_holds_for_arbitrary_weight_vectors(seed, d):
    # Nothing in the fourth-moment computation uses sum(g) = 1: any real g, h work.
    g = torch.randn(d, generator=gen(seed), dtype=torch.float64) * 3
    h = torch.randn(d, generator=gen(seed + 1), dtype=torch.float64) * 3
    support = torch.tensor([0, d - 1])
    x = sxor.all_inputs(d)
    y = sxor.sparse_xor_labels(x, support)
    exact = 0.5 * ((sxor.predict_from_weights(x, g, h) - y) ** 2).mean()
    torch.testing.assert_close(sxor.loss_from_weights(g, h, support), exact, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_population_grad_equals_autograd(kind):
    inst = random_instances(4, 10, 5, seed=7)
    theta, theta_tilde = 3 * inst.theta0, -2 * inst.theta0
    grads = sxor.population_grad(inst.V, theta, theta_tilde, inst.support, kind)
    expected = autograd_grad(
        lambda a, b: sxor.population_loss(inst.V, a, b, inst.support, kind), theta, theta_tilde
    )
    for got, want in zip(grads, expected):
        torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-9)


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_one_step_accepts_the_kind_and_matches_a_manual_step(kind):
    inst = random_instances(3, 12, 6, seed=11)
    eta = 50.0
    out = sxor.one_step(inst.V, inst.theta0, inst.support, eta, kind)
    grad, grad_tilde = sxor.population_grad(inst.V, inst.theta0, -inst.theta0, inst.support, kind)
    torch.testing.assert_close(out.theta, inst.theta0 - eta * grad)
    torch.testing.assert_close(out.theta_tilde, -inst.theta0 - eta * grad_tilde)
    torch.testing.assert_close(
        out.loss, sxor.population_loss(inst.V, out.theta, out.theta_tilde, inst.support, kind)
    )


def test_erf_gradient_is_finite_for_huge_scores():
    inst = random_instances(2, 6, 3, seed=0)
    g1, g2 = sxor.population_grad(
        inst.V, 1e4 * inst.theta0, -1e4 * inst.theta0, inst.support, "erf"
    )
    assert bool(torch.isfinite(g1).all()) and bool(torch.isfinite(g2).all())
    assert not math.isnan(
        float(sxor.population_loss(inst.V, 1e4 * inst.theta0, -inst.theta0, inst.support, "erf")[0])
    )
