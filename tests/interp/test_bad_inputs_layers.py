"""Bad inputs for the Part II modules of chapters 10-12 and 15: every public function of
sxor.interp.layers, clustering, lemmas, training and plots, and the chapter-15 experiment, gets at
least five bad inputs, each of which must raise ValueError or TypeError with a message naming the
problem (never a silent result, a hang or a deep torch/numpy error)."""

from __future__ import annotations

import math
from fractions import Fraction

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from sxor.experiments.regularised_training import run_runs, run_seeds
from sxor.interp import clustering as C
from sxor.interp import layers as L
from sxor.interp import lemmas as M
from sxor.interp import plots as P
from sxor.interp import training as T

NAN, INF = float("nan"), float("inf")
X = torch.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]], dtype=torch.float64)
I2 = torch.eye(2, dtype=torch.float64)
Xq = M.as_exact([[1, 2], [2, 1], [-1, -3]])
vq = M.as_exact([1, 1])
U, b, W = (
    torch.ones(3, 2, dtype=torch.float64),
    torch.ones(3, dtype=torch.float64),
    torch.ones(2, 3, dtype=torch.float64),
)
DATA = T.tikhonov_data(2, 3, 2, seed=0)
TH = T.init_parameters(2)
FIG, AX = plt.subplots()


def gen():
    return torch.Generator().manual_seed(0)


def theta(**change):
    th = T.init_parameters(2)
    th.update(change)
    return th


