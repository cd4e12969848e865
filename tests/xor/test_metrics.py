"""The success criterion and the failure-mode classification of sxor.xor.metrics."""

from __future__ import annotations

import pytest
import torch

import sxor
from sxor.xor.metrics import (
    FAILURE_MODES,
    failure_modes,
    mode_fractions,
    specialised,
    success,
    target_masses,
)

SUPPORT = torch.tensor([1, 3])


def _weights(*rows):
    return torch.tensor(rows[0] if len(rows) == 1 else rows, dtype=torch.float64)


def _classify(g, h):
    loss = sxor.loss_from_weights(g, h, SUPPORT)
    return failure_modes(loss, g, h, SUPPORT)


def test_target_masses_and_success_on_hand_built_heads():
    g, h = _weights([0.0, 0.99, 0.0, 0.01, 0.0]), _weights([0.0, 0.0, 0.0, 1.0, 0.0])
    masses = target_masses(g, h, SUPPORT)
    torch.testing.assert_close(masses, _weights([0.99, 0.01], [0.0, 1.0]))
    assert bool(specialised(masses)) and bool(specialised(masses.flip(-2)))
    loss = sxor.loss_from_weights(g, h, SUPPORT)
    assert bool(success(loss, g, h, SUPPORT))
    assert not bool(success(loss, g, g, SUPPORT))


@pytest.mark.parametrize(
    "g, h, mode",
    [
        ([0.0, 1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0, 0.0], "success"),
        ([0.0, 0.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0, 0.0], "success"),
        ([0.0, 0.2, 0.0, 0.0, 0.8], [0.0, 0.0, 0.0, 1.0, 0.0], "off_target"),
        ([0.0, 1.0, 0.0, 0.0, 0.0], [0.0, 0.4, 0.6, 0.0, 0.0], "off_target"),
        ([0.0, 0.9, 0.0, 0.1, 0.0], [0.0, 0.6, 0.0, 0.4, 0.0], "same_target"),
        ([0.0, 0.8, 0.0, 0.2, 0.0], [0.0, 0.2, 0.0, 0.8, 0.0], "under_stepped"),
        ([0.0, 0.9, 0.1, 0.0, 0.0], [0.0, 0.0, 0.1, 0.9, 0.0], "under_stepped"),
    ],
)
def test_each_mode_on_a_hand_built_example(g, h, mode):
    assert FAILURE_MODES[int(_classify(_weights(g), _weights(h)))] == mode


def test_modes_are_exclusive_exhaustive_and_agree_with_success():
    inst = sxor.xor.sweeps.random_instances(300, 32, 8, seed=0)
    out = sxor.one_step(
        inst.V, inst.theta0, inst.support, torch.tensor([[1e3], [1e5], [1e7]], dtype=torch.float64)
    )
    codes = failure_modes(out.loss, out.attention, out.attention_tilde, inst.support)
    assert codes.shape == (3, 300)
    ok = success(out.loss, out.attention, out.attention_tilde, inst.support)
    assert torch.equal(codes == 0, ok)
    fractions = mode_fractions(codes)
    assert set(fractions) == set(FAILURE_MODES)
    assert sum(fractions.values()) == pytest.approx(1.0)
    assert fractions["under_stepped"] > 0 and fractions["success"] > 0  # the small step under-steps


def test_thresholds_are_respected():
    g, h = _weights([0.0, 0.95, 0.0, 0.05, 0.0]), _weights([0.0, 0.05, 0.0, 0.95, 0.0])
    loss = sxor.loss_from_weights(g, h, SUPPORT)  # (2 * 0.05 * 0.95)^2 = 0.009
    assert int(failure_modes(loss, g, h, SUPPORT)) == 0
    assert int(failure_modes(loss, g, h, SUPPORT, loss_threshold=0.005)) == 3


def test_mode_fractions_rejects_bad_codes():
    with pytest.raises(ValueError, match="empty"):
        mode_fractions(torch.tensor([], dtype=torch.long))
    with pytest.raises(ValueError, match="codes"):
        mode_fractions(torch.tensor([0, 7]))
    with pytest.raises(ValueError, match="codes"):
        mode_fractions(torch.tensor([0.0, 1.0]))
