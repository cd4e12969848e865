"""Training dynamics beyond one population step: multi-step population gradient descent, one
empirical gradient step on ``n`` samples, and mini-batch SGD (two heads, sparse XOR). The
``k``-sparse parity model with ``k`` heads is in :mod:`sxor.xor.kparity`.

Every function works for any registered attention kind (``sxor.ATTENTION_KINDS``) and is
batched over leading dimensions. Success is always judged with the *population* loss, computed
in closed form by :func:`sxor.xor.population.loss_from_weights`.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .checks import (
    ArgumentTypeError,
    check_dims,
    check_dtype,
    check_embeddings,
    check_eta,
    check_generator,
    check_int,
    check_query,
    check_support,
    check_tensor,
)
from .data import sparse_xor_labels
from .metrics import success, target_masses
from .model import attention_kind
from .model import scores_unchecked as scores
from .population import (
    OneStepResult,
    check_model_inputs,
    loss_from_weights,
    population_grad_unchecked,
)


class Trajectory(NamedTuple):
    """Population gradient descent, recorded at every step ``t = 0, ..., T``."""

    loss: torch.Tensor  #: population loss, ``[T + 1, ...]``
    masses: torch.Tensor  #: ``M[t, ..., head, target]`` as in :func:`sxor.xor.metrics.target_masses`, ``[T + 1, ..., 2, 2]``
    success: (
        torch.Tensor
    )  #: the success criterion of :mod:`sxor.xor.metrics` at each step, ``[T + 1, ...]``
    theta: torch.Tensor  #: final query of the first head, ``[..., m]``
    theta_tilde: torch.Tensor  #: final query of the second head, ``[..., m]``


def population_descent(
    V: torch.Tensor,
    theta0: torch.Tensor,
    theta_tilde0: torch.Tensor,
    support: torch.Tensor,
    eta: float | torch.Tensor,
    steps: int,
    kind: str = "softmax",
) -> Trajectory:
    r"""``T = steps`` steps of population gradient descent with a constant step size :math:`\eta`.

    :math:`\theta_{t+1} = \theta_t - \eta\, \partial L / \partial\theta(\theta_t, \tilde\theta_t)` and
    the same for :math:`\tilde\theta`, with the exact gradient of
    :func:`sxor.xor.population.population_grad`.

    Parameters
    ----------
    V
        Key embeddings ``[..., d, m]``.
    theta0, theta_tilde0
        Initial queries of the two heads, ``[..., m]``.
    support
        The pair :math:`(i^*, j^*)`, ``[..., 2]``.
    eta
        Step size: a float or a tensor broadcasting against the batch shape (one step size per
        instance).
    steps
        Number of steps :math:`T`, at least 1.
    kind
        Name of the attention map.

    Raises
    ------
    ArgumentTypeError, ValueError
        as :func:`~sxor.xor.population.population_loss` does for ``V``, the queries, ``support``
        and ``kind``; ArgumentTypeError unless ``steps`` is an integer and ``eta`` real; ValueError
        unless ``steps >= 1`` and ``eta`` is finite, ``>= 0`` and broadcasts against the batch
        shape.
    """
    check_int("steps", steps, 1)
    check_model_inputs(V, theta0, theta_tilde0, support)
    eta = check_eta(
        eta, theta0, torch.broadcast_shapes(V.shape[:-2], theta0.shape[:-1], support.shape[:-1])
    ).unsqueeze(-1)
    phi = attention_kind(kind)
    theta, theta_tilde = theta0, theta_tilde0
    losses, masses, wins = [], [], []
    for t in range(steps + 1):
        g, h = phi.weights(scores(V, theta)), phi.weights(scores(V, theta_tilde))
        loss = loss_from_weights(g, h, support)
        losses.append(loss)
        masses.append(target_masses(g, h, support))
        wins.append(success(loss, g, h, support))
        if t < steps:
            # A diverging run (too large eta) turns non-finite and stays so; it is recorded, not raised.
            grad, grad_tilde = population_grad_unchecked(V, theta, theta_tilde, support, kind)
            theta, theta_tilde = theta - eta * grad, theta_tilde - eta * grad_tilde
    return Trajectory(
        torch.stack(losses), torch.stack(masses), torch.stack(wins), theta, theta_tilde
    )


def first_success(success_per_step: torch.Tensor) -> torch.Tensor:
    r"""Index of the first ``True`` along the leading (time) axis, or ``-1`` where there is none.

    Parameters
    ----------
    success_per_step
        Bool tensor ``[T + 1, ...]``.

    Raises
    ------
    ArgumentTypeError
        unless ``success_per_step`` is a bool tensor with at least one axis.
    """
    check_tensor("success_per_step", success_per_step, 1)
    if success_per_step.dtype != torch.bool:
        raise ArgumentTypeError(
            f"success_per_step must be a bool tensor, got dtype {success_per_step.dtype}"
        )
    T = success_per_step.shape[0]
    steps = torch.arange(T, device=success_per_step.device).view(
        T, *([1] * (success_per_step.dim() - 1))
    )
    first = torch.where(success_per_step, steps, T).amin(0)
    return torch.where(first < T, first, -1)


def empirical_grad(
    x: torch.Tensor,
    y: torch.Tensor,
    V: torch.Tensor,
    theta: torch.Tensor,
    theta_tilde: torch.Tensor,
    kind: str = "softmax",
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Exact gradient of the empirical loss :math:`L_n = \frac{1}{2n} \sum_k (f(x_k) - y_k)^2`, in :math:`O(n d)`.

    With :math:`r_k = f(x_k) - y_k`, :math:`g = \gamma`, :math:`h = \tilde\gamma`:

    .. math::
       \begin{aligned}
       \frac{\partial L_n}{\partial g} &= -\frac{1}{n} \sum_k r_k (h \cdot x_k)\, x_k,\\
       \frac{\partial L_n}{\partial h} &= -\frac{1}{n} \sum_k r_k (g \cdot x_k)\, x_k,
       \end{aligned}

    then :math:`\partial L_n / \partial\theta = V^\top J_\phi(s)^\top\, \partial L_n / \partial g`.

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
        as :func:`~sxor.xor.model.predict` does for ``V``, the queries, ``x`` and ``kind``, and
        ValueError unless ``y [..., n]`` is finite and real.
    """
    d, m = check_embeddings(V)
    check_query("theta", theta, m, like=V)
    check_query("theta_tilde", theta_tilde, m, like=V)
    check_tensor("x", x, 2, finite=True)
    check_dtype("x", x.dtype, integer=True)
    if x.shape[-1] != d:
        raise ValueError(f"x has last dimension {x.shape[-1]} but the embeddings have d={d}")
    check_tensor("y", y, 1, finite=True)
    check_dtype("y", y.dtype, integer=True)
    if y.shape[-1:] != x.shape[-2:-1]:
        raise ValueError(f"y must have shape [..., n] with n={x.shape[-2]}, got {tuple(y.shape)}")
    phi = attention_kind(kind)
    s, s_tilde = scores(V, theta), scores(V, theta_tilde)
    g, h = phi.weights(s), phi.weights(s_tilde)
    x = x.to(g.dtype)
    xg, xh = (x @ g.unsqueeze(-1)).squeeze(-1), (x @ h.unsqueeze(-1)).squeeze(-1)
    n = x.shape[-2]
    residual = -xg * xh - y
    du_g = -((residual * xh).unsqueeze(-2) @ x).squeeze(-2) / n
    du_h = -((residual * xg).unsqueeze(-2) @ x).squeeze(-2) / n
    r, r_tilde = phi.pullback(s, g, du_g), phi.pullback(s_tilde, h, du_h)
    Vt = V.transpose(-1, -2)
    return (Vt @ r.unsqueeze(-1)).squeeze(-1), (Vt @ r_tilde.unsqueeze(-1)).squeeze(-1)