CASES = {
    "is_exact": None,  # a predicate: tested below, it answers False instead of raising
    "as_exact": [
        (lambda: L.as_exact([1.5]), "float"),
        (lambda: L.as_exact(np.array([NAN])), "dtype float64"),
        (lambda: L.as_exact([1j]), "complex"),
        (lambda: L.as_exact([True]), "bool"),
        (lambda: L.as_exact(["abc"]), "not a rational"),
        (lambda: L.as_exact(None), "NoneType"),
        (lambda: L.as_exact(torch.ones(2)), "float tensor"),
    ],
    "feed_forward": [
        (lambda: L.feed_forward(X, 1, W, torch.ones(3, 3), b), "d = 2"),
        (lambda: L.feed_forward(X, NAN, W, U, b), "finite"),
        (lambda: L.feed_forward(X, 1, W, U, torch.ones(2)), "w = 3"),
        (lambda: L.feed_forward(X, 1, W * NAN, U, b), "non-finite"),
        (lambda: L.feed_forward(torch.ones(3, 2, dtype=torch.long), 1, W, U, b), "floating-point"),
        (lambda: L.feed_forward(X, 1j, W, U, b), "real scalar"),
        (
            lambda: L.feed_forward(
                Xq, 1.5, M.as_exact([[1] * 3] * 2), M.as_exact([[1] * 2] * 3), M.as_exact([1] * 3)
            ),
            "float",
        ),
    ],
    "attention_scores": [
        (lambda: L.attention_scores(X, torch.ones(2)), r"\(2, 2\)"),
        (lambda: L.attention_scores(X * NAN, I2), "non-finite"),
        (lambda: L.attention_scores(torch.ones(0, 2), I2), "empty"),
        (lambda: L.attention_scores(np.ones((2, 2)) * 1j, np.eye(2)), "complex"),
        (lambda: L.attention_scores(Xq, I2), "float"),
        (lambda: L.attention_scores(torch.ones(3), I2), r"\[\.\.\., n, d\]"),
    ],
    "attention_weights": [
        (lambda: L.attention_weights(X, torch.eye(3, dtype=torch.float64), 0), r"\(2, 2\)"),
        (lambda: L.attention_weights(X.to(torch.complex128), I2, 0), "floating-point"),
        (lambda: L.attention_weights(X, I2, "1"), "real number"),
        (lambda: L.attention_weights(X, I2, -1), ">= 0"),
        (lambda: L.attention_weights(X, I2, NAN), "finite"),
        (lambda: L.attention_weights(X * 1e200, I2, 1.0), "overflow"),
        (lambda: L.attention_weights(X * 1e200, I2, 0), "overflow"),
        (lambda: L.attention_weights(Xq, M.identity_matrix(2), 1), "irrational"),
    ],
    "self_attention": [
        (lambda: L.self_attention(X, I2, 0, torch.eye(3, dtype=torch.float64)), r"\(2, 2\)"),
        (lambda: L.self_attention(X, I2, NAN, I2), "finite"),
        (lambda: L.self_attention(X, I2, 1j, I2), "real scalar"),
        (lambda: L.self_attention(X, I2, 0, "I"), "V must be real numbers"),
        (lambda: L.self_attention(X, I2 * INF, 0, I2), "non-finite"),
        (lambda: L.self_attention([[1.0, 2.0]], I2, 0, I2), "torch.Tensor or a numpy array"),
    ],
    "hausdorff_squared": [
        (lambda: L.hausdorff_squared(X, torch.ones(2, 3)), "token dimension"),
        (lambda: L.hausdorff_squared(X, X * NAN), "non-finite"),
        (lambda: L.hausdorff_squared(X.to(torch.complex128), X), "floating-point"),
        (lambda: L.hausdorff_squared(torch.ones(2), X), r"\[\.\.\., n, d\]"),
        (lambda: L.hausdorff_squared(torch.ones(2, 3, 2), torch.ones(3, 3, 2)), "batch dimensions"),
        (lambda: L.hausdorff_squared(torch.ones(0, 2), X), "empty"),
    ],
    "hausdorff": [
        (lambda: L.hausdorff([[1.0, 2.0]], X), "torch.Tensor or a numpy array"),
        (lambda: L.hausdorff(torch.ones(0, 2), X), "empty"),
        (lambda: L.hausdorff(X, torch.ones(2, 3)), "token dimension"),
        (lambda: L.hausdorff(X, X * INF), "non-finite"),
        (lambda: L.hausdorff(Xq, X), "float"),
    ],
    # clustering
    "attention_trajectory": [
        (lambda: C.attention_trajectory(X, I2, 0, I2, 0, -1), ">= 0"),
        (lambda: C.attention_trajectory(X, I2, 0, I2, 0, 2.5), "int"),
        (lambda: C.attention_trajectory(X, I2, 0, I2, 0, NAN), "int"),
        (lambda: C.attention_trajectory(X, I2, 0, I2, 0, INF), "int"),
        (lambda: C.attention_trajectory(X, I2, 0, I2, 0, 2.0), "int"),
        (lambda: C.attention_trajectory(X, I2, 0, I2, 0, True), "int"),
        (
            lambda: C.attention_trajectory(X, I2, 0, torch.eye(3, dtype=torch.float64), 0, 2),
            r"\(2, 2\)",
        ),
    ],
    "leaders": [
        (lambda: C.leaders(torch.ones(2, 3, 2), I2), r"one sequence \[n, d\]"),
        (lambda: C.leaders(X * NAN, I2), "nan"),
        (lambda: C.leaders(X, torch.eye(3)), r"\(2, 2\)"),
        (lambda: C.leaders(X, None), "A must be real numbers"),
        (lambda: C.leaders("abc", I2), "tensor"),
        (lambda: C.leaders(X.to(torch.complex64), I2), "real"),
    ],
    "distinct_points": [
        (lambda: C.distinct_points(X, tol=NAN), "nan"),
        (lambda: C.distinct_points(X, tol=-1), ">= 0"),
        (lambda: C.distinct_points(torch.tensor([[NAN, 0.0], [NAN, 0.0]])), "nan"),
        (lambda: C.distinct_points(X, tol="0"), "real number"),
        (lambda: C.distinct_points(torch.ones(3)), r"\[n, d\]"),
        (lambda: C.distinct_points(X.to(torch.complex128)), "real"),
    ],
    "convex_hull_2d": [
        (
            lambda: C.convex_hull_2d(
                torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [NAN, 1.0]])
            ),
            "nan",
        ),
        (lambda: C.convex_hull_2d(torch.tensor([[0.0, 0.0], [1.0, 0.0], [INF, 1.0]])), "inf"),
        (lambda: C.convex_hull_2d(np.array([[0, 0], [1, 0], [0, 1j]])), "complex"),
        (lambda: C.convex_hull_2d(torch.ones(3, 3)), r"\[n, 2\]"),
        (lambda: C.convex_hull_2d(torch.ones(0, 2)), "n, d >= 1"),
        (lambda: C.convex_hull_2d("abc"), "tensor"),
        (lambda: C.convex_hull_2d(None), "tensor"),
    ],
    "snap_pipeline": [
        (lambda: C.snap_pipeline(Xq, M.as_exact([1, 0, 0])), r"\[d\]"),
        (
            lambda: C.snap_pipeline(M.as_exact([[1, 0], [1, 5]]), M.as_exact([1, 0])),
            "same projection",
        ),
        (lambda: C.snap_pipeline(np.array([[1.0, 0.0], [2.0, 1.0]]), vq), "float"),
        (lambda: C.snap_pipeline(M.as_exact([[1, 0]]), vq), "n >= 2"),
        (lambda: C.snap_pipeline(Xq, [0.5, 1]), "float"),
    ],
    "snap_thresholds": [
        (lambda: C.snap_thresholds(Xq, M.as_exact([1, 0, 0])), r"\[d\]"),
        (
            lambda: C.snap_thresholds(M.as_exact([[1, 0], [1, 5]]), M.as_exact([1, 0])),
            "same projection",
        ),
        (lambda: C.snap_thresholds(X, vq), "float"),
        (lambda: C.snap_thresholds(M.as_exact([[1, 0]]), vq), "n >= 2"),
        (lambda: C.snap_thresholds(Xq, None), "NoneType"),
    ],
    # lemmas
    "identity_matrix": [
        (lambda: M.identity_matrix(2.0), "int"),
        (lambda: M.identity_matrix(NAN), "int"),
        (lambda: M.identity_matrix(INF), "int"),
        (lambda: M.identity_matrix("2"), "int"),
        (lambda: M.identity_matrix(0), ">= 1"),
        (lambda: M.identity_matrix(True), "int"),
    ],
    "identity_layer": [
        (lambda: M.identity_layer(2.5), "int"),
        (lambda: M.identity_layer(-1), ">= 1"),
        (lambda: M.identity_layer(None), "int"),
        (lambda: M.identity_layer(NAN), "int"),
        (lambda: M.identity_layer(False), "int"),
    ],
    "rank_one_layer": [
        (lambda: M.rank_one_layer([1.0, 2.0]), "float"),
        (lambda: M.rank_one_layer([[1, 2]]), "vector"),
        (lambda: M.rank_one_layer([0, 0]), "nonzero"),
        (lambda: M.rank_one_layer([]), "vector"),
        (lambda: M.rank_one_layer(None), "NoneType"),
    ],
    "low_rank_layer": [
        (lambda: M.low_rank_layer(1.5, 1, [1, 1]), "float"),
        (lambda: M.low_rank_layer(1, 1, [[1, 1]]), "vector"),
        (lambda: M.low_rank_layer(1, 1, [0, 0]), "nonzero"),
        (lambda: M.low_rank_layer(1, 1, []), "vector"),
        (lambda: M.low_rank_layer(1, [1, 2], [1, 1]), "scalars"),
        (lambda: M.low_rank_layer("x", 1, [1, 1]), "not a rational"),
        (lambda: M.low_rank_layer(1, 1, None), "NoneType"),
    ],
    "circle_threshold_bound": [
        (lambda: M.circle_threshold_bound(2), ">= 3"),
        (lambda: M.circle_threshold_bound(-1), ">= 3"),
        (lambda: M.circle_threshold_bound(3.0), "must be an int"),
        (lambda: M.circle_threshold_bound(True), "must be an int"),
        (lambda: M.circle_threshold_bound("5"), "must be an int"),
        (lambda: M.circle_threshold_bound(None), "must be an int"),
    ],
    "low_rank_threshold": [
        (lambda: M.low_rank_threshold(M.as_exact([[3, 4], [5, 0]]), [1, 1, 1]), r"\[d\] = \(2,\)"),
        (lambda: M.low_rank_threshold(M.as_exact([[3, 4], [5, 0]]), [0, 0]), "nonzero"),
        (lambda: M.low_rank_threshold(M.as_exact([[3, 4], [3, 4]]), [1, 1]), "pairwise distinct"),
        (lambda: M.low_rank_threshold(M.as_exact([[3, 4], [1, 0]]), [1, 1]), "one norm"),
        (lambda: M.low_rank_threshold(X, [1, 1]), "float"),
        (lambda: M.low_rank_threshold(M.as_exact([[3, 4], [5, 0]]), [0.5, 1]), "float"),
        (lambda: M.low_rank_threshold([1, 2], [1]), r"\[n, d\]"),
    ],
    "rank_one_sets": [
        (lambda: M.rank_one_sets(Xq, [1, 2, 3]), r"\[d\] = \(2,\)"),
        (lambda: M.rank_one_sets(X, [1, 2]), "float"),
        (lambda: M.rank_one_sets(Xq, [0.5, 1]), "float"),
        (lambda: M.rank_one_sets([1, 2], [1]), r"\[n, d\]"),
        (lambda: M.rank_one_sets(np.empty((0, 2), dtype=object), [1, 2]), r"\[n, d\]"),
    ],
    "rank_one_prediction": [
        (lambda: M.rank_one_prediction(Xq, [1]), r"\[d\] = \(2,\)"),
        (lambda: M.rank_one_prediction(X, [1, 2]), "float"),
        (lambda: M.rank_one_prediction(Xq, [NAN, 1]), "float"),
        (lambda: M.rank_one_prediction(Xq, "v"), "not a rational"),
        (lambda: M.rank_one_prediction([[[1, 2]]], [1, 2]), r"\[n, d\]"),
    ],
    "rank_one_violations": [
        (lambda: M.rank_one_violations(Xq, [1, 2, 3]), r"\[d\] = \(2,\)"),
        (lambda: M.rank_one_violations(X, [1, 2]), "float"),
        (lambda: M.rank_one_violations(Xq, [1.0, 2.0]), "float"),
        (lambda: M.rank_one_violations(Xq, None), "NoneType"),
        (lambda: M.rank_one_violations(None, [1, 2]), "NoneType"),
    ],
    "box_sets": [
        (lambda: M.box_sets(Xq, 0), "positive"),
        (lambda: M.box_sets(Xq, 2.0), "float"),
        (lambda: M.box_sets(Xq, [2, 2]), "scalar"),
        (lambda: M.box_sets(M.as_exact([[3, 3], [2, 2]]), 2), "outside"),
        (lambda: M.box_sets(M.as_exact([[1, 1]]), 2), "corner"),
    ],
    "box_prediction": [
        (lambda: M.box_prediction(M.as_exact([[3, 3]]), 2), "outside"),
        (lambda: M.box_prediction(Xq, -1), "positive"),
        (lambda: M.box_prediction(X, 2), "float"),
        (lambda: M.box_prediction(M.as_exact([[1, 1]]), 2), "corner"),
        (lambda: M.box_prediction(M.as_exact([[2, 2]]), NAN), "float"),
    ],
    "box_violations": [
        (lambda: M.box_violations(Xq, 0), "positive"),
        (lambda: M.box_violations(Xq, -1), "positive"),
        (lambda: M.box_violations(Xq, [2, 2]), "scalar"),
        (lambda: M.box_violations(X, 2), "float"),
        (lambda: M.box_violations(Xq, "two"), "not a rational"),
    ],
    "outermost_tokens": [
        (lambda: M.outermost_tokens(X), "float"),
        (lambda: M.outermost_tokens([1, 2]), r"\[n, d\]"),
        (lambda: M.outermost_tokens(None), "NoneType"),
        (lambda: M.outermost_tokens(np.empty((0, 2), dtype=object)), r"\[n, d\]"),
        (lambda: M.outermost_tokens([[1.5, 2]]), "float"),
    ],
    "random_rationals": [
        (lambda: M.random_rationals((2, 2), gen(), bound=-1), ">= 0"),
        (lambda: M.random_rationals((2, 2), gen(), den=0), ">= 1"),
        (lambda: M.random_rationals((2.0, 2), gen()), "int"),
        (lambda: M.random_rationals((2, 2), None), "Generator"),
        (lambda: M.random_rationals((2, 2), gen(), bound=1.5), "int"),
        (lambda: M.random_rationals([2, 2], gen()), "tuple"),
    ],
    "random_rank_one_instance": [
        (lambda: M.random_rank_one_instance(0, 2, gen()), ">= 1"),
        (lambda: M.random_rank_one_instance(2.0, 2, gen()), "int"),
        (lambda: M.random_rank_one_instance(2, NAN, gen()), "int"),
        (lambda: M.random_rank_one_instance(2, 2, 0), "Generator"),
        (lambda: M.random_rank_one_instance(2, INF, gen()), "int"),
    ],
    "random_box_instance": [
        (lambda: M.random_box_instance(500, 1, gen()), "at most 22"),
        (lambda: M.random_box_instance(0, 2, gen()), ">= 1"),
        (lambda: M.random_box_instance(3, 0, gen()), ">= 1"),
        (lambda: M.random_box_instance(2.5, 2, gen()), "int"),
        (lambda: M.random_box_instance(3, 2, None), "Generator"),
    ],
    "random_grid_box_instance": [
        (lambda: M.random_grid_box_instance(0, 2, gen()), ">= 1"),
        (lambda: M.random_grid_box_instance(3, 2.0, gen()), "int"),
        (lambda: M.random_grid_box_instance(3, 0, gen()), ">= 1"),
        (lambda: M.random_grid_box_instance(NAN, 2, gen()), "int"),
        (lambda: M.random_grid_box_instance(3, 2, "seed"), "Generator"),
    ],
    "rational_sphere_point": [
        (lambda: M.rational_sphere_point([1], 2.5), "float"),
        (lambda: M.rational_sphere_point([[1]], 2), "vector"),
        (lambda: M.rational_sphere_point([1], -2), "positive"),
        (lambda: M.rational_sphere_point([0.5], 2), "float"),
        (lambda: M.rational_sphere_point([1], [1, 2]), "scalar"),
    ],
    "random_sphere_instance": [
        (lambda: M.random_sphere_instance(2, 0, 1, gen()), ">= 2"),
        (lambda: M.random_sphere_instance(-1, 0, 2, gen()), ">= 1"),
        (lambda: M.random_sphere_instance(1, 1, 0, gen()), ">= 2"),
        (lambda: M.random_sphere_instance(2.0, 1, 2, gen()), "int"),
        (lambda: M.random_sphere_instance(10000, 0, 2, gen()), "at most 61"),
        (lambda: M.random_sphere_instance(1, 1, 30, gen()), "too rare"),
    ],
    # training
    "authors_draw": [
        (lambda: T.authors_draw(0, 3, 2), ">= 1"),
        (lambda: T.authors_draw(2, 3.0, 2), "int"),
        (lambda: T.authors_draw(2, 3, 2, width=True), "int"),
        (lambda: T.authors_draw(2, 3, 2, seed=0.5), "seed"),
        (lambda: T.authors_draw(2, 3, 2, dtype=torch.int32), "dtype"),
        (lambda: T.authors_draw(2, 3, 2, dtype="float32"), "dtype"),
    ],
    "uniform_attention_interpolant": [
        (lambda: T.uniform_attention_interpolant({"X": DATA.X}), "TikhonovData"),
        (lambda: T.uniform_attention_interpolant(DATA, epsilons=()), "epsilons"),
        (lambda: T.uniform_attention_interpolant(DATA, epsilons=(NAN,)), "finite"),
        (lambda: T.uniform_attention_interpolant(DATA, epsilons=(0.0,)), "> 0"),
        (lambda: T.uniform_attention_interpolant(DATA, max_iter=0), ">= 1"),
        (lambda: T.uniform_attention_interpolant(DATA, max_iter=2.0), "int"),
        (lambda: T.uniform_attention_interpolant(T.tikhonov_data(3, 3, 2)), "linearly independent"),
        (
            lambda: T.uniform_attention_interpolant(
                T.TikhonovData(DATA.X * NAN, DATA.Y, DATA.theta_star)
            ),
            "nan",
        ),
    ],
    "exact_uniform_interpolant": [
        (lambda: T.exact_uniform_interpolant("data", DATA.theta_star), "TikhonovData"),
        (lambda: T.exact_uniform_interpolant(DATA, {"q": TH["q"]}), "keys"),
        (lambda: T.exact_uniform_interpolant(DATA, [1]), "keys"),
        (
            lambda: T.exact_uniform_interpolant(
                DATA, dict(DATA.theta_star, q=torch.ones(2, dtype=torch.float64))
            ),
            "q = k = rho = 0",
        ),
        (
            lambda: T.exact_uniform_interpolant(
                DATA, dict(DATA.theta_star, b=-100 * torch.ones(4, dtype=torch.float64))
            ),
            "inactive",
        ),
        (
            lambda: T.exact_uniform_interpolant(
                DATA, dict(DATA.theta_star, V=torch.ones(3, 3, dtype=torch.float64))
            ),
            "d = 2",
        ),
        (
            lambda: T.exact_uniform_interpolant(
                DATA, dict(DATA.theta_star, V=torch.full((2, 2), NAN, dtype=torch.float64))
            ),
            "nan",
        ),
        (
            lambda: T.exact_uniform_interpolant(
                T.tikhonov_data(3, 3, 2), T.tikhonov_data(3, 3, 2).theta_star
            ),
            "linearly dependent",
        ),
    ],
    "block": [
        (lambda: T.block(torch.ones(3, 2, dtype=torch.float64), TH), r"\[N, n, d\]"),
        (lambda: T.block(torch.ones(1, 3, 3, dtype=torch.float64), TH), "d = 3"),
        (lambda: T.block(DATA.X, T.init_parameters(2, dtype=torch.float32)), "one dtype"),
        (lambda: T.block(DATA.X, TH, 0.0), "> 0"),
        (lambda: T.block(DATA.X, TH, NAN), "finite"),
        (lambda: T.block(DATA.X, {"q": TH["q"]}), "keys"),
        (lambda: T.block(DATA.X, theta(V=torch.ones(3, 3, dtype=torch.float64))), "d = 2"),
        (lambda: T.block(DATA.X * NAN, TH), "nan"),
        (lambda: T.block(DATA.X, theta(V=torch.full((2, 2), NAN, dtype=torch.float64))), "nan"),
        (lambda: T.block(DATA.X.to(torch.complex128), TH), "float tensor"),
    ],
    "loss": [
        (lambda: T.loss(DATA.X, DATA.Y[:, :, :1], TH), r"\[N, 1, d\]"),
        (lambda: T.loss(DATA.X, DATA.Y.float(), TH), r"\[N, 1, d\]"),
        (lambda: T.loss(DATA.X, [1], TH), r"\[N, 1, d\]"),
        (lambda: T.loss(DATA.X, DATA.Y, TH, -1.0), "> 0"),
        (lambda: T.loss(DATA.X, DATA.Y, [1]), "dict"),
        (lambda: T.loss(DATA.X, DATA.Y * NAN, TH), "nan"),
    ],
    "tikhonov_data": [
        (lambda: T.tikhonov_data(0), ">= 1"),
        (lambda: T.tikhonov_data(2.0), "int"),
        (lambda: T.tikhonov_data(2, 3, NAN), "int"),
        (lambda: T.tikhonov_data(2, 3, 2, INF), "int"),
        (lambda: T.tikhonov_data(2, 3, 2, dtype=torch.int64), "floating"),
        (lambda: T.tikhonov_data(2, "3"), "int"),
        (lambda: T.tikhonov_data(2, 3, 2, seed=1.5), "seed"),
    ],
    "init_parameters": [
        (lambda: T.init_parameters(0), ">= 1"),
        (lambda: T.init_parameters(6.0), "int"),
        (lambda: T.init_parameters(2, scale=NAN), "finite"),
        (lambda: T.init_parameters(2, scale=-1), ">= 0"),
        (lambda: T.init_parameters(2, dtype=torch.int32), "floating"),
        (lambda: T.init_parameters(2, width=True), "int"),
    ],
    "perturbed": [
        (lambda: T.perturbed(TH, NAN), "finite"),
        (lambda: T.perturbed(TH, -1), ">= 0"),
        (lambda: T.perturbed([1], 0.1), "dict"),
        (lambda: T.perturbed({}, 0.1), "dict"),
        (lambda: T.perturbed(TH, "0.1"), "real number"),
        (lambda: T.perturbed({"a": torch.ones(2, dtype=torch.long)}, 0.1), "float tensor"),
        (lambda: T.perturbed(TH, 0.1, seed=0.5), "seed"),
    ],
    "sq_norm": [
        (lambda: T.sq_norm([1, 2]), "dict"),
        (lambda: T.sq_norm({"a": [1, 2]}), "float tensor"),
        (lambda: T.sq_norm({"a": torch.tensor([NAN])}), "nan"),
        (lambda: T.sq_norm({}), "dict"),
        (lambda: T.sq_norm({"a": torch.tensor([1j])}), "float tensor"),
    ],
    "log_spaced_steps": [
        (lambda: T.log_spaced_steps(0), ">= 1"),
        (lambda: T.log_spaced_steps(2.0), "int"),
        (lambda: T.log_spaced_steps(INF), "int"),
        (lambda: T.log_spaced_steps(10, 0), ">= 1"),
        (lambda: T.log_spaced_steps("10"), "int"),
    ],
    "train": [
        (lambda: T.train(DATA, T.init_parameters(2), NAN, 2), "finite"),
        (lambda: T.train(DATA, T.init_parameters(2), INF, 2), "finite"),
        (lambda: T.train(DATA, T.init_parameters(2), 0.1, 2.0), "int"),
        (lambda: T.train(DATA, T.init_parameters(2), 0.1, 2, lr=0), "> 0"),
        (lambda: T.train((DATA.X, DATA.Y), T.init_parameters(2), 0.1, 2), "TikhonovData"),
        (lambda: T.train(DATA, T.init_parameters(2), 0.1, 2, record=-1), "record"),
        (lambda: T.train(DATA, T.init_parameters(2), 0.1, 2, record="log+0"), "record"),
        (lambda: T.train(DATA, T.init_parameters(2), 0.1, 2, record="log+x"), "record"),
        (lambda: T.train(DATA, T.init_parameters(2), 0.1, 2, record="every"), "record"),
        (lambda: T.train(DATA, {k: v.detach() for k, v in TH.items()}, 0.1, 2), "require grad"),
        (lambda: T.train(DATA, T.init_parameters(2, dtype=torch.float32), 0.1, 2), "one dtype"),
        (
            lambda: T.train(DATA, T.init_parameters(2, scale=1e3), 0.0, 3, lr=1e100),
            "diverged at step|diverged",
        ),
    ],
    "warm_start_sweep": [
        (lambda: T.warm_start_sweep(DATA, T.init_parameters(2), 0.1, [2]), "lists"),
        (lambda: T.warm_start_sweep(DATA, T.init_parameters(2), [], []), "non-empty"),
        (lambda: T.warm_start_sweep(DATA, T.init_parameters(2), [0.1], [2, 3]), "equal length"),
        (lambda: T.warm_start_sweep(DATA, T.init_parameters(2), [0.1], [0]), ">= 1"),
        (lambda: T.warm_start_sweep(DATA, T.init_parameters(2), [NAN], [2]), "finite"),
    ],
    "run_runs": [
        (lambda: run_runs(2, 3, 2, 1e-2, "float16", 1e-3, 2, [1e-1], [2]), "dtype"),
        (lambda: run_runs(0, 3, 2, 1e-2, "float64", 1e-3, 2, [1e-1], [2]), ">= 1"),
        (lambda: run_runs(2, 3, 2, 1e-2, "float64", -1.0, 2, [1e-1], [2]), ">= 0"),
        (lambda: run_runs(2, 3, 2, 1e-2, "float64", 1e-3, 2, [1e-1], [2, 3]), "equal length"),
        (lambda: run_runs(2, 3, 2, NAN, "float64", 1e-3, 2, [1e-1], [2]), "finite"),
        (
            lambda: run_runs(2, 3, 2, 1e-2, "float64", 1e-3, 2, [1e-1], [2], authors_draw="yes"),
            "authors_draw",
        ),
    ],
    "run_seeds": [
        (lambda: run_seeds(2, 3, 2, 1e-2, "float16", [1], [1e-1], [2]), "dtype"),
        (lambda: run_seeds(2, 3, 2, 1e-2, "float64", [1.5], [1e-1], [2]), "seed"),
        (lambda: run_seeds(2, 3, 2, 1e-2, "float64", [1], [1e-1], [2, 3]), "equal length"),
        (lambda: run_seeds(2, 3, 2, 1e-2, "float64", [1], [-1e-1], [2]), ">= 0"),
        (lambda: run_seeds(2, 3, 0, 1e-2, "float64", [1], [1e-1], [2]), ">= 1"),
    ],
    # plots
    "plot_trajectory": [
        (lambda: P.plot_trajectory(AX, torch.ones(3, 2)), r"\[steps \+ 1, n, 2\]"),
        (lambda: P.plot_trajectory(AX, torch.ones(2, 3, 3)), r"\[steps \+ 1, n, 2\]"),
        (lambda: P.plot_trajectory(AX, torch.full((2, 3, 2), NAN)), "nan"),
        (lambda: P.plot_trajectory(AX, torch.ones(2, 3, 2), leaders=[7]), "not token indices"),
        (lambda: P.plot_trajectory(None, torch.ones(2, 3, 2)), "Axes"),
        (lambda: P.plot_trajectory(AX, torch.ones(2, 3, 2, dtype=torch.complex64)), "real"),
        (lambda: P.plot_trajectory(AX, "abc"), "real"),
    ],
    "plot_before_after": [
        (lambda: P.plot_before_after(AX, torch.ones(3, 2), torch.ones(2, 2)), r"\[n, 2\]"),
        (lambda: P.plot_before_after(AX, torch.ones(3, 2) * NAN, torch.ones(3, 2)), "nan"),
        (
            lambda: P.plot_before_after(AX, torch.ones(3, 2), torch.ones(3, 2), highlight=[5]),
            "not token indices",
        ),
        (lambda: P.plot_before_after(AX, torch.ones(3, 3), torch.ones(3, 3)), r"\[n, 2\]"),
        (lambda: P.plot_before_after(None, torch.ones(3, 2), torch.ones(3, 2)), "Axes"),
        (lambda: P.plot_before_after(AX, np.ones((3, 2)) * 1j, np.ones((3, 2))), "real"),
    ],
    "plot_tokens": [
        (lambda: P.plot_tokens(AX, [torch.ones(3, 3)]), "sequence 0"),
        (lambda: P.plot_tokens(AX, [torch.full((3, 2), NAN)]), "nan"),
        (lambda: P.plot_tokens(AX, torch.ones(3, 2)), "sequence 0 must have shape"),
        (lambda: P.plot_tokens(AX, "abc"), "list"),
        (lambda: P.plot_tokens(AX, [torch.ones(3, 2)], [torch.ones(1, 3)]), "target 0"),
        (lambda: P.plot_tokens(AX, [torch.ones(0, 2)]), "n >= 1"),
        (lambda: P.plot_tokens(None, [torch.ones(3, 2)]), "Axes"),
        (
            lambda: P.plot_tokens(AX, [torch.ones(3, 2)], [torch.ones(1, 2), torch.ones(1, 2)]),
            "2 target sets",
        ),
    ],
    "uniform_legend_markers": [
        (lambda: P.uniform_legend_markers(None), "matplotlib Legend"),
        (lambda: P.uniform_legend_markers(AX), "matplotlib Legend"),
        (lambda: P.uniform_legend_markers("legend"), "matplotlib Legend"),
        (lambda: P.uniform_legend_markers(AX.legend(["a"]), size=0), "positive number"),
        (lambda: P.uniform_legend_markers(AX.legend(["a"]), size=float("nan")), "positive number"),
        (lambda: P.uniform_legend_markers(AX.legend(["a"]), size=True), "positive number"),
        (lambda: P.uniform_legend_markers(AX.legend(["a"]), size="5"), "positive number"),
    ],
}

