"""Mutation testing over a committed list of hand-made mutations (``tools/mutations.json``).

Each mutation names a file of the package, a snippet that occurs exactly once in it, and the
snippet to put in its place (a changed constant, sign, index, comparison or default). For every
mutation the runner copies the package and the unit tests to a temporary directory, applies the
mutation to the copy (never to the working tree), and runs the unit tests there
(``pytest tests -x -q -p no:xdist``, no notebooks) with ``PYTHONPATH`` pointing at the copy and a
per-mutant timeout. A mutant is *killed* when the tests fail (or time out), and *survives* when
they pass. Mutations flagged ``"equivalent": true`` change no behaviour the package promises (the
``reason`` says why); they are not run unless ``--all`` is given and do not count in the score.

Usage (from the repository root)::

    python tools/mutate.py                 # every non-equivalent mutation, 2 at a time
    python tools/mutate.py --jobs 1 --only metrics analysis   # ids or files containing a word
    python tools/mutate.py --list          # print the list and check every snippet is found
    python tools/mutate.py --only ID ... --tests tests/xor/test_contracts.py   # a quick lower bound

With ``--tests`` only the given test files run against each mutant: a mutant they kill is killed
by the whole suite too, so the score is a lower bound of the full one (quick, for new mutants).

The score printed at the end is ``killed / non-equivalent``; the exit status is 1 when some
non-equivalent mutant survives or some snippet is no longer found (the list is stale).
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIST = ROOT / "tools" / "mutations.json"
#: What a temporary copy needs: the package, the unit tests, and the pytest configuration.
COPY = ["sxor", "tests", "tools", "benchmarks", "pyproject.toml"]
#: Unit-test files the runner leaves out (static checks of the notebooks, not of the package).
#: Checks of the book, the site and the packaging, not unit tests of the core modules.
IGNORE = [
    "tests/test_notebooks.py",
    "tests/test_site.py",
    "tests/test_package_data.py",
    "tests/test_portability.py",
]


def load(path: Path = LIST) -> list[dict]:
    """The mutations, each with ``id``, ``file``, ``original``, ``mutated``, ``reason``, ``equivalent``."""
    mutations = json.loads(path.read_text())["mutations"]
    seen = set()
    for mu in mutations:
        missing = {"id", "file", "original", "mutated", "reason"} - set(mu)
        if missing:
            raise ValueError(f"mutation {mu.get('id', '?')} lacks {sorted(missing)}")
        if mu["id"] in seen:
            raise ValueError(f"duplicate mutation id {mu['id']}")
        if mu["original"] == mu["mutated"]:
            raise ValueError(f"mutation {mu['id']} changes nothing")
        seen.add(mu["id"])
        mu.setdefault("equivalent", False)
    return mutations


def stale(mu: dict, root: Path = ROOT) -> str | None:
    """Why the mutation cannot be applied to the tree at ``root`` (None when it can)."""
    path = root / mu["file"]
    if not path.is_file():
        return f"{mu['file']} does not exist"
    count = path.read_text().count(mu["original"])
    if count != 1:
        return f"the original snippet occurs {count} times in {mu['file']} (must be exactly once)"
    return None


def copy_tree(dest: Path) -> None:
    """Copy the package, the tests and the pytest configuration to ``dest`` (no caches)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for name in COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        else:
            shutil.copy2(src, dest / name)


