"""The fast rigorous certificate against the reference (mpmath) path and independent evaluations."""

from __future__ import annotations

import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from sxor.interp import construct, random_dataset, softmax_certificate
from sxor.interp.certificate import collapse_margins, exact_states
from sxor.interp.enclosures import (
    MAX_PREC,
    exp_neg_upper,
    feed_forward_enclosure,
    integer_form,
    softmax_attention_box,
    softmax_attention_enclosure,
)
from sxor.interp.exact import as_exact, dot, l1
from sxor.interp.network import _apply_ff


def _rationals(rng, shape, den=7, big=9):
    out = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        out[idx] = Fraction(rng.randint(-big * den, big * den), rng.randint(1, den))
    return out


def test_exp_neg_upper_is_an_upper_bound_and_tight():
    a = np.array(
        [
            0.0,
            1e-300,
            1e-17,
            1e-3,
            0.3465,
            0.6931,
            0.7,
            1.0,
            2.5,
            17.0,
            50.0,
            300.3,
            700.0,
            744.9,
            745.2,
            746.0,
            800.0,
            1e4,
            1e300,
        ]
    )
    up = exp_neg_upper(a)
    with mpmath.workdps(40):
        for x, u in zip(a, up):
            true = mpmath.exp(-mpmath.mpf(float(x)))
            assert mpmath.mpf(float(u)) >= true, x
            if x < 700:
                assert mpmath.mpf(float(u)) <= true * (1 + mpmath.mpf(10) ** -12), x
    assert (up > 0).all()


@pytest.mark.parametrize("seed", range(6))
def test_softmax_box_contains_the_reference_enclosure_and_the_true_value(seed):
    rng = random.Random(seed)
    n, d = rng.randint(2, 6), rng.randint(1, 3)
    X, A, V = (
        _rationals(rng, (n, d)),
        _rationals(rng, (d, d), big=2),
        _rationals(rng, (d, d), big=2),
    )
    if seed % 2:  # ties in the argmax sets
        X[1] = X[0] * 1
        A = as_exact(np.eye(d, dtype=int) * 0)
    rho = Fraction(rng.randint(-3, 3), 2)
    tau = Fraction(rng.randint(1, 40), rng.randint(1, 9))
    centre, radius, finite = softmax_attention_box(X, A, rho, V, tau)
    assert finite and all(r >= 0 for r in radius.flat)
    lo, hi = softmax_attention_enclosure(
        X, A, rho, V, tau, 120
    )  # both contain the true value: they meet
    assert all(
        c - r <= b and a <= c + r for c, r, a, b in zip(centre.flat, radius.flat, lo.flat, hi.flat)
    )
    # where the reference does not clamp (deviation > e^-240), its tight box lies inside the fast one
    assert all(
        c - r <= a and b <= c + r
        for c, r, a, b in zip(centre.flat, radius.flat, lo.flat, hi.flat)
        if r > Fraction(1, 10**90)
    )
    with mpmath.workdps(420):  # an independent evaluation, resolution about 1e-400

        def mp(q):
            return mpmath.mpf(q.numerator) / q.denominator

        S = [
            [
                sum(mp(X[i, a]) * mp(A[b, a]) * mp(X[l, b]) for a in range(d) for b in range(d))
                for l in range(n)
            ]
            for i in range(n)
        ]
        for i in range(n):
            top = max(S[i])
            w = [mpmath.exp((s - top) / mp(tau)) for s in S[i]]
            z = sum(w)
            avg = [sum(w[l] * mp(X[l, c]) for l in range(n)) / z for c in range(d)]
            for r in range(d):
                out = mp(rho) * mp(X[i, r]) + sum(mp(V[r, c]) * avg[c] for c in range(d))
                slack = mpmath.mpf(10) ** -400
                assert (
                    mp(centre[i, r] - radius[i, r]) - slack
                    <= out
                    <= mp(centre[i, r] + radius[i, r]) + slack
                )


def test_softmax_box_is_exact_when_every_score_ties():
    X = as_exact([[1, 2], [3, 4], [0, 1]])
    centre, radius, _ = softmax_attention_box(
        X, as_exact([[0, 0], [0, 0]]), 0, as_exact([[1, 0], [0, 1]]), 1
    )
    assert all(r == 0 for r in radius.flat)
    assert [list(row) for row in centre] == [[Fraction(4, 3), Fraction(7, 3)]] * 3


def test_softmax_box_beyond_the_float_range_falls_back_to_the_reference():
    X = as_exact([[10**400, 0], [0, 10**400]])
    centre, radius, finite = softmax_attention_box(
        X, as_exact([[1, 0], [0, 1]]), 0, as_exact([[1, 0], [0, 1]]), 10**799
    )
    lo, hi = softmax_attention_enclosure(
        X, as_exact([[1, 0], [0, 1]]), 0, as_exact([[1, 0], [0, 1]]), 10**799, 200
    )
    assert not finite
    assert all(
        c - r <= a and b <= c + r for c, r, a, b in zip(centre.flat, radius.flat, lo.flat, hi.flat)
    )
    assert any(r > 0 for r in radius.flat)


