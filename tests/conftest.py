"""Fixtures shared by several test files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tools import reader_check


@pytest.fixture(scope="session")
def sxor_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel of ``sxor`` built offline from a copy of the working tree (the build leaves
    nothing in the checkout), from the same files the reader check builds it from."""
    folder = tmp_path_factory.mktemp("wheel")
    src = reader_check.copy_sources(folder)
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"),
            *("--disable-pip-version-check", "-w", str(folder), str(src)),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = folder.glob("sxor-*.whl")
    return wheel
