r"""The two layers of Part II and the Hausdorff distance, in float and in exact rational arithmetic.

Tokens are the rows of ``X [..., n, d]`` (leading dimensions are a batch of sequences).

* Feed-forward (token-wise, width :math:`w`):
  :math:`\mathrm{FF}(x) = \eta x + W \operatorname{relu}(U x + b)` with ``U [w, d]``, ``b [w]``,
  ``W [d, w]`` and a scalar :math:`\eta`.
* Self-attention: :math:`\mathrm{SA}(X)_i = \rho x_i + V \sum_l \pi_{il} x_l` with scores
  :math:`s_{il} = \langle A x_i, x_l \rangle`. :math:`\tau = 0` is hardmax:
  :math:`\pi_{il} = 1/|C_i|` on :math:`C_i = \operatorname{argmax}_l s_{il}` (every maximiser, ties
  included, the query :math:`l = i` included) and 0 elsewhere; :math:`\tau > 0` is softmax,
  :math:`\pi_{il} = e^{s_{il}/\tau} / \sum_k e^{s_{ik}/\tau}`.

Two arithmetic paths, chosen by the type of ``X``:

* **float**: ``X`` a float ``torch.Tensor`` (its dtype and device are kept) or a float numpy
  array (computed in float64, returned as numpy). Hardmax ties are decided by ``==`` on the
  rounded float scores, so mathematically tied scores may split in the last bit; use the exact
  path when ties matter.
* **exact**: ``X`` a numpy ``dtype=object`` array of :class:`fractions.Fraction` (ints allowed).
  Every parameter must then be exact too (int, Fraction, integer arrays, object arrays of them);
  a float anywhere raises ``ValueError`` instead of silently rounding. Hardmax attention, ReLU
  layers and :func:`~sxor.interp.layers.hausdorff_squared` are computed in exact rational
  arithmetic and return object arrays whose entries are all ``Fraction``. Softmax weights
  :math:`e^{s/\tau}` are irrational, so ``self_attention`` with :math:`\tau > 0` on exact input
  raises ``ValueError``; the rigorous alternative is
  :func:`sxor.interp.enclosures.softmax_attention_enclosure`, which returns exact rational lower and
  upper bounds.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import TypeAlias, TypeVar, overload

import mpmath
import numpy as np
import torch

from ..results import check_allocation
from .exact import as_exact, is_exact
from .exact import exact_scalar as _exact_scalar
from .exact import fractions as _fractions

Array: TypeAlias = torch.Tensor | np.ndarray
Scalar: TypeAlias = int | float | Fraction

_T = TypeVar("_T")


# --------------------------------------------------------------------------------------------
# input handling
# --------------------------------------------------------------------------------------------


#: Largest tensor, in bytes, that the float path allocates (scores ``[..., n, n]``, Hausdorff
#: differences ``[..., n, m, d]``); larger ones, and ones above the memory available on the device,
#: are refused before allocating (:func:`sxor.results.check_allocation`).
MAX_BYTES = 16 * 2**30


def _check_size(what: str, shape: tuple[int, ...], like: torch.Tensor) -> None:
    nbytes = math.prod(int(s) for s in shape) * like.element_size()
    check_allocation(
        f"{what} of shape {tuple(shape)}",
        nbytes,
        MAX_BYTES,
        "sxor.interp.layers.MAX_BYTES",
        like.device,
    )


def _check_tokens(name: str, shape: tuple[int, ...]) -> None:
    if len(shape) < 2:
        raise ValueError(f"{name} must have shape [..., n, d] (tokens are rows), got shape {shape}")
    if shape[-2] == 0:
        raise ValueError(f"{name} is an empty sequence (n = 0 tokens), shape {shape}")
    if shape[-1] == 0:
        raise ValueError(f"{name} has token dimension d = 0, shape {shape}")


def _check_shape(
    name: str, shape: tuple[int, ...], expected: tuple[int, ...], meaning: str
) -> None:
    if tuple(shape) != tuple(expected):
        raise ValueError(
            f"{name} must have shape {tuple(expected)} ({meaning}), got shape {tuple(shape)}"
        )


def _float_scalar(name: str, value: object) -> float:
    if isinstance(value, (torch.Tensor, np.ndarray)):
        if value.ndim != 0:
            raise ValueError(f"{name} must be a scalar, got shape {tuple(value.shape)}")
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise ValueError(f"{name} must be a real scalar, got {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    return x


def _float_tensor(name: str, a: object, like: torch.Tensor) -> torch.Tensor:
    if isinstance(a, torch.Tensor):
        if a.device.type == "meta":
            raise ValueError(f"{name} is on the meta device (a shape without values)")
        if a.is_complex() or a.dtype == torch.bool:
            raise ValueError(f"{name} must be real numbers, got dtype {a.dtype}")
        t = a.to(dtype=like.dtype, device=like.device)
    else:
        if a is None:
            raise ValueError(f"{name} must be real numbers, got None")
        arr = np.asarray(a)
        if arr.dtype == object:
            try:
                arr = arr.astype(np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"{name} must be real numbers, got {a!r:.60}") from None
        if arr.dtype.kind not in "fiu":
            raise ValueError(f"{name} must be real numbers, got {a!r:.60} (dtype {arr.dtype})")
        t = torch.as_tensor(arr, dtype=like.dtype, device=like.device)
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains non-finite values (nan or inf)")
    return t


def _float_tokens(name: str, X: object) -> tuple[torch.Tensor, bool]:
    """``X`` as a float tensor, and whether the caller passed numpy (so numpy goes back)."""
    if isinstance(X, torch.Tensor):
        if X.device.type == "meta":
            raise ValueError(f"{name} is on the meta device (a shape without values)")
        if not X.is_floating_point():
            raise ValueError(
                f"{name} must be a floating-point tensor (or an object array of Fractions), got {X.dtype}"
            )
        t, numpy_in = X, False
    elif isinstance(X, np.ndarray):
        if X.dtype.kind not in "fiu":
            raise ValueError(
                f"{name} must be a float array or an object array of Fractions, got dtype {X.dtype}"
            )
        t, numpy_in = torch.as_tensor(X.astype(np.float64)), True
    else:
        raise ValueError(f"{name} must be a torch.Tensor or a numpy array, got {type(X).__name__}")
    _check_tokens(name, tuple(t.shape))
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains non-finite values (nan or inf)")
    return t, numpy_in


def _check_tau(tau: _T) -> _T:
    if isinstance(tau, bool) or not isinstance(tau, (numbers.Real, np.floating, np.integer)):
        raise ValueError(f"tau must be a real number >= 0, got {tau!r}")
    if isinstance(tau, (float, np.floating)) and not math.isfinite(float(tau)):
        raise ValueError(f"tau must be finite, got {tau}")
    if tau < 0:
        raise ValueError(f"tau must be >= 0 (0 is hardmax), got tau={tau}")
    return tau


def _relu_exact(Z: np.ndarray) -> np.ndarray:
    out = np.empty(Z.shape, dtype=object)
    for idx, z in np.ndenumerate(Z):
        out[idx] = z if z > 0 else Fraction(0)
    return out


# --------------------------------------------------------------------------------------------
# layers
# --------------------------------------------------------------------------------------------


def _check_ff_shapes(d: int, U: Array, b: Array, W: Array) -> None:
    if U.ndim != 2 or U.shape[1] != d:
        raise ValueError(
            f"U must have shape [w, d] with d = {d} (the token dimension), got {tuple(U.shape)}"
        )
    w = U.shape[0]
    _check_shape("b", tuple(b.shape), (w,), f"one bias per hidden unit, w = {w}")
    _check_shape("W", tuple(W.shape), (d, w), f"[d, w] = [{d}, {w}]")


@overload
def feed_forward(X: torch.Tensor, eta: Scalar, W: Array, U: Array, b: Array) -> torch.Tensor: ...
@overload
def feed_forward(X: np.ndarray, eta: Scalar, W: Array, U: Array, b: Array) -> np.ndarray: ...
def feed_forward(X: Array, eta: Scalar, W: Array, U: Array, b: Array) -> Array:
    r"""Token-wise ReLU feed-forward layer :math:`\mathrm{FF}(x) = \eta x + W \operatorname{relu}(U x + b)`.

    Exact (Fractions in, Fractions out) when ``X`` is an object array; see the module docstring.
    Float parameters are cast to ``X``'s dtype and device.

    Parameters
    ----------
    X
        Tokens ``[..., n, d]``: a float tensor or array, or an object array of Fractions.
    eta
        Scalar :math:`\eta`, the weight of the skip connection.
    W
        Output weights ``[d, w]``.
    U
        Input weights ``[w, d]``.
    b
        Hidden biases ``[w]``.

    Raises
    ------
    ValueError
        naming the argument and the expected shape, for: integer/bool/complex ``X``, nan/inf
        anywhere, a non-scalar or non-real ``eta``, shapes that do not match ``d`` and ``w``, and
        floats on the exact path.
    """
    if is_exact(X):
        X = as_exact(X, "X")
        _check_tokens("X", X.shape)
        U, b, W = as_exact(U, "U"), as_exact(b, "b"), as_exact(W, "W")
        eta = _exact_scalar("eta", eta)
        _check_ff_shapes(X.shape[-1], U, b, W)
        return _fractions(eta * X + _relu_exact(X @ U.T + b) @ W.T)
    X, numpy_in = _float_tokens("X", X)
    U, b, W = _float_tensor("U", U, X), _float_tensor("b", b, X), _float_tensor("W", W, X)
    eta = _float_scalar("eta", eta)
    _check_ff_shapes(X.shape[-1], U, b, W)
    out = eta * X + torch.relu(X @ U.T + b) @ W.T
    return out.numpy() if numpy_in else out


@overload
def attention_scores(X: torch.Tensor, A: Array) -> torch.Tensor: ...
@overload
def attention_scores(X: np.ndarray, A: Array) -> np.ndarray: ...
def attention_scores(X: Array, A: Array) -> Array:
    r"""Scores :math:`s_{il} = \langle A x_i, x_l \rangle`, shape ``[..., n, n]`` (exact for Fractions).

    Parameters
    ----------
    X
        Tokens ``[..., n, d]``, as in :func:`~sxor.interp.layers.attention_weights`.
    A
        Key-query matrix ``[d, d]``.

    Raises
    ------
    ValueError
        for other shapes (naming ``d``), nan/inf, complex or non-numeric entries, and floats on the
        exact path.
    """
    if is_exact(X):
        X = as_exact(X, "X")
        _check_tokens("X", X.shape)
        A = as_exact(A, "A")
        _check_shape("A", tuple(A.shape), (X.shape[-1],) * 2, "[d, d]")
        return _fractions((X @ A.T) @ np.swapaxes(X, -1, -2))
    X, numpy_in = _float_tokens("X", X)
    A = _float_tensor("A", A, X)
    _check_shape("A", tuple(A.shape), (X.shape[-1],) * 2, "[d, d]")
    _check_size("the attention scores", (*X.shape[:-1], X.shape[-2]), X)
    S = (X @ A.T) @ X.transpose(-1, -2)
    return S.numpy() if numpy_in else S


def _hardmax_weights_exact(X: np.ndarray, A: Array) -> np.ndarray:
    S = attention_scores(X, A)
    top = np.equal(S, S.max(axis=-1, keepdims=True))
    counts = top.sum(axis=-1, keepdims=True)
    pi = np.empty(S.shape, dtype=object)
    for idx, hit in np.ndenumerate(top):
        pi[idx] = Fraction(1, int(counts[(*idx[:-1], 0)])) if hit else Fraction(0)
    return pi


@overload
def attention_weights(X: torch.Tensor, A: Array, tau: Scalar = 0) -> torch.Tensor: ...
@overload
def attention_weights(X: np.ndarray, A: Array, tau: Scalar = 0) -> np.ndarray: ...
def attention_weights(X: Array, A: Array, tau: Scalar = 0) -> Array:
    r"""Attention matrix ``pi [..., n, n]`` for the scores :math:`s_{il} = \langle A x_i, x_l \rangle`.

    :math:`\tau = 0`: hardmax, :math:`\pi_{il} = 1/|C_i|` for
    :math:`l \in C_i = \operatorname{argmax}_l s_{il}` (ties included); :math:`\tau > 0`: softmax of
    :math:`s_{il} / \tau` over :math:`l`, computed as the softmax of
    :math:`(s_{il} - \max_l s_{il}) / \tau`, so it is stable for every :math:`\tau > 0` (at a
    :math:`\tau` so small that the weights off the argmax underflow, the result is the hardmax row).
    Rows sum to 1.

    Parameters
    ----------
    X
        Tokens ``[..., n, d]``: a finite float tensor/array or an exact object array.
    A
        Key-query matrix ``[d, d]``.
    tau
        Temperature, a finite real ``>= 0`` (0 is hardmax).

    Raises
    ------
    ValueError
        naming the argument and the dimensions, for: other shapes, nan/inf entries, a
        negative/nan/inf/non-real ``tau``, scores that overflow the float dtype, and ``tau > 0`` on
        exact input (irrational weights).
    """
    tau = _check_tau(tau)
    if is_exact(X):
        X = as_exact(X, "X")
        _check_tokens("X", X.shape)
        if tau != 0:
            raise ValueError(
                "softmax (tau > 0) weights exp(s/tau) are irrational, so they have no exact Fraction "
                "value: pass float X, or use sxor.interp.softmax_attention_enclosure for rigorous "
                "rational bounds"
            )
        return _hardmax_weights_exact(X, A)
    numpy_in = isinstance(X, np.ndarray)
    scores = attention_scores(X, A)  # numpy exactly when X is
    S = torch.as_tensor(scores) if isinstance(scores, np.ndarray) else scores
    if not bool(torch.isfinite(S).all()):
        raise ValueError(
            f"the scores <A x_i, x_l> overflow {S.dtype} (some are inf or nan): rescale X or A, "
            "or use the exact path (object arrays of Fractions)"
        )
    if tau == 0:
        top = (S.amax(dim=-1, keepdim=True) == S).to(S.dtype)
        pi = top / top.sum(dim=-1, keepdim=True)
    else:
        # (s - max) / tau <= 0, and exactly 0 on the maximisers: stable for every tau > 0, even one
        # so small that 1 / tau overflows or tau itself rounds to 0 in X's dtype (then the weights
        # are the hardmax weights, their limit)
        D = S - S.amax(dim=-1, keepdim=True)
        pi = torch.softmax(torch.where(D == 0, torch.zeros_like(D), D / float(tau)), dim=-1)
    return pi.numpy() if numpy_in else pi


@overload
def self_attention(
    X: torch.Tensor, A: Array, rho: Scalar, V: Array, tau: Scalar = 0
) -> torch.Tensor: ...
@overload
def self_attention(
    X: np.ndarray, A: Array, rho: Scalar, V: Array, tau: Scalar = 0
) -> np.ndarray: ...
def self_attention(X: Array, A: Array, rho: Scalar, V: Array, tau: Scalar = 0) -> Array:
    r"""Self-attention layer :math:`\mathrm{SA}(X)_i = \rho x_i + V \sum_l \pi_{il} x_l`.

    The weights :math:`\pi` come from :func:`~sxor.interp.layers.attention_weights` (:math:`\tau = 0`
    hardmax with uniform ties, :math:`\tau > 0` softmax). Exact for Fractions with :math:`\tau = 0`.
    Float parameters are cast to ``X``'s dtype and device.

    Parameters
    ----------
    X
        Tokens ``[..., n, d]``.
    A
        Key-query matrix ``[d, d]``.
    rho
        Scalar :math:`\rho`, the weight of the skip connection.
    V
        Value matrix ``[d, d]``.
    tau
        Temperature, ``>= 0`` (0 is hardmax).

    Raises
    ------
    ValueError
        for what :func:`~sxor.interp.layers.attention_weights` refuses, a ``V`` of the wrong shape,
        or a non-finite or non-real ``rho``.
    """
    pi = attention_weights(X, A, tau)
    if is_exact(X):
        X = as_exact(X, "X")
        V = as_exact(V, "V")
        rho = _exact_scalar("rho", rho)
        _check_shape("V", tuple(V.shape), (X.shape[-1],) * 2, "[d, d]")
        return _fractions(rho * X + (pi @ X) @ V.T)
    X, numpy_in = _float_tokens("X", X)
    V = _float_tensor("V", V, X)
    rho = _float_scalar("rho", rho)
    _check_shape("V", tuple(V.shape), (X.shape[-1],) * 2, "[d, d]")
    pi = torch.as_tensor(pi, dtype=X.dtype, device=X.device)
    out = rho * X + (pi @ X) @ V.T
    return out.numpy() if numpy_in else out


# --------------------------------------------------------------------------------------------
# Hausdorff distance
# --------------------------------------------------------------------------------------------


def _check_pair(P: Array, Q: Array) -> None:
    if P.shape[-1] != Q.shape[-1]:
        raise ValueError(
            f"P and Q must have the same token dimension d, got {P.shape[-1]} and {Q.shape[-1]}"
        )
    try:
        np.broadcast_shapes(tuple(P.shape[:-2]), tuple(Q.shape[:-2]))
    except ValueError:
        raise ValueError(
            f"the batch dimensions of P {tuple(P.shape[:-2])} and Q {tuple(Q.shape[:-2])} do not match "
            f"(P is [..., n, d] = {tuple(P.shape)}, Q is [..., m, d] = {tuple(Q.shape)})"
        ) from None


def _exact_pair(P: Array, Q: Array) -> tuple[np.ndarray, np.ndarray]:
    Pe, Qe = as_exact(P, "P"), as_exact(Q, "Q")
    _check_tokens("P", Pe.shape)
    _check_tokens("Q", Qe.shape)
    _check_pair(Pe, Qe)
    return Pe, Qe


def _float_pair(P: Array, Q: Array) -> tuple[torch.Tensor, torch.Tensor, bool]:
    Pf, numpy_in = _float_tokens("P", P)
    Qf, _ = _float_tokens("Q", Q)
    Qf = Qf.to(dtype=Pf.dtype, device=Pf.device)
    _check_pair(Pf, Qf)
    return Pf, Qf, numpy_in


def hausdorff_squared(P: Array, Q: Array) -> Fraction | np.ndarray | torch.Tensor:
    r"""Squared Hausdorff distance between the token sets (rows) of ``P [..., n, d]`` and ``Q [..., m, d]``.

    In the Euclidean norm,

    .. math::  d_H(P, Q)^2 = \max\Big( &\max_i \min_j \lVert p_i - q_j \rVert^2,\; \\
               &\max_j \min_i \lVert p_i - q_j \rVert^2 \Big).

    Exact :class:`~fractions.Fraction` (or an object array over the batch) when either input is an
    object array; a float tensor / numpy float otherwise.

    Parameters
    ----------
    P
        First token set ``[..., n, d]``, float or exact, at least one token.
    Q
        Second token set ``[..., m, d]``, same ``d``, batch dimensions broadcastable with ``P``'s.

    Raises
    ------
    ValueError
        for nan/inf, complex or non-numeric entries, empty sequences, mismatched ``d`` or batch
        dimensions.
    """
    if is_exact(P) or is_exact(Q):
        Pe, Qe = _exact_pair(P, Q)
        diff = Pe[..., :, None, :] - Qe[..., None, :, :]
        D2 = _fractions((diff * diff).sum(axis=-1))  # [..., n, m]
        forward, backward = D2.min(axis=-1).max(axis=-1), D2.min(axis=-2).max(axis=-1)
        if D2.ndim == 2:
            return max(forward, backward)
        out = np.empty(forward.shape, dtype=object)
        for idx, value in np.ndenumerate(forward):
            out[idx] = max(value, backward[idx])
        return out
    Pf, Qf, numpy_in = _float_pair(P, Q)
    batch = torch.broadcast_shapes(Pf.shape[:-2], Qf.shape[:-2])
    _check_size("the differences", (*batch, Pf.shape[-2], *Qf.shape[-2:]), Pf)
    D2f = ((Pf.unsqueeze(-2) - Qf.unsqueeze(-3)) ** 2).sum(-1)
    outf = torch.maximum(D2f.amin(-1).amax(-1), D2f.amin(-2).amax(-1))
    return outf.numpy() if numpy_in else outf


def hausdorff(P: Array, Q: Array) -> object:
    r"""Hausdorff distance :math:`d_H(P, Q)` between token sets (rows), the square root of :func:`~sxor.interp.layers.hausdorff_squared`.

    Float inputs give a float tensor / numpy float. Exact inputs give an ``mpmath.mpf`` (or object
    array of them over the batch): the square root of the exact rational :math:`d_H^2` at the current
    ``mpmath.mp`` precision. It is 0 exactly when, and only when, the two sets coincide
    (:math:`\sqrt{0} = 0` and ``mpf`` never underflows); for an exact value use
    :func:`~sxor.interp.layers.hausdorff_squared`.

    Parameters
    ----------
    P
        First token set ``[..., n, d]``.
    Q
        Second token set ``[..., m, d]``.

    Raises
    ------
    ValueError
        as :func:`~sxor.interp.layers.hausdorff_squared` does.
    """
    sq = hausdorff_squared(P, Q)
    if isinstance(sq, Fraction):
        return mpmath.sqrt(mpmath.mpf(sq.numerator) / sq.denominator)
    if isinstance(sq, np.ndarray) and sq.dtype == object:
        out = np.empty(sq.shape, dtype=object)
        for idx, v in np.ndenumerate(sq):
            out[idx] = mpmath.sqrt(mpmath.mpf(v.numerator) / v.denominator)
        return out
    return np.sqrt(sq) if isinstance(sq, np.ndarray) else torch.sqrt(sq)