def _old_feed_forward_enclosure(
    lo, hi, eta, W, U, b
):  # the Fraction-by-Fraction version, as a reference
    zero = Fraction(0)
    n, d = lo.shape
    w = U.shape[0]

    def affine(coef, const, lo_row, hi_row):
        low = const + sum(
            (c * (lo_row[j] if c >= 0 else hi_row[j]) for j, c in enumerate(coef)), zero
        )
        high = const + sum(
            (c * (hi_row[j] if c >= 0 else lo_row[j]) for j, c in enumerate(coef)), zero
        )
        return low, high

    out_lo, out_hi = np.empty((n, d), dtype=object), np.empty((n, d), dtype=object)
    for i in range(n):
        pre = [affine(U[k], b[k], lo[i], hi[i]) for k in range(w)]
        if all(a >= 0 or c <= 0 for a, c in pre):
            on = [k for k, (a, _) in enumerate(pre) if a >= 0 and not (a == 0 and pre[k][1] == 0)]
            for r in range(d):
                coef = [
                    eta * (r == j) + sum((W[r, k] * U[k, j] for k in on), zero) for j in range(d)
                ]
                const = sum((W[r, k] * b[k] for k in on), zero)
                out_lo[i, r], out_hi[i, r] = affine(coef, const, lo[i], hi[i])
            continue
        h = [(max(a, zero), max(c, zero)) for a, c in pre]
        for r in range(d):
            low, high = affine(W[r], zero, [a for a, _ in h], [c for _, c in h])
            e = (eta * lo[i, r], eta * hi[i, r]) if eta >= 0 else (eta * hi[i, r], eta * lo[i, r])
            out_lo[i, r], out_hi[i, r] = low + e[0], high + e[1]
    return out_lo, out_hi


@pytest.mark.parametrize("seed", range(8))
def test_feed_forward_enclosure_equals_the_fraction_by_fraction_version(seed):
    rng = random.Random(seed)
    n, d, w = rng.randint(1, 6), rng.randint(1, 4), rng.randint(0, 4)
    lo = _rationals(rng, (n, d))
    hi = lo + _rationals(rng, (n, d), big=1) ** 2 * (seed % 3 != 0)
    eta = Fraction(rng.randint(-2, 2), rng.randint(1, 3))
    W, U, b = (
        _rationals(rng, (d, w), big=2),
        _rationals(rng, (w, d), big=2),
        _rationals(rng, (w,), big=3),
    )
    new = feed_forward_enclosure(lo, hi, eta, W, U, b)
    old = _old_feed_forward_enclosure(lo, hi, eta, W, U, b)
    assert [list(r) for r in new[0]] == [list(r) for r in old[0]] and [list(r) for r in new[1]] == [
        list(r) for r in old[1]
    ]


def test_integer_form_and_dot():
    X = as_exact([[Fraction(1, 2), 3], [Fraction(-5, 6), 0]])
    P, D = integer_form(X)
    assert D == 6 and [list(r) for r in P] == [[3, 18], [-5, 0]]
    u, x = [Fraction(1, 3), 2, Fraction(-7, 4)], [Fraction(3, 5), Fraction(1, 9), 4]
    assert dot(u, x) == sum((Fraction(a) * b for a, b in zip(u, x)), Fraction(0))
    assert dot([], []) == 0 and l1(x) == Fraction(3, 5) + Fraction(1, 9) + 4
    with pytest.raises(ValueError):
        dot([1, 2], [1])


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_exact_states_and_collapse_margins_equal_the_layers(seed):
    X, Y = random_dataset(4, 5, [1, 2, 3, 2], 3, seed=seed)
    T = construct(X, Y, attention="softmax")
    at = next(
        k for k, blk in enumerate(T.blocks) if not (blk.sa.is_identity or blk.sa.scores_constant)
    )
    states = list(X)
    for block in T.blocks[:at]:
        states = [block.sa(s, 0) for s in _apply_ff(block.ff, states)]
    fast = exact_states(T.blocks[:at], list(X))
    assert all((a == b).all() for a, b in zip(states, fast))
    pre = _apply_ff(T.blocks[at].ff, states)
    A = T.blocks[at].sa.A
    gap, spread = None, Fraction(0)
    for s in pre:  # the definition, in Fractions
        S = (s @ A.T) @ s.T
        for row in S:
            top2 = sorted(row, reverse=True)[:2]
            gap = top2[0] - top2[1] if gap is None else min(gap, top2[0] - top2[1])
        diam = max(
            l1(a - b for a, b in zip(s[i], s[k])) for i in range(len(s)) for k in range(len(s))
        )
        spread = max(spread, (len(s) - 1) * diam)
    assert collapse_margins(pre, T.blocks[at].sa) == (gap, spread)


