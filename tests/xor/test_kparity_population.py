"""The closed-form population loss of k heads on k-sparse parity (sixth moments for k = 3,
eighth for k = 4) against exact enumeration, autograd and Monte Carlo."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from sxor.xor.data import all_inputs
from sxor.xor.kparity import parity_labels, parity_population_loss, parity_predict
from sxor.xor.kparity_population import (
    even_partitions,
    kparity_grad_from_weights,
    kparity_loss_from_weights,
    kparity_population_grad,
    kparity_population_loss,
    moment_formula,
    moment_polynomial,
    product_second_moment,
    rademacher_cumulant,
)
from sxor.xor.population import loss_from_weights
from sxor.xor.sweeps import random_instances


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def enumerated(weights: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    x = all_inputs(weights.shape[-1])
    return 0.5 * ((parity_predict(x, weights) - parity_labels(x, support)) ** 2).mean(-1)


def scale(weights: torch.Tensor) -> torch.Tensor:
    """A bound on |f| and on the terms of the closed form: 1 + prod_r ||gamma_r||_1^2."""
    return 1 + (weights.abs().sum(-1) ** 2).prod(-1)


def adversarial(k: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights that stress the corrections for coinciding indices: one-hot heads on a permutation
    of the targets and on collisions, identical heads, uniform heads, zero, huge and tiny
    magnitudes, signed weights concentrated on the support."""
    support = torch.arange(k)
    eye = torch.eye(d, dtype=torch.float64)
    cases = [
        eye[support],  # one head per target: loss 0
        eye[torch.zeros(k, dtype=torch.long)],  # all heads on one target
        eye[torch.tensor([0] * (k - 1) + [k - 1])],  # a collision
        eye[torch.full((k,), d - 1)],  # all heads off the support, on one position
        torch.full((k, d), 1.0 / d, dtype=torch.float64),
        torch.zeros(k, d, dtype=torch.float64),
        1e3 * eye[support] + 1e-3,
        1e-8 * torch.ones(k, d, dtype=torch.float64),
        torch.linspace(-1, 1, d, dtype=torch.float64).expand(k, d).clone(),  # identical heads
    ]
    signed = torch.zeros(k, d, dtype=torch.float64)
    signed[:, :k] = torch.tensor(
        [(-1.0) ** (r + t) * (r + 1) for r in range(k) for t in range(k)]
    ).view(k, k)
    cases.append(signed)
    return torch.stack(cases), support.expand(len(cases), k)


# --- the moments --------------------------------------------------------------------------------


def test_rademacher_cumulants_are_the_log_cosh_coefficients():
    assert [rademacher_cumulant(n) for n in range(1, 9)] == [0, 1, 0, -2, 0, 16, 0, -272]
    with pytest.raises(ValueError, match="positive integer"):
        rademacher_cumulant(0)


def test_even_partitions_count_and_the_sixth_moment_structure():
    # 15 pairings + 15 (4, 2) splits + 1 block of six
    parts = even_partitions(6)
    sizes = sorted(tuple(sorted(len(b) for b in p)) for p in parts)
    assert len(parts) == 31 and sizes.count((2, 2, 2)) == 15 and sizes.count((2, 4)) == 15
    assert [len(even_partitions(2 * k)) for k in range(1, 5)] == [1, 4, 31, 379]
    with pytest.raises(ValueError, match="even integer"):
        even_partitions(3)


@pytest.mark.parametrize("n, values", [(4, 4), (6, 4), (5, 3)])
def test_moment_formula_matches_the_direct_rule_on_every_index_tuple(n, values):
    for idx in itertools.product(range(values), repeat=n):
        direct = int(all(idx.count(v) % 2 == 0 for v in set(idx)))
        assert moment_formula(idx) == direct, idx


def test_the_k3_polynomial_is_the_one_of_the_theorem():
    monomials, terms = moment_polynomial(3)
    named = {tuple(sorted("".join(map(str, monomials[i])) for i in t)): a for a, t in terms}
    assert named == {
        ("002", "020", "200"): 1,
        ("011", "011", "200"): 2,
        ("022", "200"): -2,
        ("020", "101", "101"): 2,
        ("020", "202"): -2,
        ("002", "110", "110"): 2,
        ("002", "220"): -2,
        ("011", "101", "110"): 8,
        ("011", "211"): -8,
        ("110", "112"): -8,
        ("101", "121"): -8,
        ("222",): 16,
    }


# --- against enumeration --------------------------------------------------------------------------


