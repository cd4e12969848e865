"""The two-layer ReLU network baseline of the chapter "Why a transformer: parameters against d".

The network, with ``R`` independent restarts batched along a leading axis, is

.. math::  f(x) = \\sum_{k=1}^{w} a_k\\,\\mathrm{relu}(W_k\\cdot x + b_k) + c,

with ``W [R, w, d]``, ``b [R, w]``, ``a [R, w]``, ``c [R]``: ``w (d + 2) + 1`` parameters per
restart. It is trained online (a fresh batch from :func:`sxor.xor.data.sample_sparse_xor` at every step)
on the same loss as the transformer, ``1/2 (f(x) - y)^2``, and evaluated on fresh test samples.
:func:`smallest_width` searches the smallest width whose test loss drops below a target.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from .checks import ArgumentTypeError, as_support, check_dims, check_dtype, check_int, check_real, check_support, check_tensor
from .data import sample_sparse_xor
from ..progress import progress

#: Optimisers :func:`train_ffnn` accepts.
OPTIMIZERS = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}


class FFNNParams(NamedTuple):
    """Parameters of ``R`` two-layer ReLU networks of width ``w`` on ``d`` inputs."""

    W: torch.Tensor  #: first-layer weights ``[R, w, d]``
    b: torch.Tensor  #: first-layer biases ``[R, w]``
    a: torch.Tensor  #: output weights ``[R, w]``
    c: torch.Tensor  #: output bias ``[R]``


def parameter_count(d: int, width: int) -> int:
    """Trainable parameters of one width-``w`` network on ``d`` inputs: ``w d + w + w + 1``.
    Raises ArgumentTypeError unless both are integers; ValueError unless ``d >= 2``, ``width >= 1``."""
    check_dims(d)
    check_int("width", width, 1)
    return width * (d + 2) + 1


def init_ffnn(
    d: int,
    width: int,
    *,
    restarts: int = 1,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> FFNNParams:
    """PyTorch's default ``nn.Linear`` initialisation: every weight and bias of a layer with
    ``fan_in`` inputs uniform on ``[-1/sqrt(fan_in), 1/sqrt(fan_in)]``; ``c`` starts at 0.
    Raises ArgumentTypeError unless the sizes are integers and ``dtype`` real floating; ValueError
    unless ``d >= 2`` and ``width, restarts >= 1``."""
    check_dims(d)
    check_dtype("dtype", dtype)
    check_int("width", width, 1)
    check_int("restarts", restarts, 1)

    def uniform(*shape: int, fan_in: int) -> torch.Tensor:
        u = torch.rand(*shape, generator=generator, dtype=dtype, device=device)
        return (2 * u - 1) / math.sqrt(fan_in)

    return FFNNParams(
        W=uniform(restarts, width, d, fan_in=d),
        b=uniform(restarts, width, fan_in=d),
        a=uniform(restarts, width, fan_in=width),
        c=torch.zeros(restarts, dtype=dtype, device=device),
    )


def ffnn_forward(x: torch.Tensor, params: FFNNParams) -> torch.Tensor:
    """``f(x) = a . relu(W x + b) + c`` for ``x [n, d]`` or ``x [R, n, d]``, shape ``[R, n]``.
    Raises ArgumentTypeError unless ``params`` is an :class:`FFNNParams` and ``x`` a real tensor;
    ValueError unless ``x`` is finite with last dimension ``d``."""
    if not isinstance(params, FFNNParams):
        raise ArgumentTypeError(f"params must be FFNNParams, got {type(params).__name__}")
    check_tensor("x", x, 2, finite=True)
    check_dtype("x", x.dtype, integer=True)
    if x.shape[-1] != params.W.shape[-1]:
        raise ValueError(f"x has last dimension {x.shape[-1]} but the network has d={params.W.shape[-1]} inputs")
    hidden = torch.relu(x.to(params.W.dtype) @ params.W.transpose(-1, -2) + params.b.unsqueeze(-2))
    return (hidden @ params.a.unsqueeze(-1)).squeeze(-1) + params.c.unsqueeze(-1)


def ffnn_loss(x: torch.Tensor, y: torch.Tensor, params: FFNNParams) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean loss ``1/2 mean_k (f(x_k) - y_k)^2`` per restart ``[R]``, and its standard error ``[R]``.
    Raises as :func:`ffnn_forward` does, and ValueError unless ``y [..., n]`` is finite and real."""
    check_tensor("y", y, 1, finite=True)
    check_dtype("y", y.dtype, integer=True)
    if y.shape[-1:] != x.shape[-2:-1]:
        raise ValueError(f"y must have shape [..., n] with n={x.shape[-2]}, got {tuple(y.shape)}")
    per_sample = 0.5 * (ffnn_forward(x, params) - y.to(params.W.dtype)) ** 2
    return per_sample.mean(-1), per_sample.std(-1) / math.sqrt(per_sample.shape[-1])


