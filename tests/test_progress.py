"""Progress bars: silenced by TQDM_DISABLE (notebooks store none), one line at most while they run
(no wall of finished bars in Colab), inner bars of nested loops silent."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sxor.progress import NCOLS, progress

ROOT = Path(__file__).resolve().parents[1]


def bars_on(monkeypatch):
    """Neither switch that silences the bars, as in a reader's notebook. Called in the test body:
    pytest sets PYTEST_CURRENT_TEST again after the fixtures ran."""
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)


def test_disabled_by_environment(monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    bar = progress(range(3))
    assert bar.disable and list(bar) == [0, 1, 2]


def test_disabled_under_pytest(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert os.environ.get("PYTEST_CURRENT_TEST"), "pytest sets it while a test runs"
    assert progress(range(3), file=io.StringIO()).disable


def test_enabled_otherwise(monkeypatch):
    bars_on(monkeypatch)
    assert not progress(range(3), file=io.StringIO()).disable
    monkeypatch.setenv("TQDM_DISABLE", "0")
    assert not progress(range(3), file=io.StringIO()).disable


def visible_lines(stream: str) -> list[str]:
    """What a notebook shows for a stream: a carriage return restarts the line."""
    lines = [line.split("\r")[-1].rstrip() for line in stream.split("\n")]
    return [line for line in lines if line]


def test_consecutive_bars_share_one_line_and_vanish(monkeypatch):
    bars_on(monkeypatch)
    out = io.StringIO()
    for cell in range(5):  # a sweep calls progress once per grid cell
        assert sum(progress(range(50), desc=f"cell {cell}", file=out, mininterval=0)) == 1225
    text = out.getvalue()
    assert "cell 4" in text, "the bar was drawn"
    assert "\n" not in text, "a bar wrote a new line"
    assert visible_lines(text) == [], "a finished bar stayed on the page"
    assert max(len(part) for part in text.split("\r")) <= NCOLS


def test_nested_bars_show_only_the_outer_one(monkeypatch):
    bars_on(monkeypatch)
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
    bars_on(monkeypatch)
    out = io.StringIO()
    with pytest.raises(RuntimeError):
        for _ in progress(range(3), file=out):
            raise RuntimeError("stop")
    assert not progress(range(2), file=out).disable


def test_leave_is_refused():
    with pytest.raises(TypeError, match="leave"):
        progress(range(2), leave=True)


def test_hand_run_nbval_needs_no_environment_variable(tmp_path):
    """A notebook whose cell runs a bar, stored without progress output, passes nbval run by hand
    with neither TQDM_DISABLE nor anything else set: the kernel's bar stays off its stderr."""
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbval")
    source = (
        "from sxor.progress import progress\n"
        "import time\n"
        "total = 0\n"
        "for i in progress(range(4), desc='sweep', mininterval=0):\n"
        "    time.sleep(0.05)\n"
        "    total += i\n"
        "print(total)"
    )
    cell = nbformat.v4.new_code_cell(
        source,
        execution_count=1,
        outputs=[nbformat.v4.new_output("stream", name="stdout", text="6\n")],
    )
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, tmp_path / "bar.ipynb")
    env = {k: v for k, v in os.environ.items() if k not in ("TQDM_DISABLE", "PYTEST_CURRENT_TEST")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--nbval",
            "--nbval-current-env",
            "-q",
            "-p",
            "no:cacheprovider",
            "bar.ipynb",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,  # asserted below, with pytest's output
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