@pytest.mark.parametrize("d", range(3, 15))
def test_k3_loss_matches_enumeration_for_every_d_up_to_14(d):
    g = gen(d)
    inst = random_instances(4, d, 3, seed=d)
    thetas = 3 * torch.randn(4, 3, 3, generator=g, dtype=torch.float64)
    support = torch.stack([torch.randperm(d, generator=g)[:3] for _ in range(4)])
    closed = kparity_population_loss(inst.V, thetas, support)
    exact = parity_population_loss(inst.V, thetas, support)
    assert float((closed - exact).abs().max()) < 1e-13
    signed = torch.randn(5, 3, d, generator=g, dtype=torch.float64)
    sup5 = torch.stack([torch.randperm(d, generator=g)[:3] for _ in range(5)])
    err = (kparity_loss_from_weights(signed, sup5) - enumerated(signed, sup5)).abs()
    assert bool((err < 1e-13 * scale(signed)).all())
    w, sup = adversarial(3, d)
    err = (kparity_loss_from_weights(w, sup) - enumerated(w, sup)).abs()
    assert bool((err < 1e-13 * scale(w)).all()), err


def test_adversarial_values_are_the_exact_ones():
    w, sup = adversarial(3, 6)
    loss = kparity_loss_from_weights(w, sup)
    # a permutation: 0; a collision or all heads on one or off-support position: f = -x_i, L = 1
    torch.testing.assert_close(loss[:4], torch.tensor([0.0, 1.0, 1.0, 1.0], dtype=torch.float64))
    assert float(loss[5]) == 0.5  # zero heads: f = 0


@pytest.mark.parametrize("d", [4, 6, 9, 12])
def test_k4_loss_matches_enumeration(d):
    g = gen(100 + d)
    w = torch.softmax(2 * torch.randn(3, 4, d, generator=g, dtype=torch.float64), -1)
    w = torch.cat([w, torch.randn(3, 4, d, generator=g, dtype=torch.float64), adversarial(4, d)[0]])
    sup = torch.stack([torch.randperm(d, generator=g)[:4] for _ in range(len(w))])
    sup[6:] = torch.arange(4)
    err = (kparity_loss_from_weights(w, sup) - enumerated(w, sup)).abs()
    assert bool((err < 1e-12 * scale(w)).all()), err


def test_k2_is_the_two_head_closed_form_and_k1_is_exact():
    g = gen(3)
    w = torch.randn(6, 2, 9, generator=g, dtype=torch.float64)
    sup = torch.stack([torch.randperm(9, generator=g)[:2] for _ in range(6)])
    torch.testing.assert_close(
        kparity_loss_from_weights(w, sup),
        loss_from_weights(w[:, 0], w[:, 1], sup),
        rtol=0,
        atol=1e-13,
    )
    w1, s1 = w[:, :1], sup[:, :1]
    torch.testing.assert_close(
        kparity_loss_from_weights(w1, s1), enumerated(w1, s1), rtol=0, atol=1e-13
    )


# --- the gradient ---------------------------------------------------------------------------------


@pytest.mark.parametrize("k, d", [(3, 3), (3, 7), (3, 12), (4, 8), (2, 10)])
def test_gradient_matches_autograd_of_the_enumerated_loss(k, d):
    g = gen(7 * d + k)
    inst = random_instances(3, d, 4, seed=d)
    thetas = 2 * torch.randn(3, k, 4, generator=g, dtype=torch.float64)
    support = torch.stack([torch.randperm(d, generator=g)[:k] for _ in range(3)])
    loss, grad = kparity_population_grad(inst.V, thetas, support)
    th = thetas.clone().requires_grad_(True)
    exact = parity_population_loss(inst.V, th, support)
    (auto,) = torch.autograd.grad(exact.sum(), th)
    assert float((loss - exact.detach()).abs().max()) < 1e-13
    assert float((grad - auto).abs().max()) < 1e-12 * (1 + float(auto.abs().max()))
    w = torch.randn(3, k, d, generator=g, dtype=torch.float64, requires_grad=True)
    (auto_w,) = torch.autograd.grad(enumerated(w, support).sum(), w)
    _, grad_w = kparity_grad_from_weights(w.detach(), support)
    assert float((grad_w - auto_w).abs().max()) < 1e-12 * float(scale(w.detach()).max())


# --- against Monte Carlo at d = 2^12 ------------------------------------------------------------


def monte_carlo(w: torch.Tensor, support: torch.Tensor, n: int, seed: int) -> tuple[float, float]:
    """Mean and standard error of (1/2)(f - y)^2 over n uniform inputs (chunks of 2000)."""
    g = gen(seed)
    vals = []
    for start in range(0, n, 2000):
        b = min(2000, n - start)
        x = torch.randint(0, 2, (b, w.shape[-1]), generator=g).to(torch.float64) * 2 - 1
        vals.append(0.5 * (parity_predict(x, w) - parity_labels(x, support)) ** 2)
    v = torch.cat(vals)
    return float(v.mean()), float(v.std() / math.sqrt(n))