TABLE = [
    (name, k, fn, match)
    for name, rows in CASES.items()
    if rows
    for k, (fn, match) in enumerate(rows)
]


@pytest.mark.parametrize("name,k,fn,match", TABLE, ids=[f"{n}-{k}" for n, k, _, _ in TABLE])
def test_bad_input_is_refused_with_a_clear_message(name, k, fn, match):
    with pytest.raises((ValueError, TypeError), match=match):
        fn()


def test_every_public_function_has_five_bad_inputs():
    public = {
        name
        for mod in (L, C, M, T, P)
        for name in dir(mod)
        if not name.startswith("_")
        and callable(getattr(mod, name))
        and getattr(getattr(mod, name), "__module__", "") == mod.__name__
        and not isinstance(getattr(mod, name), type)
    }
    assert public <= set(CASES), sorted(public - set(CASES))
    assert all(len(rows) >= 5 for rows in CASES.values() if rows is not None)


def test_is_exact_answers_false_on_anything_but_object_arrays():
    for bad in (None, "abc", [Fraction(1)], torch.ones(2), np.ones(2), 1.5, NAN):
        assert L.is_exact(bad) is False
    assert L.is_exact(Xq) is True


def test_attention_weights_at_tiny_tau_is_the_hardmax_limit():
    # 1e-320 is subnormal: 1 / tau overflows; in float32 tau rounds to 0. Both must give hardmax.
    for dtype in (torch.float64, torch.float32):
        Xd = X.to(dtype)
        for tau in (1e-320, 1e-300, 1e-45):
            pi = L.attention_weights(Xd, I2.to(dtype), tau)
            assert bool(torch.isfinite(pi).all())
            assert torch.equal(pi, L.attention_weights(Xd, I2.to(dtype), 0))
    # with a tie, the hardmax limit splits the weight evenly
    Xt = torch.tensor([[0.0, 1.0], [1.0, 1.0], [-1.0, 1.0]], dtype=torch.float64)
    A = torch.tensor([[0.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    assert torch.allclose(
        L.attention_weights(Xt, A, 1e-320), torch.full((3, 3), 1 / 3, dtype=torch.float64)
    )


def test_accepted_edge_inputs_give_correct_answers():
    assert len(C.distinct_points(X, tol=INF)) == 1  # tol = inf merges everything
    assert C.convex_hull_2d([[0, 0], [1, 0], [0, 1]]) == [0, 1, 2]  # nested lists are fine
    assert math.isclose(T.sq_norm({"a": torch.tensor([3.0, 4.0])}), 25.0)
