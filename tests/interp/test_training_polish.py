"""The Gauss-Newton polish of the depth-L trainer (sxor.interp._training_polish)."""

from __future__ import annotations

import torch

from sxor.interp import deep_training as dt
from sxor.interp._training_polish import gauss_newton_polish
from sxor.interp.dataset import random_dataset


def _teacher_data(L: int = 2, N: int = 3, n: int = 3, seed: int = 7):
    inputs, targets = random_dataset(N, n, 1, 2, seed=seed)
    X, _ = dt.dataset_tensors(inputs, targets)
    teacher = {k: v.detach() for k, v in dt.init_network(L, 2, seed=seed).items()}
    Y = dt.forward(X, teacher).detach()
    return X, Y, teacher


def _chamfer(X, Y, theta) -> float:
    return float(dt.OBJECTIVES["chamfer"](dt.forward(X, theta), Y).mean().detach())


def test_near_a_teacher_the_polish_reaches_rounding_level_in_a_few_steps():
    X, Y, teacher = _teacher_data()
    gen = torch.Generator().manual_seed(1)
    theta = {
        k: (v + 1e-3 * torch.randn(v.shape, generator=gen, dtype=v.dtype)).requires_grad_(True)
        for k, v in teacher.items()
    }
    before = dt.interpolation_error(X, Y, theta)
    out = gauss_newton_polish(dt.forward, X, Y, theta, 50)
    after = dt.interpolation_error(X, Y, theta)
    assert before > 1e-5 and after < 1e-11
    assert 1 <= out["steps"] <= 20  # fast (superlinear) convergence: few kept steps
    assert all(p.requires_grad for p in theta.values())
    # its objective is the Chamfer objective of the result (compared where it is not rounding)
    theta2 = {k: (v + 1e-2 * torch.randn(v.shape, generator=gen, dtype=v.dtype)).requires_grad_(True)
              for k, v in teacher.items()}  # fmt: skip
    out2 = gauss_newton_polish(dt.forward, X, Y, theta2, 1)
    assert out2["objective"] > 1e-12
    assert abs(out2["objective"] - _chamfer(X, Y, theta2)) <= 1e-10 * out2["objective"]


def test_the_polish_never_raises_the_objective_and_stops_where_no_step_helps():
    inputs, targets = random_dataset(6, 5, 3, 2, seed=3)  # random targets: no interpolant near
    X, Y = dt.dataset_tensors(inputs, targets)
    theta = dt.init_network(1, 2, seed=3)
    before = _chamfer(X, Y, theta)
    out = gauss_newton_polish(dt.forward, X, Y, theta, 2000)
    assert 0 < out["objective"] < before
    assert abs(out["objective"] - _chamfer(X, Y, theta)) <= 1e-12 * max(1.0, before)
    assert out["tried"] < 2000  # stopped by the damping rule (no step helps), not by the budget


def test_train_with_newton_reports_its_steps_and_refuses_a_penalty():
    X, Y, _ = _teacher_data(L=1, N=2)
    theta = dt.init_network(1, 2, seed=0)
    out = dt.train(X, Y, theta, steps=5, polish=3, newton=4, objective="chamfer")
    assert "newton_steps" in out and 0 <= out["newton_steps"] <= 4
    assert "newton_steps" not in dt.train(X, Y, dt.init_network(1, 2, seed=0), steps=2, polish=0)
    try:
        dt.train(X, Y, dt.init_network(1, 2, seed=0), steps=1, polish=0, newton=2, epsilon=0.1)
    except ValueError as e:
        assert "epsilon = 0" in str(e)
    else:
        raise AssertionError("newton with a penalty must be refused")
