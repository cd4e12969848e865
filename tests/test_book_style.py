"""The book's one figure style (sxor/book.mplstyle, applied by sxor.book.setup) and the legend
helpers: text legible at page width and on a 390 px phone, legends off the data."""

from __future__ import annotations

import json
import re
from pathlib import Path

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


#: Text sizes in figure code: a number (points) or one of matplotlib's named sizes, given as
#: ``fontsize=``/``labelsize=`` anywhere, or as ``size=`` to a function that draws text.
FONT_SIZE = re.compile(
    r"\b(fontsize|labelsize|title_fontsize)\s*=\s*(\d+(?:\.\d+)?|['\"][a-z-]+['\"])"
)
TEXT_CALL = re.compile(
    r"\b(text|annotate|legend|figtext|suptitle|set_title|set_xlabel|set_ylabel|box)\("
)
SIZE = re.compile(r"\bsize\s*=\s*(\d+(?:\.\d+)?|['\"][a-z-]+['\"])")
#: matplotlib's named sizes that are smaller than the base size: refused altogether (sizes are
#: set once, in book.mplstyle).
NAMED_SIZES = {"xx-small", "x-small", "small", "smaller"}
ROOT = Path(__file__).resolve().parents[1]


def figure_code() -> list[tuple[str, str]]:
    """(where, source) of every module of sxor and every code cell of the book's notebooks."""
    found = [
        (str(path.relative_to(ROOT)), path.read_text())
        for path in sorted(ROOT.glob("sxor/**/*.py"))
    ]
    for path in sorted(ROOT.glob("book/**/*.ipynb")):
        for k, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] == "code":
                found.append((f"{path.relative_to(ROOT)} cell {k}", "".join(cell["source"])))
    return found


def small_sizes(source: str) -> list[str]:
    """Every text size below 10 pt written in ``source``."""
    found = [(m.group(0), m.group(2)) for m in FONT_SIZE.finditer(source)]
    for call in TEXT_CALL.finditer(source):
        depth, end = 0, call.end() - 1
        for end in range(call.end() - 1, len(source)):
            depth += {"(": 1, ")": -1}.get(source[end], 0)
            if depth == 0:
                break
        found += [(m.group(0), m.group(1)) for m in SIZE.finditer(source[call.end() : end])]
    bad = []
    for text, written in found:
        value = written.strip("'\"")
        if value in NAMED_SIZES or (value[0].isdigit() and float(value) < 10):
            bad.append(text)
    return bad


def test_the_scan_finds_small_text():
    assert small_sizes("ax.legend(fontsize=8)") == ["fontsize=8"]
    assert small_sizes("ax.text(0, 0, 'a', fontsize='x-small')") == ["fontsize='x-small'"]
    assert small_sizes("ax.tick_params(labelsize=9.5)") == ["labelsize=9.5"]
    assert small_sizes("ax.text(0, 0, 'a', size=9)") == ["size=9"]
    assert small_sizes("ax.legend(fontsize=10); ax.text(0, 0, 'a', size=12)") == []
    assert small_sizes("draw(n, size=2)") == [], "a size that is not a text size"


def test_no_figure_text_below_10_points():
    """Figure text is at least 10 pt at the size a figure is drawn: sizes come from
    sxor/book.mplstyle (12-13 pt), and no code sets one below 10 pt."""
    bad = [
        f"{where}: {', '.join(sizes)}"
        for where, src in figure_code()
        if (sizes := small_sizes(src))
    ]
    assert not bad, "text below 10 pt in figure code:\n" + "\n".join(bad)
    with plt.rc_context():
        book.use_style()
        for key in (
            "font.size",
            "axes.titlesize",
            "axes.labelsize",
            "xtick.labelsize",
            "ytick.labelsize",
            "legend.fontsize",
            "legend.title_fontsize",
        ):
            size = font_manager.FontProperties(size=plt.rcParams[key]).get_size_in_points()
            assert size >= 10, f"{key}: {size} pt in sxor/book.mplstyle"
