r"""Exact rational arithmetic for Part II: one home for conversion, dot products, means, projections.

**One float policy.** Every exact computation of Part II works on numpy ``dtype=object`` arrays of
:class:`fractions.Fraction`. A float is never converted silently:
:func:`~sxor.interp.exact.as_exact` (and every function that calls it, i.e. the exact path of
:mod:`sxor.interp.layers`, the lemmas, the construction and the certificates) raises
``ValueError`` on a float, a complex number, NaN or infinity. A float is a dyadic rational, so it
*can* be converted exactly, but only on purpose: :func:`~sxor.interp.exact.from_floats` does that
(and refuses NaN and infinity).

Accepted entries: ``int`` (not ``bool``), numpy integers, :class:`~fractions.Fraction` (any
:class:`numbers.Rational`), and strings that ``Fraction`` parses (``"1/3"``, ``"1e-3"``) of at most :data:`MAX_DIGITS`
digits and an exponent within :math:`\pm` :data:`MAX_EXPONENT`. Tokens are the
rows of an ``[n, d]`` array; a token as a hashable value is a tuple of Fractions (``Token``).
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import TypeGuard

import numpy as np
import torch

#: One token as a hashable value: a tuple of ``d`` Fractions.
Token = tuple


def is_exact(X: object) -> TypeGuard[np.ndarray]:
    r"""True when ``X`` selects the exact path (a numpy array of ``dtype=object``).

    Parameters
    ----------
    X
        Any object.
    """
    return isinstance(X, np.ndarray) and X.dtype == object


#: Most digits a rational string may hold (numerator, denominator and decimals together), and the
#: largest ``|exponent|`` of a decimal string such as ``"1e-30"``: checked before ``Fraction`` reads
#: the string, so that ``"1e1000000000"`` is refused at once instead of building
#: :math:`10^{10^9}`.
MAX_DIGITS = 1000
#: The largest ``|exponent|`` of a decimal string (see :data:`MAX_DIGITS`).
MAX_EXPONENT = 1000

_EXPONENT = re.compile(r"[eE]\s*([-+]?[0-9_]+)\s*$")


def _clip(text: str, width: int = 40, *, quote: bool = True) -> str:
    """``repr(text)`` (or ``text``) cut to about ``width`` characters: a message stays one line."""
    shown = repr(text) if quote else text
    if len(shown) <= width:
        return shown
    return f"{shown[: width - 5]}...{shown[-3:]} ({len(text)} characters)"


def _check_decimal_size(name: str, value: str) -> None:
    if len(value) > 2 * MAX_DIGITS + 50:
        raise ValueError(
            f"{name} contains a string of {len(value)} characters, {_clip(value)}: a rational "
            f"has at most {MAX_DIGITS} digits (sxor.interp.exact.MAX_DIGITS)"
        )
    digits = sum(c.isdigit() for c in value)
    if digits > MAX_DIGITS:
        raise ValueError(
            f"{name} contains the string {_clip(value)} with {digits} digits, above the limit "
            f"sxor.interp.exact.MAX_DIGITS = {MAX_DIGITS}"
        )
    match = _EXPONENT.search(value)
    if match and "/" not in value:
        exponent = int(match.group(1).replace("_", "") or 0)
        if abs(exponent) > MAX_EXPONENT:
            raise ValueError(
                f"{name} contains the string {_clip(value)} with exponent {exponent}, beyond "
                f"+-{MAX_EXPONENT} (sxor.interp.exact.MAX_EXPONENT)"
            )


def approx(x: int | Fraction | float, digits: int = 6) -> str:
    """A short decimal form of a rational of any size (``1e+400``, ``3.33333e-5``), never failing.

    Unlike ``float(x)`` it neither overflows nor underflows, and unlike ``str(x)`` it stays short
    for numerators of thousands of digits (messages and printed lines use it).

    Parameters
    ----------
    x
        An int, Fraction or float.
    digits
        Significant digits.
    """
    import mpmath

    if isinstance(x, float):
        return f"{x:.{digits}g}"
    q = Fraction(x)
    with mpmath.workprec(64):
        return mpmath.nstr(mpmath.mpf(q.numerator) / q.denominator, digits)


def short(x: int | Fraction, width: int = 60) -> str:
    """``str(x)`` for a rational that prints in at most ``width`` characters, else ``approx(x)``
    with the number of digits of its numerator and denominator (Python refuses to print an int of
    more than 4300 digits, and such a line is unreadable anyway).

    Parameters
    ----------
    x
        An int or Fraction.
    width
        Longest exact form printed.
    """
    q = Fraction(x)
    bits = q.numerator.bit_length() + q.denominator.bit_length()
    if bits * 0.30103 <= width - 2:
        text = str(q)
        if len(text) <= width:
            return text
    num, den = (
        int(b * 0.30103) + 1 for b in (q.numerator.bit_length(), q.denominator.bit_length())
    )
    return f"~{approx(q)} (an exact rational of about {num} digits over {den} digits)"


def exact_scalar(name: str, value: object) -> Fraction:
    r"""``value`` as a Fraction.

    Parameters
    ----------
    name
        Name of the argument, used in the error message.
    value
        An int, numpy integer, Fraction, or a string such as ``"1/3"``.

    Raises
    ------
    ValueError
        naming ``name``, for bool, float, complex and anything else.
    """
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be an int or Fraction on the exact path, got a bool")
    if isinstance(value, (numbers.Rational, np.integer)):
        return Fraction(int(value)) if isinstance(value, np.integer) else Fraction(value)
    if isinstance(value, str):
        _check_decimal_size(name, value)
        try:
            return Fraction(value)
        except ValueError:
            raise ValueError(
                f"{name} contains the string {_clip(value)}, which is not a rational number"
            ) from None
        except ZeroDivisionError:
            raise ValueError(
                f"{name} contains the string {_clip(value)}, a fraction with zero denominator"
            ) from None
    raise ValueError(
        f"{name} contains {_clip(repr(value), quote=False)} of type {type(value).__name__}; the exact path accepts only int "
        "and Fraction (a float would silently round: convert it with Fraction(...) or from_floats on purpose)"
    )


def as_exact(a: object, name: str = "array") -> np.ndarray:
    r"""Convert ``a`` to an object array of :class:`~fractions.Fraction` of the same shape.

    Parameters
    ----------
    a
        Nested lists, integer/object arrays or integer tensors, with int/Fraction/str entries.
    name
        Name of the argument, used in error messages.

    Raises
    ------
    ValueError
        for floats, float tensors, complex and bool entries (no silent rounding; see
        :func:`~sxor.interp.exact.from_floats`).
    """
    if isinstance(a, torch.Tensor):
        if a.device.type == "meta":
            raise ValueError(f"{name} is on the meta device (a shape without values)")
        if a.is_floating_point() or a.is_complex():
            raise ValueError(
                f"{name} is a float tensor; the exact path accepts only int and Fraction"
            )
        a = a.tolist()
    arr = np.asarray(a, dtype=object) if not isinstance(a, np.ndarray) else a
    if arr.dtype != object and arr.dtype.kind not in "iu":
        raise ValueError(
            f"{name} has dtype {arr.dtype}; the exact path accepts only int and Fraction entries"
        )
    out = np.empty(arr.shape, dtype=object)
    for idx, value in np.ndenumerate(arr):
        out[idx] = exact_scalar(name, value)
    return out


def exact_item(a: object, name: str = "value") -> Fraction:
    r"""The one entry of :func:`~sxor.interp.exact.as_exact` of ``a`` (``as_exact(a, name).item()``).

    Parameters
    ----------
    a
        A scalar, or an array of one entry, that :func:`~sxor.interp.exact.as_exact` accepts.
    name
        Name of the argument, used in error messages.
    """
    item: Fraction = as_exact(a, name).item()
    return item


def from_floats(a: object, name: str = "array") -> np.ndarray:
    r"""Convert ``a`` to Fractions *on purpose*, floats included.

    Every finite float is a dyadic rational and is converted exactly (``0.1`` becomes
    ``3602879701896397/36028797018963968``).

    Parameters
    ----------
    a
        Nested lists, arrays or tensors of real numbers.
    name
        Name of the argument, used in error messages.

    Raises
    ------
    ValueError
        for NaN, infinity, complex numbers and bools.
    """
    if isinstance(a, torch.Tensor):
        if a.is_complex():
            raise ValueError(f"{name} is a complex tensor")
        a = a.detach().cpu().tolist()
    arr = np.asarray(a, dtype=object)
    out = np.empty(arr.shape, dtype=object)
    for idx, value in np.ndenumerate(arr):
        if isinstance(value, (float, np.floating)) and not isinstance(value, bool):
            if not math.isfinite(float(value)):
                raise ValueError(f"{name} contains a non-finite value {value}")
            out[idx] = Fraction(float(value))
        else:
            out[idx] = exact_scalar(name, value)
    return out


def fractions(a: np.ndarray) -> np.ndarray:
    """Final guard of the exact path: every entry is a Fraction (ints are promoted)."""
    out = np.empty(a.shape, dtype=object)
    for idx, value in np.ndenumerate(a):
        if isinstance(value, Fraction):
            out[idx] = value
        elif isinstance(value, int) and not isinstance(value, bool):
            out[idx] = Fraction(value)
        else:  # pragma: no cover - unreachable when the inputs were validated
            raise AssertionError(f"non-rational value {value!r} on the exact path")
    return out


def exact_tokens(a: object, name: str = "X") -> np.ndarray:
    r""":func:`~sxor.interp.exact.as_exact` of a sequence of tokens, which must be 2-D ``[n, d]``.

    Parameters
    ----------
    a
        The tokens, rows of an ``[n, d]`` array.
    name
        Name of the argument, used in error messages.
    """
    out = as_exact(a, name)
    if out.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array [tokens, d], got shape {out.shape}")
    return out


def zeros(*shape: int) -> np.ndarray:
    """An object array of ``Fraction(0)`` of the given shape."""
    out = np.empty(shape, dtype=object)
    out.fill(Fraction(0))
    return out


def identity(d: int) -> np.ndarray:
    """The exact ``d x d`` identity matrix (object array of Fractions)."""
    out = zeros(d, d)
    for i in range(d):
        out[i, i] = Fraction(1)
    return out


def dot(u: Iterable, x: Iterable) -> Fraction:
    r"""Exact :math:`\langle u, x \rangle` of two sequences of rationals (int or Fraction) of one length.

    Summed in integers over a running common denominator of the products, with one reduction at
    the end (a few times faster than adding Fractions one by one).
    """
    num, den = 0, 1
    for a, b in zip(u, x, strict=True):
        q = a.denominator * b.denominator
        if q == den:
            num += a.numerator * b.numerator
        elif den % q == 0:
            num += a.numerator * b.numerator * (den // q)
        else:
            common = den // math.gcd(den, q) * q
            num = num * (common // den) + a.numerator * b.numerator * (common // q)
            den = common
    return Fraction(num, den)


def mean(X: np.ndarray, rows: Sequence[int] | None = None) -> Token:
    r"""Exact mean of the rows ``rows`` (default: all) of ``X [n, d]``, as a ``Token``.

    Parameters
    ----------
    X
        Tokens ``[n, d]`` (exact).
    rows
        Indices of the rows to average; all rows if ``None``.
    """
    rows = range(X.shape[0]) if rows is None else rows
    if len(rows) == 0:
        raise ValueError("the mean of no tokens is undefined")
    return tuple(sum((X[l, c] for l in rows), Fraction(0)) / len(rows) for c in range(X.shape[1]))


def projections(X: np.ndarray, v: Sequence) -> list[Fraction]:
    r"""Exact projections :math:`\langle v, x_i \rangle` of the rows of ``X [n, d]`` on ``v [d]``."""
    return [dot(v, row) for row in X]


def l1(x: Iterable) -> Fraction:
    r"""Exact :math:`\ell^1` norm :math:`\sum_c |x_c|`."""
    return sum((abs(c) for c in x), Fraction(0))


def sqrt_upper(x: Fraction, bits: int = 64) -> Fraction:
    r"""A rational upper bound on :math:`\sqrt{x}` for a rational :math:`x \ge 0`.

    Within :math:`2^{-\mathrm{bits}}` *relative* of the true value for every :math:`x > 0`, however
    small: the result is :math:`\lceil \sqrt{x\,4^k} \rceil / 2^k` with :math:`k \ge \mathrm{bits}`
    chosen so that :math:`x\,4^k \ge 4^{\mathrm{bits}}` (so :math:`k = \mathrm{bits}` when
    :math:`x \ge 1`). Exactly ``Fraction(0)`` for :math:`x = 0`, exact for squares of dyadic
    rationals of at most ``bits`` fractional bits.

    Parameters
    ----------
    x
        A rational :math:`\ge 0`.
    bits
        Relative accuracy, in bits (an int :math:`\ge 1`).
    """
    x = exact_scalar("x", x)
    if x < 0:
        raise ValueError(f"sqrt_upper needs x >= 0, got {short(x)}")
    if isinstance(bits, bool) or not isinstance(bits, int) or bits < 1:
        raise ValueError(f"sqrt_upper needs bits an int >= 1, got {bits!r}")
    if x == 0:
        return Fraction(0)
    k = bits + max(0, (x.denominator.bit_length() - x.numerator.bit_length() + 2) // 2)
    n = x * 4**k
    r = math.isqrt(math.ceil(n))
    if r * r < n:
        r += 1
    return Fraction(r, 2**k)


def fmt(token: Token) -> str:
    """``(a, b, ...)`` with the Fractions printed as ``p/q``."""
    return "(" + ", ".join(str(v) for v in token) + ")"