def exact_xor_network(
    d: int, support: tuple[int, int], *, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None
) -> FFNNParams:
    """A width-2 network equal to ``y = -x_a x_b`` on the whole hypercube:
    ``relu(x_a - x_b) + relu(x_b - x_a) - 1 = |x_a - x_b| - 1``. Raises as
    :func:`sxor.sample_sparse_xor` does for ``d``, ``support`` and ``dtype``."""
    check_dims(d)
    check_dtype("dtype", dtype)
    support = as_support(support)
    check_support(support, d)
    if support.shape != (2,):
        raise ValueError(f"support must be one pair (i*, j*), got shape {tuple(support.shape)}")
    a_, b_ = (int(i) for i in support)
    W = torch.zeros(1, 2, d, dtype=dtype, device=device)
    W[0, 0, a_], W[0, 0, b_], W[0, 1, a_], W[0, 1, b_] = 1.0, -1.0, -1.0, 1.0
    zeros = torch.zeros(1, 2, dtype=dtype, device=device)
    ones = torch.ones(1, 2, dtype=dtype, device=device)
    return FFNNParams(W, zeros, ones, -torch.ones(1, dtype=dtype, device=device))


class TrainResult(NamedTuple):
    """Outcome of :func:`train_ffnn` for each of ``R`` restarts."""

    test_loss: torch.Tensor  #: loss on fresh test samples after training, ``[R]``
    test_loss_se: torch.Tensor  #: its standard error, ``[R]``
    steps: torch.Tensor  #: steps until the validation loss first fell below the target, or -1 if it never did, ``[R]``
    samples: torch.Tensor  #: fresh training samples seen by then, ``steps * batch``, or -1, ``[R]``
    params: FFNNParams  #: the trained parameters


