"""The certificate's public behaviour that mutants of its internals must not change.

* The Hausdorff bound has a backward term: a target no output token reaches counts, even when
  every output token sits exactly on some target.
* It is tight at the threshold: just below tau_max the deviation is close to the radius and the
  certificate still proves exactness; at 200 tau_max it does not claim it.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from sxor.interp import construct, random_dataset, softmax_certificate


def test_a_target_no_output_reaches_makes_the_bound_positive():
    X, Y = random_dataset(3, 4, [1, 2, 2], 2, seed=4)
    T = construct(X, Y, attention="softmax")
    assert softmax_certificate(T, X, Y)["exact"]
    far = np.array([[Fraction(7), Fraction(-7)]], dtype=object)
    extra = [np.concatenate([Y[0], far]), *Y[1:]]  # every output still lies on a target
    c = softmax_certificate(T, X, extra)
    assert not c["exact"] and c["hausdorff_bound"] > 0
    # the backward distance: from (7, -7) to the nearest target of Y[0] (where the outputs are)
    nearest = min(math.dist((7, -7), tuple(float(v) for v in row)) for row in Y[0])
    assert float(c["hausdorff_bound"]) >= nearest * (1 - 1e-12)
    assert abs(max(c["hausdorff"]) - nearest) < 1e-9


def test_the_certificate_is_tight_just_below_tau_max():
    # at tau = tau_max (1 - 1e-6) the proven collapse error is within 1e-5 of the radius; the
    # certificate proves exactness there, and at 200 tau_max (where the network misses) it does not.
    X, Y = random_dataset(3, 4, [1, 2, 2], 2, seed=4)
    T = construct(X, Y, attention="softmax")
    top = Fraction(T.tau_max)
    c = softmax_certificate(T, X, Y, top * (1 - Fraction(1, 10**6)))
    assert c["certified"] and c["exact"] and c["deviation"] <= T.radius
    over = softmax_certificate(T, X, Y, 200 * top)
    assert not over["exact"] and over["hausdorff_bound"] > 0
