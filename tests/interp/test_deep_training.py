"""The depth-L trainer of section 15c (sxor.interp.deep_training): the forward pass and gradient
against an independent loop implementation, the two-sided Hausdorff distance and the chamfer
objective on hand-made sets, the construction as an exact interpolant (with q = 0 and q != 0), a
teacher at itself, the weight-decay bookkeeping of train, and bad input."""

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


def _reference_forward(X, theta):
    """The blocks written out token by token with plain loops, independently of the module:
    FF(x) = eta x + W relu(U x + b), then SA(Z)_i = rho z_i + V sum_l pi_il z_l with
    pi_i = softmax_l <(alpha I + q k^T) z_i, z_l>, i.e. score_il = alpha <z_i, z_l> +
    <k, z_i> <q, z_l>."""
    out = []
    L = theta["eta"].shape[0]
    for seq in X:
        tokens = list(seq)
        for i in range(L):
            t = {k: v[i] for k, v in theta.items()}
            Z = [t["eta"] * x + t["W"] @ torch.relu(t["U"] @ x + t["b"]) for x in tokens]
            new = []
            for zi in Z:
                scores = torch.stack(
                    [t["alpha"] * (zi @ zl) + (t["k"] @ zi) * (t["q"] @ zl) for zl in Z]
                )
                pi = torch.exp(scores - scores.max())
                pi = pi / pi.sum()
                mean = sum(p * zl for p, zl in zip(pi, Z))
                new.append(t["rho"] * zi + t["V"] @ mean)
            tokens = new
        out.append(torch.stack(tokens))
    return torch.stack(out)


def _reference_hausdorff_sq(T, Y):
    """Squared Hausdorff distance of two finite sets, written out: the larger of the two one-sided
    distances sup_{t in T} inf_{y in Y} and sup_{y in Y} inf_{t in T}."""
    d2 = [[float(((t - y) ** 2).sum()) for y in Y] for t in T]
    t_to_y = max(min(row) for row in d2)
    y_to_t = max(min(col) for col in zip(*d2))
    return max(t_to_y, y_to_t)


def test_forward_and_gradient_match_an_independent_loop_implementation():
    """Autograd's gradient of ``loss`` against central finite differences of a *separate* forward
    pass (:func:`_reference_forward`, written here with loops). This catches a wrong forward (FF
    and SA swapped, ``alpha`` dropped, ``q`` and ``k`` exchanged, a wrong softmax axis) as well as
    a wrong gradient; it cannot catch an error that this reference shares (the definition of the
    block itself is the module docstring's, taken as given)."""
    _, _, X, Y = _data(N=2, n=3, m=2)
    theta = dt.init_network(2, 2, width=3, seed=4)
    with torch.no_grad():
        theta["alpha"].fill_(0.3)  # exercise the alpha I part of A as well
        theta["eta"].fill_(0.7)  # eta != rho: an FF/SA swap changes the output
        theta["rho"].fill_(1.2)
    th = {k: v.detach() for k, v in theta.items()}
    out = dt.forward(X, th)
    assert torch.allclose(out, _reference_forward(X, th), atol=1e-13, rtol=0)
    J = dt.loss(X, Y, {k: v.detach().clone().requires_grad_(True) for k, v in th.items()})
    ref_J = sum(_reference_hausdorff_sq(T, y) for T, y in zip(_reference_forward(X, th), Y)) / 2
    assert abs(float(J.detach()) - ref_J) < 1e-13
    th_g = {k: v.clone().requires_grad_(True) for k, v in th.items()}
    grads = torch.autograd.grad(dt.loss(X, Y, th_g), [th_g[k] for k in dt.PARAMETER_NAMES])
    h = 1e-6
    for name, g in zip(dt.PARAMETER_NAMES, grads):
        for idx in range(g.numel()):
            plus = {k: v.clone() for k, v in th.items()}
            minus = {k: v.clone() for k, v in th.items()}
            plus[name].view(-1)[idx] += h
            minus[name].view(-1)[idx] -= h
            fd = sum(
                _reference_hausdorff_sq(a, y) - _reference_hausdorff_sq(b, y)
                for a, b, y in zip(_reference_forward(X, plus), _reference_forward(X, minus), Y)
            ) / (2 * 2 * h)
            assert abs(float(g.view(-1)[idx]) - fd) < 1e-6 * max(1.0, abs(fd)), (name, idx)


def test_hausdorff_is_two_sided_and_a_subset_does_not_interpolate():
    """d_H takes the larger one-sided distance: an output set that is a strict subset of the
    targets (every output token *on* a target, one target missed) is at distance > 0 and does
    not interpolate, and the chamfer objective the runs train on is > 0 there too."""
    Y = torch.tensor([[[0.0, 0.0], [1.0, 0.0]]], dtype=torch.float64)  # targets {0, e1}
    T_sub = torch.tensor([[[0.0, 0.0], [0.0, 0.0]]], dtype=torch.float64)  # outputs {0}
    T_sup = torch.tensor([[[0.0, 0.0], [3.0, 0.0]]], dtype=torch.float64)  # outputs {0, 3 e1}
    for T, d2 in ((T_sub, 1.0), (T_sup, 4.0)):  # one-sided distances 0 and 1; 1 and 2
        assert float(dt._hausdorff_sq(T, Y)) == d2 == _reference_hausdorff_sq(T[0], Y[0])
        assert float(dt._hausdorff_sq(Y, T)) == d2  # symmetric
        assert float(dt._chamfer_sq(T, Y)) > 0
    # the success verdict itself: a teacher's output with one target added is not interpolated
    _, _, X, _ = _data(N=2, n=3)
    teacher = {k: v.detach() for k, v in dt.init_network(1, 2, seed=3).items()}
    out = dt.forward(X, teacher)
    extra = torch.cat([out, out[:, :1] + 1.0], dim=1)  # targets = outputs plus one far point
    assert dt.interpolation_error(X, out, teacher) == 0.0
    assert dt.interpolation_error(X, extra, teacher) > 0.1