@pytest.mark.parametrize("seed", range(5))
def test_fast_certificate_is_exactly_zero_and_agrees_with_the_reference(seed):
    X, Y = random_dataset(3, 6, [2, 3, 1], 2 + seed % 3, seed=seed)
    T = construct(X, Y, attention="softmax")
    fast, ref = softmax_certificate(T, X, Y), softmax_certificate(T, X, Y, reference=True)
    assert fast["hausdorff_bound"] == Fraction(0) and type(fast["hausdorff_bound"]) is Fraction
    assert fast["exact"] and ref["exact"] and fast["certified"]
    assert (
        ref["deviation"] <= fast["deviation"] <= T.radius
    )  # the fast bound is looser, still certified
    # above tau_max the fast boxes do not prove exactness and the reference result comes back
    far = T.tau_max_mp * 300
    tau = Fraction(int(far * 1000), 1000)
    assert softmax_certificate(T, X, Y, tau) == softmax_certificate(T, X, Y, tau, reference=True)


def test_reference_must_be_a_bool():
    X, Y = random_dataset(2, 3, [2, 1], 2, seed=0)
    T = construct(X, Y, attention="softmax")
    with pytest.raises(TypeError, match="reference"):
        softmax_certificate(T, X, Y, reference="yes")


@pytest.mark.parametrize("prec", [0, -3, 1])
def test_enclosure_refuses_precision_below_two(prec):
    with pytest.raises(ValueError, match="prec"):
        softmax_attention_enclosure(
            as_exact([[1, 0], [0, 1]]),
            as_exact([[1, 0], [0, 1]]),
            0,
            as_exact([[1, 0], [0, 1]]),
            1,
            prec,
        )


@pytest.mark.parametrize("prec", [1.5, 200.0, True, "200", None])
def test_enclosure_refuses_non_integer_precision(prec):
    with pytest.raises(TypeError, match="prec"):
        softmax_attention_enclosure(
            as_exact([[1, 0], [0, 1]]),
            as_exact([[1, 0], [0, 1]]),
            0,
            as_exact([[1, 0], [0, 1]]),
            1,
            prec,
        )


def test_enclosure_refuses_huge_precision_instead_of_hanging():
    with pytest.raises(ValueError, match="MAX_PREC"):
        softmax_attention_enclosure(
            as_exact([[1, 0], [0, 1]]),
            as_exact([[1, 0], [0, 1]]),
            0,
            as_exact([[1, 0], [0, 1]]),
            1,
            10**7,
        )
    lo, hi = softmax_attention_enclosure(
        as_exact([[1, 0], [0, 1]]),
        as_exact([[1, 0], [0, 1]]),
        0,
        as_exact([[1, 0], [0, 1]]),
        1,
        MAX_PREC,
    )
    assert all(a <= b for a, b in zip(lo.flat, hi.flat))


def test_directed_rounding_helpers_bound_the_exact_values():
    from sxor.interp.enclosures import _matmul_up, _ratios_up

    rng = random.Random(5)
    nums = [rng.randint(0, 10**30) for _ in range(400)]
    dens = [rng.randint(1, 10**20) for _ in range(400)]
    assert all(Fraction(float(_ratios_up([p], q)[0])) >= Fraction(p, q) for p, q in zip(nums, dens))
    assert _ratios_up([10**400], 1)[0] == np.inf
    gen = np.random.default_rng(0)
    for K in (1, 7, 64):
        A, B = gen.random((5, K)) * 10.0 ** gen.integers(-300, 300), gen.random((K, 4))
        up = _matmul_up(A, B)
        exact = [
            [
                sum(Fraction(float(A[i, k])) * Fraction(float(B[k, j])) for k in range(K))
                for j in range(4)
            ]
            for i in range(5)
        ]
        assert all(Fraction(float(up[i, j])) >= exact[i][j] for i in range(5) for j in range(4))
        assert all(
            float(up[i, j]) <= float(exact[i][j]) * (1 + 1e-13) + 1e-300
            for i in range(5)
            for j in range(4)
        )
    tiny = np.full((1, 3), 1e-200)
    assert (_matmul_up(tiny, tiny.T) > 0).all()  # underflow: still an upper bound, not 0


def test_collapse_margins_count_a_tie_at_the_top_as_a_gap_of_zero():
    from sxor.interp.construct import collapse_layer

    s = as_exact([[1, 0], [0, 1], [1, 1]])  # query (1, 0) scores 1, 0, 1: two tokens share the top
    gap, spread = collapse_margins([s], collapse_layer(2))
    assert gap == 0 and spread == 2 * 2
    gap, _ = collapse_margins([as_exact([[2, 0], [0, 1]])], collapse_layer(2))
    assert gap == 1  # query (0, 1): scores 0 and 1
