"""Command line: ``python -m sxor list`` and ``python -m sxor run NAME [--size full] [--device cuda]``.

``run`` calls :func:`sxor.experiments.run` and writes ``NAME.json`` (records plus command,
device, versions, date and wall time) and, when the experiment has a plot, ``NAME.png``, by
default into :data:`sxor.results.RESULTS_DIR`, where :func:`sxor.results.committed_results`
reads them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import experiments
from .results import RESULTS_DIR, save_results


def main(argv: list[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: the process's arguments); return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m sxor", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the named experiments")
    run = sub.add_parser("run", help="run one experiment and write its results file and figure")
    run.add_argument("name")
    run.add_argument("--size", choices=list(experiments.SIZES), default="ci")
    run.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    run.add_argument("--out", type=Path, default=RESULTS_DIR, help=f"output folder (default {RESULTS_DIR})")
    args = parser.parse_args(argv)

    if args.command == "list":
        for name, exp in sorted(experiments.load_all().items()):
            print(f"{name:28s} {exp.description}")
        return 0

    exp = experiments.get(args.name)
    results = experiments.run(exp.name, args.size, args.device)
    path = save_results(args.out / f"{exp.name}.json", results)
    print(f"wrote {path} ({results['meta']['wall_seconds']:.0f} s)")
    if exp.plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        figure = exp.plot(results)
        figure.savefig(path.with_suffix(".png"), dpi=120, bbox_inches="tight")
        print(f"wrote {path.with_suffix('.png')}")
    return 0
