r"""Repeated self-attention as a clustering dynamics (chapter "Self-attention as clustering").

Iterating one layer :math:`X \leftarrow \mathrm{SA}(X)` with :math:`\rho + \alpha = 1`,
:math:`V = \alpha I` moves each token a fraction :math:`\alpha` of the way towards the average of
the tokens it attends to,
:math:`x_i \leftarrow (1 - \alpha) x_i + \alpha \sum_l \pi_{il} x_l` (the hardmax dynamics of
Alcalde, Fantuzzi & Zuazua 2024 with :math:`\alpha / (1 + \alpha)` renamed :math:`\alpha`).

It also holds the softmax-then-snap collapse of the chapter "Softmax collapse":
:func:`~sxor.interp.clustering.snap_pipeline` (a rank-one softmax layer followed by two snap
layers that make the two-cluster collapse exact) and
:func:`~sxor.interp.clustering.snap_thresholds` (the temperatures below which it works: two
proven bounds and the measured threshold).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import cast

import numpy as np
import torch

from .layers import Array, Scalar, as_exact, attention_weights, is_exact, self_attention
from .lemmas import rank_one_layer
from .softmax import largest_snapping_temperature, snap_layer, snap_temperature_bound


def _count(name: str, value: object) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r} of type {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return int(value)


def _sequence(name: str, X: object) -> Array:
    """One sequence ``[n, d]``: an exact object array, or a real float/int tensor or array with
    finite entries (lists are converted to float64 numpy)."""
    if isinstance(X, (list, tuple)):
        X = np.asarray(X)
    if is_exact(X):
        X = as_exact(X, name)
    elif isinstance(X, torch.Tensor):
        if X.is_complex() or X.dtype == torch.bool:
            raise ValueError(f"{name} must be real (float or int), got dtype {X.dtype}")
        if X.is_floating_point() and not bool(torch.isfinite(X).all()):
            raise ValueError(f"{name} contains nan or inf")
    elif isinstance(X, np.ndarray):
        if X.dtype.kind not in "fiu":
            raise ValueError(f"{name} must be real (float or int) or exact, got dtype {X.dtype}")
        if X.dtype.kind == "f" and not np.isfinite(X).all():
            raise ValueError(f"{name} contains nan or inf")
    else:
        raise ValueError(
            f"{name} must be a tensor, a numpy array or a nested list, got {type(X).__name__}"
        )
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(
            f"{name} must be one sequence [n, d] with n, d >= 1, got shape {tuple(X.shape)}"
        )
    return X


#: Largest trajectory :func:`attention_trajectory` computes: :math:`(\mathrm{steps} + 1)\, n d \le 10^8`
#: entries (0.8 GB in float64), and at most :math:`10^6` steps.
MAX_TRAJECTORY_ENTRIES = 10**8
MAX_TRAJECTORY_STEPS = 10**6


def attention_trajectory(
    X: Array, A: Array, rho: Scalar, V: Array, tau: Scalar, steps: int
) -> Array:
    r"""States ``[steps + 1, n, d]`` of :math:`X, \mathrm{SA}(X), \mathrm{SA}(\mathrm{SA}(X)), \dots` with fixed parameters.

    Parameters
    ----------
    X
        Tokens ``[n, d]`` (float or exact), as :func:`~sxor.interp.layers.self_attention` accepts.
    A
        Key-query matrix ``[d, d]``.
    rho
        Weight :math:`\rho` of the skip connection.
    V
        Value matrix ``[d, d]``.
    tau
        Temperature, ``>= 0`` (0 is hardmax).
    steps
        Number of layer applications, an int with :math:`0 \le \mathrm{steps} \le 10^6`
        (``MAX_TRAJECTORY_STEPS``) and :math:`(\mathrm{steps} + 1)\, n d \le 10^8`
        (:data:`MAX_TRAJECTORY_ENTRIES`).

    Raises
    ------
    TypeError, ValueError
        for a float (even ``2.0``), bool, nan, inf or negative ``steps``, for ``steps`` beyond the
        limits above (refused before any step), and whatever the layer refuses.
    """
    steps = _count("steps", steps)
    shape = tuple(getattr(X, "shape", np.shape(X)))
    entries = (steps + 1) * math.prod(shape)
    if steps > MAX_TRAJECTORY_STEPS or entries > MAX_TRAJECTORY_ENTRIES:
        raise ValueError(
            f"steps = {steps} on a sequence of shape {shape} asks for {entries} states' entries; "
            f"the limits are steps <= {MAX_TRAJECTORY_STEPS} and (steps + 1) n d <= "
            f"{MAX_TRAJECTORY_ENTRIES}: iterate in chunks (start from the last state)"
        )
    states = [X]
    for _ in range(steps):
        states.append(self_attention(states[-1], A, rho, V, tau))
    if is_exact(X):
        return np.stack(states)
    if isinstance(X, np.ndarray):
        return np.stack([np.asarray(s) for s in states])
    return torch.stack(cast(list[torch.Tensor], states))  # self_attention keeps a tensor a tensor


def leaders(X: Array, A: Array) -> list[int]:
    r"""Tokens that attend only to themselves under hardmax: :math:`C_i = \{i\}`, i.e. :math:`\pi_{ii} = 1`.

    With :math:`\rho + \alpha = 1`, :math:`V = \alpha I` and :math:`0 < \alpha < 1` a leader does not
    move and stays a leader (chapter "Self-attention as clustering").

    Parameters
    ----------
    X
        One sequence ``[n, d]``, float or exact.
    A
        Key-query matrix ``[d, d]``.

    Raises
    ------
    ValueError
        for batches, nan/inf and shape mismatches.
    """
    X = _sequence("X", X)
    if not is_exact(X) and not (isinstance(X, torch.Tensor) and X.is_floating_point()):
        X = np.asarray(X, dtype=np.float64)
    pi = attention_weights(X, A, 0)
    return [i for i in range(pi.shape[0]) if pi[i, i] == 1]


def distinct_points(X: Array, tol: float = 0.0) -> Array:
    r"""Representatives of the distinct tokens (rows) of ``X [n, d]``, in order of first appearance.

    Exact equality for Fractions; for floats, rows within max-norm ``tol`` of an earlier
    representative merge.

    Parameters
    ----------
    X
        One sequence (tensor, numpy or exact array, or a nested list) with finite real entries.
    tol
        Merging distance in the max-norm, a real ``>= 0`` (``inf`` merges everything).

    Raises
    ------
    ValueError, TypeError
        for nan/inf/complex entries, batches, and a nan, negative or non-real ``tol``.
    """
    X = _sequence("X", X)
    if isinstance(tol, bool) or not isinstance(tol, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"tol must be a real number >= 0, got {tol!r}")
    if math.isnan(float(tol)) or tol < 0:
        raise ValueError(f"tol must be >= 0 (not nan), got {tol}")
    reps: list[int] = []
    rows = X.tolist() if is_exact(X) else np.asarray(X, dtype=np.float64)
    for i in range(len(rows)):
        if is_exact(X):
            new = all(rows[i] != rows[j] for j in reps)
        else:
            new = all(np.abs(rows[i] - rows[j]).max() > tol for j in reps)
        if new:
            reps.append(i)
    return X[reps]


def convex_hull_2d(points: Array) -> list[int]:
    r"""Indices of the vertices of the convex hull of 2-D points, counter-clockwise.

    Andrew's monotone chain; collinear boundary points are not vertices. Exact for Fractions.

    Parameters
    ----------
    points
        Points ``[n, 2]`` (tensor, numpy, exact array or nested list), ``n >= 1``, finite real
        entries.

    Raises
    ------
    ValueError
        naming the shape, for nan, inf, complex or non-numeric entries and other shapes.
    """
    points = _sequence("points", points)
    if points.shape[1] != 2:
        raise ValueError(f"convex_hull_2d takes 2-D points [n, 2], got shape {tuple(points.shape)}")
    P = points.tolist() if is_exact(points) else np.asarray(points, dtype=np.float64).tolist()
    order = sorted(range(len(P)), key=lambda i: (P[i][0], P[i][1]))
    unique = [i for k, i in enumerate(order) if k == 0 or P[i] != P[order[k - 1]]]
    if len(unique) < 3:
        return unique

    def cross(o: int, a: int, b: int) -> Fraction | float:
        return (P[a][0] - P[o][0]) * (P[b][1] - P[o][1]) - (P[a][1] - P[o][1]) * (P[b][0] - P[o][0])

    hull: list[int] = []
    for sweep in (unique, unique[::-1]):
        chain: list[int] = []
        for i in sweep:
            while len(chain) >= 2 and cross(chain[-2], chain[-1], i) <= 0:
                chain.pop()
            chain.append(i)
        hull.extend(chain[:-1])
    return hull


@dataclass(frozen=True)
class SnapPipeline:
    r"""The collapse of chapter "Softmax collapse".

    ``layer`` is the rank-one softmax attention (:math:`A = v v^\top`, :math:`\rho = 0`,
    :math:`V = I`); ``h`` the slab half-width :math:`h = (s_+ - s_-) / 4`; ``sides`` the two lists
    ``[(tokens with <v, x> > 0, s_+), (tokens with <v, x> < 0, s_-)]``; ``snaps`` the parameters of
    the two :func:`~sxor.interp.softmax.snap_layer` calls: centre :math:`s_+`, target :math:`x_+`;
    then centre :math:`s_- + h` (the first snap shifts the :math:`x_-` cluster by :math:`+h` along
    :math:`v`), target :math:`x_-`; both with exit direction :math:`q = v / \lVert v \rVert^2`.
    """

    layer: dict
    h: Fraction
    sides: list
    snaps: list


def snap_pipeline(X: Array, v: Array) -> SnapPipeline:
    r"""The rank-one softmax layer and the two snap layers that collapse ``X`` onto two exact points.

    The direction :math:`v` must have distinct extreme projections :math:`s_+ > s_-`, where
    :math:`s_+ = \max_l \langle v, x_l \rangle` and :math:`s_- = \min_l \langle v, x_l \rangle` (e.g. from
    :func:`~sxor.interp.lemmas.random_rank_one_instance`). Exact arithmetic throughout; floats are
    refused (convert them with ``Fraction`` on purpose).

    Parameters
    ----------
    X
        Tokens ``[n, d]`` (Fractions or ints), ``n >= 2``.
    v
        Direction ``[d]`` (ints or Fractions).

    Raises
    ------
    ValueError
        when ``X`` is not ``[n, d]``, ``v`` not ``[d]``, or all projections are equal (no two
        extremes).
    """
    X, v = as_exact(X, "X"), as_exact(v, "v")
    if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
        raise ValueError(f"X must be a sequence [n, d] with n >= 2 tokens, got shape {X.shape}")
    if v.shape != (X.shape[1],):
        raise ValueError(
            f"v must have shape [d] = ({X.shape[1]},) (the token dimension of X), got {v.shape}"
        )
    p = [sum(a * b for a, b in zip(x, v)) for x in X]
    s_plus, s_minus = max(p), min(p)
    if s_plus == s_minus:
        raise ValueError(
            "every token has the same projection <v, x>: there are no two extremes to collapse onto"
        )
    h = (s_plus - s_minus) / 4
    q = v / sum(c * c for c in v)
    snaps = [
        snap_layer(v, s_plus, h, X[p.index(s_plus)], q),
        snap_layer(v, s_minus + h, h, X[p.index(s_minus)], q),
    ]
    sides = [
        ([i for i in range(len(p)) if p[i] > 0], s_plus),
        ([i for i in range(len(p)) if p[i] < 0], s_minus),
    ]
    return SnapPipeline(rank_one_layer(v), h, sides, snaps)


def snap_thresholds(X: Array, v: Array, **grid) -> dict[str, float]:
    r"""Temperatures below which :func:`~sxor.interp.clustering.snap_pipeline` collapses ``X`` onto two exact points.

    ``"gap"`` and ``"per-token"`` are the proven bounds of
    :func:`~sxor.interp.softmax.snap_temperature_bound` and ``"measured"`` the float64 threshold of
    :func:`~sxor.interp.softmax.largest_snapping_temperature`. Each is the smallest over the two
    sides.

    Parameters
    ----------
    X, v
        As in :func:`~sxor.interp.clustering.snap_pipeline`.
    **grid
        Passed to :func:`~sxor.interp.softmax.largest_snapping_temperature`: ``tau_min``,
        ``tau_max``, ``num``, ``refine``.
    """
    pipe = snap_pipeline(X, v)
    X, v = as_exact(X, "X"), as_exact(v, "v")
    args = (X, pipe.layer["A"], 0, pipe.layer["V"], v)
    out = {}
    for kind in ("gap", "per-token"):
        out[kind] = min(
            snap_temperature_bound(*args, s, pipe.h, toks, kind) for toks, s in pipe.sides if toks
        )
    out["measured"] = min(
        largest_snapping_temperature(*args, s, pipe.h, toks, **grid)
        for toks, s in pipe.sides
        if toks
    )
    return out