def test_chamfer_vanishes_exactly_where_hausdorff_does():
    """On examples: chamfer = 0 iff d_H = 0 (equal sets in any order and with repeats), both > 0
    when the sets differ, and chamfer <= 2 d_H^2 (each mean is at most the maximum)."""
    g = torch.Generator().manual_seed(0)
    Y = torch.rand(4, 3, 2, generator=g, dtype=torch.float64)
    same = Y[:, [2, 0, 1, 0, 2]]  # the same sets, reordered and with repeats
    assert torch.all(dt._chamfer_sq(same, Y) == 0) and torch.all(dt._hausdorff_sq(same, Y) == 0)
    for T in (Y[:, :2], Y + 1e-3, torch.rand(4, 3, 2, generator=g, dtype=torch.float64)):
        c, h = dt._chamfer_sq(T, Y), dt._hausdorff_sq(T, Y)
        assert torch.all(c > 0) and torch.all(h > 0) and torch.all(c <= 2 * h + 1e-15)


@pytest.mark.parametrize("m", [1, 2])
def test_construction_is_an_interpolant_and_stationary(m):
    """The converted construction interpolates (identity collapse, ``q = 0``). Its stationarity
    is not an independent check: at an exact interpolant every per-sequence distance is 0, a
    minimum of ``J >= 0``, so the gradient vanishes by interpolation alone; the small gradient
    only confirms that rounding keeps it so. The perturbed point shows the error can fail."""
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


@pytest.mark.parametrize(("m", "collapse"), [(2, "rank-one"), (3, "low-rank")])
def test_converted_construction_with_a_nonzero_q_is_exact(m, collapse):
    """The collapse layers with ``A = alpha I + q k^T``, ``q != 0`` (the identity collapse, and
    every collapse for ``m = 1``, has ``q = 0``), survive the conversion exactly, and their
    ``q k^T`` part is needed (with ``q = 0`` the output misses the targets). The construction's
    ``q`` is parallel to ``k``, so the orientation of ``q`` and ``k`` is checked by the loop
    reference above, not here."""
    inputs, targets, X, Y = _data(N=4, n=3, m=m)
    theta = dt.from_construction(construct(inputs, targets, "softmax", collapse=collapse))
    assert float(theta["q"].abs().max()) > 0
    assert dt.interpolation_error(X, Y, theta) < 1e-10
    assert dt.interpolation_error(X, Y, dict(theta, q=0 * theta["q"])) > 1e-3


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


def test_weight_decay_is_counted_once_and_divergence_keeps_the_last_finite_point(monkeypatch):
    """With ``epsilon > 0`` the Adam phase follows a reference Adam run on ``J + epsilon/2
    |theta|^2`` (no further weight decay inside Adam: a double count moves the iterates); and a
    run whose loss turns nan restores the last iterate with a finite loss, not the start."""
    _, _, X, Y = _data(N=2, n=3, m=1)
    eps, lr, steps = 0.5, 1e-2, 5
    theta = dt.init_network(1, 2, seed=2)
    ref = [theta[k].detach().clone().requires_grad_(True) for k in dt.PARAMETER_NAMES]
    dt.train(X, Y, theta, steps, lr=lr, epsilon=eps, polish=0)
    opt = torch.optim.Adam(ref, lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    for _ in range(steps):
        opt.zero_grad()
        th = dict(zip(dt.PARAMETER_NAMES, ref))
        J = dt.loss(X, Y, th) + eps / 2 * sum((p**2).sum() for p in ref)
        J.backward()
        opt.step()
        sched.step()
    for name, r in zip(dt.PARAMETER_NAMES, ref):
        assert torch.allclose(theta[name].detach(), r.detach(), atol=1e-15, rtol=0), name
    # divergence: the forward pass of the fourth Adam step returns nan; train must stop there and
    # keep the iterate after three steps (its loss was finite), not return to the start
    theta = dt.init_network(1, 2, seed=2)
    start = {k: v.detach().clone() for k, v in theta.items()}
    calls, forward = [0], dt._forward

    def failing(*args, **kwargs):
        calls[0] += 1
        out = forward(*args, **kwargs)
        return out * math.nan if calls[0] == 4 else out

    monkeypatch.setattr(dt, "_forward", failing)
    out = dt.train(X, Y, theta, 10, lr=lr, polish=0)
    monkeypatch.undo()
    assert out["diverged"] and not out["interpolates"] and math.isfinite(out["loss"])
    assert any(not torch.equal(theta[k].detach(), start[k]) for k in start)
