"""Repeated self-attention as a clustering dynamics (chapter "Self-attention as clustering").

Iterating one layer ``X <- SA(X)`` with ``rho + alpha = 1``, ``V = alpha I`` moves each token a
fraction ``alpha`` of the way towards the average of the tokens it attends to,
``x_i <- (1 - alpha) x_i + alpha sum_l pi_il x_l`` (the hardmax dynamics of
Alcalde, Fantuzzi & Zuazua 2024 with ``alpha / (1 + alpha)`` renamed ``alpha``).

It also holds the softmax-then-snap collapse of the chapter "Softmax collapse":
:func:`snap_pipeline` (a rank-one softmax layer followed by two snap layers that make the
two-cluster collapse exact) and :func:`snap_thresholds` (the temperatures below which it works:
two proven bounds and the measured threshold).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import torch

from dataclasses import dataclass

from .layers import Array, Scalar, as_exact, attention_weights, is_exact, self_attention
from .lemmas import rank_one_layer
from .softmax import largest_snapping_temperature, snap_layer, snap_temperature_bound


def attention_trajectory(X: Array, A: Array, rho: Scalar, V: Array, tau: Scalar, steps: int) -> Array:
    """States ``[steps + 1, n, d]`` of ``X, SA(X), SA(SA(X)), ...`` with fixed parameters."""
    if int(steps) != steps or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps}")
    states = [X]
    for _ in range(int(steps)):
        states.append(self_attention(states[-1], A, rho, V, tau))
    if is_exact(X):
        return np.stack(states)
    if isinstance(X, np.ndarray):
        return np.stack([np.asarray(s) for s in states])
    return torch.stack(states)


def leaders(X: Array, A: Array) -> list[int]:
    """Tokens that attend only to themselves under hardmax: ``C_i = {i}``, i.e. ``pi_ii = 1``.

    With ``rho + alpha = 1``, ``V = alpha I`` a leader does not move (it is a fixed point of its
    own update as long as it stays a leader).
    """
    pi = attention_weights(X, A, 0)
    if X.ndim != 2:
        raise ValueError(f"leaders takes one sequence X [n, d], got shape {tuple(X.shape)}")
    return [i for i in range(pi.shape[0]) if pi[i, i] == 1]


def distinct_points(X: Array, tol: float = 0.0) -> Array:
    """Representatives of the distinct tokens (rows) of ``X [n, d]``: exact equality for
    Fractions; for floats, rows within max-norm ``tol`` of an earlier representative merge."""
    if X.ndim != 2:
        raise ValueError(f"distinct_points takes X [n, d], got shape {tuple(X.shape)}")
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
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
    """Indices of the vertices of the convex hull of 2-D points, counter-clockwise (Andrew's
    monotone chain; collinear boundary points are not vertices). Exact for Fractions."""
    P = points.tolist() if is_exact(points) else np.asarray(points, dtype=np.float64).tolist()
    if len(P) == 0 or any(len(p) != 2 for p in P):
        raise ValueError("convex_hull_2d takes a non-empty array of 2-D points [n, 2]")
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
    """The collapse of chapter "Softmax collapse": ``layer`` (rank-one softmax attention
    ``A = v v^T``, ``rho = 0``, ``V = I``), the slab half-width ``h = (s_+ - s_-) / 4``, the two
    ``sides`` ``[(tokens with <v, x> > 0, s_+), (tokens with <v, x> < 0, s_-)]`` and the two
    ``snaps`` (parameters of :func:`~sxor.interp.softmax.snap_layer`): centre ``s_+``, target
    ``x_+``; then centre ``s_- + h`` (the first snap shifts the ``x_-`` cluster by ``+h`` along
    ``v``), target ``x_-``; both with exit direction ``q = v / |v|^2``."""

    layer: dict
    h: Fraction
    sides: list
    snaps: list


def snap_pipeline(X: Array, v: Array) -> SnapPipeline:
    """The rank-one softmax layer and the two snap layers for tokens ``X [n, d]`` (Fractions)
    and a direction ``v [d]`` (ints or Fractions) with distinct extreme projections
    ``s_+ = max <v, x_l> > s_- = min <v, x_l>`` (e.g. from
    :func:`~sxor.interp.lemmas.random_rank_one_instance`). Exact arithmetic throughout; floats
    are refused (convert them with ``Fraction`` on purpose). Raises ``ValueError`` when ``X`` is
    not ``[n, d]``, ``v`` not ``[d]``, or all projections are equal (no two extremes)."""
    X, v = as_exact(X, "X"), as_exact(v, "v")
    if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
        raise ValueError(f"X must be a sequence [n, d] with n >= 2 tokens, got shape {X.shape}")
    if v.shape != (X.shape[1],):
        raise ValueError(f"v must have shape [d] = ({X.shape[1]},) (the token dimension of X), got {v.shape}")
    p = [sum(a * b for a, b in zip(x, v)) for x in X]
    s_plus, s_minus = max(p), min(p)
    if s_plus == s_minus:
        raise ValueError("every token has the same projection <v, x>: there are no two extremes to collapse onto")
    h = (s_plus - s_minus) / 4
    q = v / sum(c * c for c in v)
    snaps = [snap_layer(v, s_plus, h, X[p.index(s_plus)], q), snap_layer(v, s_minus + h, h, X[p.index(s_minus)], q)]
    sides = [([i for i in range(len(p)) if p[i] > 0], s_plus), ([i for i in range(len(p)) if p[i] < 0], s_minus)]
    return SnapPipeline(rank_one_layer(v), h, sides, snaps)


def snap_thresholds(X: Array, v: Array, **grid) -> dict[str, float]:
    """Temperatures below which :func:`snap_pipeline` collapses ``X`` onto two exact points:
    ``"gap"`` and ``"per-token"`` are the proven bounds of
    :func:`~sxor.interp.softmax.snap_temperature_bound` and ``"measured"`` the float64 threshold of
    :func:`~sxor.interp.softmax.largest_snapping_temperature` (``grid`` is passed to it: ``tau_min``,
    ``tau_max``, ``num``, ``refine``). Each is the smallest over the two sides. Arguments as in
    :func:`snap_pipeline`."""
    pipe = snap_pipeline(X, v)
    X, v = as_exact(X, "X"), as_exact(v, "v")
    args = (X, pipe.layer["A"], 0, pipe.layer["V"], v)
    out = {}
    for kind in ("gap", "per-token"):
        out[kind] = min(snap_temperature_bound(*args, s, pipe.h, toks, kind) for toks, s in pipe.sides if toks)
    out["measured"] = min(largest_snapping_temperature(*args, s, pipe.h, toks, **grid) for toks, s in pipe.sides if toks)
    return out
