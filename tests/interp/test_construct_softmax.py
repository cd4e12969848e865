"""Exact softmax interpolation (chapter 13's softmax theorem) and the soundness of its certificate."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import torch

import sxor.interp.certificate as certificate_module
from sxor.interp import (
    construct,
    hausdorff_squared,
    interpolation_errors,
    random_dataset,
    softmax_certificate,
)
from sxor.interp.certificate import propagate_boxes
from sxor.interp.construct import block_bound
from tests.hang_guard import hang_guard


def frac(rows) -> np.ndarray:
    return np.array([[Fraction(v) for v in r] for r in rows], dtype=object)


def random_case(seed: int):
    rng = np.random.default_rng(seed)
    N, d = int(rng.integers(1, 5)), int(rng.integers(2, 4))
    n = [int(v) for v in rng.integers(1, 6, size=N)]
    m = [int(rng.integers(1, nj + 1)) for nj in n]
    X, Y = random_dataset(N, n, m, d, seed=seed, overlap=bool(seed % 3))
    return X, Y, m


# ------------------------------------------------------------------ exactness


@pytest.mark.parametrize("seed", range(10))
def test_softmax_network_is_exact_with_a_zero_certificate(seed):
    X, Y, m = random_case(seed)
    T = construct(X, Y, attention="softmax")
    N = len(m)
    assert T.attention == "softmax" and 0 < T.tau < T.tau_max
    assert T.num_blocks <= 2 * sum(m) + N <= block_bound(m, "softmax") and T.max_width <= 4
    for scale in (Fraction(99, 100), Fraction(1, 3)):
        tau = (
            T.tau
            if scale == Fraction(1, 3)
            else Fraction(T.tau_max * 0.99)
            if math.isfinite(T.tau_max)
            else 7
        )
        c = softmax_certificate(T, X, Y, tau)
        assert c["certified"] and c["exact"]
        assert c["hausdorff_bound"] == 0 and type(c["hausdorff_bound"]) is Fraction
    assert all(e == 0 for e in interpolation_errors(T, X, Y))
    for x, y in zip(X, Y):  # float64 evaluation agrees with the targets to rounding
        out = T(torch.tensor(np.array(x, dtype=np.float64)))
        assert float(hausdorff_squared(out, torch.tensor(np.array(y, dtype=np.float64)))) < 1e-20


def test_counts_leader_route_and_mean_route():
    X, Y = random_dataset(4, 5, [2, 1, 3, 1], 3, seed=3)
    H, S = construct(X, Y), construct(X, Y, attention="softmax")
    assert S.info["route"] == H.info["route"] == "leaders"
    assert S.num_blocks == H.num_blocks + 1  # the projection onto the e_1 axis
    assert S.phase_counts()["projection"] == 1 and S.phase_counts()["interpolation"] == 7
    assert all(b.ff.eta == 0 for b in S.blocks if b.phase == "projection")
    X1, Y1 = random_dataset(5, 4, 1, 2, seed=1)
    M = construct(X1, Y1, attention="softmax")
    assert M.info["route"] == "mean" and M.tau_max == math.inf and M.gap is None
    assert M.num_blocks <= 2 * 5
    assert all(b.sa.is_identity or b.sa.scores_constant for b in M.blocks)
    for tau in (Fraction(1, 1000), Fraction(1), Fraction(10**6)):  # exact at every temperature
        c = softmax_certificate(M, X1, Y1, tau)
        assert c["exact"] and c["deviation"] == 0 and float(M.error_bound(tau)) == 0


def test_identical_input_sets_with_equal_targets_and_d1():
    X = [frac([[0, 0], [1, 2]]), frac([[1, 2], [0, 0]]), frac([[3, 1], [0, 0]])]
    Y = [frac([[1, 1], [2, 0]]), frac([[2, 0], [1, 1]]), frac([[5, 5]])]
    for attention in ("hardmax", "softmax"):
        T = construct(X, Y, attention=attention)
        assert T.info["distinct_inputs"] == 2
        assert all(e == 0 for e in interpolation_errors(T, X, Y))
    X1 = [frac([[0], [1]]), frac([[1], [3]]), frac([[2]])]
    Y1 = [frac([[5]]), frac([[-1]]), frac([[5]])]
    for attention in ("hardmax", "softmax"):
        T = construct(X1, Y1, attention=attention)
        assert T.d == 1 and all(e == 0 for e in interpolation_errors(T, X1, Y1))


def test_network_is_frozen_and_checks_dimension():
    X, Y = random_dataset(2, 3, [2, 1], 2, seed=0)
    T = construct(X, Y, attention="softmax")
    with pytest.raises(dataclasses.FrozenInstanceError):
        T.tau = Fraction(1)
    T2 = T.at_temperature(Fraction(1, 7))
    assert T2.tau == Fraction(1, 7) and T.tau != T2.tau
    with pytest.raises(ValueError, match=r"dimension d = 2.*dimension 3"):
        T(frac([[1, 2, 3], [0, 0, 1]]))
    with pytest.raises(ValueError, match="dimension"):
        T.map([frac([[1, 2, 3]])])
    with pytest.raises(ValueError, match="dimension"):
        softmax_certificate(
            T, [frac([[1, 2, 3]]), frac([[0, 1, 1]])], [frac([[1, 1, 1]]), frac([[0, 0, 0]])]
        )
    for bad in (float("nan"), float("inf"), Fraction(0), -1, 0.5):
        with pytest.raises(ValueError, match="tau"):
            T.at_temperature(bad)
        with pytest.raises(ValueError, match="tau"):
            softmax_certificate(T, X, Y, bad)
    with pytest.raises(ValueError, match="softmax"):
        softmax_certificate(construct(X, Y), X, Y)


def test_tau_max_at_ratio_exactly_one():
    X, Y = random_dataset(2, 3, [2, 1], 2, seed=0)
    T = construct(X, Y, attention="softmax")
    assert (
        dataclasses.replace(T, spread=T.radius).tau_max == math.inf
    )  # log(1) = 0 is never divided by
    assert dataclasses.replace(T, spread=T.radius / 2).tau_max == math.inf
    above = dataclasses.replace(T, spread=T.radius * Fraction(1001, 1000)).tau_max
    assert 0 < above < math.inf and above == pytest.approx(float(T.gap) / math.log(1.001))


# ------------------------------------------------------------------ soundness of the certificate


def _post_collapse(T, X):
    """Exact hardmax states right after the collapse, and the blocks after it."""
    at = next(k for k, b in enumerate(T.blocks) if b.phase == "collapse")
    hard = dataclasses.replace(T, tau=0, blocks=T.blocks[: at + 1])
    return hard.map(X), T.blocks[at + 1 :]


def test_radius_is_exactly_what_the_later_layers_absorb():
    """Move one cluster by ``c * radius`` (l1) along the coordinate where ``|v|`` is largest: at
    ``c = 1`` every output is still exact; at ``c = 11/10`` some cluster is not (the radius is
    neither too large nor too small)."""
    X = [frac([[0, 0], [2, 2], [1, 0]]), frac([[2, 0], [0, 2]]), frac([[1, 1], [0, 0], [2, 2]])]
    Y = [frac([[5, 5], [0, 1]]), frac([[5, 5], [1, 0]]), frac([[0, 1]])]
    T = construct(X, Y, attention="softmax")
    states, rest = _post_collapse(T, X)
    proj = next(b.ff for b in T.blocks if b.phase == "projection")
    v = list(proj.U[0])
    c_star = max(range(T.d), key=lambda c: abs(v[c]))
    step = np.array([Fraction(0)] * T.d, dtype=object)
    step[c_star] = Fraction(1) if v[c_star] > 0 else Fraction(-1)

    def exact_after(scale: Fraction, target: tuple, sign: int) -> bool:
        boxes = []
        for s in states:
            lo, hi = s.copy(), s.copy()
            for i in range(s.shape[0]):
                if tuple(s[i]) == target:
                    moved = s[i] + sign * scale * T.radius * step
                    lo[i] = np.minimum(s[i], moved)
                    hi[i] = np.maximum(s[i], moved)
            boxes.append((lo, hi))
        out = propagate_boxes(rest, boxes)
        return all(
            certificate_module.box_hausdorff_squared(lo, hi, y) == 0 for (lo, hi), y in zip(out, Y)
        )

    clusters = sorted({tuple(r) for s in states for r in s})
    assert all(exact_after(Fraction(1), t, sign) for t in clusters for sign in (1, -1))
    assert not all(exact_after(Fraction(11, 10), t, sign) for t in clusters for sign in (1, -1))


def test_certificate_refuses_a_widened_enclosure(monkeypatch):
    X, Y = random_dataset(3, 4, [1, 2, 2], 2, seed=4)
    T = construct(X, Y, attention="softmax")
    assert softmax_certificate(T, X, Y)["exact"]
    original = certificate_module.softmax_attention_enclosure

    def widened(*args, **kwargs):  # an enclosure 2 radii wider than the true one
        lo, hi = original(*args, **kwargs)
        return lo - 2 * T.radius, hi + 2 * T.radius

    fast = certificate_module.softmax_attention_box

    def widened_box(*args, **kwargs):  # the fast path's box, 2 radii wider too
        centre, radius, finite = fast(*args, **kwargs)
        return centre, radius + 2 * T.radius, finite

    monkeypatch.setattr(certificate_module, "softmax_attention_enclosure", widened)
    monkeypatch.setattr(certificate_module, "softmax_attention_box", widened_box)
    c = softmax_certificate(T, X, Y)
    assert not c["certified"] and not c["exact"] and c["hausdorff_bound"] > 0
    monkeypatch.setattr(certificate_module, "softmax_attention_enclosure", original)
    assert softmax_certificate(T, X, Y)[
        "exact"
    ]  # the fast path failed, the reference path proves it


def _mp_network(T, X, tau):
    """Independent evaluation of ``T_tau(X)`` in mpmath at 60 digits (no code from sxor.interp)."""
    with mpmath.workdps(60):
        x = [[mpmath.mpf(v.numerator) / v.denominator for v in row] for row in X]

        def mp(v):
            return mpmath.mpf(v.numerator) / v.denominator

        t = mp(Fraction(tau))
        for block in T.blocks:
            ff = block.ff
            if not ff.is_identity:
                new = []
                for row in x:
                    hidden = [
                        max(
                            mpmath.mpf(0),
                            sum(mp(ff.U[k, c]) * row[c] for c in range(T.d)) + mp(ff.b[k]),
                        )
                        for k in range(ff.width)
                    ]
                    new.append(
                        [
                            mp(ff.eta) * row[r]
                            + sum(mp(ff.W[r, k]) * hidden[k] for k in range(ff.width))
                            for r in range(T.d)
                        ]
                    )
                x = new
            sa = block.sa
            if sa.is_identity:
                continue
            A = [[mp(a) for a in row] for row in sa.A]
            out = []
            for xi in x:
                Ax = [sum(A[r][c] * xi[c] for c in range(T.d)) for r in range(T.d)]
                s = [sum(Ax[c] * xl[c] for c in range(T.d)) for xl in x]
                top = max(s)
                w = [mpmath.exp((sl - top) / t) for sl in s]
                z = sum(w)
                avg = [sum(w[l] * x[l][c] for l in range(len(x))) / z for c in range(T.d)]
                out.append([mp(sa.rho) * xi[c] + mp(sa.beta) * avg[c] for c in range(T.d)])
            x = out
        return x


def _mp_hausdorff(P, Y):
    with mpmath.workdps(60):
        Yf = [[mpmath.mpf(v.numerator) / v.denominator for v in row] for row in Y]
        D = [[mpmath.sqrt(sum((p[c] - y[c]) ** 2 for c in range(len(y)))) for y in Yf] for p in P]
        return max(
            *(min(row) for row in D), *(min(D[i][k] for i in range(len(P))) for k in range(len(Yf)))
        )


@pytest.mark.parametrize("seed", [2, 4])
def test_certificate_against_an_independent_high_precision_evaluation(seed):
    X, Y = random_dataset(3, 4, [1, 2, 2], 2, seed=seed)
    T = construct(X, Y, attention="softmax")
    tau_max = Fraction(T.tau_max).limit_denominator(10**4)
    for scale in (Fraction(1, 2), Fraction(20), Fraction(200)):
        tau = tau_max * scale
        c = softmax_certificate(T, X, Y, tau)
        with mpmath.workdps(60):
            true = max(_mp_hausdorff(_mp_network(T, x, tau), y) for x, y in zip(X, Y))
            assert (
                true
                <= mpmath.mpf(c["hausdorff_bound"].numerator) / c["hausdorff_bound"].denominator
                + mpmath.mpf(10) ** -50
            )
            if c["exact"]:
                assert true < mpmath.mpf(10) ** -50
            else:  # the rational midpoint path is within 2^-150 of the true output
                assert (
                    abs(true - c["hausdorff"][0 if len(Y) == 1 else int(np.argmax(c["hausdorff"]))])
                    < 1e-9
                )
    assert softmax_certificate(T, X, Y, tau_max / 2)["exact"]
    assert not softmax_certificate(T, X, Y, tau_max * 200)["exact"]  # the test can see a failure


@pytest.mark.parametrize("tau", [Fraction(1, 10**9), Fraction(1, 10**12), Fraction(1, 10**30)])
def test_certificate_at_tiny_tau_is_exact(tau):
    X, Y = random_dataset(3, 4, [1, 2, 2], 2, seed=4)
    T = construct(X, Y, attention="softmax")
    with hang_guard(f"softmax_certificate at tau = {tau}"):
        c = softmax_certificate(T, X, Y, tau)
    assert c["exact"]


def test_shared_targets_and_targets_among_the_inputs():
    X = [frac([[0, 0], [1, 0], [0, 1]]), frac([[1, 0], [2, 2]]), frac([[3, 1], [1, 1], [0, 0]])]
    Y = [
        frac([[1, 0], [2, 2]]),
        frac([[1, 0], [0, 0]]),
        frac([[1, 0]]),
    ]  # (1, 0) is everyone's target
    for attention in ("hardmax", "softmax"):
        T = construct(X, Y, attention=attention)
        assert all(e == 0 for e in interpolation_errors(T, X, Y))
        if attention == "softmax":
            assert softmax_certificate(T, X, Y)["hausdorff_bound"] == 0


@pytest.mark.parametrize("seed", range(4))
def test_rank_one_collapse_is_exact_with_the_same_count(seed):
    rng = np.random.default_rng(seed)
    N, d = int(rng.integers(2, 5)), int(rng.integers(2, 4))
    m = [int(v) for v in rng.integers(1, 3, size=N)]
    m[0] = 2  # the leader route
    X, Y = random_dataset(N, 4, m, d, seed=seed)
    for attention in ("hardmax", "softmax"):
        R = construct(X, Y, attention=attention, collapse="rank-one")
        I = construct(X, Y, attention=attention)
        sa = next(b.sa for b in R.blocks if b.phase == "collapse")
        assert (
            sa.alpha == 0 and all(c == 1 for c in sa.q) and all(c == 1 for c in sa.k)
        )  # A = 1 1^T
        assert R.num_blocks == I.num_blocks and R.num_parameters == I.num_parameters
        assert all(e == 0 for e in interpolation_errors(R, X, Y))
        if attention == "softmax":
            assert softmax_certificate(R, X, Y)["hausdorff_bound"] == 0
    with pytest.raises(ValueError, match="m_j <= 2"):
        construct(X, [np.concatenate([Y[0], frac([[9, 9, 9][:d]])]), *Y[1:]], collapse="rank-one")
    with pytest.raises(ValueError, match="collapse must be one of"):
        construct(X, Y, collapse="rank-two")


# ------------------------------------------------------------------ coordinates of any size


def _far_dataset(B: int):
    X = [frac([(0, 0), (B, B), (-B, B)]), frac([(B, B), (0, 1)])]
    Y = [frac([(1, -1), (0, 0)]), frac([(3, 3)])]
    return X, Y


def test_certificate_is_exact_for_huge_coordinates():
    """Coordinates ~1e80: the collapse error eps(tau) is ~1e-82, far below r* (1/16, the same as for
    B = 10: the line projection works at unit scale), so the theorem gives exactness; the
    certificate must prove it (an enclosure of width |x| 2^-200 could not)."""
    X, Y = _far_dataset(10**80)
    T = construct(X, Y, attention="softmax")
    assert T.radius == construct(*_far_dataset(10), attention="softmax").radius == Fraction(1, 16)
    assert T.error_bound(T.tau) < mpmath.mpf(10) ** -80
    tau_max = Fraction(T.tau_max)
    for tau in (tau_max / 2, tau_max / 2000):
        c = softmax_certificate(T, X, Y, tau)
        assert c["certified"] and c["exact"] and c["hausdorff_bound"] == 0
        assert c["deviation"] <= T.radius and float(c["deviation"]) <= 10 * c["bound"] + 1e-150
    assert all(e == 0 for e in interpolation_errors(T, X, Y))


def test_softmax_construct_with_coordinates_beyond_float_range():
    """Coordinates ~1e200 give scores ~1e400: tau_max is computed without float overflow."""
    X, Y = _far_dataset(10**200)
    T = construct(X, Y, attention="softmax")
    assert mpmath.isfinite(T.tau_max_mp) and T.tau_max_mp > mpmath.mpf(10) ** 390
    assert T.tau_max == math.inf  # beyond the float range, as documented
    assert T.tau > 0 and mpmath.mpf(T.tau.numerator) / T.tau.denominator < T.tau_max_mp
    for tau in (T.tau, T.tau / 1000):
        c = softmax_certificate(T, X, Y, tau)
        assert c["certified"] and c["exact"]
    # the float tau_max agrees with the mpmath one in range
    S = construct(*_far_dataset(10), attention="softmax")
    assert S.tau_max == pytest.approx(float(S.tau_max_mp), rel=1e-15) and math.isfinite(S.tau_max)


def test_default_temperature():
    from sxor.interp.construct import default_temperature

    assert default_temperature(mpmath.inf) == 1
    assert default_temperature(mpmath.mpf(3)) == Fraction(3, 2)
    for t in (mpmath.mpf("1e-30"), mpmath.mpf("2.5e400")):
        tau = default_temperature(t)
        assert tau > 0 and abs(mpmath.mpf(tau.numerator) / tau.denominator / t - 0.5) < 1e-12


@pytest.mark.parametrize("seed", range(6))
def test_softmax_parameter_bound(seed):
    from sxor.interp.construct import parameter_bound

    X, Y, m = random_case(seed)
    d = X[0].shape[1]
    S, H = construct(X, Y, attention="softmax"), construct(X, Y)
    assert (
        S.num_parameters <= parameter_bound(m, d, "softmax") == parameter_bound(m, d) + 10 * d + 8
    )
    assert H.num_parameters <= parameter_bound(m, d)
    assert all(b.num_parameters <= 10 * d + 8 for b in S.blocks)
    with pytest.raises(ValueError, match="attention"):
        parameter_bound(m, d, "linear")


def test_parameter_sizes_and_equal_L_different_P():
    from sxor.interp.dataset import equal_means_dataset

    X, Y = random_dataset(4, 2, [1, 2, 1, 2], 2, seed=2)
    T = construct(X, Y)
    params = T.parameters()
    assert len(params) == T.num_parameters and all(type(p) is Fraction for p in params)
    big, bits = T.parameter_sizes()
    assert big == max(abs(p) for p in params) and big > 0
    assert bits == max(max(p.numerator.bit_length(), p.denominator.bit_length()) for p in params)
    # same L, different P: a separation block holding a hat (3(2d+1)+1) or an identity FF (1)
    Te = construct(*equal_means_dataset(2, 2, m=2))
    Tr = construct(*random_dataset(2, 3, [2, 2], 2, seed=0))
    assert Te.num_blocks == Tr.num_blocks
    assert Te.num_parameters - Tr.num_parameters == 3 * (2 * 2 + 1) + 1 - 1


def test_certificate_box_width():
    X, Y = random_dataset(3, 4, [1, 2, 2], 2, seed=4)
    T = construct(X, Y, attention="softmax")
    c = softmax_certificate(T, X, Y)
    assert c["exact"] and c["box_width"] == 0  # every output box is a single target point
    far = softmax_certificate(T, X, Y, Fraction(T.tau_max) * 200)
    assert not far["exact"] and 0 < far["box_width"] < Fraction(1, 10**40)  # tight boxes
    assert abs(max(far["hausdorff"]) - float(far["hausdorff_bound"])) < 1e-30 + 1e-9 * float(
        far["hausdorff_bound"]
    )
