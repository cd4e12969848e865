"""The three collapse lemmas on random instances, in exact arithmetic, and their failure modes."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch

from sxor.interp import as_exact, self_attention
from sxor.interp.lemmas import (
    box_prediction,
    box_sets,
    box_violations,
    identity_layer,
    outermost_tokens,
    random_box_instance,
    random_grid_box_instance,
    random_rank_one_instance,
    random_rationals,
    random_sphere_instance,
    rank_one_layer,
    rank_one_prediction,
    rank_one_sets,
    rank_one_violations,
    rational_sphere_point,
)


def rows(a):
    return [list(r) for r in a]


@pytest.mark.parametrize("seed", range(40))
def test_rank_one_lemma_random(seed):
    g = torch.Generator().manual_seed(seed)
    n, d = int(torch.randint(2, 9, (), generator=g)), int(torch.randint(2, 5, (), generator=g))
    X, v = random_rank_one_instance(n, d, g)
    out = self_attention(X, **rank_one_layer(v))
    proj = [sum(a * b for a, b in zip(x, v)) for x in X]
    top, bottom = rows(X)[proj.index(max(proj))], rows(X)[proj.index(min(proj))]
    for i, p in enumerate(proj):  # the lemma as stated: the extreme on the token's side
        assert list(out[i]) == (top if p > 0 else bottom)
    assert len({tuple(r) for r in out}) <= 2


@pytest.mark.parametrize("seed", range(20))
def test_rank_one_characterisation_without_hypotheses(seed):
    # small integer grid: zero projections and ties are frequent
    g = torch.Generator().manual_seed(1000 + seed)
    X = as_exact(torch.randint(-2, 3, (7, 2), generator=g))
    v = as_exact([1, int(torch.randint(-1, 2, (), generator=g))])
    assert rows(self_attention(X, **rank_one_layer(v))) == rows(rank_one_prediction(X, v))


def test_rank_one_failures_exact_outcomes():
    v = as_exact([1, 0])
    # token (0, 5) has <v, x> = 0: it ties with everyone and goes to the sequence mean
    X = as_exact([[2, 1], [-1, 3], [0, 5], [1, -2]])
    assert "<v, x_2> = 0" in rank_one_violations(X, v)
    out = self_attention(X, **rank_one_layer(v))
    assert list(out[2]) == [Fraction(1, 2), Fraction(7, 4)]
    # two tokens tie for the largest projection: the positive side goes to their midpoint
    Y = as_exact([[2, 1], [2, -3], [1, 0], [-1, 1]])
    assert rank_one_violations(Y, v) == ["2 tokens tie for the largest <v, x>"]
    out = self_attention(Y, **rank_one_layer(v))
    assert list(out[2]) == [2, -1] and list(out[3]) == [-1, 1]
    assert rank_one_sets(Y, v)[0] == [0, 1]


@pytest.mark.parametrize("seed", range(40))
def test_box_lemma_random(seed):
    g = torch.Generator().manual_seed(seed)
    n, d = int(torch.randint(2, 9, (), generator=g)), int(torch.randint(1, 5, (), generator=g))
    X, R = random_box_instance(n, d, g)
    assert box_violations(X, R) == []
    out = self_attention(X, **identity_layer(d))
    assert all(x == R for x in out.flat)


@pytest.mark.parametrize("seed", range(30))
def test_box_characterisation_on_faces(seed):
    g = torch.Generator().manual_seed(2000 + seed)
    X, R = random_grid_box_instance(9, 2, g)
    out = self_attention(X, **identity_layer(2))
    assert rows(out) == rows(box_prediction(X, R))
    # the violation list is empty exactly when every token lands on the corner
    assert (box_violations(X, R) == []) == all(x == R for x in out.flat)


def test_box_failures_exact_outcomes():
    R = Fraction(2)
    # x = (0, 1) lies on the face x_1 = 0 and ties with (1, 2): goes to the mean of {corner, (1, 2)}
    X = as_exact([[2, 2], [0, 1], [1, 2], [1, 1]])
    assert box_sets(X, R)[1] == [0, 2]
    assert list(self_attention(X, **identity_layer(2))[1]) == [Fraction(3, 2), 2]
    assert box_violations(X, R) == ["x_1 ties the corner with x_2"]
    # a token outside the box attracts the tokens that point towards it
    Y = as_exact([[2, 2], [3, 1], [Fraction(3, 2), Fraction(1, 4)]])
    assert box_violations(Y, R) == ["x_1 lies outside [0, R]^d"]
    out = self_attention(Y, **identity_layer(2))
    assert list(out[2]) == [3, 1]  # <(3/2, 1/4), (3, 1)> = 19/4 > <., (2, 2)> = 7/2
    with pytest.raises(ValueError, match="outside the box"):
        box_prediction(Y, R)


@pytest.mark.parametrize("seed", range(30))
def test_sphere_lemma_random(seed):
    g = torch.Generator().manual_seed(seed)
    d = int(torch.randint(2, 5, (), generator=g))
    X, R = random_sphere_instance(4, 5, d, g)
    assert outermost_tokens(X) == [0, 1, 2, 3]
    assert all(sum(x * x for x in X[i]) == R * R for i in range(4))
    out = self_attention(X, **identity_layer(d))
    for i in range(4):
        assert list(out[i]) == list(X[i])


def test_sphere_failure_token_outside():
    R = 5
    X = np.stack(
        [rational_sphere_point([Fraction(1, 2)], R), rational_sphere_point([2], R)]
    )  # (4, -3), (4, 3)
    assert rows(X) == [[4, -3], [4, 3]]
    Y = np.concatenate([X, as_exact([[6, -2]])])  # |(6, -2)|^2 = 40 > 25
    out = self_attention(Y, **identity_layer(2))
    assert list(out[0]) == [6, -2]  # <(4, -3), (6, -2)> = 30 > 25: the sphere token moves
    assert list(out[1]) == [4, 3]  # <(4, 3), (6, -2)> = 18 < 25: this one stays


def test_generators_bad_input():
    with pytest.raises(ValueError, match="nonzero"):
        rank_one_layer([0, 0])
    with pytest.raises(ValueError, match="corner"):
        box_sets(as_exact([[1, 1]]), 2)
    vals = random_rationals((50,), torch.Generator().manual_seed(0), bound=2, den=5)
    assert all(isinstance(x, Fraction) and -2 <= x <= 2 for x in vals)
