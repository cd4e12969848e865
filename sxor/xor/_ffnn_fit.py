"""The training loop of :func:`sxor.xor.ffnn.train_ffnn`: every width and restart at once.

The networks' parameters arrive stacked (the hidden units of every width side by side, see
``train_ffnn``); each step draws a fresh batch per restart, runs the forward and the hand-written
backward pass as batched matrix products and updates all parameters with Adam. Every
``eval_every`` steps a network below ``target`` on its validation set and then on its test set
stops and keeps its parameters. At the end the kept (or final) parameters are evaluated on the
test set and on a held-out set.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from .data import sparse_xor_labels


class Fit(NamedTuple):
    """Outcome of :func:`fit_stacked`, the networks of width ``k`` in row ``k`` of ``[W, R]``."""

    params: list[torch.Tensor]  #: ``[W, b, a, c]``, kept where a network stopped, else final
    steps: torch.Tensor  #: the check at which a network stopped, ``-1`` if none, ``[W, R]``
    rejected: torch.Tensor  #: checks passed on validation but not on the test set, ``[W, R]``
    test: torch.Tensor  #: test loss of ``params``, ``[W, R]``
    test_se: torch.Tensor  #: its standard error, ``[W, R]``
    hold: torch.Tensor  #: held-out loss of ``params``, ``[W, R]``
    hold_se: torch.Tensor  #: its standard error, ``[W, R]``


def fit_stacked(
    params: list[torch.Tensor],
    group: torch.Tensor,
    onehot: torch.Tensor,
    support: torch.Tensor,
    *,
    restarts: int,
    d: int,
    batch: int,
    max_steps: int,
    lr: float,
    target: float,
    eval_every: int,
    n_val: int,
    n_test: int,
    seed: int,
    adam: tuple[float, float, float],
    dtype: torch.dtype,
    device: torch.device | str | None,
) -> Fit:
    """Train the stacked networks ``params = [W [R, U, d], b [R, U], a [R, U], c [R, nW]]`` in
    place, unit ``u`` belonging to width ``group[u]`` (``onehot [U, nW]``), as
    :func:`sxor.xor.ffnn.train_ffnn` describes; the arguments are checked there."""
    W, b, a, c = params
    R, nW = restarts, onehot.shape[-1]
    m1 = [torch.zeros_like(p) for p in params]
    m2 = [torch.zeros_like(p) for p in params]
    kept = [p.clone() for p in params]

    data_gen = torch.Generator(device=device or "cpu").manual_seed(seed)
    eval_gen = torch.Generator(device=device or "cpu").manual_seed(seed + 1_000_000_007)
    x_val, y_val = _samples(R, n_val, d, support, eval_gen, dtype, device)
    x_test, y_test = _samples(R, n_test, d, support, eval_gen, dtype, device)
    x_hold, y_hold = _samples(R, n_test, d, support, eval_gen, dtype, device)
    steps = torch.full((nW, R), -1, dtype=torch.long)
    rejected = torch.zeros((nW, R), dtype=torch.long)
    beta1, beta2, eps = adam
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the tensors are small: intra-op threads only add synchronisation
    try:
        for step in range(1, max_steps + 1):
            x, y = _samples(R, batch, d, support, data_gen, dtype, device)
            pre = torch.baddbmm(b.unsqueeze(1), x, W.transpose(1, 2))  # [R, B, U]
            hidden = pre.clamp_min(0)
            err = (
                (hidden * a.unsqueeze(1)) @ onehot + c.unsqueeze(1) - y.unsqueeze(-1)
            ) / batch  # [R, B, nW]
            back = err @ onehot.T  # each unit's network's error, [R, B, U]
            dpre = back * a.unsqueeze(1) * (pre > 0)
            grads = [
                torch.bmm(dpre.transpose(1, 2), x),
                dpre.sum(1),
                (back * hidden).sum(1),
                err.sum(1),
            ]
            torch._foreach_mul_(m1, beta1)
            torch._foreach_add_(m1, grads, alpha=1 - beta1)
            torch._foreach_mul_(m2, beta2)
            torch._foreach_addcmul_(m2, grads, grads, value=1 - beta2)
            denom = torch._foreach_sqrt(m2)
            torch._foreach_div_(denom, math.sqrt(1 - beta2**step))
            torch._foreach_add_(denom, eps)
            torch._foreach_addcdiv_(params, m1, denom, value=-lr / (1 - beta1**step))
            if step % eval_every == 0:
                val = _losses(x_val, y_val, W, b, a, c, onehot).T.cpu()  # [nW, R]
                candidate = (steps < 0) & (val < target)
                new = candidate
                if bool(candidate.any()):
                    test_now = _losses(x_test, y_test, W, b, a, c, onehot).T.cpu()
                    new = candidate & (test_now < target)
                    rejected += (candidate & ~new).long()
                if bool(new.any()):
                    steps[new] = step
                    unit_new = new.T.to(device)[:, group]  # [R, U]
                    net_new = new.T.to(device)  # [R, nW]
                    for k, (p, mask) in enumerate(
                        zip(params, [unit_new.unsqueeze(-1), unit_new, unit_new, net_new])
                    ):
                        kept[k] = torch.where(mask, p, kept[k])
                    if bool((steps > 0).all()):
                        break
    finally:
        torch.set_num_threads(threads)
    done = (steps > 0).T.to(device)
    final = [
        torch.where(m, k, p)
        for p, k, m in zip(
            params, kept, [done[:, group].unsqueeze(-1), done[:, group], done[:, group], done]
        )
    ]
    W_, b_, a_, c_ = final
    with torch.no_grad():
        per_sample = (
            0.5 * (_forward(x_test, W_, b_, a_, c_, onehot) - y_test.unsqueeze(-1)) ** 2
        )  # [R, n, nW]
        held = (
            0.5 * (_forward(x_hold, W_, b_, a_, c_, onehot) - y_hold.unsqueeze(-1)) ** 2
        )  # [R, n, nW]
    test = per_sample.mean(1).T.cpu()
    test_se = (per_sample.std(1) / math.sqrt(n_test)).T.cpu()
    hold = held.mean(1).T.cpu()
    hold_se = (held.std(1) / math.sqrt(n_test)).T.cpu()
    return Fit(final, steps, rejected, test, test_se, hold, hold_se)


def _samples(
    R: int,
    n: int,
    d: int,
    support: torch.Tensor,
    gen: torch.Generator,
    dtype: torch.dtype,
    device: torch.device | str | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randint(0, 2, (R, n, d), generator=gen, device=device).to(dtype).mul_(-2).add_(1)
    return x, sparse_xor_labels(x, support)


def _forward(x, W, b, a, c, onehot):
    hidden = torch.baddbmm(b.unsqueeze(1), x, W.transpose(1, 2)).clamp_min(0)
    return (hidden * a.unsqueeze(1)) @ onehot + c.unsqueeze(1)  # [R, n, nW]


def _losses(x, y, W, b, a, c, onehot):
    return 0.5 * ((_forward(x, W, b, a, c, onehot) - y.unsqueeze(-1)) ** 2).mean(1)  # [R, nW]
