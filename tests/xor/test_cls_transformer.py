"""The CLS-token transformer equals the simplified model, value for value and gradient for gradient."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import sxor
from sxor.xor.cls_transformer import (
    CLSWeights,
    attention_mask,
    cls_enumerated_loss,
    cls_forward,
    cls_weights,
    head_outputs,
    queries,
    readout,
    token_embeddings,
)


def _draw(d, m, seed, batch=()):
    g = torch.Generator().manual_seed(seed)
    V = sxor.sphere_embeddings(d, m, batch=batch, generator=g)
    theta = 2 * torch.randn(*batch, m, generator=g, dtype=torch.float64)
    theta_tilde = 2 * torch.randn(*batch, m, generator=g, dtype=torch.float64)
    return g, V, theta, theta_tilde


@settings(max_examples=25, deadline=None)
@given(d=st.integers(2, 12), m=st.integers(1, 8), seed=st.integers(0, 10_000))
def test_transformer_equals_the_simplified_model(d, m, seed):
    g, V, theta, theta_tilde = _draw(d, m, seed)
    x, _ = sxor.sample_sparse_xor(64, d, (0, 1), generator=g)
    out = cls_forward(x, V, cls_weights(theta, theta_tilde))
    torch.testing.assert_close(out, sxor.predict(x, V, theta, theta_tilde), rtol=0, atol=1e-14)


def test_batched_weights_and_embeddings():
    _, V, theta, theta_tilde = _draw(7, 4, 1, batch=(3,))
    x = sxor.all_inputs(7)[:20]
    out = cls_forward(x, V, cls_weights(theta, theta_tilde))
    assert out.shape == (3, 20)
    for k in range(3):
        torch.testing.assert_close(
            out[k], sxor.predict(x, V[k], theta[k], theta_tilde[k]), rtol=0, atol=1e-14
        )


def test_float32_runs_in_float32():
    _, V, theta, theta_tilde = _draw(6, 3, 2)
    V, theta, theta_tilde = V.float(), theta.float(), theta_tilde.float()
    x = sxor.all_inputs(6, dtype=torch.float32)
    out = cls_forward(x, V, cls_weights(theta, theta_tilde))
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, sxor.predict(x, V, theta, theta_tilde), rtol=0, atol=1e-5)


def test_structure_of_tokens_mask_and_weights():
    _, V, theta, theta_tilde = _draw(5, 3, 3)
    x = torch.tensor([[1.0, -1.0, -1.0, 1.0, 1.0]], dtype=torch.float64)
    Z = token_embeddings(x, V)[0]
    assert Z.shape == (6, 6)
    assert torch.equal(Z[0], torch.tensor([0, 0, 0, 0, 0, 1.0], dtype=torch.float64))
    torch.testing.assert_close(Z[1:, :3], V)
    assert torch.equal(Z[1:, 3] - Z[1:, 4], x[0])  # one-hot bits: value W_V z_i = x_i
    mask = attention_mask(5)
    assert not mask[:, 0].any() and mask[:, 1:].all()
    w = cls_weights(theta, theta_tilde)
    th, tt = queries(w)
    assert torch.equal(th, theta) and torch.equal(tt, theta_tilde)
    assert torch.equal(
        w.W_Q[..., :-1], torch.zeros(2, 3, 5, dtype=torch.float64)
    )  # only the CLS column
    keys = Z @ w.W_K[0].T
    torch.testing.assert_close(keys[1:], V)  # keys: position only


def test_head_outputs_are_the_attention_averages_of_the_bits():
    _, V, theta, theta_tilde = _draw(9, 4, 4)
    x = sxor.all_inputs(9)[::37]
    o = head_outputs(x, V, cls_weights(theta, theta_tilde))
    torch.testing.assert_close(o[:, 0], x @ sxor.attention(V, theta), rtol=0, atol=1e-14)
    torch.testing.assert_close(o[:, 1], x @ sxor.attention(V, theta_tilde), rtol=0, atol=1e-14)


@given(a=st.floats(-3, 3), b=st.floats(-3, 3))
def test_readout_is_minus_the_product(a, b):
    o = torch.tensor([a, b], dtype=torch.float64)
    assert abs(float(readout(o)) + a * b) <= 1e-12 * (1 + abs(a * b))


@pytest.mark.parametrize("seed", range(4))
def test_query_gradient_reduces_to_the_simplified_gradient(seed):
    d, m = 8, 5
    _, V, theta, theta_tilde = _draw(d, m, seed)
    support = sxor.random_support(d, generator=torch.Generator().manual_seed(seed))
    w = cls_weights(theta, theta_tilde)
    W_Q = w.W_Q.clone().requires_grad_(True)
    torch.testing.assert_close(
        cls_enumerated_loss(V, w, support), sxor.population_loss(V, theta, theta_tilde, support)
    )
    (grad_WQ,) = torch.autograd.grad(
        cls_enumerated_loss(V, CLSWeights(W_Q, w.W_K, w.W_V), support), W_Q
    )
    grad, grad_tilde = sxor.population_grad(V, theta, theta_tilde, support)
    torch.testing.assert_close(grad_WQ[0, :, -1], grad, rtol=0, atol=1e-14)
    torch.testing.assert_close(grad_WQ[1, :, -1], grad_tilde, rtol=0, atol=1e-14)
    assert torch.equal(grad_WQ[..., :-1], torch.zeros_like(grad_WQ[..., :-1]))


def test_bad_input_raises():
    _, V, theta, theta_tilde = _draw(5, 3, 0)
    w = cls_weights(theta, theta_tilde)
    with pytest.raises(ValueError, match="last dimension"):
        cls_forward(torch.ones(2, 4, dtype=torch.float64), V, w)
    with pytest.raises(ValueError, match=r"\{\+1, -1\}"):
        cls_forward(torch.zeros(2, 5, dtype=torch.float64), V, w)
    with pytest.raises(ValueError, match="theta_tilde"):
        cls_weights(theta, torch.zeros(4, dtype=torch.float64))
    with pytest.raises(ValueError, match="token dimension"):
        cls_forward(
            torch.ones(2, 5, dtype=torch.float64), V, cls_weights(theta[:2], theta_tilde[:2])
        )
