"""The float64 network follows the exact one, and no softmax network is built above tau_max.

* A float64 forward pass of the constructed network agrees with the exact targets to rounding, at
  d in {2, 3, 8, 20}, for hardmax and softmax (the line projection and every hat use a
  well-spread injective direction, not the moment curve (1, 2, ..., 2^(d-1)), which put clusters
  near 1.6e7 on the axis with gaps below 1 and missed by a Hausdorff distance of 0.05 at d = 20).
* tau_max is rounded down (interval arithmetic), so a temperature it admits is below the proven
  threshold; construct and at_temperature refuse tau >= tau_max with a message that gives it.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import torch

from sxor.interp import construct, hausdorff_squared, random_dataset
from sxor.interp.hats import conditioned_direction, injective_direction


def _float_hausdorff(T, X, Y) -> float:
    worst = 0.0
    for x, y in zip(X, Y):
        out = T(torch.tensor(np.array(x, dtype=np.float64)))
        worst = max(
            worst, float(hausdorff_squared(out, torch.tensor(np.array(y, dtype=np.float64)))) ** 0.5
        )
    return worst


CASES = [(d, seed) for d in (2, 3, 8) for seed in range(3)] + [(20, seed) for seed in (3, 5, 7)]


@pytest.mark.parametrize("d,seed", CASES)
def test_float64_forward_pass_agrees_with_the_exact_targets(d, seed):
    X, Y = random_dataset(5, 6, 3, d, seed=seed, denominator=1)
    # softmax: the snap-moves replace a token by its target, so only the last layers' rounding
    # remains (measured <= 2e-13 on these cases); hardmax keeps the residual's accumulated
    # rounding, amplified by the triangle hats' slopes |D| / g (measured <= 3e-9).
    for attention, tol in (("softmax", 1e-11), ("hardmax", 1e-7)):
        T = construct(X, Y, attention)
        assert _float_hausdorff(T, X, Y) < tol, (attention, d, seed)


def test_the_line_projection_works_at_unit_scale():
    X, Y = random_dataset(5, 6, 3, 20, seed=5, denominator=1)
    T = construct(X, Y, "softmax")
    axis = T.snapshots([torch.tensor(np.array(x, dtype=np.float64)) for x in X])["projection"]
    ybig = max(abs(float(v)) for y in Y for v in y.flat)
    tops = [float(s[:, 0].max()) for s in axis]
    assert all(float(np.abs(np.asarray(s, dtype=float)[:, 1:]).max()) == 0 for s in axis)
    assert min(float(s[:, 0].min()) for s in axis) >= 1 + ybig - 1e-9
    assert max(tops) < 1e4  # the moment curve put them near 1.6e7


def test_conditioned_direction_is_injective_and_better_spread_than_the_moment_curve():
    rng = np.random.default_rng(0)
    for d in (2, 5, 20):
        values = {
            tuple(Fraction(int(a), 3) for a in rng.integers(-12, 13, size=d)) for _ in range(15)
        }
        w = conditioned_direction(values, d)
        proj = sorted(sum(a * b for a, b in zip(w, x)) for x in values)
        assert len(set(proj)) == len(values)
        gap, spread = min(b - a for a, b in itertools.pairwise(proj)), proj[-1] - proj[0]
        m = injective_direction(values, d)
        mproj = sorted(sum(a * b for a, b in zip(m, x)) for x in values)
        mgap, mspread = min(b - a for a, b in itertools.pairwise(mproj)), mproj[-1] - mproj[0]
        assert gap / spread >= mgap / mspread
    # a set on which no small-integer candidate is injective still gets an injective direction
    assert conditioned_direction({(Fraction(0),), (Fraction(1),)}, 1) == (Fraction(1),)
    with pytest.raises(ValueError, match="d = 2 coordinates"):
        conditioned_direction({(Fraction(1),)}, 2)


def _exact_tau_max(T) -> mpmath.mpf:
    g, s, r = T.gap, T.spread, T.radius
    return (
        mpmath.mpf(g.numerator)
        / g.denominator
        / mpmath.log(mpmath.mpf((s / r).numerator) / (s / r).denominator)
    )


def test_tau_max_is_rounded_down_on_thirty_datasets():
    below = 0
    with mpmath.workdps(60):
        for seed in range(30):
            X, Y = random_dataset(3, 4, [1, 2, 2], 2, seed=seed)
            T = construct(X, Y, "softmax")
            exact = _exact_tau_max(T)
            assert Fraction(T.tau_max) < Fraction(mpmath.nstr(exact, 55)), seed
            assert math.nextafter(math.nextafter(T.tau_max, math.inf), math.inf) > exact  # tight
            below += 1
    assert below == 30


def test_a_temperature_at_or_above_tau_max_is_refused():
    X, Y = random_dataset(3, 4, [1, 2, 2], 2, seed=1)
    T = construct(X, Y, "softmax")
    top = Fraction(T.tau_max)
    for tau in (10**9, top, top * 2):
        with pytest.raises(ValueError, match=r"tau_max = 2\.65804246"):
            construct(X, Y, "softmax", tau=tau)
        with pytest.raises(ValueError, match=r"not below tau_max"):
            T.at_temperature(tau)
    ok = construct(X, Y, "softmax", tau=top * Fraction(999, 1000))
    assert ok.tau == top * Fraction(999, 1000) and float(ok.tau) < T.tau_max
    assert _float_hausdorff(ok, X, Y) < 1e-11
    # the mean route has tau_max = inf: every tau > 0 is fine
    Xm, Ym = random_dataset(3, 3, 1, 2, seed=0)
    Tm = construct(Xm, Ym, "softmax", tau=10**9)
    assert Tm.tau_max == math.inf and Tm.tau == 10**9
