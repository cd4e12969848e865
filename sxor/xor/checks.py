"""Input validation shared by the Part I functions: the one home of every argument check.

Every public function checks its arguments here, at its top, and raises an error whose message
names the offending argument, so that a reader who passes a wrong value learns what is wrong
instead of getting a silent wrong result or an opaque error deep inside a matmul. The policy:

* a **wrong type** (a float where a count goes, a string or complex step size, a list where a
  tensor goes, a bool, a complex or unsigned dtype) raises :class:`ArgumentTypeError`, which is
  both a :class:`TypeError` and a :class:`ValueError` (so ``except ValueError`` catches every
  bad argument);
* a **wrong value** (out of range, wrong shape, non-finite, mismatched dtype or device) raises
  :class:`ValueError`.

Sizes and counts (``d``, ``m``, ``n``, ``steps``, ``width``, ...) must be integers: Python
``int`` or a NumPy/PyTorch integer scalar. A float is refused even when it is integer-valued
(``d = 6.0``): a size computed in floating point is usually a bug, and accepting some floats but
not others (``6.0`` but not ``6.5``, ``nan`` or ``inf``) would make the contract depend on values.
Tensors of one call must share one dtype and one device (no silent promotion or copy); the
inputs ``x`` in ``{+1, -1}`` are the exception (converted exactly to the weights' dtype).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from ..results import (
    available_devices,  # noqa: F401 (re-exported)
    check_allocation,
)
from ..results import check_device as _check_device


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type (a :class:`TypeError` that is also a :class:`ValueError`)."""


# --- scalars ---------------------------------------------------------------------------------