def _after_step(V, theta, theta_tilde, support, phi) -> OneStepResult:
    g, h = phi.weights(scores(V, theta)), phi.weights(scores(V, theta_tilde))
    return OneStepResult(theta, theta_tilde, loss_from_weights(g, h, support), g, h)


def empirical_one_step(
    x: torch.Tensor,
    y: torch.Tensor,
    V: torch.Tensor,
    theta0: torch.Tensor,
    support: torch.Tensor,
    eta: float | torch.Tensor,
    kind: str = "softmax",
) -> OneStepResult:
    r"""One *empirical* gradient step from :math:`(\theta_0, -\theta_0)` on the samples ``(x, y)``, judged by the *population* loss.

    :math:`\theta_1 = \theta_0 - \eta\, \partial L_n / \partial\theta`.

    Parameters
    ----------
    x
        Inputs ``[..., n, d]``.
    y
        Labels ``[..., n]``.
    V
        Key embeddings ``[..., d, m]``.
    theta0
        Initial query ``[..., m]``; the second head starts at ``-theta0``.
    support
        The pair :math:`(i^*, j^*)`, ``[..., 2]``.
    eta
        Step size (float or tensor broadcasting against the batch shape).
    kind
        Name of the attention map.

    Raises
    ------
    ArgumentTypeError, ValueError
        as :func:`~sxor.xor.dynamics.empirical_grad` and :func:`~sxor.xor.population.one_step` do.
    """
    check_embeddings(V)
    check_tensor("theta0", theta0, 1, real=True)
    eta = check_eta(eta, theta0).unsqueeze(-1)
    check_support(support, V.shape[-2])
    grad, grad_tilde = empirical_grad(x, y, V, theta0, -theta0, kind)
    theta1, theta_tilde1 = theta0 - eta * grad, -theta0 - eta * grad_tilde
    return _after_step(V, theta1, theta_tilde1, support, attention_kind(kind))


