"""Run a Colab edition under nbval outside the checkout, as a reader's Colab runtime would.

Usage: ``python tools/colab_check.py [EDITION_DIR] [-- PYTEST_ARGS ...]`` (``make colab-check``
runs it on ``_build/colab/full`` after ``make colab``).

The edition and the sanitize file (``tests/nbval_sanitize.cfg``) are copied to a fresh temporary
folder outside the repository and pytest runs there, in this Python environment: nothing new is
installed, ``sxor`` is the installed package, and no path of the checkout is on ``sys.path`` or is
the working directory. The kernels get the CPU kernels the outputs were made with, as in the
book's own run (``tools/cpu_kernels.py``); the Colab editions' install cell asks for the same. A notebook that reads a file of the repository (rather than the package's
data, ``sxor.results.committed_results``) fails here. nbval compares every stored output with
the fresh one, exactly as CI does for the book's own notebooks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tools.cpu_kernels import pin  # noqa: E402  (after the path is set)

SANITIZE = ROOT / "tests" / "nbval_sanitize.cfg"
DEFAULT_ARGS = ["-n", "2", "--dist", "loadfile", "--nbval-cell-timeout=300"]


def check(edition: Path, pytest_args: list[str]) -> int:
    edition = Path(edition).resolve()
    notebooks = sorted(edition.rglob("*.ipynb"))
    if not notebooks:
        raise SystemExit(f"{edition}: no notebooks (run `make colab` first)")
    with tempfile.TemporaryDirectory(prefix="sxor-colab-check-") as tmp:
        work = Path(tmp)
        if ROOT in work.parents:
            raise SystemExit(f"{work} lies inside the checkout; set TMPDIR elsewhere")
        shutil.copytree(edition, work / "edition")
        shutil.copy(SANITIZE, work / "sanitize.cfg")
        env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
        env["TQDM_DISABLE"] = "1"
        pin(env)  # PyTorch's AVX2 kernels, as for the book's own nbval run (tools/cpu_kernels.py)
        probe = subprocess.run(
            [sys.executable, "-c", "import sxor, sys; print(sxor.__file__)"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        print(
            f"{len(notebooks)} notebooks from {edition} run in {work}; "
            f"sxor from {probe.stdout.strip()}"
        )
        command = [
            sys.executable,
            "-m",
            "pytest",
            "--nbval",
            "--nbval-current-env",
            "--nbval-sanitize-with",
            "sanitize.cfg",
            "-p",
            "no:cacheprovider",
            "-q",
            *pytest_args,
            "edition",
        ]
        return subprocess.run(command, cwd=work, env=env, check=False).returncode


def main(argv: list[str]) -> int:
    args = argv[1:]
    extra = DEFAULT_ARGS
    if "--" in args:
        split = args.index("--")
        args, extra = args[:split], args[split + 1 :]
    edition = Path(args[0]) if args else ROOT / "_build" / "colab" / "full"
    return check(edition, extra)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
