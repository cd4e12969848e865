"""Softmax near hardmax, snap layers, enclosures, and the clustering helpers."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import torch

from sxor.interp import (
    as_exact,
    attention_trajectory,
    attention_weights,
    convex_hull_2d,
    distinct_points,
    feed_forward,
    feed_forward_enclosure,
    identity_matrix,
    leaders,
    rank_one_layer,
    self_attention,
    snap_layer,
    softmax_attention_enclosure,
)
from sxor.interp.lemmas import random_rank_one_instance, random_rationals
from sxor.interp.softmax import (
    lands_in_slab,
    largest_snapping_temperature,
    log_nonmax_weight,
    log_nonmax_weight_bound,
    score_gaps,
    snap_temperature_bound,
    softmax_deviation,
)


def test_score_gaps_exact():
    X = as_exact([[2, 0], [1, 1], [0, 2]])
    sizes, gaps = score_gaps(X, identity_matrix(2))
    # row 1: scores <(1,1), x_l> = 2, 2, 2 -> all tie
    assert sizes == [1, 3, 1] and gaps[0] == 2 and gaps[1] == math.inf and gaps[2] == 2


@pytest.mark.parametrize("seed", range(5))
def test_nonmax_weight_within_bound_and_sharp(seed):
    g = torch.Generator().manual_seed(seed)
    X = random_rationals((6, 2), g)
    A = identity_matrix(2)
    sizes, gaps = score_gaps(X, A)
    for tau in (2.0, 0.3, 0.05, 0.001):
        log_eps = log_nonmax_weight(X, A, tau)
        bound = log_nonmax_weight_bound(6, sizes, [float(x) for x in gaps], tau)
        assert bool((log_eps <= bound + 1e-9 * bound.abs().clamp(min=1)).all())
    # independent check at high precision with mpmath for one query
    S = [[float(a) for a in row] for row in (X @ A @ X.T)]
    with mpmath.workdps(60):
        w = [mpmath.exp(mpmath.mpf(s) / mpmath.mpf("0.05")) for s in S[0]]
        top = max(S[0])
        eps = sum(wi for wi, s in zip(w, S[0]) if s != top) / sum(w)
    assert abs(float(mpmath.log(eps)) - float(log_nonmax_weight(X, A, 0.05)[0])) < 1e-9
    # the bound is attained when every other score sits exactly gap below the top
    Y = as_exact([[1, 0], [0, 0], [0, 1]])  # query 0: scores 1, 0, 0 -> gap 1, k 1
    assert (
        abs(float(log_nonmax_weight(Y, A, 0.5)[0]) - float(log_nonmax_weight_bound(3, 1, 1.0, 0.5)))
        < 1e-12
    )


def test_softmax_deviation_identity():
    # |SA_tau - SA_0| = eps |V (xbar - m)| <= eps max_l |V (x_l - m)|
    g = torch.Generator().manual_seed(7)
    X = random_rationals((5, 2), g)
    A = identity_matrix(2)
    dev = softmax_deviation(X, A, 0, identity_matrix(2), 0.2)
    eps = log_nonmax_weight(X, A, 0.2).exp()
    Xf = np.asarray(X, dtype=np.float64)
    pi = np.asarray(attention_weights(X, A, 0), dtype=np.float64)
    for i in range(5):
        m = pi[i] @ Xf
        assert dev[i] <= eps[i] * max(np.linalg.norm(x - m) for x in Xf) + 1e-12
    assert dev.max() > 0


def test_softmax_collapses_tokens_with_equal_scores_exactly():
    # the literal claim "softmax never collapses two distinct tokens" is false: equal score rows
    X = torch.tensor([[1.0, 2.0], [1.0, -3.0], [-2.0, 0.5]], dtype=torch.float64)
    A = torch.tensor([[1.0, 0.0], [0.0, 0.0]], dtype=torch.float64)  # v = e1: tokens 0 and 1 tie
    out = self_attention(X, A, 0, torch.eye(2, dtype=torch.float64), tau=0.5)
    assert torch.equal(out[0], out[1])
    out0 = self_attention(
        X, torch.zeros(2, 2, dtype=torch.float64), 0, torch.eye(2, dtype=torch.float64), tau=0.5
    )
    assert torch.allclose(out0, X.mean(0).expand(3, 2), atol=1e-15)


def test_softmax_never_reaches_an_extreme_token():
    g = torch.Generator().manual_seed(3)
    for _ in range(8):
        X, v = random_rank_one_instance(6, 2, g)
        p = rank_one_layer(v)
        proj = [sum(a * b for a, b in zip(x, v)) for x in X]
        extremes = [X[proj.index(max(proj))], X[proj.index(min(proj))]]  # vertices of the hull
        for tau in (Fraction(1, 2), Fraction(1, 10)):
            # enough bits that the box is narrower than the weight eps_i off the argmax set
            bits = int(-float(log_nonmax_weight(X, p["A"], float(tau)).min()) / math.log(2)) + 64
            lo, hi = softmax_attention_enclosure(X, p["A"], 0, p["V"], tau, prec=bits)
            for i in range(6):  # no output box contains an extreme token
                for x in extremes:
                    assert not all(lo[i, c] <= x[c] <= hi[i, c] for c in range(2))


def test_snap_layer_exact_and_float():
    v, p, q = [1, 2], [Fraction(1, 3), 5], [1, 0]
    params = snap_layer(v, 3, Fraction(1, 2), p, q)
    X = as_exact(
        [[3, 0], [1, Fraction(5, 4)], [1, Fraction(3, 4)], [0, 0], [2, 2]]
    )  # <v,x> = 3, 7/2, 5/2, 0, 6
    out = feed_forward(X, **params)
    assert [list(r) for r in out[:3]] == [p, p, p]
    assert list(out[3]) == [Fraction(1, 3) - Fraction(5, 2), 5]  # p + q (<v,x> - s + h)
    assert list(out[4]) == [Fraction(1, 3) + Fraction(5, 2), 5]  # p + q (<v,x> - s - h)
    pf = snap_layer(np.array([1.0, 2.0]), 3.0, 0.5, np.array([0.25, 5.0]), np.array([1.0, 0.0]))
    outf = feed_forward(np.array([[3.0, 0.0], [1.0, 1.2], [1.0, 0.9]]), **pf)
    assert (outf == np.array([0.25, 5.0])).all()  # bit-exact in float on the slab
    assert params["U"].shape == (3, 2)
    with pytest.raises(ValueError, match="h"):
        snap_layer(v, 3, 0, p, q)


def test_feed_forward_enclosure_contains_samples_and_is_exact_on_slab():
    g = torch.Generator().manual_seed(11)
    W, U, b = random_rationals((2, 4), g), random_rationals((4, 2), g), random_rationals((4,), g)
    lo = random_rationals((3, 2), g)
    hi = lo + as_exact([[1, Fraction(1, 2)]] * 3)
    out_lo, out_hi = feed_forward_enclosure(lo, hi, Fraction(1, 2), W, U, b)
    for t in (Fraction(0), Fraction(1, 3), Fraction(1)):
        y = feed_forward(lo + t * (hi - lo), Fraction(1, 2), W, U, b)
        assert all(out_lo[i, c] <= y[i, c] <= out_hi[i, c] for i in range(3) for c in range(2))
    snap = snap_layer([1, 0], 0, 1, [7, 7], [0, 1])
    slo, shi = feed_forward_enclosure(
        as_exact([[Fraction(-1, 2), -9]]), as_exact([[Fraction(1, 2), 9]]), **snap
    )
    assert list(slo[0]) == list(shi[0]) == [7, 7]


def test_snap_temperature_bound_is_below_measured_threshold():
    g = torch.Generator().manual_seed(5)
    for _ in range(3):
        X, v = random_rank_one_instance(6, 2, g)
        p = rank_one_layer(v)
        proj = [sum(a * b for a, b in zip(x, v)) for x in X]
        s = max(proj)
        h = (s - sorted(set(proj))[-2]) / 4
        tokens = [i for i, t in enumerate(proj) if t > 0]
        bound = snap_temperature_bound(X, p["A"], 0, p["V"], v, s, h, tokens)
        per_token = snap_temperature_bound(X, p["A"], 0, p["V"], v, s, h, tokens, kind="per-token")
        measured = largest_snapping_temperature(
            X, p["A"], 0, p["V"], v, s, h, tokens, num=41, refine=20
        )
        assert 0 < bound <= per_token <= measured  # the per-token bound is the sharper one here
        assert lands_in_slab(X, p["A"], 0, p["V"], 0.99 * measured, v, s, h, tokens)
        assert not lands_in_slab(X, p["A"], 0, p["V"], 1.5 * measured, v, s, h, tokens)
        # rigorous at 0.9 * bound: softmax box then snap enclosure is a single exact point
        tau = Fraction(bound).limit_denominator(10**6) * Fraction(9, 10)
        lo, hi = softmax_attention_enclosure(X, p["A"], 0, p["V"], tau, prec=120)
        snap = snap_layer(v, s, h, X[proj.index(s)], v)
        slo, shi = feed_forward_enclosure(lo[tokens], hi[tokens], **snap)
        assert all(
            list(slo[k]) == list(shi[k]) == list(X[proj.index(s)]) for k in range(len(tokens))
        )


def test_enclosure_contains_float_softmax():
    g = torch.Generator().manual_seed(2)
    X, A, V = random_rationals((4, 3), g), random_rationals((3, 3), g), random_rationals((3, 3), g)
    lo, hi = softmax_attention_enclosure(X, A, Fraction(1, 2), V, Fraction(3, 2), prec=100)

    def f(a):
        return np.asarray(a, dtype=np.float64)

    y = self_attention(f(X), f(A), 0.5, f(V), 1.5)
    assert np.all(f(lo) - 1e-12 <= y) and np.all(y <= f(hi) + 1e-12)
    assert max(float(b - a) for a, b in zip(lo.flat, hi.flat)) < 1e-20
    with pytest.raises(ValueError, match="tau"):
        softmax_attention_enclosure(X, A, 0, V, 0)


# ---- clustering helpers ------------------------------------------------------------------------


def test_leaders_and_trajectory():
    X = as_exact([[3, 0], [0, 3], [1, 1], [-2, -2]])
    I = identity_matrix(2)
    assert leaders(X, I) == [0, 1, 3]  # (1, 1) attends to (3, 0) and (0, 3) (tie), not itself
    traj = attention_trajectory(X, I, Fraction(1, 2), I * Fraction(1, 2), 0, 3)
    assert traj.shape == (4, 4, 2)
    for t in range(4):  # leaders stay put
        assert all(list(traj[t, i]) == list(X[i]) for i in (0, 1, 3))
    assert list(traj[1, 2]) == [Fraction(5, 4), Fraction(5, 4)]


def test_trajectory_float_matches_exact():
    g = torch.Generator().manual_seed(4)
    X, I = random_rationals((6, 2), g), identity_matrix(2)
    exact = attention_trajectory(X, I, Fraction(1, 4), I * Fraction(3, 4), 0, 4)
    flt = attention_trajectory(
        torch.as_tensor(np.asarray(X, dtype=np.float64)), np.eye(2), 0.25, 0.75 * np.eye(2), 0, 4
    )
    assert np.allclose(np.asarray(exact, dtype=np.float64), flt.numpy(), atol=1e-12)


def test_distinct_points_and_hull():
    X = as_exact(
        [
            [0, 0],
            [1, 0],
            [1, 0],
            [1, 1],
            [0, 1],
            [Fraction(1, 2), Fraction(1, 2)],
            [Fraction(1, 2), 0],
        ]
    )
    assert len(distinct_points(X)) == 6
    assert sorted(convex_hull_2d(X)) == [0, 1, 3, 4]
    Xf = np.array([[0.0, 0.0], [1e-9, 0.0], [1.0, 1.0]])
    assert len(distinct_points(Xf, tol=1e-6)) == 2
    with pytest.raises(ValueError, match="steps"):
        attention_trajectory(X, identity_matrix(2), 0, identity_matrix(2), 0, -1)


def test_snap_temperature_bound_bad_input():
    X, v = random_rank_one_instance(5, 2, torch.Generator().manual_seed(9))
    p = rank_one_layer(v)
    proj = [sum(a * b for a, b in zip(x, v)) for x in X]
    with pytest.raises(ValueError, match="kind"):
        snap_temperature_bound(X, p["A"], 0, p["V"], v, max(proj), 1, [0], kind="tight")
    far = max(proj) + 100
    tokens = [i for i, t in enumerate(proj) if t > 0]
    with pytest.raises(ValueError, match="outside the slab"):
        snap_temperature_bound(X, p["A"], 0, p["V"], v, far, 1, tokens)


def test_plots_draw():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sxor.interp.plots import plot_before_after, plot_trajectory

    X = as_exact([[3, 0], [0, 3], [1, 1], [-2, -2]])
    I = identity_matrix(2)
    traj = attention_trajectory(X, I, Fraction(1, 2), I * Fraction(1, 2), 0, 3)
    fig, (a, b) = plt.subplots(1, 2)
    plot_trajectory(a, traj, leaders=[0, 1, 3], title="t")
    assert len(a.lines) == 4 + 1  # one path per token and the hull
    plot_before_after(b, X, traj[1], highlight=[2])
    assert len(b.collections) == 3
    with pytest.raises(ValueError, match="shape"):
        plot_trajectory(a, X)
    plt.close(fig)


def test_plot_tokens_marks_multiplicity_and_targets():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sxor.interp.plots import plot_tokens

    X = [as_exact([[0, 0], [0, 0], [1, 2]]), as_exact([[3, 1], [2, 2]])]
    Y = [as_exact([[4, 1]]), as_exact([[-1, 3], [3, 4]])]
    fig, ax = plt.subplots()
    plot_tokens(ax, X, Y, title="t")
    assert len(ax.collections) == 4  # two sequences, two target sets
    sizes = sorted(ax.collections[0].get_sizes())  # the doubled token is drawn larger
    assert sizes == [40, 65]
    assert ax.get_legend() is not None and ax.get_title() == "t" and ax.get_xlabel() == "$x_1$"
    legend = ax.get_legend()
    # the legend's markers share one size (the drawn 150-point diamonds no longer overlap) ...
    assert {float(h.get_sizes()[0]) for h in legend.legend_handles} == {50.0}
    # ... and the legend sits outside the axes, off the tokens
    renderer = fig.canvas.get_renderer()
    box, drawn = ax.get_window_extent(renderer), legend.get_window_extent(renderer)
    assert drawn.x0 >= box.x1 or drawn.y1 <= box.y0
    with pytest.raises(ValueError, match="sequence 0"):
        plot_tokens(ax, [as_exact([[1, 2, 3]])])
    plt.close(fig)


def test_snap_layers_collapse_clusters_in_higher_dimension():
    # three clusters in R^4 with separated projections on v: three width-3 snap layers, the
    # first maps onto the line p + R q, the next two act on that line (q = v / |v|^2)
    g = torch.Generator().manual_seed(12)
    v = as_exact([1, 2, 0, -1])
    q = v / sum(c * c for c in v)
    centres = [
        as_exact([3, 0, 1, 0]),
        as_exact([0, 0, 5, 0]),
        as_exact([-2, 0, 0, 3]),
    ]  # <v, c> = 3, 0, -5
    X = np.concatenate(
        [c + random_rationals((5, 4), g, bound=1, den=50) / 20 for c in centres]
    )  # |<v, noise>| <= 1/5
    h = Fraction(1, 2)
    Y = X
    for k, c in enumerate(centres):
        # a point below the slab maps to projection <v, c> + (t - s + h): with target c and centre
        # <v, c> (+ h after the first layer) the later clusters sit exactly h above where they began
        s = sum(a * b for a, b in zip(c, v)) + (h if k else 0)
        Y = feed_forward(Y, **snap_layer(v, s, h, c, q))
    assert len({tuple(r) for r in Y}) == 3
    assert all(len({tuple(r) for r in Y[5 * k : 5 * k + 5]}) == 1 for k in range(3))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_snap_layer_refuses_non_finite_parameters(bad):
    with pytest.raises(ValueError, match="finite"):
        snap_layer([1.0, bad], 0.0, 1.0, [0.0, 0.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="finite"):
        snap_layer([1.0, 0.0], bad, 1.0, [0.0, 0.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="finite"):
        snap_layer([1.0, 0.0], 0.0, 1.0, [0.0, bad], [1.0, 0.0])
    with pytest.raises(ValueError):
        snap_layer([1.0, 0.0], 0.0, bad, [0.0, 0.0], [1.0, 0.0])


def test_enclosure_at_tiny_tau_contains_hardmax_limit():
    from tests.hang_guard import hang_guard

    X = as_exact([[3, 0], [0, 3], [1, 1], [-2, -2]])
    p = rank_one_layer([1, 1])
    hard = self_attention(X, p["A"], p["rho"], p["V"])
    for tau in (Fraction(1, 10**9), Fraction(1, 10**12), Fraction(1, 10**40)):
        with hang_guard(f"softmax_attention_enclosure at tau = {tau}"):
            lo, hi = softmax_attention_enclosure(X, p["A"], p["rho"], p["V"], tau)
        assert all(lo[i, c] <= hard[i, c] <= hi[i, c] for i in range(4) for c in range(2))
        assert max(b - a for a, b in zip(lo.flat, hi.flat)) < Fraction(1, 2**150)


def test_feed_forward_enclosure_is_exact_where_the_layer_is_affine():
    lo, hi = as_exact([[1, 0]]), as_exact([[2, 0]])
    W, U, b = (
        as_exact([[-1], [0]]),
        as_exact([[1, 0]]),
        as_exact([0]),
    )  # x -> x - relu(x_1) e_1 = (0, x_2)
    out_lo, out_hi = feed_forward_enclosure(lo, hi, 1, W, U, b)
    assert list(out_lo[0]) == list(out_hi[0]) == [0, 0]  # naive interval arithmetic gives [-1, 1]


@pytest.mark.parametrize("seed", range(5))
def test_feed_forward_enclosure_affine_branch_is_sound_and_tight(seed):
    import itertools

    g = torch.Generator().manual_seed(100 + seed)
    W, U, b = random_rationals((3, 4), g), random_rationals((4, 3), g), random_rationals((4,), g)
    centre = random_rationals((2, 3), g)
    lo, hi = centre - Fraction(1, 1000), centre + Fraction(1, 1000)  # small boxes: constant pattern
    out_lo, out_hi = feed_forward_enclosure(lo, hi, Fraction(1, 3), W, U, b)
    for i in range(2):
        corners = [
            np.array([(lo if c else hi)[i, k] for k, c in enumerate(bits)], dtype=object)
            for bits in itertools.product((0, 1), repeat=3)
        ]
        images = feed_forward(np.stack(corners), Fraction(1, 3), W, U, b)
        for r in range(
            3
        ):  # every corner inside, and the bounds attained (an affine map's box image)
            assert all(out_lo[i, r] <= y <= out_hi[i, r] for y in images[:, r])
            pre = [lo[i] @ U[k] + b[k] for k in range(4)]
            if all(abs(p) > Fraction(3, 1000) * 8 for p in pre):
                assert min(images[:, r]) == out_lo[i, r] and max(images[:, r]) == out_hi[i, r]


def test_enclosure_is_centred_on_hardmax_and_scale_free():
    """The box is the exact hardmax output plus an enclosure of the deviation: scaling the tokens
    by 10^100 (and tau by 10^200, so the weights are unchanged) scales the box width by 10^100,
    not more, and the box is far narrower than the deviation itself."""
    X = as_exact([[0, 0], [3, 1], [-2, 5], [1, 1]])
    A, V = identity_matrix(2), identity_matrix(2)
    tau = Fraction(7, 2)
    widths = []
    for scale in (1, 10**100):
        Xs = X * scale
        lo, hi = softmax_attention_enclosure(Xs, A, 0, V, tau * scale**2, prec=200)
        hard = self_attention(Xs, A, 0, V, 0)
        dev = max(max(abs(a - h), abs(b - h)) for a, b, h in zip(lo.flat, hi.flat, hard.flat))
        width = max(b - a for a, b in zip(lo.flat, hi.flat))
        assert dev > 0
        assert width < dev * Fraction(1, 2**150)
        widths.append(width)
    assert widths[1] < widths[0] * 10**100 * 2
    # every score ties (A = 0 rows): the box is the single exact hardmax point
    lo, hi = softmax_attention_enclosure(X, identity_matrix(2) * 0, 0, V, tau)
    assert (lo == hi).all() and (lo == self_attention(X, identity_matrix(2) * 0, 0, V, 0)).all()
