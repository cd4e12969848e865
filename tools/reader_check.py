"""Run every notebook as a reader would: the package from a built wheel, the newest releases of
its dependencies, in a fresh environment outside the checkout.

Usage: ``python tools/reader_check.py [--python PY] [--index-url URL] [--notebooks DIR]
[--report FILE] [--keep]`` (``make reader-check`` runs it; the weekly workflow with Python 3.13,
Colab's, and PyTorch's CPU index).

1. A fresh virtual environment for ``--python`` (default: this interpreter) in a temporary folder
   outside the checkout.
2. The package built as a wheel there, from a copy of ``pyproject.toml``, ``README.md``,
   ``LICENSE`` and ``sxor/`` (the checkout is not written to).
3. Installed from that wheel, with the newest releases of torch, numpy and matplotlib and of the
   notebook runner (pytest, nbval, ipykernel), nothing pinned: what a new reader gets.
   ``--index-url`` adds an index (``https://download.pytorch.org/whl/cpu`` for the CPU wheel).
4. Every notebook under ``--notebooks`` (default ``book/``) copied beside the nbval sanitize
   rules into that folder and run there under nbval, which compares every printed output with
   the stored one (``tests/nbval_sanitize.cfg``).

It prints what it installed (Python, the platform, the versions of sxor, torch, numpy,
matplotlib, nbval), the notebooks' result and the wall time, and writes the same lines to
``--report``. Exit status: nbval's (0 when every notebook matches), or 2 when the environment
could not be made.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Installed unpinned beside the wheel: the libraries the chapters use and the notebook runner.
NEWEST = ["torch", "numpy", "matplotlib", "pytest", "nbval", "ipykernel"]
#: What the report names, with the version installed.
REPORTED = ["sxor", "torch", "numpy", "matplotlib", "mpmath", "ipywidgets", "nbval", "pytest"]


def outside_checkout(path: Path) -> bool:
    path = path.resolve()
    return path != ROOT and ROOT not in path.parents


def copy_sources(into: Path) -> Path:
    """The files a wheel is built from, copied to ``into/src``."""
    src = into / "src"
    src.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "sxor",
        src / "sxor",
        ignore=shutil.ignore_patterns("__pycache__", "*.png", "*.so", "_build*"),
    )
    return src


def copy_notebooks(notebooks: Path, into: Path) -> list[Path]:
    """Every notebook under ``notebooks`` copied to ``into/notebooks`` (same relative paths)."""
    copies = []
    for path in sorted(notebooks.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        target = into / "notebooks" / path.relative_to(notebooks)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
        copies.append(target)
    shutil.copy(ROOT / "tests" / "nbval_sanitize.cfg", into / "nbval_sanitize.cfg")
    return copies


def install_commands(venv_python: Path, wheel_dir: Path, src: Path, index_url: str | None):
    """The pip commands that build the wheel and install it with the newest dependencies."""
    pip = [str(venv_python), "-m", "pip", "--disable-pip-version-check"]
    extra = ["--extra-index-url", index_url] if index_url else []
    return [
        [*pip, "wheel", "--no-deps", "-q", "-w", str(wheel_dir), str(src)],
        [*pip, "install", "-q", *extra, "WHEEL[widgets]", *NEWEST],
    ]


def nbval_command(venv_python: Path, folder: Path) -> list[str]:
    return [
        str(venv_python),
        "-m",
        "pytest",
        "--nbval",
        "--nbval-current-env",
        "--nbval-cell-timeout=300",
        "--nbval-sanitize-with",
        str(folder / "nbval_sanitize.cfg"),
        "-p",
        "no:cacheprovider",
        "-q",
        str(folder / "notebooks"),
    ]


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def summary_lines(output: str) -> list[str]:
    """What the report keeps of nbval's output: each FAILED line, the differing lines of each
    failure (nbval's ``- stored`` / ``+ new`` diff), and pytest's closing line."""
    lines = ANSI.sub("", output).strip().splitlines()
    failed = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
    diffs = [
        line for line in lines if re.match(r"^\s+[-+] \S", line) or "Cell outputs differ" in line
    ]
    return failed + diffs + lines[-1:]


def versions(venv_python: Path) -> str:
    code = (
        "import importlib.metadata as m, platform, sys\n"
        f"print('python', platform.python_version(), platform.platform())\n"
        f"for n in {REPORTED!r}:\n"
        "    try: print(n, m.version(n))\n"
        "    except m.PackageNotFoundError: print(n, 'not installed')\n"
    )
    result = subprocess.run(
        [str(venv_python), "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return result.stdout


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--index-url", default=None)
    parser.add_argument("--notebooks", type=Path, default=ROOT / "book")
    parser.add_argument("--report", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    start = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="sxor-reader-"))
    if not outside_checkout(work):
        raise SystemExit(f"{work} is inside the checkout; set TMPDIR elsewhere")
    say(f"reader check, {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}")
    try:
        venv = work / "venv"
        subprocess.run([args.python, "-m", "venv", str(venv)], check=True, timeout=300)
        python = venv / "bin" / "python"
        src, wheels = copy_sources(work), work / "dist"
        build, install = install_commands(python, wheels, src, args.index_url)
        subprocess.run(build, check=True, timeout=900)
        (wheel,) = wheels.glob("sxor-*.whl")
        install = [str(wheel) + "[widgets]" if a == "WHEEL[widgets]" else a for a in install]
        subprocess.run(install, check=True, timeout=3600)
        say(f"installed from the wheel {wheel.name}, the rest newest ({' '.join(NEWEST)})")
        if args.index_url:
            say(f"extra index: {args.index_url}")
        for line in versions(python).splitlines():
            say(line)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, ValueError) as error:
        say(f"the environment could not be made: {error}")
        write(args.report, lines)
        return 2
    notebooks = copy_notebooks(args.notebooks, work)
    say(f"{len(notebooks)} notebooks from {display(args.notebooks)}, run in {work}")
    result = subprocess.run(
        nbval_command(python, work),
        cwd=work,
        capture_output=True,
        text=True,
        timeout=7200,
        check=False,  # nbval's status is the result, reported below
        env={**env_without_venv(), "TQDM_DISABLE": "1"},
    )
    for line in summary_lines(result.stdout):
        say(line)
    say(f"nbval exit status {result.returncode}; wall time {time.monotonic() - start:.0f} s")
    if result.returncode != 0:
        print(ANSI.sub("", result.stdout)[-20000:])
    write(args.report, lines)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return result.returncode


def display(path: Path) -> str:
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if ROOT in resolved.parents else str(resolved)


def env_without_venv() -> dict[str, str]:
    """This process's environment less the calling virtual environment (the kernel must be the
    fresh environment's)."""
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    sys.path.insert(0, str(ROOT))
    from tools.cpu_kernels import pin

    pin(
        env
    )  # PyTorch's AVX2 kernels, as the Colab editions' install cell asks (tools/cpu_kernels.py)
    return env


def write(report: Path | None, lines: list[str]) -> None:
    if report is not None:
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
