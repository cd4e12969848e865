"""Tests of sxor.interp.layers: exact path, float path, ties, batching, bad input."""

from __future__ import annotations

import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import torch

from sxor.interp import (
    as_exact,
    attention_weights,
    feed_forward,
    hausdorff,
    hausdorff_squared,
    self_attention,
)


def rand_frac(rng: random.Random, lo: int = -5, hi: int = 5, den: int = 7) -> Fraction:
    return Fraction(rng.randint(lo * den, hi * den), rng.randint(1, den))


def rand_matrix(rng: random.Random, *shape: int) -> np.ndarray:
    out = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        out[idx] = rand_frac(rng)
    return out


def all_fractions(a: np.ndarray) -> bool:
    return a.dtype == object and all(isinstance(v, Fraction) for v in a.flat)


# ---- independent references: plain Python loops over the definitions ------------------------


def ref_feed_forward(X, eta, W, U, b):
    n, d = X.shape
    w = U.shape[0]
    out = []
    for i in range(n):
        h = [max(sum(U[k][j] * X[i][j] for j in range(d)) + b[k], 0) for k in range(w)]
        out.append([eta * X[i][j] + sum(W[j][k] * h[k] for k in range(w)) for j in range(d)])
    return out


def ref_self_attention_hardmax(X, A, rho, V):
    n, d = X.shape
    out = []
    for i in range(n):
        Ax = [sum(A[r][c] * X[i][c] for c in range(d)) for r in range(d)]
        s = [sum(Ax[r] * X[l][r] for r in range(d)) for l in range(n)]
        top = [l for l in range(n) if s[l] == max(s)]
        mean = [sum(X[l][c] for l in top) / len(top) for c in range(d)]
        out.append([rho * X[i][r] + sum(V[r][c] * mean[c] for c in range(d)) for r in range(d)])
    return out


def ref_hausdorff_sq(P, Q):
    def d2(p, q):
        return sum((a - b) ** 2 for a, b in zip(p, q))

    forward = max(min(d2(p, q) for q in Q) for p in P)
    backward = max(min(d2(p, q) for p in P) for q in Q)
    return max(forward, backward)


# ---- exact path ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_feed_forward_exact_matches_reference(seed):
    rng = random.Random(seed)
    n, d, w = rng.randint(1, 6), rng.randint(1, 4), rng.randint(1, 4)
    X, W, U, b = (
        rand_matrix(rng, n, d),
        rand_matrix(rng, d, w),
        rand_matrix(rng, w, d),
        rand_matrix(rng, w),
    )
    eta = rand_frac(rng)
    out = feed_forward(X, eta, W, U, b)
    assert all_fractions(out)
    assert out.tolist() == ref_feed_forward(X, eta, W, U, b)


@pytest.mark.parametrize("seed", range(20))
def test_self_attention_exact_matches_reference(seed):
    rng = random.Random(seed)
    n, d = rng.randint(1, 7), rng.randint(1, 4)
    X, A, V = rand_matrix(rng, n, d), rand_matrix(rng, d, d), rand_matrix(rng, d, d)
    rho = rand_frac(rng)
    out = self_attention(X, A, rho, V)
    assert all_fractions(out)
    assert out.tolist() == ref_self_attention_hardmax(X, A, rho, V)


def test_exact_path_integers_become_fractions():
    X = np.array([[1, 2], [3, 4]], dtype=object)
    I = np.eye(2, dtype=int)
    assert all_fractions(self_attention(X, I, 0, I))
    assert all_fractions(
        feed_forward(X, 1, np.zeros((2, 1), dtype=int), np.zeros((1, 2), dtype=int), [0])
    )
    assert all_fractions(attention_weights(X, I))