def test_k3_loss_agrees_with_monte_carlo_at_d_4096_within_5_standard_errors():
    """A weak check, by design: at this sample size an error that moves the loss by a few
    standard errors would pass (changing the coefficient -8 of ``p_st T_r`` to -6 moves it by
    about 4 standard errors). Correctness rests on the enumeration tests up to d = 14 above;
    this test only guards the scale d = 2^12, where enumeration is impossible."""
    d, n = 2**12, 60_000
    g = gen(12)
    support = torch.tensor([5, 700, 3001])
    w = torch.randn(3, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    w[0, 5] += 0.6
    w[1, 700] += 0.6
    w[2, 3001] += 0.6
    w[:, 5] += 0.5  # all heads share a large weight: the coinciding-index corrections matter
    closed = float(kparity_loss_from_weights(w, support))
    mean, se = monte_carlo(w, support, n, seed=1)
    assert abs(closed - mean) < 5 * se
    # the test has power: the Gaussian (pairings-only) value, without the kappa_4 and kappa_6
    # corrections, lies many standard errors away
    monomials, terms = moment_polynomial(3)
    S = {
        c: float((w ** torch.tensor(c, dtype=torch.float64).unsqueeze(-1)).prod(0).sum())
        for c in monomials
    }
    gaussian = sum(a * math.prod(S[monomials[i]] for i in t) for a, t in terms if a > 0)
    perm = (
        float(kparity_loss_from_weights(w, support)) - 0.5 * float(product_second_moment(w)) - 0.5
    )
    assert abs(0.5 * gaussian + perm + 0.5 - mean) > 20 * se


# --- batching, dtype, bad input -----------------------------------------------------------------


def test_broadcasting_float32_and_bad_input():
    g = gen(5)
    w = torch.rand(2, 3, 3, 8, generator=g, dtype=torch.float64)
    sup = torch.tensor([1, 4, 6])
    loss, grad = kparity_grad_from_weights(w, sup)
    assert loss.shape == (2, 3) and grad.shape == (2, 3, 3, 8)
    loss32 = kparity_loss_from_weights(w.float(), sup)
    assert loss32.dtype == torch.float32 and float((loss32.double() - loss).abs().max()) < 1e-5
    with pytest.raises(ValueError, match="one head per support position"):
        kparity_loss_from_weights(w, torch.tensor([1, 4]))
    with pytest.raises(ValueError, match="pairwise distinct"):
        kparity_loss_from_weights(w, torch.tensor([1, 4, 4]))
    with pytest.raises(ValueError, match="1 <= k <= 5"):
        kparity_loss_from_weights(torch.rand(6, 8, dtype=torch.float64), torch.arange(6))
    with pytest.raises(TypeError, match="real floating"):
        kparity_loss_from_weights(torch.ones(3, 8, dtype=torch.long), sup)
    with pytest.raises(TypeError, match=r"torch\.Tensor"):
        kparity_loss_from_weights([[0.5]], sup)
    inst = random_instances(1, 8, 3, seed=0)
    with pytest.raises(ValueError, match="last dimension"):
        kparity_population_loss(inst.V[0], torch.zeros(3, 4, dtype=torch.float64), sup)
    with pytest.raises(ValueError, match="non-finite"):
        kparity_population_grad(inst.V[0], torch.full((3, 3), math.nan, dtype=torch.float64), sup)


def test_monte_carlo_error_bars_are_calibrated_at_d_4096():
    # 30 independent small Monte Carlo runs: their deviations from the closed form, in units of
    # their own standard errors, must look standard normal (mean near 0, spread near 1)
    d = 2**12
    g = gen(13)
    support = torch.tensor([1, 2000, 4000])
    w = torch.randn(3, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    for r, pos in enumerate(support.tolist()):
        w[r, pos] += 0.7
    closed = float(kparity_loss_from_weights(w, support))
    z, means, ses = [], [], []
    for rep in range(30):
        mean, se = monte_carlo(w, support, 2000, seed=100 + rep)
        z.append((mean - closed) / se)
        means.append(mean)
        ses.append(se)
    zt = torch.tensor(z)
    # the 30 runs pooled (60000 inputs): within 4 of their pooled standard errors
    pooled_se = math.sqrt(sum(s * s for s in ses)) / len(ses)
    assert abs(sum(means) / len(means) - closed) < 4 * pooled_se
    # 0.18 is one standard error of the mean of 30 z-scores; a ratio of a mean and a standard
    # error of heavy-tailed samples is skewed, hence the wider bound
    assert abs(float(zt.mean())) < 0.8
    assert 0.6 < float(zt.std()) < 1.5
