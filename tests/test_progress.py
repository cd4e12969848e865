"""Progress bars: silenced by TQDM_DISABLE (notebooks store none), one line at most while they run
(no wall of finished bars in Colab), inner bars of nested loops silent."""

from __future__ import annotations

import io

import pytest

from sxor.progress import NCOLS, progress


def test_disabled_by_environment(monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    bar = progress(range(3))
    assert bar.disable and list(bar) == [0, 1, 2]


def test_enabled_otherwise(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert not progress(range(3), file=io.StringIO()).disable
    monkeypatch.setenv("TQDM_DISABLE", "0")
    assert not progress(range(3), file=io.StringIO()).disable


def visible_lines(stream: str) -> list[str]:
    """What a notebook shows for a stream: a carriage return restarts the line."""
    lines = [line.split("\r")[-1].rstrip() for line in stream.split("\n")]
    return [line for line in lines if line]


def test_consecutive_bars_share_one_line_and_vanish(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    out = io.StringIO()
    for cell in range(5):  # a sweep calls progress once per grid cell
        assert sum(progress(range(50), desc=f"cell {cell}", file=out, mininterval=0)) == 1225
    text = out.getvalue()
    assert "cell 4" in text, "the bar was drawn"
    assert "\n" not in text, "a bar wrote a new line"
    assert visible_lines(text) == [], "a finished bar stayed on the page"
    assert max(len(part) for part in text.split("\r")) <= NCOLS


def test_nested_bars_show_only_the_outer_one(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    out = io.StringIO()
    inner_disabled = []
    for _ in progress(range(3), desc="outer", file=out):
        inner = progress(range(4), desc="inner", file=out)
        inner_disabled.append(inner.disable)
        assert list(inner) == [0, 1, 2, 3]
    assert inner_disabled == [True, True, True]
    assert "inner" not in out.getvalue()
    assert not progress(range(2), file=out).disable, "after the outer loop a bar shows again"


def test_outer_loop_left_early_releases_the_line(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    out = io.StringIO()
    with pytest.raises(RuntimeError):
        for _ in progress(range(3), file=out):
            raise RuntimeError("stop")
    assert not progress(range(2), file=out).disable


def test_leave_is_refused():
    with pytest.raises(TypeError, match="leave"):
        progress(range(2), leave=True)