@pytest.mark.parametrize(
    "call",
    [
        lambda X, I: self_attention(X, I, 0.5, I),  # float rho
        lambda X, I: self_attention(X, np.eye(2), 0, I),  # float numpy A
        lambda X, I: self_attention(X, I, 0, torch.eye(2, dtype=torch.float64)),  # float tensor V
        lambda X, I: feed_forward(X, 1.0, I, I, [0, 0]),  # float eta
        lambda X, I: feed_forward(
            X, 1, I, I, np.array([0, 0.25], dtype=object)
        ),  # float inside object array
        lambda X, I: self_attention(
            np.array([[Fraction(1), 0.5], [1, 2]], dtype=object), I, 0, I
        ),  # float token
        lambda X, I: hausdorff_squared(X, np.array([[0.5, 1.0]])),  # float set against exact set
    ],
)
def test_float_poisoning_raises(call):
    X = as_exact([[1, 2], [3, Fraction(1, 3)]])
    I = np.eye(2, dtype=int)
    with pytest.raises(ValueError, match=r"float|Fraction"):
        call(X, I)


def test_exact_softmax_raises_clearly():
    X = as_exact([[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="irrational"):
        self_attention(X, np.eye(2, dtype=int), 0, np.eye(2, dtype=int), tau=Fraction(1, 2))


def test_as_exact_accepts_strings_and_rejects_floats():
    assert as_exact(["1/3", 2]).tolist() == [Fraction(1, 3), Fraction(2)]
    with pytest.raises(ValueError, match="float"):
        as_exact([0.1])
    with pytest.raises(ValueError, match="not a rational"):
        as_exact(["pi"])


# ---- ties ------------------------------------------------------------------------------------


def test_hardmax_tie_goes_to_mean_of_tied_set():
    # A = e2 e2^T: scores s_il = y_i y_l. Query (5, 1) ties between (0, 3) and (2, 3): both y = 3.
    X = as_exact([[5, 1], [0, 3], [2, 3], [1, -2]])
    A = as_exact([[0, 0], [0, 1]])
    I = as_exact([[1, 0], [0, 1]])
    pi = attention_weights(X, A)
    assert pi[0].tolist() == [0, Fraction(1, 2), Fraction(1, 2), 0]
    assert self_attention(X, A, 0, I)[0].tolist() == [Fraction(1), Fraction(3)]
    # query (1, -2): the largest y_l * (-2) is at y = -2, only itself
    assert pi[3].tolist() == [0, 0, 0, 1]


def test_hardmax_zero_matrix_is_sequence_mean():
    rng = random.Random(1)
    X = rand_matrix(rng, 5, 3)
    zero = np.zeros((3, 3), dtype=int)
    out = self_attention(X, zero, 0, np.eye(3, dtype=int))
    mean = [sum(X[:, c]) / 5 for c in range(3)]
    assert all(row == mean for row in out.tolist())


def test_hardmax_query_included_in_argmax():
    X = as_exact([[3, 0], [1, 1]])  # <x_0, x_0> = 9 > <x_0, x_1> = 3
    assert attention_weights(X, np.eye(2, dtype=int))[0].tolist() == [1, 0]


def test_float_hardmax_tie_on_representable_scores():
    X = torch.tensor([[5.0, 1.0], [0.0, 3.0], [2.0, 3.0]], dtype=torch.float64)
    A = torch.tensor([[0.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    pi = attention_weights(X, A)
    assert torch.equal(pi[0], torch.tensor([0.0, 0.5, 0.5], dtype=torch.float64))


# ---- float path ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_float_matches_exact(seed):
    rng = random.Random(100 + seed)
    n, d, w = 6, 3, 4
    X, A, V = rand_matrix(rng, n, d), rand_matrix(rng, d, d), rand_matrix(rng, d, d)
    W, U, b = rand_matrix(rng, d, w), rand_matrix(rng, w, d), rand_matrix(rng, w)
    rho, eta = rand_frac(rng), rand_frac(rng)

    def f(a):
        return np.asarray(a, dtype=np.float64)

    exact_sa = self_attention(X, A, rho, V)
    float_sa = self_attention(torch.tensor(f(X)), f(A), float(rho), f(V))
    # generic random rationals: no ties, so the float argmax agrees with the exact one
    assert np.allclose(float_sa.numpy(), f(exact_sa), rtol=1e-12, atol=1e-12)
    exact_ff = feed_forward(X, eta, W, U, b)
    float_ff = feed_forward(f(X), float(eta), f(W), f(U), f(b))
    assert isinstance(float_ff, np.ndarray) and float_ff.dtype == np.float64
    assert np.allclose(float_ff, f(exact_ff), rtol=1e-12, atol=1e-12)


def test_softmax_matches_direct_formula_and_is_stable():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(5, 3, generator=g, dtype=torch.float64)
    A = torch.randn(3, 3, generator=g, dtype=torch.float64)
    V = torch.randn(3, 3, generator=g, dtype=torch.float64)
    tau = 0.7
    S = (X @ A.T @ X.T).numpy() / tau
    P = np.exp(S) / np.exp(S).sum(-1, keepdims=True)
    expected = 0.3 * X.numpy() + (P @ X.numpy()) @ V.numpy().T
    out = self_attention(X, A, 0.3, V, tau=tau)
    assert np.allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)
    # scores of size 1e6 at tau = 1e-3: naive exp overflows, the layer does not
    big = attention_weights(1000 * X, A, tau=1e-3)
    assert bool(torch.isfinite(big).all()) and torch.allclose(
        big.sum(-1), torch.ones(5, dtype=torch.float64)
    )


def test_softmax_tends_to_hardmax():
    g = torch.Generator().manual_seed(3)
    X = torch.randn(6, 2, generator=g, dtype=torch.float64)
    A = torch.eye(2, dtype=torch.float64)
    hard = attention_weights(X, A, 0)
    errs = [float((attention_weights(X, A, t) - hard).abs().max()) for t in (1.0, 0.01, 1e-5)]
    assert errs[0] > errs[1] > errs[2] and errs[2] < 1e-6


def test_batching_and_dtype():
    g = torch.Generator().manual_seed(1)
    X = torch.randn(4, 5, 3, generator=g, dtype=torch.float32)
    A = torch.randn(3, 3, generator=g)
    V = torch.randn(3, 3, generator=g)
    U, b, W = (
        torch.randn(2, 3, generator=g),
        torch.randn(2, generator=g),
        torch.randn(3, 2, generator=g),
    )
    for tau in (0, 0.5):
        out = self_attention(X, A, 0.5, V, tau=tau)
        assert out.dtype == torch.float32 and out.shape == X.shape
        for k in range(4):
            assert torch.allclose(out[k], self_attention(X[k], A, 0.5, V, tau=tau))
    ff = feed_forward(X, 2.0, W, U, b)
    assert ff.dtype == torch.float32
    assert torch.allclose(ff[2], feed_forward(X[2], 2.0, W, U, b))
    hd = hausdorff(X, X[:, :3])
    assert hd.shape == (4,)
    assert torch.allclose(hd[1], hausdorff(X[1], X[1, :3]))


def test_exact_batching():
    rng = random.Random(5)
    X = rand_matrix(rng, 3, 4, 2)
    A, V = rand_matrix(rng, 2, 2), rand_matrix(rng, 2, 2)
    out = self_attention(X, A, 1, V)
    for k in range(3):
        assert out[k].tolist() == self_attention(X[k], A, 1, V).tolist()
    hs = hausdorff_squared(X, X[:, :2])
    assert hs.shape == (3,) and all_fractions(hs)
    assert hs[1] == hausdorff_squared(X[1], X[1, :2])


# ---- Hausdorff -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_hausdorff_exact_matches_reference(seed):
    rng = random.Random(200 + seed)
    P, Q = rand_matrix(rng, rng.randint(1, 5), 3), rand_matrix(rng, rng.randint(1, 5), 3)
    sq = hausdorff_squared(P, Q)
    assert isinstance(sq, Fraction) and sq == ref_hausdorff_sq(P.tolist(), Q.tolist())
    assert sq == hausdorff_squared(Q, P)
    assert abs(hausdorff(P, Q) - mpmath.sqrt(mpmath.mpf(sq.numerator) / sq.denominator)) == 0
    assert np.isclose(
        float(hausdorff(P.astype(float), Q.astype(float))), float(sq) ** 0.5, rtol=1e-12
    )


def test_hausdorff_zero_exactly_for_same_set():
    P = as_exact([[1, 2], [Fraction(1, 3), 0], [1, 2]])
    Q = as_exact([[Fraction(1, 3), 0], [1, 2]])  # same set, permuted, without the duplicate
    assert hausdorff_squared(P, Q) == 0 and hausdorff(P, Q) == 0
    R = as_exact([[Fraction(1, 3), Fraction(1, 10**30)], [1, 2]])  # differs by 1e-30
    assert hausdorff_squared(P, R) == Fraction(1, 10**60) and hausdorff(P, R) > 0


# ---- bad input -------------------------------------------------------------------------------


def test_bad_input_names_the_problem():
    X = torch.zeros(3, 2, dtype=torch.float64)
    I = torch.eye(2, dtype=torch.float64)
    with pytest.raises(ValueError, match="tau"):
        self_attention(X, I, 0, I, tau=-0.1)
    with pytest.raises(ValueError, match="tau"):
        self_attention(X, I, 0, I, tau=float("nan"))
    with pytest.raises(ValueError, match="A must have shape"):
        self_attention(X, torch.eye(3, dtype=torch.float64), 0, I)
    with pytest.raises(ValueError, match="V must have shape"):
        self_attention(X, I, 0, torch.eye(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="non-finite"):
        self_attention(torch.tensor([[1.0, float("nan")]]), I, 0, I)
    with pytest.raises(ValueError, match="non-finite"):
        self_attention(X, torch.tensor([[1.0, 0.0], [0.0, float("inf")]]), 0, I)
    with pytest.raises(ValueError, match="rho must be finite"):
        self_attention(X, I, float("inf"), I)
    with pytest.raises(ValueError, match="empty sequence"):
        self_attention(torch.zeros(0, 2, dtype=torch.float64), I, 0, I)
    with pytest.raises(ValueError, match="empty sequence"):
        self_attention(
            np.empty((0, 2), dtype=object), np.eye(2, dtype=int), 0, np.eye(2, dtype=int)
        )
    with pytest.raises(ValueError, match=r"\[\.\.\., n, d\]"):
        self_attention(torch.zeros(3, dtype=torch.float64), I, 0, I)
    with pytest.raises(ValueError, match="U must have shape"):
        feed_forward(X, 1, torch.zeros(2, 4), torch.zeros(4, 3), torch.zeros(4))
    with pytest.raises(ValueError, match="b must have shape"):
        feed_forward(X, 1, torch.zeros(2, 4), torch.zeros(4, 2), torch.zeros(3))
    with pytest.raises(ValueError, match="W must have shape"):
        feed_forward(X, 1, torch.zeros(3, 4), torch.zeros(4, 2), torch.zeros(4))
    with pytest.raises(ValueError, match="non-finite"):
        feed_forward(X, 1, torch.zeros(2, 4), torch.zeros(4, 2), torch.full((4,), float("nan")))
    with pytest.raises(ValueError, match="same token dimension"):
        hausdorff(X, torch.zeros(3, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="empty sequence"):
        hausdorff(X, torch.zeros(0, 2, dtype=torch.float64))
    with pytest.raises(ValueError, match="floating-point"):
        self_attention(torch.zeros(3, 2, dtype=torch.long), I, 0, I)
