"""Input validation shared by the Part I functions.

Every public function checks its arguments here and raises :class:`ValueError` with a message
that names the offending argument, so that a reader who passes a wrong shape learns what is
wrong instead of getting an opaque broadcasting error deep inside a matmul.
"""

from __future__ import annotations

import torch


def check_dims(d: int, m: int | None = None) -> None:
    """Require ``d >= 2`` (sparse XOR needs two distinct positions) and ``m >= 1``."""
    if int(d) != d or d < 2:
        raise ValueError(f"d must be an integer >= 2 (sparse XOR needs two positions), got d={d}")
    if m is not None and (int(m) != m or m < 1):
        raise ValueError(f"m must be an integer >= 1, got m={m}")


def check_finite(name: str, t: torch.Tensor) -> None:
    """Require every entry of ``t`` to be finite."""
    if t.is_floating_point() and not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains non-finite values (nan or inf)")


def check_tensor(name: str, t: object, min_dim: int) -> torch.Tensor:
    """Require a tensor with at least ``min_dim`` dimensions."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dimension(s), got shape {tuple(t.shape)}")
    return t


def check_embeddings(V: torch.Tensor) -> tuple[int, int]:
    """Validate positional embeddings ``V [..., d, m]`` and return ``(d, m)``."""
    check_tensor("V", V, 2)
    if not V.is_floating_point():
        raise ValueError(f"V must be a floating-point tensor, got dtype {V.dtype}")
    d, m = V.shape[-2], V.shape[-1]
    check_dims(d, m)
    check_finite("V", V)
    return d, m


def check_query(name: str, theta: torch.Tensor, m: int) -> None:
    """Validate a query vector ``theta [..., m]`` against the embedding dimension ``m``."""
    check_tensor(name, theta, 1)
    if theta.shape[-1] != m:
        raise ValueError(
            f"{name} has last dimension {theta.shape[-1]} but the embeddings have m={m} "
            f"(shape {tuple(theta.shape)})"
        )
    check_finite(name, theta)


def check_support(support: torch.Tensor, d: int) -> None:
    """Validate ``support [..., 2]``: integer positions in ``[0, d)`` with ``i* != j*``."""
    check_tensor("support", support, 1)
    if support.is_floating_point() or support.dtype == torch.bool:
        raise ValueError(f"support must be an integer (long) tensor, got dtype {support.dtype}")
    if support.shape[-1] != 2:
        raise ValueError(f"support must have last dimension 2 (i*, j*), got shape {tuple(support.shape)}")
    if bool(((support < 0) | (support >= d)).any()):
        raise ValueError(f"support out of range: every index must lie in [0, d) = [0, {d})")
    if bool((support[..., 0] == support[..., 1]).any()):
        raise ValueError("support must have i* != j*: sparse XOR multiplies two distinct bits")


def batch_shape(*shapes: torch.Size) -> torch.Size:
    """Broadcast the leading (batch) shapes, raising ValueError when they do not match."""
    try:
        return torch.broadcast_shapes(*shapes)
    except RuntimeError as err:
        raise ValueError(f"batch shapes do not broadcast: {[tuple(s) for s in shapes]}") from err
