"""The one-step figures: the legend shows the numbers the chapter prints, no empty panels, legends
off the data."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from sxor.experiments import one_step as exp
from sxor.results import committed_results
from sxor.xor import analysis
from sxor.xor.sweeps import random_instances


def test_grid_legend_shows_the_printed_slope_interval():
    grid = committed_results("one-step-grid")
    boot = analysis.bootstrap_smallest_m(exp.grid_counts(grid["records"], "no_limit_off_target"))
    fig = exp.plot_grid(grid)
    texts = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    expected = f"[{boot.slope_low:.3f}, {boot.slope_high:.3f}]"
    assert any(expected in t for t in texts), (expected, texts)
    assert len(fig.axes[0].get_legend().get_texts()) <= 6  # curves that can be told apart
    assert all("^{" in t.get_text() for t in fig.axes[0].get_legend().get_texts())  # mathtext 2^k
    plt.close(fig)


def test_attention_figure_has_no_empty_panel_and_a_figure_legend():
    inst = random_instances(1, 32, 8, seed=0)
    for etas in ([100.0 * 32**2], [10.0 * 32**2, 1000.0 * 32**2]):
        fig = exp.plot_attention(inst.V[0], inst.theta0[0], inst.support[0], etas)
        assert len(fig.axes) == len(etas) + 1 and all(ax.get_visible() for ax in fig.axes)
        assert fig.legends and all(ax.get_legend() is None for ax in fig.axes)
        plt.close(fig)


def test_grid_line_spans_only_the_fitted_d():
    import numpy as np

    grid = committed_results("one-step-grid")
    outcomes = exp.instance_outcomes(
        committed_results("one-step-grid-instances"), "no_limit_off_target"
    )
    fit_d = exp.fully_seeded(outcomes)
    boot = exp.bootstrap_instances(outcomes, resamples=50, fit_d=fit_d)
    assert len(fit_d) < len(boot.d)  # the grid's largest d has fewer instances
    fig = exp.plot_grid(grid, boot=boot)
    line = next(ln for ln in fig.axes[1].get_lines() if ln.get_label().startswith("fit to"))
    assert np.allclose(line.get_xdata(), np.log(np.array(fit_d, dtype=float)))
    plt.close(fig)