def run_tests(
    where: Path, timeout: float, python: str = sys.executable, tests: list[str] | None = None
) -> tuple[str, float, str]:
    """Run the unit tests in ``where`` (only the files ``tests`` when given); return ``(outcome,
    seconds, last line of output)`` with outcome ``passed``, ``failed``, ``error`` (collection or
    import error) or ``timeout``."""
    cmd = [
        python,
        "-m",
        "pytest",
        *(tests or ["tests"]),
        "-x",
        "-q",
        "-p",
        "no:xdist",
        "-p",
        "no:cacheprovider",
    ]
    cmd += [f"--ignore={p}" for p in IGNORE]
    env = {
        **os.environ,
        "PYTHONPATH": str(where),
        "TQDM_DISABLE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd,
            cwd=where,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,  # the exit status is the outcome, read below
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - start, f"no result within {timeout:.0f} s"
    seconds = time.perf_counter() - start
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    last = lines[-1] if lines else proc.stderr.strip()[-200:]
    outcome = {0: "passed", 1: "failed"}.get(proc.returncode, "error")
    return outcome, seconds, last


def run_mutant(mu: dict, timeout: float, tests: list[str] | None = None) -> dict:
    """Apply one mutation to a fresh copy and run the unit tests; the record of the outcome."""
    with tempfile.TemporaryDirectory(prefix="sxor-mutant-") as tmp:
        where = Path(tmp)
        copy_tree(where)
        reason = stale(mu, where)
        if reason is not None:
            return {**mu, "outcome": "stale", "seconds": 0.0, "detail": reason}
        path = where / mu["file"]
        path.write_text(path.read_text().replace(mu["original"], mu["mutated"], 1))
        outcome, seconds, last = run_tests(where, timeout, tests=tests)
    return {**mu, "outcome": outcome, "seconds": seconds, "detail": last}


def select(mutations: list[dict], only: list[str] | None, everything: bool) -> list[dict]:
    chosen = [mu for mu in mutations if everything or not mu["equivalent"]]
    if only:
        chosen = [
            mu for mu in chosen if any(word == mu["id"] or word in mu["file"] for word in only)
        ]
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", help="mutation ids, or words of the file path, to run")
    parser.add_argument(
        "--all", action="store_true", help="also run the mutations flagged equivalent"
    )
    parser.add_argument("--jobs", type=int, default=2, help="mutants run in parallel (default 2)")
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds per mutant (default 300)"
    )
    parser.add_argument(
        "--list", action="store_true", help="list the mutations and check the snippets"
    )
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the run on the unmutated copy"
    )
    parser.add_argument("--json", type=Path, help="write the per-mutant records to this file")
    parser.add_argument(
        "--tests", nargs="+", help="run only these test files (the score is then a lower bound)"
    )
    args = parser.parse_args(argv)

    mutations = load()
    if args.list:
        problems = 0
        for mu in mutations:
            why = stale(mu)
            problems += why is not None
            flag = "equivalent " if mu["equivalent"] else ""
            print(f"{mu['id']:28s} {mu['file']:30s} {flag}{why or 'ok'}")
        print(
            f"{len(mutations)} mutations, {sum(mu['equivalent'] for mu in mutations)} flagged equivalent, "
            f"{problems} stale"
        )
        return 1 if problems else 0

    start = time.perf_counter()
    if not args.no_baseline:
        with tempfile.TemporaryDirectory(prefix="sxor-baseline-") as tmp:
            copy_tree(Path(tmp))
            outcome, seconds, last = run_tests(Path(tmp), args.timeout, tests=args.tests)
        print(f"baseline (no mutation): {outcome} in {seconds:.0f} s: {last}", flush=True)
        if outcome != "passed":
            print("the unit tests must pass before mutating; stopping")
            return 2

    chosen = select(mutations, args.only, args.all)
    records = []
    with futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        jobs = {pool.submit(run_mutant, mu, args.timeout, args.tests): mu for mu in chosen}
        for job in futures.as_completed(jobs):
            rec = job.result()
            records.append(rec)
            mark = {"failed": "killed", "timeout": "killed", "error": "killed"}.get(
                rec["outcome"], rec["outcome"]
            )
            if rec["outcome"] == "passed":
                mark = "SURVIVED" if not rec["equivalent"] else "survived (equivalent)"
            print(
                f"[{len(records):3d}/{len(chosen)}] {mark:22s} {rec['id']:28s} {rec['seconds']:6.1f} s  "
                f"{rec['detail'][:90]}",
                flush=True,
            )

    counted = [r for r in records if not r["equivalent"]]
    killed = [r for r in counted if r["outcome"] in ("failed", "timeout", "error")]
    survived = [r for r in counted if r["outcome"] == "passed"]
    broken = [r for r in records if r["outcome"] == "stale"]
    wall = time.perf_counter() - start
    print()
    for r in survived:
        print(
            f"SURVIVED {r['id']}: {r['file']}: {r['original']!r} -> {r['mutated']!r} ({r['reason']})"
        )
    for r in broken:
        print(f"STALE {r['id']}: {r['detail']}")
    score = len(killed) / len(counted) if counted else float("nan")
    print(
        f"mutation score: {len(killed)}/{len(counted)} non-equivalent mutants killed ({score:.0%}); "
        f"{len(survived)} survived, {len(broken)} stale, "
        f"{sum(mu['equivalent'] for mu in mutations)} flagged equivalent; wall time {wall:.0f} s"
    )
    if args.json:
        args.json.write_text(json.dumps(sorted(records, key=lambda r: r["id"]), indent=1) + "\n")
    return 1 if survived or broken else 0


if __name__ == "__main__":
    sys.exit(main())
