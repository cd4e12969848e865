"""Progress bars are silenced by TQDM_DISABLE, so notebooks store no progress widgets."""

from __future__ import annotations

from sxor.progress import progress


def test_disabled_by_environment(monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    bar = progress(range(3))
    assert bar.disable and list(bar) == [0, 1, 2]


def test_enabled_otherwise(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert not progress(range(3)).disable
    monkeypatch.setenv("TQDM_DISABLE", "0")
    assert not progress(range(3)).disable
