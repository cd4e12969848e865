"""Put the two Colab editions on their own branches, where Colab opens them from.

Usage::

    python tools/colab_branches.py prepare --out DIR BRANCH=FOLDER [BRANCH=FOLDER ...]
    python tools/colab_branches.py push [--remote NAME] DIR

``make colab-branches`` runs ``prepare`` with ``colab=_build/colab/full`` and
``colab-student=_build/colab/student`` (built by ``make colab``); ``make push-colab`` runs
``push`` too (the publish workflow, on a version tag).

``prepare`` makes, for each branch, a git repository ``DIR/BRANCH`` holding one commit on branch
``BRANCH``: the edition's notebooks, in the book's folder layout, and a README naming the edition,
the version and the commit of the book it was built from. Nothing in the checkout changes.

``push`` fetches each prepared branch into the checkout's repository and pushes it to
``--remote`` (default ``origin``, whose credentials the checkout already holds) with
``--force``: each release replaces the branch with one commit, so the branches never grow a
history of generated files. The remote's URL is never printed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.release import commit, version

ROOT = Path(__file__).resolve().parents[1]
BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
#: The author of the generated commits.
IDENTITY = ("-c", "user.name=sxor release", "-c", "user.email=release@localhost")


def run_git(*args: str, cwd: Path) -> str:
    result = subprocess.run(
        ["git", *IDENTITY, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )
    if result.returncode != 0:
        # The arguments may hold a remote; say which command failed, not its arguments.
        raise SystemExit(f"git {args[0]} failed in {cwd}: {result.stderr.strip()[-500:]}")
    return result.stdout.strip()


def readme(branch: str, edition: str, current: str, built_from: str) -> str:
    return (
        f"# Attention, provably: {edition}\n\n"
        f"The notebooks of version {current} of the book, built from commit {built_from}.\n"
        "This branch is generated on each release and replaced by the next one; the book's\n"
        "sources are on the main branch. Open a notebook in Colab and run the cells from the top:\n"
        "its first cell installs the package at the version that made its outputs.\n\n"
        "Text and figures: CC BY 4.0. Code: MIT License.\n"
    )


def prepare(out: Path, editions: dict[str, Path]) -> list[Path]:
    """One repository per branch under ``out`` (emptied first); their paths."""
    for branch, folder in editions.items():
        if not BRANCH.fullmatch(branch):
            raise SystemExit(f"{branch!r} is not a branch name")
        if not folder.is_dir() or not any(folder.rglob("*.ipynb")):
            raise SystemExit(f"{folder}: no notebooks (run make colab first)")
    if out.exists():
        shutil.rmtree(out)
    current, built_from = version(), commit()
    repos = []
    for branch, folder in editions.items():
        repo = out / branch
        shutil.copytree(folder, repo, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        edition = "exercises only (Colab)" if "student" in branch else "the Colab edition"
        (repo / "README.md").write_text(readme(branch, edition, current, built_from))
        run_git("init", "-q", "-b", branch, cwd=repo)
        run_git("add", "-A", cwd=repo)
        run_git("commit", "-q", "-m", f"{edition}, version {current} ({built_from[:12]})", cwd=repo)
        repos.append(repo)
        count = len(list(repo.rglob("*.ipynb")))
        print(f"{repo}: branch {branch}, {count} notebooks")
    return repos


def push(prepared: Path, remote: str = "origin", checkout: Path = ROOT) -> list[str]:
    """Fetch each prepared branch into ``checkout`` and force-push it to ``remote``."""
    repos = sorted(p for p in prepared.iterdir() if (p / ".git").is_dir())
    if not repos:
        raise SystemExit(f"{prepared}: no prepared branches (make colab-branches)")
    pushed = []
    for repo in repos:
        branch = run_git("rev-parse", "--abbrev-ref", "HEAD", cwd=repo)
        run_git(
            "fetch",
            "-q",
            "--force",
            str(repo.resolve()),
            f"{branch}:refs/colab/{branch}",
            cwd=checkout,
        )
        run_git(
            "push",
            "-q",
            "--force",
            remote,
            f"refs/colab/{branch}:refs/heads/{branch}",
            cwd=checkout,
        )
        print(f"pushed branch {branch}")
        pushed.append(branch)
    return pushed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    making = commands.add_parser("prepare")
    making.add_argument("--out", type=Path, required=True)
    making.add_argument("editions", nargs="+", metavar="BRANCH=FOLDER")
    pushing = commands.add_parser("push")
    pushing.add_argument("--remote", default="origin")
    pushing.add_argument("prepared", type=Path)
    args = parser.parse_args(argv)
    if args.command == "prepare":
        editions = {}
        for item in args.editions:
            branch, sep, folder = item.partition("=")
            if not sep:
                raise SystemExit(f"expected BRANCH=FOLDER, got {item!r}")
            editions[branch] = Path(folder)
        prepare(args.out, editions)
    else:
        push(args.prepared, args.remote)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
