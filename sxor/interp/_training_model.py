"""The model of chapter 15's training experiment: one block SA -> FF, its loss, and argument checks.

The parameter dict (``PARAMETER_NAMES``), the dataset record :class:`TikhonovData`, the block
and the loss ``J``. Part of :mod:`sxor.interp.training`, which re-exports it.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch

#: The names of one block's parameters, in the order of the parameter dict.
PARAMETER_NAMES = ("q", "k", "rho", "V", "eta", "W", "U", "b")


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} of type {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


def _real(
    name: str, value: object, *, minimum: float | None = None, positive: bool = False
) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a real number, got {value!r} of type {type(value).__name__}"
        )
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    if positive and x <= 0:
        raise ValueError(f"{name} must be > 0, got {x}")
    if minimum is not None and x < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {x}")
    return x


@dataclass
class TikhonovData:
    """Inputs ``X [N, n, d]``, targets ``Y [N, 1, d]`` and the exact interpolant ``theta_star``."""

    X: torch.Tensor
    Y: torch.Tensor
    theta_star: dict[str, torch.Tensor]

    @property
    def theta_star_sq_norm(self) -> float:
        """``|theta*|^2``: the sum of squares of all its parameters (``q = k = rho = 0``)."""
        return float(sum((p.double() ** 2).sum() for p in self.theta_star.values()))


def _check_theta(theta: object, X: torch.Tensor) -> None:
    if not isinstance(theta, dict) or set(theta) != set(PARAMETER_NAMES):
        got = sorted(theta) if isinstance(theta, dict) else type(theta).__name__
        raise ValueError(f"theta must be a dict with the keys {list(PARAMETER_NAMES)}, got {got}")
    d = X.shape[-1]
    for name in PARAMETER_NAMES:
        p = theta[name]
        if not isinstance(p, torch.Tensor) or not p.is_floating_point():
            raise TypeError(
                f"theta[{name!r}] must be a float tensor, got {type(p).__name__}"
                + (f" of dtype {p.dtype}" if isinstance(p, torch.Tensor) else "")
            )
        if p.dtype != X.dtype:
            raise TypeError(
                f"theta[{name!r}] has dtype {p.dtype} but X has {X.dtype}; use one dtype"
            )
    w = theta["W"].shape[-1] if theta["W"].ndim == 2 else -1
    expected = {
        "q": (d,),
        "k": (d,),
        "rho": (),
        "V": (d, d),
        "eta": (),
        "W": (d, w),
        "U": (w, d),
        "b": (w,),
    }
    for name, shape in expected.items():
        if tuple(theta[name].shape) != shape:
            raise ValueError(
                f"theta[{name!r}] must have shape {shape} for token dimension d = {d} and FF width "
                f"w = {w}, got {tuple(theta[name].shape)}"
            )
        if not bool(torch.isfinite(theta[name].detach()).all()):
            raise ValueError(f"theta[{name!r}] contains nan or inf")


def _check_X(X: object) -> torch.Tensor:
    if not isinstance(X, torch.Tensor) or not X.is_floating_point():
        raise TypeError(
            f"X must be a float tensor [N, n, d], got {type(X).__name__}"
            + (f" of dtype {X.dtype}" if isinstance(X, torch.Tensor) else "")
        )
    if X.ndim != 3 or min(X.shape) < 1:
        raise ValueError(f"X must have shape [N, n, d] with N, n, d >= 1, got {tuple(X.shape)}")
    if not bool(torch.isfinite(X).all()):
        raise ValueError("X contains nan or inf")
    return X


def _seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int, got {seed!r} of type {type(seed).__name__}")
    return int(seed)


def _check_params(theta: object) -> None:
    if not isinstance(theta, dict) or not theta:
        raise TypeError(
            f"theta must be a non-empty dict of float tensors, got {type(theta).__name__}"
        )
    for name, p in theta.items():
        if not isinstance(p, torch.Tensor) or not p.is_floating_point():
            raise TypeError(
                f"theta[{name!r}] must be a float tensor, got "
                + (f"dtype {p.dtype}" if isinstance(p, torch.Tensor) else type(p).__name__)
            )
        if not bool(torch.isfinite(p.detach()).all()):
            raise ValueError(f"theta[{name!r}] contains nan or inf")


def block(X: torch.Tensor, theta: dict[str, torch.Tensor], tau: float = 1.0) -> torch.Tensor:
    """One block SA -> FF, ``FF(SA(X))``, with rank-one ``A = q k^T`` and softmax at ``tau``:

    ``SA(X)_i = rho x_i + V sum_l pi_il x_l`` with ``pi_i = softmax_l(<A x_i, x_l> / tau)``, and
    ``FF(z) = eta z + W relu(U z + b)``. This equals ``feed_forward(self_attention(X, q k^T, rho, V,
    tau), eta, W, U, b)`` of :mod:`sxor.interp.layers` (tested) but uses the rank-one form of the
    scores, ``<A x_i, x_l> = (k . x_i)(q . x_l)``, and skips the validation of the layers, so that
    a training step costs about a millisecond.

    Accepts ``X`` a float tensor ``[N, n, d]`` and ``theta`` a dict of float tensors of ``X``'s
    dtype with the keys ``PARAMETER_NAMES`` and shapes ``q, k [d]``, ``rho, eta []``,
    ``V [d, d]``, ``W [d, w]``, ``U [w, d]``, ``b [w]``; ``tau > 0`` finite. Anything else raises
    ``TypeError``/``ValueError`` naming the argument (and the dimensions, for a shape mismatch).
    """
    X = _check_X(X)
    _check_theta(theta, X)
    tau = _real("tau", tau, positive=True)
    return _block(X, theta, tau)


def _block(X: torch.Tensor, theta: dict[str, torch.Tensor], tau: float) -> torch.Tensor:
    S = (X @ theta["k"]).unsqueeze(-1) * (X @ theta["q"]).unsqueeze(-2)
    Z = theta["rho"] * X + (torch.softmax(S / tau, dim=-1) @ X) @ theta["V"].T
    return theta["eta"] * Z + torch.relu(Z @ theta["U"].T + theta["b"]) @ theta["W"].T


def _loss(
    X: torch.Tensor, Y: torch.Tensor, theta: dict[str, torch.Tensor], tau: float
) -> torch.Tensor:
    return ((_block(X, theta, tau) - Y) ** 2).sum(-1).amax(-1).mean()


def loss(
    X: torch.Tensor, Y: torch.Tensor, theta: dict[str, torch.Tensor], tau: float = 1.0
) -> torch.Tensor:
    """``J(theta) = mean_j max_i |T_theta(X_j)_i - y_j|^2``, the mean squared Hausdorff distance
    from the output tokens to the singleton targets, for ``X [N, n, d]`` and ``Y [N, 1, d]`` (same
    dtype). Differentiable in ``theta``; arguments as in :func:`block`."""
    X = _check_X(X)
    _check_theta(theta, X)
    tau = _real("tau", tau, positive=True)
    if (
        not isinstance(Y, torch.Tensor)
        or Y.dtype != X.dtype
        or tuple(Y.shape) != (X.shape[0], 1, X.shape[2])
    ):
        got = f"{tuple(Y.shape)} {Y.dtype}" if isinstance(Y, torch.Tensor) else type(Y).__name__
        raise ValueError(
            f"Y must be a {X.dtype} tensor of shape [N, 1, d] = {(X.shape[0], 1, X.shape[2])}, got {got}"
        )
    if not bool(torch.isfinite(Y).all()):
        raise ValueError("Y contains nan or inf")
    return _loss(X, Y, theta, tau)


def _sq_norm(theta: dict[str, torch.Tensor]) -> float:
    return float(sum((p.detach().double() ** 2).sum() for p in theta.values()))


def sq_norm(theta: dict[str, torch.Tensor]) -> float:
    """``|theta|^2`` over every parameter (accumulated in float64). ``theta`` a non-empty dict of
    finite float tensors; anything else raises ``TypeError``/``ValueError``."""
    _check_params(theta)
    return _sq_norm(theta)
