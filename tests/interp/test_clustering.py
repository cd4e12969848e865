"""Tests of the softmax-then-snap collapse of chapter 12 (sxor.interp.clustering.snap_pipeline and
snap_thresholds), checked against an independent float64 computation and exact interval arithmetic."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch

from sxor.interp import as_exact, feed_forward_enclosure, softmax_attention_enclosure
from sxor.interp.clustering import snap_pipeline, snap_thresholds
from sxor.interp.lemmas import random_rank_one_instance


def _float_pipeline(X, v, pipe, tau):
    """Independent float64: softmax with scores <v, x_i><v, x_l>, then the two snap maps by formula."""
    Xf = np.asarray(X, dtype=np.float64)
    vf = np.asarray(v, dtype=np.float64)
    t = Xf @ vf
    S = np.outer(t, t) / tau
    P = np.exp(S - S.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    Y = P @ Xf
    for snap in pipe.snaps:
        U, b, W = (np.asarray(snap[k], dtype=np.float64) for k in ("U", "b", "W"))
        Y = np.maximum(Y @ U.T + b, 0) @ W.T
    return Y


def test_pipeline_parts_and_exact_collapse():
    g = torch.Generator().manual_seed(3)
    X, v = random_rank_one_instance(10, 2, g)
    pipe = snap_pipeline(X, v)
    proj = [sum(a * b for a, b in zip(x, v)) for x in X]
    assert pipe.h == (max(proj) - min(proj)) / 4
    (plus, s_plus), (minus, s_minus) = pipe.sides
    assert s_plus == max(proj) and s_minus == min(proj)
    assert sorted(plus + minus) == [i for i in range(10) if proj[i] != 0]
    assert all(proj[i] > 0 for i in plus) and all(proj[i] < 0 for i in minus)
    assert list(pipe.snaps[1]["b"])[:2] == [-(s_minus + 2 * pipe.h), s_minus]  # centre s_- + h
    th = snap_thresholds(X, v, num=61, refine=30)
    assert 0 < th["gap"] <= th["measured"] and 0 < th["per-token"] <= th["measured"]
    # below the measured threshold the float pipeline leaves exactly two points, far above it not
    assert len({tuple(r) for r in _float_pipeline(X, v, pipe, 0.5 * th["measured"]).round(12)}) == 2
    assert len({tuple(r) for r in _float_pipeline(X, v, pipe, 20 * th["measured"]).round(12)}) > 2
    # rigorous at 0.9 * per-token bound: every output box is one of two exact points
    tau = Fraction(th["per-token"]).limit_denominator(1000) * Fraction(9, 10)
    lo, hi = softmax_attention_enclosure(X, pipe.layer["A"], 0, pipe.layer["V"], tau, prec=200)
    for snap in pipe.snaps:
        lo, hi = feed_forward_enclosure(lo, hi, **snap)
    assert (lo == hi).all() and len({tuple(r) for r in lo}) == 2
    # the exact hardmax-free route agrees: the boxes' point equals the float pipeline to rounding
    Yf = _float_pipeline(X, v, pipe, float(tau))
    assert np.abs(Yf - np.asarray(lo, dtype=np.float64)).max() < 1e-9


def test_snap_pipeline_refuses_bad_input():
    X = as_exact([[1, 0], [2, 1], [-1, 3]])
    with pytest.raises(ValueError, match="shape"):
        snap_pipeline(X, as_exact([1, 0, 0]))
    with pytest.raises(ValueError, match="same projection"):
        snap_pipeline(as_exact([[1, 0], [1, 5]]), as_exact([1, 0]))
    with pytest.raises(ValueError, match="float"):
        snap_pipeline(np.array([[1.0, 0.0], [2.0, 1.0]]), as_exact([1, 0]))
    with pytest.raises(ValueError, match="n >= 2"):
        snap_pipeline(as_exact([[1, 0]]), as_exact([1, 0]))


def test_distinct_points_tolerance_boundary_and_hull_collinear_points():
    from sxor.interp import convex_hull_2d, distinct_points

    X = torch.tensor([[0.0, 0.0], [0.5, 0.0], [0.5, 0.25]], dtype=torch.float64)
    assert len(distinct_points(X, tol=0.5)) == 1  # max-norm distance exactly tol merges
    assert len(distinct_points(X, tol=0.25)) == 2  # (0.5, 0) and (0.5, 0.25) are 0.25 apart: merge
    assert len(distinct_points(X, tol=0.2)) == 3
    Xq = as_exact(
        [[0, 0], [2, 0], [2, 2], [0, 2], [1, 0], [1, 1]]
    )  # (1, 0) on an edge, (1, 1) inside
    assert sorted(convex_hull_2d(Xq)) == [0, 1, 2, 3]
    assert convex_hull_2d(Xq) == [0, 1, 2, 3]  # counter-clockwise from the lowest-leftmost point
