"""Draws for chapter 15's training experiment: the dataset, the initial parameters, perturbations.

Part of :mod:`sxor.interp.training`, which re-exports it.
"""

from __future__ import annotations

import math
from typing import TypedDict

import torch

from ._training_model import (
    PARAMETER_NAMES,
    TikhonovData,
    _check_params,
    _positive_int,
    _real,
    _seed,
    block,
)


class _Placement(TypedDict):
    """Keyword arguments ``dtype`` and ``device`` of a tensor factory (``torch.zeros(d, **kw)``)."""

    dtype: torch.dtype
    device: torch.device | str | None


def tikhonov_data(
    N: int = 10,
    n: int = 100,
    d: int = 16,
    width: int = 4,
    *,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> TikhonovData:
    """The authors' dataset: ``X ~ U[0,1]^(N x n x d)``, ``y_j = FF*(SA*(X_j))`` (see module doc).

    ``N, n, d, width`` positive ints (a float, even ``6.0``, is refused), ``dtype`` a float dtype."""
    N, n, d, width = (
        _positive_int(k, v) for k, v in (("N", N), ("n", n), ("d", d), ("width", width))
    )
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    gen = torch.Generator(device=device or "cpu").manual_seed(_seed(seed))
    kw: _Placement = {"dtype": dtype, "device": device}
    X = torch.rand(N, n, d, generator=gen, **kw)
    theta = {
        "q": torch.zeros(d, **kw),
        "k": torch.zeros(d, **kw),
        "rho": torch.zeros((), **kw),
        "V": torch.eye(d, **kw),
        "eta": torch.ones((), **kw),
        "W": torch.rand(d, width, generator=gen, **kw),
        "U": torch.rand(width, d, generator=gen, **kw),
        "b": torch.rand(width, generator=gen, **kw),
    }
    Y = block(X, theta)[:, :1, :]  # every token of T*(X_j) is the same point y_j
    return TikhonovData(X, Y, theta)


def init_parameters(
    d: int,
    width: int = 4,
    *,
    seed: int = 0,
    scale: float = 1.0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> dict[str, torch.Tensor]:
    """PyTorch-default initialisation of the authors' ``nn.Linear`` layers: every matrix and bias
    ``U[-s/sqrt(fan_in), s/sqrt(fan_in)]`` with ``s = scale``; ``rho = eta = 0``.

    ``d, width`` positive ints, ``scale >= 0`` finite, ``dtype`` a float dtype."""
    d, width = _positive_int("d", d), _positive_int("width", width)
    scale = _real("scale", scale, minimum=0.0)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    gen = torch.Generator(device=device or "cpu").manual_seed(_seed(seed))
    kw: _Placement = {"dtype": dtype, "device": device}

    def uniform(shape, fan_in):
        return (2 * torch.rand(*shape, generator=gen, **kw) - 1) * scale / math.sqrt(fan_in)

    theta = {
        "q": uniform((d,), d),
        "k": uniform((d,), d),
        "rho": torch.zeros((), **kw),
        "V": uniform((d, d), d),
        "eta": torch.zeros((), **kw),
        "W": uniform((d, width), width),
        "U": uniform((width, d), d),
        "b": uniform((width,), d),
    }
    return {name: p.requires_grad_(True) for name, p in theta.items()}


def authors_draw(
    N: int = 10,
    n: int = 100,
    d: int = 16,
    width: int = 4,
    *,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> tuple[TikhonovData, dict[str, torch.Tensor]]:
    """The data **and** the initialisation exactly as the authors' ``tikhonov/`` scripts draw them.

    Their scripts seed PyTorch's generator with ``seed`` (0 in both), then call
    ``generateSyntheticData`` and build the model, all from that one stream in float32:

    1. ``X = rand(N, n, d)``; then the FF of ``theta*`` in *their* shapes, ``W_a = rand(width, d)``,
       ``U_a = rand(d, width)``, ``b = rand(width)`` (their layer is ``eta z + relu(z U_a + b) W_a``
       on row tokens, so this module's ``W = W_a^T [d, w]`` and ``U = U_a^T [w, d]``); the targets
       are the output of that block with ``eta = 1`` after the mean-collapsing SA (``A = 0``,
       ``rho = 0``, ``V = I``);
    2. the model's ``nn.Linear`` layers in construction order, each weight
       ``kaiming_uniform_(a = sqrt 5)`` (i.e. ``U[-1/sqrt(fan_in), 1/sqrt(fan_in)]``) and each bias
       ``U[-1/sqrt(fan_in), 1/sqrt(fan_in)]``: ``to_q [1, d]``, ``to_k [1, d]``, ``to_v [d, d]``, the
       FF's first layer ``[w, d]`` and its bias ``[w]``, its second layer ``[d, w]``; ``rho = eta = 0``.
       Their score ``to_q(x_i) to_k(x_l)`` is :func:`block`'s ``(k . x_i)(q . x_l)``, so ``k`` is
       their ``to_q`` and ``q`` their ``to_k``.

    The draws are made in float32 (the authors' dtype) from a private ``torch.Generator`` seeded
    with ``seed`` (so the global generator is untouched) and then converted to ``dtype``; so are the targets, computed in float32 as the authors compute them
    (``theta*`` therefore interpolates the data to float32 rounding). (The authors'
    data loader also shuffles the order of the ``N`` sequences in each full batch; that changes the
    batch mean only by rounding and is not reproduced.)

    Parameters
    ----------
    N, n, d, width
        Positive ints: sequences, tokens per sequence, token dimension, FF width (4 in their code).
    seed
        The int their scripts pass to ``torch.manual_seed`` (0).
    dtype, device
        A floating dtype and a device for the returned tensors.

    Returns
    -------
    (TikhonovData, dict)
        The dataset (``Y`` of shape ``[N, 1, d]``, ``theta_star`` with ``q = k = rho = 0``,
        ``V = I``, ``eta = 1``) and the initial parameters (keys ``PARAMETER_NAMES``, each
        requiring grad), ready for :func:`train` or :func:`warm_start_sweep`.

    Raises
    ------
    TypeError, ValueError
        For sizes that are not positive ints, a seed that is not an int, or a dtype that is not a
        floating ``torch.dtype``.
    """
    N, n, d, width = (
        _positive_int(k, v) for k, v in (("N", N), ("n", n), ("d", d), ("width", width))
    )
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    gen = torch.Generator().manual_seed(_seed(seed))
    f32 = torch.float32
    X = torch.rand(N, n, d, generator=gen, dtype=f32)
    W_a = torch.rand(width, d, generator=gen, dtype=f32)
    U_a = torch.rand(d, width, generator=gen, dtype=f32)
    b = torch.rand(width, generator=gen, dtype=f32)

    def linear_weight(out_features, in_features):  # nn.Linear.reset_parameters, weight
        w = torch.empty(out_features, in_features, dtype=f32)
        return torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5), generator=gen)

    def linear_bias(out_features, fan_in):  # nn.Linear.reset_parameters, bias
        bound = 1 / math.sqrt(fan_in)
        return torch.empty(out_features, dtype=f32).uniform_(-bound, bound, generator=gen)

    to_q, to_k, to_v = linear_weight(1, d), linear_weight(1, d), linear_weight(d, d)
    ff1_w, ff1_b, ff2_w = linear_weight(width, d), linear_bias(width, d), linear_weight(d, width)
    kw: _Placement = {"dtype": dtype, "device": device}
    star = {
        "q": torch.zeros(d, **kw),
        "k": torch.zeros(d, **kw),
        "rho": torch.zeros((), **kw),
        "V": torch.eye(d, **kw),
        "eta": torch.ones((), **kw),
        "W": W_a.T.contiguous().to(**kw),
        "U": U_a.T.contiguous().to(**kw),
        "b": b.to(**kw),
    }
    # their targets, computed as they do (float32, row tokens): the mean-collapsing SA, then the FF;
    # the last token of each sequence (every token is the same point)
    Z = torch.bmm(torch.softmax(torch.zeros(N, n, n, dtype=f32), dim=-1), X)
    Y = (Z + torch.relu(Z @ U_a + b) @ W_a)[:, -1:, :]
    X, Y = X.to(**kw), Y.to(**kw)
    init = {
        "q": to_k[0],
        "k": to_q[0],
        "rho": torch.zeros(()),
        "V": to_v,
        "eta": torch.zeros(()),
        "W": ff2_w,
        "U": ff1_w,
        "b": ff1_b,
    }
    init = {name: init[name].to(**kw).clone().requires_grad_(True) for name in PARAMETER_NAMES}
    return TikhonovData(X, Y, star), init


def perturbed(
    theta: dict[str, torch.Tensor], sigma: float, *, seed: int = 0
) -> dict[str, torch.Tensor]:
    """``theta + sigma * N(0, 1)`` entrywise (a fresh, trainable copy); ``sigma >= 0`` finite,
    ``theta`` a non-empty dict of finite float tensors, ``seed`` an int."""
    sigma = _real("sigma", sigma, minimum=0.0)
    _check_params(theta)
    first = next(iter(theta.values()))
    gen = torch.Generator(device=first.device).manual_seed(_seed(seed))
    return {
        name: (
            p.detach() + sigma * torch.randn(p.shape, generator=gen, dtype=p.dtype, device=p.device)
        ).requires_grad_(True)
        for name, p in theta.items()
    }
