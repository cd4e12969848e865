"""Command line: ``python -m sxor list`` and ``python -m sxor run NAME [--size full] [--device cuda]``.

``run`` calls :func:`sxor.experiments.run` and writes ``NAME.json`` (records plus command,
device, versions, date and wall time) and, when the experiment has a plot, ``NAME.png``. A
full-size run goes by default into :data:`sxor.results.RESULTS_DIR`, where
:func:`sxor.results.committed_results` reads it; a CI-size run goes by default into
``./sxor-ci-results`` (:data:`CI_OUT`), so it never replaces a committed full run. Whatever
``--out`` says, a results file made by a full run is not replaced by a CI run unless
``--replace-full`` is given.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import experiments
from .results import RESULTS_DIR, save_results

#: Default output folder of a CI-size run (relative to the working directory).
CI_OUT = Path("sxor-ci-results")


def _size_of(path: Path) -> str | None:
    """The ``params.size`` of an existing results file (None when absent or unreadable)."""
    import json

    try:
        size = json.loads(path.read_text()).get("params", {}).get("size")
    except (OSError, ValueError, AttributeError):
        return None
    return size if isinstance(size, str) else None


def main(argv: list[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: the process's arguments); return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m sxor", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the named experiments")
    run = sub.add_parser("run", help="run one experiment and write its results file and figure")
    run.add_argument("name")
    run.add_argument("--size", choices=list(experiments.SIZES), default="ci")
    run.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    run.add_argument("--out", type=Path, default=None,
                     help=f"output folder (default {RESULTS_DIR} for --size full, ./{CI_OUT} for --size ci)")
    run.add_argument("--replace-full", action="store_true",
                     help="allow a CI run to replace a results file made by a full run")
    args = parser.parse_args(argv)

    if args.command == "list":
        for name, exp in sorted(experiments.load_all().items()):
            print(f"{name:28s} {exp.description}")
        return 0

    exp = experiments.get(args.name)
    out = args.out if args.out is not None else (RESULTS_DIR if args.size == "full" else CI_OUT)
    target = out / f"{exp.name}.json"
    if args.size != "full" and not args.replace_full and _size_of(target) == "full":
        parser.error(f"{target} holds a full-size run; a {args.size} run would replace it: "
                     "choose another --out, or pass --replace-full")
    results = experiments.run(exp.name, args.size, args.device)
    path = save_results(target, results)
    print(f"wrote {path} ({results['meta']['wall_seconds']:.0f} s)")
    if exp.plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        figure = exp.plot(results)
        figure.savefig(path.with_suffix(".png"), dpi=120, bbox_inches="tight")
        print(f"wrote {path.with_suffix('.png')}")
    return 0
