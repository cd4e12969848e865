"""Chapter "Beyond two bits": the sample-size rule, collisions, and the sign of the parity model."""

from __future__ import annotations

import pytest
import torch

import sxor
from sxor.experiments.beyond_two_bits import (
    PERMUTATION_RATE,
    collisions,
    seeds_to_separate,
    two_bit_one_step,
)
from sxor.xor.kparity import parity_labels, parity_predict


def test_seeds_to_separate_matches_the_normal_approximation_and_grows_near_p0():
    # p = 0.1 against 2/9: ((1.96 * 0.41574 + 0.84162 * 0.3) / 0.12222)^2 = 76.1 -> 77
    assert seeds_to_separate(0.1) == 77
    assert seeds_to_separate(0.27) > 500 > seeds_to_separate(0.4)
    assert seeds_to_separate(0.25, power=0.9) > seeds_to_separate(0.25, power=0.8)
    assert pytest.approx(6 / 27) == PERMUTATION_RATE
    with pytest.raises(ValueError):
        seeds_to_separate(PERMUTATION_RATE)
    with pytest.raises(ValueError):
        seeds_to_separate(0.3, alpha=0.0)


def test_collisions():
    w = torch.zeros(3, 3, 5)
    w[0, [0, 1, 2], [0, 1, 2]] = 1  # a permutation: no collision
    w[1, [0, 1, 2], [0, 0, 3]] = 1  # heads 1 and 2 on position 0
    w[2, [0, 1, 2], [4, 1, 4]] = 1  # heads 1 and 3 on position 4
    assert collisions(w).tolist() == [False, True, True]


@pytest.mark.parametrize("k", [2, 3, 4])
def test_the_model_must_carry_the_label_sign_for_every_k(k):
    d = 7
    x = sxor.all_inputs(d)
    support = torch.arange(k)
    onehot = torch.nn.functional.one_hot(support, d).double()  # head h on target h
    y = parity_labels(x, support)
    f = parity_predict(x, onehot)
    assert torch.equal(f, y)  # -prod with one-hot heads is the label: loss 0
    assert float((0.5 * (-f - y) ** 2).mean()) == 2.0  # the +prod model is at the worst loss
    # x -> -x multiplies f and y by the same (-1)^k: the loss is invariant for every k
    torch.testing.assert_close(parity_predict(-x, onehot), (-1) ** k * f)
    torch.testing.assert_close(parity_labels(-x, support), (-1) ** k * y)


def test_two_bit_control_counts_the_successes_of_one_step():
    etas = [1e4, 1e8]
    got = two_bit_one_step(40, 10, 6, etas)
    inst = sxor.xor.sweeps.random_instances(40, 10, 6, seed=0)
    for eta in etas:
        res = sxor.one_step(inst.V, inst.theta0, inst.support, eta, "softmax")
        want = sxor.xor.metrics.success(res.loss, res.attention, res.attention_tilde, inst.support)
        assert got[eta] == int(want.sum())
    assert 0 < got[1e8] < 40  # at m = 6 < d = 10 some instances fail, some succeed
    with pytest.raises(ValueError):
        two_bit_one_step(0, 10, 6, etas)
    with pytest.raises(ValueError):
        two_bit_one_step(5, 10, 6, [0.0])
