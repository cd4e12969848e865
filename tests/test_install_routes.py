"""The Makefile's two install routes: the default asks pip for no extra index (CI here does not
wait on an index it cannot reach); ``TORCH_INDEX=cpu`` adds PyTorch's CPU wheel index.

``make -n`` only prints the commands of the environment's stamp, for a virtual environment in a
temporary folder: nothing is installed and the checkout's ``.venv`` is not touched."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make on the PATH")


def install_commands(tmp_path: Path, *assignments: str, stamp: str) -> str:
    venv = tmp_path / "venv"
    result = subprocess.run(
        [
            "make",
            "-n",
            "--always-make",
            "-C",
            str(ROOT),
            f"VENV={venv}",
            *assignments,
            str(venv / stamp),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,  # asserted below, with make's stderr
    )
    assert result.returncode == 0, result.stderr
    assert not venv.exists(), "make -n created the environment"
    return result.stdout


def test_default_route_asks_no_extra_index(tmp_path):
    commands = install_commands(tmp_path, stamp=".installed")
    assert "pip install" in commands and "-r requirements.txt" in commands
    assert "--extra-index-url" not in commands and "--index-url" not in commands


def test_cpu_route_adds_pytorchs_cpu_index(tmp_path):
    commands = install_commands(tmp_path, "TORCH_INDEX=cpu", stamp=".installed-extra-index")
    assert f"--extra-index-url {CPU_INDEX}" in commands


def test_any_other_index(tmp_path):
    commands = install_commands(
        tmp_path, "TORCH_INDEX_URL=https://example.org/simple", stamp=".installed-extra-index"
    )
    assert "--extra-index-url https://example.org/simple" in commands
