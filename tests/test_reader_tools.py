"""The tools behind the weekly and nightly checks: ``tools/reader_check.py`` (a reader's
runtime: the package from a wheel, the newest dependencies, the notebooks outside the checkout)
and ``tools/loose_requirements.py`` (requirements.txt without its pins). The full reader check
downloads the newest releases and runs every notebook, so it runs as `make reader-check`, not
here; its last run on this machine is committed as benchmarks/reader-check.txt."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tools import loose_requirements, reader_check

ROOT = Path(__file__).resolve().parents[1]


def test_loose_requirements_drop_every_pin_but_the_kept_bound():
    text = (ROOT / "requirements.txt").read_text()
    loose = loose_requirements.loosen(text)
    names = [line for line in loose.splitlines() if line and not line.startswith("#")]
    pinned = re.findall(r"^([A-Za-z0-9][\w.-]*)==", text, re.MULTILINE)
    assert len([n for n in names if not n.startswith("-")]) == len(pinned)
    assert "-e ." in names and "jupyter-book<2" in names and "torch" in names
    assert not [n for n in names if n != "jupyter-book<2" and re.search(r"[<>=~!]", n)]


@pytest.mark.parametrize(
    "line, loose",
    [
        ("numpy==2.4.6", "numpy"),
        ("Jupyter-Book==1.0.4.post1", "jupyter-book<2"),
        ("pkg[extra]>=1,<2 ; python_version < '3.12'", "pkg[extra]"),
        ("torch==2.13.0  # a comment", "torch"),
        ("-e .", "-e ."),
        ("--extra-index-url https://example.org", "--extra-index-url https://example.org"),
    ],
)
def test_loosen_one_line(line, loose):
    assert loose_requirements.loosen(line).strip() == loose


def test_loosen_refuses_what_it_cannot_read():
    with pytest.raises(ValueError, match="not a requirement line"):
        loose_requirements.loosen("??? what")


def test_the_reader_check_builds_outside_the_checkout(tmp_path):
    assert reader_check.outside_checkout(Path(tempfile.gettempdir()) / "x")
    assert not reader_check.outside_checkout(ROOT / "_build" / "x")
    assert not reader_check.outside_checkout(ROOT)
    src = reader_check.copy_sources(tmp_path)
    assert (src / "pyproject.toml").is_file() and (src / "LICENSE").is_file()
    assert (src / "sxor" / "_version.py").is_file()
    assert not list(src.rglob("__pycache__")) and not list(src.rglob("*.png"))
    copies = reader_check.copy_notebooks(ROOT / "book", tmp_path)
    book = sorted((ROOT / "book").rglob("*.ipynb"))
    assert len(copies) == len(book) > 10
    assert (tmp_path / "nbval_sanitize.cfg").is_file()
    assert all(reader_check.outside_checkout(c) for c in copies)


def test_the_reader_check_installs_the_newest_releases_from_the_wheel(tmp_path):
    python = tmp_path / "venv" / "bin" / "python"
    build, install = reader_check.install_commands(python, tmp_path / "dist", tmp_path, None)
    assert build[4:6] == ["wheel", "--no-deps"]
    assert "WHEEL[widgets]" in install
    for name in ("torch", "numpy", "matplotlib", "nbval"):
        assert name in install  # by name: no pin, the newest release
    assert not [a for a in install if re.search(r"[<>=]", a)]
    _, cpu = reader_check.install_commands(
        python, tmp_path, tmp_path, "https://download.pytorch.org/whl/cpu"
    )
    assert cpu[cpu.index("--extra-index-url") + 1] == "https://download.pytorch.org/whl/cpu"
    command = reader_check.nbval_command(python, tmp_path)
    assert command[:4] == [str(python), "-m", "pytest", "--nbval"]
    assert "--nbval-current-env" in command and str(tmp_path / "notebooks") == command[-1]
    assert command[command.index("--nbval-sanitize-with") + 1] == str(
        tmp_path / "nbval_sanitize.cfg"
    )


def test_the_reader_check_reports_versions_of_an_environment():
    text = reader_check.versions(Path(sys.executable))
    assert text.startswith("python 3.")
    assert re.search(r"^torch \d", text, re.MULTILINE)


def test_the_committed_reader_check_is_complete():
    """The last reader check run on this machine (benchmarks/reader-check.txt) names what it
    installed, ran every notebook of the book and states nbval's result, with the output lines
    of every failing cell (what changed under the newest releases)."""
    report = (ROOT / "benchmarks" / "reader-check.txt").read_text()
    for name in ("python 3.", "sxor 0.", "torch ", "numpy ", "matplotlib "):
        assert re.search(rf"^{re.escape(name)}", report, re.MULTILINE), name
    count = int(re.search(r"^(\d+) notebooks from book", report, re.MULTILINE).group(1))
    assert count == len(list((ROOT / "book").rglob("*.ipynb")))
    status = int(re.search(r"^nbval exit status (\d+)", report, re.MULTILINE).group(1))
    closing = re.search(r"^(?:(\d+) failed, )?(\d+) passed", report, re.MULTILINE)
    assert closing and (status == 0) == (closing.group(1) is None)
    failed = re.findall(r"^FAILED (\S+)", report, re.MULTILINE)
    assert len(failed) == int(closing.group(1) or 0)
    assert "\x1b[" not in report


def test_summary_keeps_failures_and_their_differing_lines():
    output = (
        "....F.\n=== FAILURES ===\nCell 12: Cell outputs differ\n"
        "  - stored 1.0e+00\n  + new < 1e-09\n    same line\n"
        "\x1b[31mFAILED\x1b[0m nb.ipynb::Cell 12 - failed\n1 failed, 5 passed in 3.0s\n"
    )
    assert reader_check.summary_lines(output) == [
        "FAILED nb.ipynb::Cell 12 - failed",
        "Cell 12: Cell outputs differ",
        "  - stored 1.0e+00",
        "  + new < 1e-09",
        "1 failed, 5 passed in 3.0s",
    ]


def test_make_reader_check_passes_the_cpu_index(tmp_path):
    result = subprocess.run(
        ["make", "-n", "-C", str(ROOT), "reader-check", "TORCH_INDEX=cpu"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,  # asserted below
    )
    assert result.returncode == 0, result.stderr
    assert "tools/reader_check.py" in result.stdout
    assert "--index-url https://download.pytorch.org/whl/cpu" in result.stdout
