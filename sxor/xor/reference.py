"""Independent references for the closed forms: exact enumeration, Monte Carlo and autograd.

These are slow on purpose. They share no algebra with :mod:`sxor.xor.population`, only the model
definition, so agreement between the two is evidence that the closed forms are right.
"""

from __future__ import annotations

import torch

from .checks import (
    ArgumentTypeError,
    check_embeddings,
    check_generator,
    check_int,
    check_query,
    check_support,
    check_tensor,
)
from .data import all_inputs, sample_sparse_xor, sparse_xor_labels
from .model import predict


def empirical_loss(
    x: torch.Tensor,
    y: torch.Tensor,
    V: torch.Tensor,
    theta: torch.Tensor,
    theta_tilde: torch.Tensor,
    kind: str = "softmax",
) -> torch.Tensor:
    r"""Empirical loss :math:`\frac{1}{2n} \sum_k (f(x_k) - y_k)^2` over the rows of ``x [..., n, d]``, shape ``[...]``.

    Parameters
    ----------
    x
        Inputs ``[..., n, d]``.
    y
        Labels ``[..., n]``.
    V
        Key embeddings ``[..., d, m]``.
    theta, theta_tilde
        Queries of the two heads, ``[..., m]``.
    kind
        Name of the attention map.

    Raises
    ------
    ArgumentTypeError, ValueError
        as :func:`~sxor.xor.model.predict` does, and unless ``y`` is a finite real tensor
        ``[..., n]`` matching ``x``.
    """
    check_tensor("x", x, 2)
    check_tensor("y", y, 1, finite=True)
    if y.is_complex() or y.dtype == torch.bool:
        raise ArgumentTypeError(f"y must be a real tensor, got dtype {y.dtype}")
    if y.shape[-1:] != x.shape[-2:-1]:
        raise ValueError(f"y must have shape [..., n] with n={x.shape[-2]}, got {tuple(y.shape)}")
    return 0.5 * ((predict(x, V, theta, theta_tilde, kind) - y) ** 2).mean(-1)


def enumerated_loss(
    V: torch.Tensor,
    theta: torch.Tensor,
    theta_tilde: torch.Tensor,
    support: torch.Tensor,
    kind: str = "softmax",
) -> torch.Tensor:
    r"""Population loss by summing over all :math:`2^d` inputs (exact, :math:`O(2^d d)`; small :math:`d` only).

    Parameters
    ----------
    V
        Key embeddings ``[..., d, m]``.
    theta, theta_tilde
        Queries of the two heads, ``[..., m]``.
    support
        The pair :math:`(i^*, j^*)`, ``[..., 2]``.
    kind
        Name of the attention map.

    Raises
    ------
    ArgumentTypeError, ValueError
        as :func:`~sxor.xor.population.population_loss` does, and ValueError for ``d > 24``.
    """
    d, m = check_embeddings(V)
    check_query("theta", theta, m, like=V)
    check_query("theta_tilde", theta_tilde, m, like=V)
    check_support(support, d)
    x = all_inputs(d, dtype=V.dtype, device=V.device)
    y = sparse_xor_labels(x, support)
    return empirical_loss(x, y, V, theta, theta_tilde, kind)


def monte_carlo_loss(
    V: torch.Tensor,
    theta: torch.Tensor,
    theta_tilde: torch.Tensor,
    support: torch.Tensor,
    n: int,
    *,
    generator: torch.Generator | None = None,
    kind: str = "softmax",
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Monte Carlo estimate of the population loss from ``n`` fresh samples, with its standard error.

    Returns ``(estimate, standard_error)`` where the standard error is :math:`\hat\sigma / \sqrt{n}`.

    Parameters
    ----------
    V
        Key embeddings ``[d, m]``.
    theta, theta_tilde
        Queries of the two heads, ``[..., m]``.
    support
        One pair :math:`(i^*, j^*)`.
    n
        Number of samples, at least 2.
    generator
        Random generator for the samples.
    kind
        Name of the attention map.

    Raises
    ------
    ArgumentTypeError, ValueError
        as :func:`~sxor.xor.population.population_loss` and
        :func:`~sxor.xor.data.sample_sparse_xor` do (``n >= 2`` integer: one sample has no
        standard error).
    """
    d, m = check_embeddings(V)
    check_int("n", n, 2)
    check_generator(generator)
    check_query("theta", theta, m, like=V)
    check_query("theta_tilde", theta_tilde, m, like=V)
    x, y = sample_sparse_xor(n, d, support, generator=generator, dtype=V.dtype, device=V.device)
    per_sample = 0.5 * (predict(x, V, theta, theta_tilde, kind) - y) ** 2
    return per_sample.mean(-1), per_sample.std(-1) / n**0.5


def autograd_grad(
    loss_fn, theta: torch.Tensor, theta_tilde: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradient of ``loss_fn(theta, theta_tilde).sum()`` by reverse-mode autodiff.

    Parameters
    ----------
    loss_fn
        Callable of the two queries returning a loss tensor.
    theta, theta_tilde
        Queries at which to differentiate (detached copies are used).

    Returns
    -------
    tuple
        The gradients with respect to ``theta`` and ``theta_tilde``.

    Raises
    ------
    ArgumentTypeError
        unless ``loss_fn`` is callable and the queries real floating tensors.
    """
    if not callable(loss_fn):
        raise ArgumentTypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
    check_tensor("theta", theta, 1, real=True)
    check_tensor("theta_tilde", theta_tilde, 1, real=True)
    theta = theta.detach().requires_grad_(True)
    theta_tilde = theta_tilde.detach().requires_grad_(True)
    grad, grad_tilde = torch.autograd.grad(loss_fn(theta, theta_tilde).sum(), (theta, theta_tilde))
    return grad, grad_tilde
