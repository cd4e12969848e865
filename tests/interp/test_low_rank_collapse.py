"""The collapse in the paper's class A = a I + b 1 1^T (chapter 13, "A low-rank collapse for every m_j").

Hardmax exactness on random and adversarial datasets with m_j up to 8 and d up to 5 (one sequence
with m_j = 30 and b / a = 10^6 or a = 10^-9), the softmax network certified by the rigorous
certificate, the block count equal to the A = I construction, the failure of the circle parking at
b / a >= beta*, the bound beta* <= r(M) < 1/M on the circle and the rank-one bound of three values."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
import torch

from sxor.interp import (
    as_exact,
    construct,
    interpolation_errors,
    random_dataset,
    self_attention,
    softmax_certificate,
)
from sxor.interp.construct import _parking_spot, collapse_layer, ellipse_parking_spots
from sxor.interp.dataset import equal_means_dataset
from sxor.interp.exact import dot
from sxor.interp.lemmas import low_rank_layer, low_rank_threshold, random_rationals

WEIGHTS = [(1, 1), (Fraction(1, 100), 1), (1, Fraction(1, 100)), (1, 100), (Fraction(1, 10**6), 1)]


def _dataset(seed: int, top: int = 8):
    rng = np.random.default_rng(seed)
    N, d = int(rng.integers(1, 4)), int(rng.integers(2, 6))
    m = [int(v) for v in rng.integers(1, top + 1, size=N)]
    m[0] = max(m[0], 2)  # the leader route
    n = [mj + int(rng.integers(0, 3)) for mj in m]
    return random_dataset(N, n, m, d, seed=seed)


def _collapse_sa(T):
    return next(b.sa for b in T.blocks if b.phase == "collapse")


@pytest.mark.parametrize("seed", range(8))
def test_low_rank_collapse_interpolates_exactly_with_the_same_blocks(seed):
    X, Y = _dataset(seed)
    d = X[0].shape[1]
    I = construct(X, Y)
    for a, b in WEIGHTS[seed % 2 :: 2] if seed < 6 else WEIGHTS:
        T = construct(X, Y, collapse="low-rank", low_rank=(a, b))
        A = _collapse_sa(T).A
        assert (
            A.tolist()
            == (
                Fraction(a) * np.eye(d, dtype=int) + Fraction(b) * np.ones((d, d), dtype=int)
            ).tolist()
        )
        assert all(e == 0 for e in interpolation_errors(T, X, Y))
        assert T.num_blocks == I.num_blocks and T.phase_counts() == I.phase_counts()
        assert T.num_parameters == I.num_parameters and T.max_width <= 4
        assert T.info["low_rank"] == (Fraction(a), Fraction(b))


@pytest.mark.parametrize("seed", range(3))
def test_low_rank_collapse_lemma_on_the_states_it_sees(seed):
    # the lemma's conclusion, read off the layer: bulk -> leader, leader and parked tokens fixed
    X, Y = _dataset(10 + seed)
    T = construct(X, Y, collapse="low-rank", low_rank=(1, 3))
    snap = T.snapshots(X)
    sa = _collapse_sa(T)
    parked = []
    for before, after, y in zip(snap["leaders"], snap["collapse"], Y):
        m = y.shape[0]
        assert [tuple(r) for r in after[:m]] == [
            tuple(r) for r in before[:m]
        ]  # leader and parked fixed
        assert all(tuple(r) == tuple(before[0]) for r in after[m:])  # bulk -> leader
        parked += [tuple(r) for r in before[1:m]]
    norms = {dot(q, [sa.alpha * c + sa.q[0] * sum(q) for c in q]) for q in parked}  # q^T A q
    assert len(norms) <= 1  # one A-ellipse


def test_b_zero_gives_back_the_identity_network():
    X, Y = _dataset(3)
    I, T = construct(X, Y), construct(X, Y, collapse="low-rank", low_rank=(1, 0))
    assert _collapse_sa(T).A.tolist() == _collapse_sa(I).A.tolist()
    assert [b.ff.W.tolist() for b in T.blocks] == [b.ff.W.tolist() for b in I.blocks]
    assert [tuple(map(tuple, o)) for o in T.map(X)] == [tuple(map(tuple, o)) for o in I.map(X)]
    assert ellipse_parking_spots(4, 7, 3, 1, 0) == [
        _parking_spot(i, 4, Fraction(7), 3) for i in range(1, 5)
    ]


@pytest.mark.parametrize("a, b", [(1, 1), (Fraction(1, 50), 3), (5, Fraction(1, 7))])
def test_ellipse_spots_are_rational_distinct_and_on_one_ellipse(a, b):
    spots = ellipse_parking_spots(9, Fraction(5, 2), 4, a, b)
    a, b = Fraction(a), Fraction(b)
    forms = {a * (q[0] ** 2 + q[1] ** 2) + b * (q[0] + q[1]) ** 2 for q in spots}
    assert len(set(spots)) == 9 and len(forms) == 1
    assert all(q[0] < 0 and q[1] < 0 and q[2] == q[3] == 0 for q in spots)
    assert all(q[0] ** 2 + q[1] ** 2 >= Fraction(5, 2) ** 2 for q in spots)


@pytest.mark.parametrize("seed", range(3))
def test_low_rank_softmax_network_is_certified_exact(seed):
    X, Y = _dataset(20 + seed, top=6)
    a, b = [(1, 1), (Fraction(1, 10), 1), (1, 10)][seed]
    T = construct(X, Y, attention="softmax", collapse="low-rank", low_rank=(a, b))
    assert T.tau_max > 0
    cert = softmax_certificate(T, X, Y)
    assert cert["certified"] and cert["exact"] and cert["hausdorff_bound"] == 0
    assert T.num_blocks == construct(X, Y, attention="softmax").num_blocks


def test_adversarial_shared_tokens_equal_means_and_nearly_rank_one():
    # equal means and a shared token (separation moves needed), and a = 10^-6: nearly rank one
    Xe, Ye = equal_means_dataset(4, 2, m=3)
    for low_rank in ((Fraction(1, 10**6), 1), (1, 10**6)):
        T = construct(Xe, Ye, collapse="low-rank", low_rank=low_rank)
        assert all(e == 0 for e in interpolation_errors(T, Xe, Ye))
        assert T.num_blocks == construct(Xe, Ye).num_blocks


def test_the_circle_parking_fails_exactly_at_the_threshold():
    # one sequence, m = 4: three parked tokens on the circle. beta* = 10/31; A = I + b 1 1^T keeps
    # them iff b < beta*; at b = 1 the construction's own circle network no longer interpolates
    X, Y = random_dataset(1, 6, 4, 2, seed=0)
    I = construct(X, Y)
    before = I.snapshots(X)["leaders"][0]
    Q = before[1:4]
    beta = low_rank_threshold(Q, [1, 1])
    assert beta is not None and 0 < beta < 1
    for b, kept in ((beta * Fraction(999, 1000), True), (beta, False), (Fraction(1), False)):
        out = self_attention(before, **low_rank_layer(1, b, [1, 1]))
        assert (out[1:4].tolist() == Q.tolist()) is kept
    # the full network with the circle parking and A = I + 1 1^T: not exact; the ellipse: exact
    import dataclasses

    k = next(i for i, blk in enumerate(I.blocks) if blk.phase == "collapse")
    bad = dataclasses.replace(
        I,
        blocks=(
            *I.blocks[:k],
            dataclasses.replace(I.blocks[k], sa=collapse_layer(2, "low-rank", (1, 1))),
            *I.blocks[k + 1 :],
        ),
    )
    assert any(e != 0 for e in interpolation_errors(bad, X, Y))
    assert all(e == 0 for e in interpolation_errors(construct(X, Y, collapse="low-rank"), X, Y))


def test_threshold_shrinks_as_the_circle_fills():
    r = Fraction(10)
    betas = [
        low_rank_threshold(as_exact([_parking_spot(i, M, r, 2) for i in range(1, M + 1)]), [1, 1])
        for M in (2, 4, 8, 16, 32)
    ]
    assert all(x > y for x, y in itertools.pairwise(betas))
    assert betas[-1] < Fraction(1, 50)


@pytest.mark.parametrize("seed", range(5))
def test_a_rank_one_layer_leaves_at_most_three_values(seed):
    g = torch.Generator().manual_seed(seed)
    X = random_rationals((12, 3), g, bound=2, den=2)
    q, k = random_rationals((3,), g, bound=2, den=1), random_rationals((3,), g, bound=2, den=1)
    X[0] = as_exact([0, 0, 0])  # a zero projection: the third value, the mean
    V = as_exact(np.eye(3, dtype=int) * 2)
    out = self_attention(X, np.outer(q, k), Fraction(0), V)
    assert len({tuple(r) for r in out}) <= 3


def test_collapse_layer_low_rank_refuses_bad_weights():
    for bad, match in (
        ((0, 1), "a > 0"),
        ((1, -1), "b >= 0"),
        ((1.0, 1), "float"),
        ((1,), "pair"),
        ("11", "pair"),
    ):
        with pytest.raises(ValueError, match=match):
            collapse_layer(2, "low-rank", bad)


@pytest.mark.parametrize("d", [2, 5])
def test_every_m_from_one_to_eight_in_one_dataset(d):
    m = list(range(1, 9))
    X, Y = random_dataset(8, [mj + 1 for mj in m], m, d, seed=d)
    for low_rank in ((1, 1), (Fraction(1, 100), 1)):
        T = construct(X, Y, collapse="low-rank", low_rank=low_rank)
        assert all(e == 0 for e in interpolation_errors(T, X, Y))
        assert T.num_blocks == construct(X, Y).num_blocks


def test_ellipse_spots_refuse_non_int_sizes():
    for call in (
        lambda: ellipse_parking_spots(3.0, 1, 2, 1, 1),
        lambda: ellipse_parking_spots(3, 1, True, 1, 1),
    ):
        with pytest.raises(TypeError, match="must be an int"):
            call()


@pytest.mark.parametrize(
    "m, d, low_rank",
    [(30, 2, (1, 10**6)), (30, 3, (Fraction(1, 10**9), 1)), (24, 4, (7, Fraction(1, 3)))],
)
def test_large_m_and_extreme_weights(m, d, low_rank):
    # the lemma holds for every m_j; the tests above stop at 8: one sequence with m_j = 30, b/a = 10^6
    # (nearly rank one) and a = 10^-9
    X, Y = random_dataset(1, m + 2, m, d, seed=m + d)
    T = construct(X, Y, collapse="low-rank", low_rank=low_rank)
    assert all(e == 0 for e in interpolation_errors(T, X, Y))
    assert T.num_blocks == construct(X, Y).num_blocks


@pytest.mark.parametrize("a, b", [(1, 10**6), (Fraction(1, 10**12), 1), (10**6, 1), (1, 0)])
def test_many_ellipse_spots_with_extreme_weights(a, b):
    rho = Fraction(3)
    spots = ellipse_parking_spots(200, rho, 3, a, b)
    a, b = Fraction(a), Fraction(b)
    assert len(set(spots)) == 200
    assert len({a * (q[0] ** 2 + q[1] ** 2) + b * (q[0] + q[1]) ** 2 for q in spots}) == 1
    assert all(
        q[0] < 0 and q[1] < 0 and q[2] == 0 and q[0] ** 2 + q[1] ** 2 >= rho**2 for q in spots
    )


def test_leader_phase_refuses_a_bad_metric_even_with_nothing_parked():
    from sxor.interp.construct import leader_phase, separation_phase

    X, Y = random_dataset(2, 3, 1, 2, seed=1)  # every m_j = 1: no parked token
    sep = separation_phase([x.copy() for x in X], 2, shift=True)
    for bad, match in (((0, 1), "a > 0"), ((1, -1), "b >= 0"), ((1.5, 1), "metric\\[0\\]")):
        with pytest.raises(ValueError, match=match):
            leader_phase(sep.states, Y, 2, sep.start, metric=bad)


def test_circle_threshold_is_at_most_the_last_pair_bound():
    # proved: beta*(Q_M) <= r(M) < 1/M for M >= 3 (the pair of the last two spots); measured: equality
    from sxor.interp.lemmas import circle_threshold_bound

    r = Fraction(10)
    for M in (3, 4, 5, 8, 13, 20, 40):
        spots = [_parking_spot(i, M, r, 2) for i in range(1, M + 1)]
        q, p = spots[-1], spots[-2]
        pair = (r * r - dot(q, p)) / (sum(q) * (sum(p) - sum(q)))
        assert sum(q) * (sum(p) - sum(q)) > 0 and pair == circle_threshold_bound(M)
        beta = low_rank_threshold(as_exact(spots), [1, 1])
        assert beta <= circle_threshold_bound(M) < Fraction(1, M)
