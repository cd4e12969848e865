"""Tests of sxor.interp.construct: exact interpolation, assumption checks, counts, softmax path."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
import torch

from sxor.interp import feed_forward, hausdorff_squared, self_attention
from sxor.interp.construct import (
    FFLayer,
    block_bound,
    construct,
    identity_ff,
    identity_sa,
    injective_direction,
    interpolation_errors,
    parameter_bound,
    random_dataset,
)
from sxor.interp.exact import from_floats


def frac(rows) -> np.ndarray:
    return np.array([[Fraction(v) for v in r] for r in rows], dtype=object)


def params_formula(T) -> int:
    d = T.d
    return sum(1 + b.ff.width * (2 * d + 1) + 2 * d + 3 for b in T.blocks)


def check_counts(T, m, d):
    N = len(m)
    assert T.num_blocks <= block_bound(m, "hardmax")
    assert T.num_blocks <= block_bound(m, "softmax")
    assert T.num_blocks <= 2 * sum(m) + max(N - 1, 0)
    assert T.max_width <= 4
    assert T.num_parameters == params_formula(T)
    assert T.num_parameters <= parameter_bound(m, d) <= (30 * d + 24) * sum(m)
    assert all(b.ff.U.shape[1] == d for b in T.blocks)


# ------------------------------------------------------------------ exact interpolation


@pytest.mark.parametrize("seed", range(12))
def test_random_datasets_interpolate_exactly(seed):
    rng = np.random.default_rng(seed)
    N, d = int(rng.integers(1, 6)), int(rng.integers(2, 5))
    n = [int(v) for v in rng.integers(1, 7, size=N)]
    m = [int(rng.integers(1, nj + 1)) for nj in n]
    X, Y = random_dataset(N, n, m, d, seed=seed, overlap=bool(seed % 3))
    T = construct(X, Y)
    errors = interpolation_errors(T, X, Y)
    assert all(isinstance(e, Fraction) and e == 0 for e in errors)
    for x, y in zip(X, Y):  # one sequence at a time, through __call__
        out = T(x)
        assert out.shape == x.shape and all(isinstance(v, Fraction) for v in out.flat)
        assert {tuple(r) for r in out} == {tuple(r) for r in y}
    check_counts(T, m, d)


def test_equal_means_need_separation_moves():
    X = [
        frac([[0, 0], [2, 2]]),
        frac([[2, 0], [0, 2]]),
        frac([[1, 1]]),
        frac([[0, 0], [2, 0], [0, 2], [2, 2]]),
        frac([[1, 1], [0, 0], [2, 2]]),
        frac([[1, 1], [2, 0], [0, 2]]),
    ]
    Y = [
        frac([[5, 5]]),
        frac([[5, 5], [1, 0]]),
        frac([[0, 1]]),
        frac([[1, 2], [3, 3], [0, 0]]),
        frac([[7, 1]]),
        frac([[1, 1]]),
    ]
    T = construct(X, Y)
    assert T.info["separation_moves"] >= 1 and T.info["separation_moves"] <= len(X) - 1
    assert all(e == 0 for e in interpolation_errors(T, X, Y))
    check_counts(T, [len(y) for y in Y], 2)


def test_counts_do_not_grow_with_input_length():
    counts = set()
    for n in (3, 10, 30):
        X, Y = random_dataset(3, n, [1, 2, 1], 2, seed=1)
        T = construct(X, Y)
        assert all(e == 0 for e in interpolation_errors(T, X, Y))
        counts.add((T.num_blocks, T.max_width))
        assert T.num_blocks <= 2 * 4 + 2
    assert max(c[0] for c in counts) <= 2 * 4 + 2


def test_float_data_is_refused_and_from_floats_converts_exactly():
    X = [np.array([[0.5, 0.25], [1.0, -0.75], [0.1, 0.3]]), np.array([[0.5, 0.25], [2.0, 1.0]])]
    Y = [np.array([[3.0, 1.0]]), np.array([[0.0, 0.0], [1.0, 1.0]])]
    with pytest.raises(ValueError, match="accepts only int and Fraction"):
        construct(X, Y)
    Xe, Ye = [from_floats(x) for x in X], [from_floats(y) for y in Y]
    assert Xe[0][2, 0] == Fraction(0.1) != Fraction(1, 10)
    T = construct(Xe, Ye)
    assert all(e == 0 for e in interpolation_errors(T, Xe, Ye))
    for x, y in zip(X, Y):  # float64 torch evaluation of the same network
        out = T(torch.tensor(x, dtype=torch.float64))
        assert out.dtype == torch.float64
        assert float(hausdorff_squared(out, torch.tensor(y))) < 1e-12


def test_blocks_are_ff_then_sa_and_phases_in_order():
    X, Y = random_dataset(4, 5, [2, 1, 3, 1], 3, seed=3)
    T = construct(X, Y)
    phases = [b.phase for b in T.blocks]
    order = {"separation": 0, "leaders": 1, "collapse": 2, "projection": 3, "interpolation": 4}
    assert [order[p] for p in phases] == sorted(order[p] for p in phases)
    assert phases.count("collapse") == 1 and phases.count("interpolation") == sum([2, 1, 3, 1])
    states = T.trajectory(X[0])
    assert len(states) == 2 * T.num_blocks + 1
    assert np.array_equal(states[-1], T(X[0]))


# ------------------------------------------------------------------ layers and lemmas


def test_identity_layers_match_layers_module():
    X = frac([[1, 2], [3, -1], [0, 5]])
    ff, sa = identity_ff(2), identity_sa(2)
    assert (
        ff.is_identity
        and sa.is_identity
        and ff.num_parameters == 1
        and sa.num_parameters == 2 * 2 + 3
    )
    assert np.array_equal(feed_forward(X, ff.eta, ff.W, ff.U, ff.b), X)
    assert np.array_equal(self_attention(X, sa.A, sa.rho, sa.V), X)
    assert ff(X) is X and sa(X) is X


def test_every_hat_moves_exactly_one_value():
    X, Y = random_dataset(3, 6, 2, 2, seed=5)
    T = construct(X, Y)
    states = list(X)
    for block in T.blocks:
        bag = np.concatenate(states)  # FFs are token-wise: apply to all tokens at once
        after = block.ff(bag)
        assert np.array_equal(
            after, feed_forward(bag, block.ff.eta, block.ff.W, block.ff.U, block.ff.b)
        )
        translates = any(all(u == 0 for u in row) for row in block.ff.U)  # the constant neuron
        changed = {tuple(r) for r, s in zip(bag, after) if tuple(r) != tuple(s)}
        if not translates:
            assert len(changed) <= 1
        sizes = np.cumsum([0] + [len(s) for s in states])
        states = [block.sa(after[a:b]) for a, b in itertools.pairwise(sizes)]
    assert all({tuple(r) for r in s} == {tuple(r) for r in y} for s, y in zip(states, Y))


def test_injective_direction():
    pts = [
        (Fraction(0), Fraction(0)),
        (Fraction(1), Fraction(-1)),
        (Fraction(2), Fraction(-2)),
        (Fraction(1), Fraction(0)),
    ]
    v = injective_direction(pts, 2)
    assert v[0] == 1 and len({v[0] * a + v[1] * b for a, b in pts}) == len(pts)
    assert v != (1, 1)  # (1, 1) maps the first three points to 0


# ------------------------------------------------------------------ assumption violations


@pytest.mark.parametrize(
    "inputs, targets, message",
    [
        ([frac([[0, 0], [1, 1]])], [frac([[0, 0], [1, 1], [2, 2]])], "m = 3"),
        (
            [frac([[0, 0], [1, 1], [0, 0]])],
            [frac([[1, 0]])],
            r"inputs\[0\] repeats the token \(0, 0\)",
        ),
        (
            [frac([[0, 0], [1, 1]])],
            [frac([[2, 2], [2, 2]])],
            r"targets\[0\] repeats the token \(2, 2\)",
        ),
        (
            [frac([[0, 0], [1, 1]]), frac([[1, 1], [0, 0]])],
            [frac([[1, 0]]), frac([[0, 1]])],
            r"inputs\[0\] and inputs\[1\] contain the same tokens",
        ),
        (
            [np.array([[0], [1]], dtype=object)],
            [np.array([[1], [2]], dtype=object)],
            "d = 1 is supported only",
        ),
        ([frac([[0, 0]])], [frac([[0, 0, 0]])], "dimension 3"),
        ([frac([[0, 0]])], [], "1 input sequences but 0 target"),
        ([], [], "empty"),
        ([frac([[0, 0]])], [np.zeros((0, 2), dtype=object)], "empty"),
        ([np.array([[0.0, float("nan")]])], [frac([[1, 1]])], "accepts only int and Fraction"),
        ([frac([[0, 0]])], [np.array([["a", 1]], dtype=object)], "not a rational number"),
        (
            [frac([[0, 0], [1, 1]]), frac([[1, 1], [0, 0]])],
            [frac([[1, 0]]), frac([[1, 0], [0, 1]])],
            "their targets differ",
        ),
        ([np.array([Fraction(0), Fraction(0)], dtype=object)], [frac([[1, 1]])], "2-D"),
    ],
)
def test_assumption_violations_raise(inputs, targets, message):
    with pytest.raises(ValueError, match=message):
        construct(inputs, targets)


def test_bad_attention_arguments():
    X, Y = [frac([[0, 0], [1, 2]])], [frac([[1, 1]])]
    with pytest.raises(ValueError, match="attention must be one of"):
        construct(X, Y, attention="linear")
    with pytest.raises(ValueError, match="tau = 0"):
        construct(X, Y, attention="hardmax", tau=0.5)
    with pytest.raises(ValueError, match="tau > 0"):
        construct(X, Y, attention="softmax", tau=Fraction(-1))
    for bad in (float("inf"), float("nan"), -1.0):
        with pytest.raises(ValueError, match="tau must be"):
            construct(X, Y, attention="softmax", tau=bad)
    with pytest.raises(ValueError, match="float"):
        construct(X, Y, attention="softmax", tau=0.5)
    with pytest.raises(ValueError, match="softmax transformers only"):
        construct(X, Y).error_bound(0.1)


def test_random_dataset_arguments():
    with pytest.raises(ValueError, match="1 <= m_j <= n_j"):
        random_dataset(2, 2, 3, 2)
    with pytest.raises(ValueError, match="lists of N"):
        random_dataset(2, [2], 1, 2)
    X, _Y = random_dataset(10, 1, 1, 2, seed=0)  # needs a pool of >= 10 tokens
    assert len({frozenset(map(tuple, x)) for x in X}) == 10
    X2, _ = random_dataset(10, 1, 1, 2, seed=0)
    assert all(np.array_equal(a, b) for a, b in zip(X, X2))


def test_block_bound_formulas():
    assert block_bound([1, 2, 3], "hardmax") == 2 * 6 + 2 * 3 + 1
    assert block_bound([1, 2, 3], "softmax") == 2 * 6 + 3 * 3
    assert parameter_bound([1, 2], 2) == (2 * 3 + 1) * 28


def test_ff_layer_counts():
    layer = FFLayer(
        Fraction(1),
        np.zeros((4, 3), dtype=object),
        np.zeros(4, dtype=object),
        np.zeros((3, 4), dtype=object),
    )
    assert layer.width == 4 and layer.num_parameters == 1 + 4 * 7 and not layer.is_identity


def test_random_dataset_refuses_infeasible_and_bad_sizes():
    with pytest.raises(ValueError, match="N must be >= 1"):
        random_dataset(0, 2, 1, 2)
    for den in (0, -3):
        with pytest.raises(ValueError, match="denominator must be >= 1"):
            random_dataset(2, 2, 1, 2, denominator=den)
    with pytest.raises(ValueError, match="grid"):  # 9 grid points in d = 1, den = 1
        random_dataset(3, 10, 1, 1, denominator=1)
    with pytest.raises(ValueError, match="grid"):  # more distinct inputs than subsets of the grid
        random_dataset(10, 1, 1, 1, denominator=1, overlap=False)
    with pytest.raises(ValueError, match="grid"):
        random_dataset(40, 8, 1, 1, denominator=1)
    for bad in (2.0, True, "3"):
        with pytest.raises(ValueError):
            random_dataset(bad, 2, 1, 2)
    with pytest.raises(ValueError, match="d = 1 needs"):
        random_dataset(2, 3, 2, 1)
    X, _Y = random_dataset(9, 1, 1, 1, denominator=1, overlap=False)  # exactly the 9 grid points
    assert len({tuple(x.flat) for x in X}) == 9


@pytest.mark.parametrize("N", [1, 2, 5])
def test_equal_means_family_needs_n_minus_one_moves(N):
    from sxor.interp.dataset import equal_means_dataset

    for m in (1, 2):
        X, Y = equal_means_dataset(N, 2, m)
        assert all(sum(x[:, c]) == 0 for x in X for c in range(2))
        T = construct(X, Y)
        assert T.info["separation_moves"] == N - 1
        assert all(e == 0 for e in interpolation_errors(T, X, Y))
    with pytest.raises(ValueError):
        equal_means_dataset(N, 2, 4)


def test_dense_parameter_count():
    X, Y = random_dataset(2, 3, [2, 1], 3, seed=0)
    T = construct(X, Y)
    assert (
        T.dense_parameters
        == sum(b.ff.num_parameters + 3 * 9 + 1 for b in T.blocks)
        > T.num_parameters
    )
