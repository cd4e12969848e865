"""The book's one figure style (sxor/book.mplstyle, applied by sxor.book.setup) and the legend
helpers: text legible at page width and on a 390 px phone, legends off the data."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from matplotlib import font_manager

from sxor import book
from sxor.interp.plots import uniform_legend_markers
from tools.check_site import MIN_PHONE_SCALE, PHONE_WIDTH

#: The text column on a 390 px phone (the theme's padding leaves about 342 px).
PHONE_COLUMN = 342
#: The smallest text a reader can read, in CSS pixels.
MIN_TEXT_PX = 8.0


@pytest.fixture
def styled():
    with plt.rc_context():
        book.use_style()
        yield plt.rcParams


def points_to_px(size, rc) -> float:
    return font_manager.FontProperties(size=size).get_size_in_points() * rc["figure.dpi"] / 72


def test_setup_applies_the_style_file():
    with plt.rc_context():
        plt.rcParams["font.size"] = 7.0
        book.setup(seed=0)
        assert book.STYLE.is_file() and book.STYLE.suffix == ".mplstyle"
        assert plt.rcParams["font.size"] == 13 and plt.rcParams["legend.framealpha"] == 0.9


def test_every_text_size_is_legible_on_a_phone(styled):
    width_px = styled["figure.figsize"][0] * styled["figure.dpi"]
    scale = min(1.0, PHONE_COLUMN / width_px)
    assert scale >= MIN_PHONE_SCALE, (
        "a default-size figure is shrunk past what the browser check allows"
    )
    for key in (
        "font.size",
        "axes.labelsize",
        "axes.titlesize",
        "xtick.labelsize",
        "ytick.labelsize",
        "legend.fontsize",
    ):
        shown = points_to_px(styled[key], styled) * scale
        assert shown >= MIN_TEXT_PX, f"{key}: {shown:.1f} px on a {PHONE_WIDTH} px phone"
    assert width_px <= 800, "wider than the text column at 1400 px: it would be shrunk there too"


def test_legend_below_puts_the_legend_under_the_axes_and_label(styled):
    fig, ax = plt.subplots()
    for k in range(5):
        ax.plot(range(10), [k * x for x in range(10)], label=f"$k = {k}$")
    ax.set_xlabel("x")
    legend = book.legend_below(ax)
    renderer = fig.canvas.get_renderer()
    top = legend.get_window_extent(renderer).y1
    assert top <= ax.xaxis.label.get_window_extent(renderer).y0 + 1
    assert top <= ax.get_window_extent(renderer).y0
    assert legend._ncols == 3
    plt.close(fig)


def test_legend_helpers_refuse_bad_input(styled):
    fig, ax = plt.subplots()
    with pytest.raises(TypeError, match="ax"):
        book.legend_below("not an axes")
    with pytest.raises(ValueError, match="labelled"):
        book.legend_below(ax)
    ax.plot([0, 1], label="a")
    with pytest.raises(ValueError, match="ncol"):
        book.legend_below(ax, ncol=0)
    with pytest.raises(TypeError, match="Legend"):
        uniform_legend_markers(ax)
    with pytest.raises(ValueError, match="size"):
        uniform_legend_markers(ax.legend(), size=-1)
    plt.close(fig)