def check_int(name: str, value: object, minimum: int | None = 1, maximum: int | None = None) -> int:
    """Require an integer (``int``, NumPy or 0-d PyTorch integer; not bool, not float) in
    ``[minimum, maximum]`` and return it as an ``int``."""
    if isinstance(value, torch.Tensor) and value.device.type == "meta":
        raise ArgumentTypeError(f"{name} must be an integer, got a tensor on the meta device")
    if (
        isinstance(value, torch.Tensor)
        and value.dim() == 0
        and not value.is_floating_point()
        and not value.is_complex()
        and value.dtype != torch.bool
    ):
        value = int(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise ArgumentTypeError(
            f"{name} must be an integer, got {type(value).__name__} {value!r}"
            + (
                " (pass int(...) on purpose: sizes are never floats)"
                if isinstance(value, float)
                else ""
            )
        )
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {name}={value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be an integer <= {maximum}, got {name}={value}")
    return value


def check_real(
    name: str, value: object, *, minimum: float | None = None, strict: bool = False
) -> float:
    """Require a finite real scalar (not bool, complex or str), ``>= minimum`` (``> minimum`` when
    ``strict``), and return it as a ``float``."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        if value.ndim != 0:
            raise ValueError(f"{name} must be a scalar, got shape {tuple(value.shape)}")
        if isinstance(value, torch.Tensor) and (value.is_complex() or value.dtype == torch.bool):
            raise ArgumentTypeError(f"{name} must be a real number, got a {value.dtype} tensor")
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (numbers.Real, np.floating, np.integer)
    ):
        raise ArgumentTypeError(
            f"{name} must be a real number, got {type(value).__name__} {value!r}"
        )
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {name}={x}")
    if minimum is not None and (x <= minimum if strict else x < minimum):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {minimum}, got {name}={x}")
    return x


#: Largest ``d``: positions are int64 indices (a larger ``d`` could not be indexed).
MAX_D = 2**62


def check_dims(d: object, m: object | None = None) -> None:
    """Require integers ``2 <= d <= MAX_D`` (sparse XOR needs two distinct positions; positions
    are int64 indices) and ``m >= 1``."""
    d = check_int("d", d, 1)
    if d < 2:
        raise ValueError(f"d must be an integer >= 2 (sparse XOR needs two positions), got d={d}")
    if d > MAX_D:
        raise ValueError(
            f"d must be at most 2^62 (positions are int64 indices), got d of {len(str(d))} digits"
        )
    if m is not None:
        check_int("m", m, 1)


def check_batch(batch: object) -> tuple[int, ...]:
    """Require a batch shape: a tuple (or list, or ``torch.Size``) of integers ``>= 0``."""
    if not isinstance(batch, (tuple, list, torch.Size)):
        raise ArgumentTypeError(
            f"batch must be a tuple of non-negative integers, got {type(batch).__name__} {batch!r}"
        )
    return tuple(check_int(f"batch[{i}]", b, 0) for i, b in enumerate(batch))


def check_dtype(name: str, dtype: object, *, integer: bool = False) -> torch.dtype:
    """Require a real floating ``torch.dtype`` (or, with ``integer``, a signed integer one too:
    ``1 - 2 * bit`` must be able to hold ``-1``). Complex, bool and unsigned dtypes are refused."""
    if not isinstance(dtype, torch.dtype):
        raise ArgumentTypeError(
            f"{name} must be a torch.dtype, got {type(dtype).__name__} {dtype!r}"
        )
    ok = dtype.is_floating_point or (
        integer and not dtype.is_complex and dtype != torch.bool and torch.iinfo(dtype).min < 0
    )
    if not ok:
        wanted = "a real floating or signed integer" if integer else "a real floating"
        raise ArgumentTypeError(f"{name} must be {wanted} torch.dtype, got {dtype}")
    return dtype


def check_kind(kind: object) -> str:
    """Require the name of an attention kind (a string; the registry checks the name itself)."""
    if not isinstance(kind, str):
        raise ArgumentTypeError(
            f"kind must be a string naming an attention map, got {type(kind).__name__} {kind!r}"
        )
    return kind


def check_generator(generator: object) -> None:
    """Require ``None`` or a ``torch.Generator``."""
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ArgumentTypeError(
            f"generator must be a torch.Generator or None, got {type(generator).__name__}"
        )


# --- tensors ---------------------------------------------------------------------------------


def check_finite(name: str, t: torch.Tensor) -> None:
    """Require every entry of ``t`` to be finite."""
    if (t.is_floating_point() or t.is_complex()) and not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains non-finite values (nan or inf)")


def check_tensor(
    name: str, t: object, min_dim: int, *, real: bool = False, finite: bool = False
) -> torch.Tensor:
    """Require a tensor with at least ``min_dim`` dimensions; with ``real``, a real floating dtype;
    with ``finite``, no nan or inf."""
    if not isinstance(t, torch.Tensor):
        raise ArgumentTypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type == "meta":
        raise ValueError(
            f"{name} is on the meta device (a shape without values): pass a tensor on cpu or cuda"
        )
    if t.dim() < min_dim:
        raise ValueError(
            f"{name} must have at least {min_dim} dimension(s), got shape {tuple(t.shape)}"
        )
    if real and not t.is_floating_point():
        raise ArgumentTypeError(f"{name} must be a real floating-point tensor, got dtype {t.dtype}")
    if finite:
        check_finite(name, t)
    return t


def check_like(name: str, t: torch.Tensor, like_name: str, like: torch.Tensor) -> None:
    """Require ``t`` to share the dtype and the device of ``like`` (no silent promotion or copy)."""
    if t.dtype != like.dtype:
        raise ValueError(
            f"{name} has dtype {t.dtype} but {like_name} has dtype {like.dtype}: pass both in one dtype"
        )
    if t.device != like.device:
        raise ValueError(
            f"{name} is on {t.device} but {like_name} is on {like.device}: move both to one device"
        )


def check_embeddings(V: object) -> tuple[int, int]:
    """Validate positional embeddings ``V [..., d, m]`` (real floating, finite) and return ``(d, m)``."""
    V = check_tensor("V", V, 2)
    if not V.is_floating_point():
        raise ArgumentTypeError(f"V must be a real floating-point tensor, got dtype {V.dtype}")
    d, m = V.shape[-2], V.shape[-1]
    check_dims(d, m)
    check_finite("V", V)
    return d, m


def check_query(name: str, theta: object, m: int, like: torch.Tensor | None = None) -> None:
    """Validate a query vector ``theta [..., m]`` (real floating, finite) against the embedding
    dimension ``m``, and against the dtype and device of ``like`` (the embeddings) when given."""
    theta = check_tensor(name, theta, 1)
    if not theta.is_floating_point():
        raise ArgumentTypeError(
            f"{name} must be a real floating-point tensor, got dtype {theta.dtype}"
        )
    if theta.shape[-1] != m:
        raise ValueError(
            f"{name} has last dimension {theta.shape[-1]} but the embeddings have m={m} "
            f"(shape {tuple(theta.shape)})"
        )
    if like is not None:
        check_like(name, theta, "V", like)
    check_finite(name, theta)


def check_query_batch(name: str, theta: torch.Tensor, V: torch.Tensor) -> None:
    """Require the batch shape of a query ``theta [..., m]`` to broadcast against that of the
    embeddings ``V [..., d, m]`` (checked before the product, so the message names both)."""
    try:
        torch.broadcast_shapes(tuple(V.shape[:-2]), tuple(theta.shape[:-1]))
    except RuntimeError:
        raise ValueError(
            f"the batch shape {tuple(theta.shape[:-1])} of {name} [..., m] does not broadcast "
            f"against the batch shape {tuple(V.shape[:-2])} of V [..., d, m]"
        ) from None


def check_weights(g: object, h: object, names: tuple[str, str] = ("g", "h")) -> int:
    """Validate two attention-weight tensors ``[..., d]`` (real floating, one dtype and device,
    one ``d``) and return ``d``. Non-finite entries are allowed: they propagate (a diverging run)."""
    g = check_tensor(names[0], g, 1, real=True)
    h = check_tensor(names[1], h, 1, real=True)
    if g.shape[-1] != h.shape[-1]:
        raise ValueError(
            f"{names[0]} and {names[1]} must have one length d, got {g.shape[-1]} and {h.shape[-1]}"
        )
    check_like(names[1], h, names[0], g)
    return g.shape[-1]


def check_support(support: object, d: int, k: int | None = 2) -> None:
    """Validate ``support [..., k]``: integer positions in ``[0, d)``, pairwise distinct
    (``k = 2``: ``i* != j*``; ``k = None``: any length ``k >= 1``, the ``k``-sparse parity)."""
    support = check_tensor("support", support, 1)
    if support.is_floating_point() or support.is_complex() or support.dtype == torch.bool:
        raise ArgumentTypeError(
            f"support must be an integer (long) tensor, got dtype {support.dtype}"
        )
    if k is not None and support.shape[-1] != k:
        what = "(i*, j*)" if k == 2 else f"(k = {k} positions)"
        raise ValueError(
            f"support must have last dimension {k} {what}, got shape {tuple(support.shape)}"
        )
    if support.shape[-1] < 1:
        raise ValueError(
            f"support must hold at least one position, got shape {tuple(support.shape)}"
        )
    if bool(((support < 0) | (support >= d)).any()):
        raise ValueError(f"support out of range: every index must lie in [0, d) = [0, {d})")
    positions = support.shape[-1]
    for a in range(positions):
        for b in range(a + 1, positions):
            if bool((support[..., a] == support[..., b]).any()):
                if positions == 2:
                    raise ValueError(
                        "support must have i* != j*: sparse XOR multiplies two distinct bits"
                    )
                raise ValueError("support positions must be pairwise distinct")


def as_support(support: object, device: torch.device | str | None = None) -> torch.Tensor:
    """``support`` as a tensor: a tensor is returned as it is, a tuple or list of ints (or of
    pairs) is converted; anything else raises ArgumentTypeError. Validate it with :func:`check_support`."""
    if isinstance(support, torch.Tensor):
        return support if device is None else support.to(device)
    if isinstance(support, (tuple, list, np.ndarray)):
        try:
            return torch.as_tensor(np.asarray(support), device=device)
        except (TypeError, ValueError, RuntimeError):
            pass
    raise ArgumentTypeError(
        f"support must be an integer tensor or a pair of ints, got {type(support).__name__} {support!r}"
    )


def check_eta(
    eta: object, like: torch.Tensor, batch: torch.Size | tuple[int, ...] | None = None
) -> torch.Tensor:
    """Validate a step size: a real number or a real tensor, finite and ``>= 0``, broadcasting
    against ``batch`` (the batch shape of the instances) when given. Returned as a tensor in the
    dtype and on the device of ``like``."""
    if isinstance(eta, torch.Tensor):
        if eta.is_complex() or eta.dtype == torch.bool:
            raise ArgumentTypeError(f"eta must be real, got a {eta.dtype} tensor")
    elif isinstance(eta, np.ndarray):
        if eta.dtype.kind not in "fiu":
            raise ArgumentTypeError(f"eta must be real, got a numpy array of dtype {eta.dtype}")
    elif isinstance(eta, (bool, np.bool_)) or not isinstance(
        eta, (numbers.Real, np.floating, np.integer)
    ):
        raise ArgumentTypeError(
            f"eta must be a real number or tensor, got {type(eta).__name__} {eta!r}"
        )
    eta = torch.as_tensor(eta, dtype=like.dtype, device=like.device)
    check_finite("eta", eta)
    if bool((eta < 0).any()):
        raise ValueError("eta must be non-negative (a gradient *descent* step)")
    if batch is not None:
        try:
            torch.broadcast_shapes(eta.shape, tuple(batch))
        except RuntimeError:
            raise ValueError(
                f"eta has shape {tuple(eta.shape)}, which does not broadcast against the batch shape "
                f"{tuple(batch)} of the instances (one step size per instance, or a scalar)"
            ) from None
    return eta


def batch_shape(*shapes: torch.Size) -> torch.Size:
    """Broadcast the leading (batch) shapes, raising ValueError when they do not match."""
    try:
        return torch.broadcast_shapes(*shapes)
    except RuntimeError as err:
        raise ValueError(f"batch shapes do not broadcast: {[tuple(s) for s in shapes]}") from err


# --- the inputs of the closed forms and of one step, together ---------------------------------


def check_weights_and_support(g: torch.Tensor, h: torch.Tensor, support: object) -> torch.Tensor:
    """Validate weights ``g, h [..., d]`` (:func:`check_weights`) and a support ``[..., 2]`` for
    them, with batch shapes that broadcast; return the support as a tensor (:func:`as_support`)."""
    d = check_weights(g, h)
    support = as_support(support)
    check_support(support, d)
    batch_shape(g.shape[:-1], h.shape[:-1], support.shape[:-1])
    return support


def check_step_inputs(
    V: torch.Tensor, theta0: torch.Tensor, support: torch.Tensor, eta: object
) -> torch.Tensor:
    """The checks of :func:`sxor.xor.population.one_step` that cost ``O(m + batch)``: everything but
    ``V``'s finiteness, which the step checks from the scores it computes in its first pass.
    Returns ``eta`` as a tensor."""
    check_tensor("V", V, 2, real=True)
    check_tensor("theta0", theta0, 1, real=True)
    d, m = V.shape[-2], V.shape[-1]
    check_dims(d, m)
    check_query("theta0", theta0, m, like=V)
    check_support(support, d)
    return check_eta(eta, theta0, batch_shape(V.shape[:-2], theta0.shape[:-1], support.shape[:-1]))


# --- devices, memory, inputs -------------------------------------------------------------------

#: The largest tensor, in bytes, that a Part I function allocates; larger ones are refused before
#: allocation. 16 GiB is more than any experiment of the book needs (the full-size sweeps stay
#: below 2 GiB per tensor). Raise it on purpose (``sxor.xor.checks.MAX_BYTES = ...``) on a machine
#: with more memory.
MAX_BYTES = 16 * 2**30


def check_device(name: str, device: object) -> torch.device | None:
    """:func:`sxor.results.check_device` (the one place of the device check), with a wrong type
    raised as :class:`ArgumentTypeError` as everywhere in Part I."""
    try:
        return _check_device(name, device)
    except TypeError as err:
        raise ArgumentTypeError(str(err)) from None


def check_memory(
    what: str,
    shape: tuple[int, ...],
    dtype: torch.dtype,
    device: torch.device | str | None = None,
) -> None:
    """Refuse, before allocating, a tensor of ``shape`` and ``dtype`` above :data:`MAX_BYTES` or
    above the memory available on ``device`` (:func:`sxor.results.available_memory`; nothing is
    allocated on the meta device); the message names ``what`` (the arguments that set the size)
    and the estimate."""
    numel = math.prod(int(s) for s in shape)
    size = (
        numel
        * (torch.finfo(dtype).bits if dtype.is_floating_point else torch.iinfo(dtype).bits)
        // 8
        if dtype != torch.bool
        else numel
    )
    if size > MAX_BYTES:
        raise ValueError(
            f"{what} would allocate a tensor of shape {tuple(shape)} ({size / 2**30:.3g} GiB), "
            f"above the limit sxor.xor.checks.MAX_BYTES = {MAX_BYTES / 2**30:.3g} GiB: "
            "choose smaller sizes (or raise the limit on purpose)"
        )
    if device is None or torch.device(device).type != "meta":
        check_allocation(f"{what}, a tensor of shape {tuple(shape)},", size, size, "", device)


def check_signs(name: str, x: torch.Tensor) -> None:
    """Require every entry of ``x`` to be exactly ``+1`` or ``-1`` (one pass: ``x * x == 1``
    fails for 0, 0.5, NaN and infinities alike)."""
    if x.numel() and not bool((x * x == 1).all()):
        raise ValueError(
            f"{name} must have entries +1 or -1 only (inputs of the hypercube); "
            "got other values (0, fractions, NaN or infinities)"
        )
