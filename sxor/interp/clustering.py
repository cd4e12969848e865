"""Repeated self-attention as a clustering dynamics (chapter "Self-attention as clustering").

Iterating one layer ``X <- SA(X)`` with ``rho + alpha = 1``, ``V = alpha I`` moves each token a
fraction ``alpha`` of the way towards the average of the tokens it attends to,
``x_i <- (1 - alpha) x_i + alpha sum_l pi_il x_l`` (the hardmax dynamics of
Alcalde, Fantuzzi & Zuazua 2024 with ``alpha / (1 + alpha)`` renamed ``alpha``).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import torch

from .layers import Array, Scalar, attention_weights, is_exact, self_attention


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
