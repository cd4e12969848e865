"""The depth-L trainer of section 15c (sxor.interp.deep_training): gradients, the construction as
an exact interpolant and stationary point, a teacher at itself, and bad input."""

from __future__ import annotations

import math

import pytest
import torch

from sxor.interp import deep_training as dt
from sxor.interp.construct import construct
from sxor.interp.dataset import random_dataset


def _data(N=3, n=3, m=1, d=2, seed=0):
    inputs, targets = random_dataset(N, n, m, d, seed=seed)
    return inputs, targets, *dt.dataset_tensors(inputs, targets)


def _grad_norm(X, Y, theta):
    th = {k: v.detach().clone().requires_grad_(True) for k, v in theta.items()}
    J = dt.loss(X, Y, th)
    grads = torch.autograd.grad(J, [th[k] for k in dt.PARAMETER_NAMES])
    return float(J.detach()), float(torch.sqrt(sum((g**2).sum() for g in grads)))


def test_gradient_matches_finite_differences():
    _, _, X, Y = _data(N=2, n=3, m=2)
    theta = dt.init_network(2, 2, width=3, seed=4)
    with torch.no_grad():
        theta["alpha"].fill_(0.3)  # exercise the alpha I part of A as well
    flat = [theta[k].detach().clone() for k in dt.PARAMETER_NAMES]

    def f(*ps):
        return dt.loss(X, Y, dict(zip(dt.PARAMETER_NAMES, ps)))

    ps = tuple(p.requires_grad_(True) for p in flat)
    assert torch.autograd.gradcheck(f, ps, eps=1e-6, atol=1e-7, rtol=1e-5)


@pytest.mark.parametrize("m", [1, 2])
def test_construction_is_an_interpolant_and_stationary(m):
    inputs, targets, X, Y = _data(N=3, n=3, m=m)
    T = construct(inputs, targets, "softmax")
    theta = dt.from_construction(T)
    assert dt.num_blocks(theta) == T.num_blocks
    J, g = _grad_norm(X, Y, theta)
    # exact in exact arithmetic; float64 evaluation leaves rounding only
    assert dt.interpolation_error(X, Y, theta) < 1e-10
    assert J < 1e-18 and g < 1e-6
    # and a point nearby is not an interpolant: the test can fail
    moved = {k: v + 0.1 for k, v in theta.items()}
    assert dt.interpolation_error(X, Y, moved) > 1e-3


def test_teacher_has_loss_zero_and_zero_gradient_at_itself():
    _, _, X, _ = _data(N=4, n=3)
    teacher = {k: v.detach() for k, v in dt.init_network(3, 2, seed=7).items()}
    Y = dt.forward(X, teacher)
    J, g = _grad_norm(X, Y, teacher)
    assert J == 0.0 and g == 0.0
    assert dt.interpolation_error(X, Y, teacher) == 0.0


def test_forward_trace_and_padding_of_targets():
    inputs, targets, X, _ = _data(N=2, n=3, m=1)
    targets = [targets[0], torch.zeros(2, 2).numpy()]
    _, Y2 = dt.dataset_tensors(inputs, targets)
    assert Y2.shape == (2, 2, 2) and torch.equal(Y2[0, 0], Y2[0, 1])
    theta = dt.init_network(3, 2, seed=0)
    trace: list = []
    out = dt.forward(X, theta, trace)
    assert len(trace) == 3 and torch.equal(trace[-1][0], out)
    assert torch.allclose(trace[0][1].sum(-1), torch.ones(2, 3, dtype=torch.float64))


def test_training_reduces_the_loss_and_reports():
    _, _, X, Y = _data(N=2, n=3, m=1)
    theta = dt.init_network(2, 2, seed=1)
    before = float(dt.loss(X, Y, theta))
    out = dt.train(X, Y, theta, 50, lr=1e-2, polish=20)
    assert out["loss"] < before and not out["diverged"]
    assert out["interpolates"] == (out["error"] <= 1e-6)


def test_bad_input_one_line_errors():
    _, _, X, Y = _data(N=2, n=3)
    theta = dt.init_network(1, 2)
    cases = [
        (lambda: dt.init_network(0, 2), ValueError, "L must be >= 1"),
        (lambda: dt.init_network(1.0, 2), TypeError, "L must be an int"),
        (lambda: dt.init_network(1, 2, dtype=torch.int64), TypeError, "dtype"),
        (lambda: dt.loss(X[0], Y, theta), ValueError, "X must have shape"),
        (lambda: dt.loss(X, Y.float(), theta), ValueError, "Y must be"),
        (lambda: dt.loss(X, Y, {"eta": theta["eta"]}), ValueError, "theta must be a dict"),
        (lambda: dt.loss(X.float(), Y.float(), theta), TypeError, "dtype"),
        (lambda: dt.forward(X[..., :1], theta), ValueError, "dimension"),
        (lambda: dt.train(X, Y, theta, -1), ValueError, "steps"),
        (lambda: dt.train(X, Y, theta, 1, lr=float("nan")), ValueError, "lr"),
        (lambda: dt.train(X, Y, theta, 1, objective="l1"), ValueError, "objective"),
        (lambda: dt.dataset_tensors([X[0].numpy()], []), ValueError, "as many targets"),
        (lambda: dt.from_construction("T"), TypeError, "InterpolatingTransformer"),
    ]
    bad = dict(theta)
    bad["V"] = torch.full_like(theta["V"], float("nan"))
    cases.append((lambda: dt.loss(X, Y, bad), ValueError, "nan"))
    frozen = {k: v.detach() for k, v in theta.items()}
    cases.append((lambda: dt.train(X, Y, frozen, 1), ValueError, "require grad"))
    for call, kind, text in cases:
        with pytest.raises(kind, match=text) as info:
            call()
        assert "\n" not in str(info.value)
    inputs, targets = random_dataset(2, 3, 1, 2, seed=0)
    with pytest.raises(ValueError, match="softmax"):
        dt.from_construction(construct(inputs, targets, "hardmax"))


def test_layer_statistics_of_the_construction():
    inputs, targets, X, _ = _data(N=3, n=3, m=2)
    T = construct(inputs, targets, "softmax")
    theta = dt.from_construction(T)
    stats = dt.layer_statistics(X, theta, 1e-6 * 4)
    assert len(stats["distinct"]) == T.num_blocks
    assert stats["distinct"][-1] == [2, 2, 2]  # two targets, every one hit
    # identity attention layers (A = 0) attend uniformly: entropy log n
    uniform = [k for k, b in enumerate(T.blocks) if b.sa.scores_constant]
    assert uniform and all(
        abs(v - math.log(3)) < 1e-12 for k in uniform for v in stats["entropy"][k]
    )
    with pytest.raises(ValueError, match="tol"):
        dt.layer_statistics(X, theta, -1.0)