def sample_batch(
    n: int,
    support: torch.Tensor,
    d: int,
    *,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``n`` fresh samples for each of ``S`` supports: ``x [S, n, d]``, ``y [S, n]``.

    The batched form of :func:`sxor.xor.data.sample_sparse_xor` (one draw of :math:`S n d` fair
    bits, then :func:`sxor.xor.data.sparse_xor_labels`), so that large sample sizes cost one kernel,
    not ``S``.

    Parameters
    ----------
    n
        Samples per support.
    support
        Supports ``[S, 2]``.
    d
        Input dimension.
    generator
        Random generator to draw from.
    dtype
        Dtype of ``x`` and ``y``.
    device
        Device of the result.

    Raises
    ------
    ArgumentTypeError, ValueError
        as :func:`~sxor.xor.data.sample_sparse_xor` does, and ValueError unless ``support`` is
        ``[S, 2]``.
    """
    check_dims(d)
    n = check_int("n", n, 1)
    check_dtype("dtype", dtype, integer=True)
    check_generator(generator)
    check_support(support, d)
    if support.dim() != 2:
        raise ValueError(f"support must have shape [S, 2], got {tuple(support.shape)}")
    bits = torch.randint(
        0, 2, (support.shape[0], n, d), generator=generator, dtype=torch.int8, device=device
    )
    x = (1 - 2 * bits).to(dtype)
    return x, sparse_xor_labels(x, support)


class SGDRun(NamedTuple):
    """Mini-batch SGD, recorded at every step ``t = 0, ..., T``."""

    loss: torch.Tensor  #: population loss after ``t`` steps, ``[T + 1, S]``
    success: torch.Tensor  #: success criterion after ``t`` steps, ``[T + 1, S]``


def minibatch_sgd(
    V: torch.Tensor,
    theta0: torch.Tensor,
    support: torch.Tensor,
    eta: float,
    batch_size: int,
    steps: int,
    *,
    generator: torch.Generator | None = None,
    keys: torch.Tensor | None = None,
    kind: str = "softmax",
) -> SGDRun:
    r"""Mini-batch SGD from :math:`(\theta_0, -\theta_0)` for a batch of ``S`` instances.

    Each step draws ``batch_size`` fresh samples per instance and takes
    :math:`\theta \leftarrow \theta - \eta\, \partial L_B / \partial\theta`. After :math:`t` steps
    the model has seen :math:`t B` samples (:math:`B` the batch size). The samples come from
    ``generator`` (:func:`~sxor.xor.dynamics.sample_batch`) or, if ``keys`` is given, from the
    instances' sample streams (:mod:`sxor.xor.streams`): step :math:`t` uses samples
    :math:`tB, \dots, (t + 1)B - 1` of each stream, so runs with different batch sizes read the same
    data.

    Parameters
    ----------
    V
        Key embeddings ``[S, d, m]``.
    theta0
        Initial queries ``[S, m]``.
    support
        Supports ``[S, 2]``.
    eta
        Step size.
    batch_size
        Samples per step and instance, :math:`B \ge 1`.
    steps
        Number of steps, at least 1.
    generator
        Random generator for the samples (not with ``keys``).
    keys
        Stream keys ``[S]``, one per instance (not with ``generator``).
    kind
        Name of the attention map.

    Raises
    ------
    ArgumentTypeError, ValueError
        as :func:`~sxor.xor.population.one_step` does, and unless ``steps`` and ``batch_size`` are
        integers ``>= 1`` and ``keys`` (if given) has shape ``[S]`` without a ``generator``.
    """
    check_int("steps", steps, 1)
    check_int("batch_size", batch_size, 1)
    d, m = check_embeddings(V)
    check_query("theta0", theta0, m, like=V)
    check_support(support, d)
    if keys is not None and (generator is not None or torch.as_tensor(keys).shape != (V.shape[0],)):
        raise ValueError("keys must have shape [S] (one stream per instance) and exclude generator")
    eta_t = check_eta(eta, theta0)
    phi = attention_kind(kind)
    theta, theta_tilde = theta0, -theta0
    losses, wins = [], []
    for t in range(steps + 1):
        state = _after_step(V, theta, theta_tilde, support, phi)
        losses.append(state.loss)
        wins.append(success(state.loss, state.attention, state.attention_tilde, support))
        if t < steps:
            if keys is None:
                x, y = sample_batch(
                    batch_size, support, d, generator=generator, dtype=V.dtype, device=V.device
                )
                grad, grad_tilde = empirical_grad(x, y, V, theta, theta_tilde, kind)
            else:
                from .streams import stream_empirical_grads

                grad, grad_tilde = stream_empirical_grads(
                    keys, [batch_size], V, theta, theta_tilde, support, kind, start=t * batch_size
                )
                grad, grad_tilde = grad[0], grad_tilde[0]
            theta, theta_tilde = theta - eta_t * grad, theta_tilde - eta_t * grad_tilde
    return SGDRun(torch.stack(losses), torch.stack(wins))