def train_ffnn(
    d: int,
    width: int,
    support: tuple[int, int] | torch.Tensor,
    *,
    restarts: int = 4,
    max_steps: int = 1000,
    batch: int = 256,
    lr: float = 1e-2,
    optimizer: str = "adam",
    target: float = 0.01,
    eval_every: int = 25,
    n_val: int = 2048,
    n_test: int = 8192,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> TrainResult:
    """Train ``restarts`` networks online on ``y = -x_a x_b``, each step on a fresh batch.

    Every ``eval_every`` steps the loss on a fixed validation set (``n_val`` samples) is checked;
    ``steps`` records, per restart, the first check below ``target``. Training ends when every
    restart has been below ``target`` once, or after ``max_steps``. The reported test loss is that
    of the final parameters on ``n_test`` further fresh samples that played no part in training.
    The loop runs on one CPU thread (restored afterwards): its tensors are too small to share.
    Raises ArgumentTypeError unless the sizes and ``seed`` are integers, ``lr``, ``target`` real
    and ``dtype`` real floating; ValueError unless the sizes are ``>= 1`` (``d >= 2``), ``lr`` and
    ``target`` finite and ``> 0``, ``optimizer`` known and ``support`` a valid pair.
    """
    check_dims(d)
    check_dtype("dtype", dtype)
    check_int("seed", seed, 0)
    lr = check_real("lr", lr, minimum=0, strict=True)
    target = check_real("target", target, minimum=0, strict=True)
    if not isinstance(optimizer, str):
        raise ArgumentTypeError(f"optimizer must be a string, got {type(optimizer).__name__}")
    for name, value in [("width", width), ("restarts", restarts), ("max_steps", max_steps), ("batch", batch),
                        ("eval_every", eval_every), ("n_val", n_val), ("n_test", n_test)]:
        check_int(name, value, 1)
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}; choose one of {sorted(OPTIMIZERS)}")
    if not lr > 0 or not target > 0:
        raise ValueError(f"lr and target must be positive, got lr={lr}, target={target}")
    support = as_support(support, device)
    check_support(support, d)
    if support.shape != (2,):
        raise ValueError(f"support must be one pair (i*, j*), got shape {tuple(support.shape)}")

    gen = torch.Generator(device=device or "cpu").manual_seed(seed)
    params = init_ffnn(d, width, restarts=restarts, generator=gen, dtype=dtype, device=device)
    leaves = [p.requires_grad_(True) for p in params]
    opt = OPTIMIZERS[optimizer](leaves, lr=lr)
    x_val, y_val = sample_sparse_xor(n_val, d, support, generator=gen, dtype=dtype, device=device)
    steps = torch.full((restarts,), -1, dtype=torch.long)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the tensors are tiny: intra-op threads only add synchronisation
    try:
        for step in range(1, max_steps + 1):
            x, y = sample_sparse_xor(restarts * batch, d, support, generator=gen, dtype=dtype, device=device)
            loss, _ = ffnn_loss(x.view(restarts, batch, d), y.view(restarts, batch), params)
            opt.zero_grad()
            loss.sum().backward()  # restarts share no parameter, so each gets its own gradient
            opt.step()
            if step % eval_every == 0:
                with torch.no_grad():
                    val, _ = ffnn_loss(x_val, y_val, params)
                steps[(steps < 0) & (val.cpu() < target)] = step
                if bool((steps > 0).all()):
                    break
    finally:
        torch.set_num_threads(threads)
    trained = FFNNParams(*(p.detach() for p in leaves))
    x_test, y_test = sample_sparse_xor(n_test, d, support, generator=gen, dtype=dtype, device=device)
    with torch.no_grad():
        test, test_se = ffnn_loss(x_test, y_test, trained)
    samples = torch.where(steps > 0, steps * batch, steps)
    return TrainResult(test.cpu(), test_se.cpu(), steps, samples, trained)


def smallest_width(
    d: int,
    widths: list[int],
    support: tuple[int, int] | torch.Tensor,
    *,
    target: float = 0.01,
    **train_kwargs,
) -> list[dict]:
    """Train each width in increasing order until one restart reaches test loss ``< target``.

    Returns one record per width tried (the last one is the smallest successful width, if any):
    ``d, width, parameters, restarts, successes`` (restarts whose validation loss fell below
    ``target`` during training and whose final test loss is below it too),
    ``best_test_loss`` and, for the best successful restart, ``steps`` and ``samples``.
    Raises as :func:`train_ffnn` does, and ValueError unless ``widths`` is a non-empty increasing
    list of integers ``>= 1``.
    """
    check_dims(d)
    if not isinstance(widths, (list, tuple)):
        raise ArgumentTypeError(f"widths must be a list of integers, got {type(widths).__name__}")
    widths = [check_int(f"widths[{i}]", w, 1) for i, w in enumerate(widths)]
    if not widths or any(w2 <= w1 for w1, w2 in zip(widths, widths[1:])):
        raise ValueError(f"widths must be a non-empty increasing list, got {widths}")
    records = []
    for width in progress(widths, desc=f"FFNN widths, d={d}"):
        out = train_ffnn(d, width, support, target=target, **train_kwargs)
        ok = (out.test_loss < target) & (out.steps > 0)  # reached on validation and confirmed on test
        best = int(torch.argmin(torch.where(ok, out.steps, torch.iinfo(torch.long).max))) if ok.any() else None
        records.append(
            {
                "d": d,
                "width": width,
                "parameters": parameter_count(d, width),
                "restarts": len(out.test_loss),
                "successes": int(ok.sum()),
                "best_test_loss": float(out.test_loss.min()),
                "steps": int(out.steps[best]) if best is not None else None,
                "samples": int(out.samples[best]) if best is not None else None,
                "test_loss": float(out.test_loss[best]) if best is not None else None,
                "test_loss_se": float(out.test_loss_se[best]) if best is not None else None,
            }
        )
        if best is not None:
            break
    return records
