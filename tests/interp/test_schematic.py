"""Tests of sxor.interp.schematic: the four-phase drawing of chapter 13."""

from __future__ import annotations

from fractions import Fraction

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.patches import Circle, Rectangle

from sxor.interp import construct, random_dataset
from sxor.interp.schematic import PHASE_TITLES, plot_phases


def tokens(*rows):
    return np.array([[Fraction(v) for v in r] for r in rows], dtype=object)


X = [
    tokens((0, 0), (2, 2), (1, 0), (1, 2)),
    tokens((2, 0), (0, 2), (1, 0), (1, 2)),
    tokens((0, 0), (2, 0), (1, 1), (0, 2), (2, 2)),
]
Y = [tokens((4, 1)), tokens((-1, 3), (3, 4)), tokens((1, -2))]


def test_four_panels_with_the_box_and_the_parking_circle():
    T = construct(X, Y)
    fig = plot_phases(T, X, Y)
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == list(PHASE_TITLES)
    R, rho = float(T.info["box"]), float(T.info["park_radius"])
    for k, ax in enumerate(axes):
        boxes = [p for p in ax.patches if isinstance(p, Rectangle)]
        circles = [p for p in ax.patches if isinstance(p, Circle)]
        if k == 0:  # separation happens before the translation into the box
            assert not boxes and not circles
            continue
        (box,) = boxes
        assert box.get_xy() == (1, 1) and box.get_width() == pytest.approx(R - 1)
        assert box.get_height() == pytest.approx(R - 1)
        (circle,) = circles
        assert circle.get_radius() == pytest.approx(rho) and circle.center == (0, 0)
        lo, hi = ax.get_xlim()
        assert lo < -rho and hi > R  # the whole geometry is in view
    # the parked token of X_2 lies on the drawn circle, in the negative quadrant
    lead = T.snapshots(X)["leaders"][1]
    q = [float(c) for c in lead[1]]
    assert q[0] < 0 and q[1] < 0 and np.hypot(*q) == pytest.approx(rho)
    labels = fig.legends[0].get_texts()
    assert {"box $[1,R]^2$", "leader", "targets $Y_j$"} <= {t.get_text() for t in labels}
    # the collapse and interpolation panels draw arrows, the first two do not
    assert [len(ax.texts) > 0 for ax in axes] == [False, False, True, True]
    plt.close(fig)


def test_refuses_what_it_cannot_draw():
    T = construct(X, Y)
    with pytest.raises(TypeError, match="InterpolatingTransformer"):
        plot_phases("T", X, Y)
    with pytest.raises(ValueError, match="target sets"):
        plot_phases(T, X, Y[:2])
    with pytest.raises(ValueError, match="fontsize"):
        plot_phases(T, X, Y, fontsize=0)
    with pytest.raises(TypeError, match="sequences"):
        plot_phases(T, "abc", Y)
    Xm, Ym = random_dataset(
        3, 4, 1, 2, seed=0
    )  # every m_j = 1: the mean route has no phases to draw
    with pytest.raises(ValueError, match="leader"):
        plot_phases(construct(Xm, Ym), Xm, Ym)
    X3, Y3 = random_dataset(2, 4, 2, 3, seed=0)
    with pytest.raises(ValueError, match="d = 2"):
        plot_phases(construct(X3, Y3), X3, Y3)
