"""Command line: ``python -m sxor list`` and ``python -m sxor run NAME [--size full] [--device cuda]``.

``run`` writes ``results/NAME.json`` (records plus command, device, versions and date) and, when
the experiment has a plot, ``results/NAME.png``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from . import experiments
from .data import default_device
from .results import load_results, provenance, save_results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sxor", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the named experiments")
    run = sub.add_parser("run", help="run one experiment and write its results file and figure")
    run.add_argument("name")
    run.add_argument("--size", choices=["ci", "full"], default="ci")
    run.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    run.add_argument("--out", type=Path, default=Path("results"), help="output folder")
    args = parser.parse_args(argv)

    if args.command == "list":
        for name, exp in sorted(experiments.load_all().items()):
            print(f"{name:28s} {exp.description}")
        return 0

    exp = experiments.get(args.name)
    device = torch.device(args.device) if args.device else default_device()
    params, records = exp.run(args.size, device)
    params = {"size": args.size, **params}
    path = save_results(args.out / f"{exp.name}.json", exp.name, params, records, provenance(device))
    print(f"wrote {path}")
    if exp.plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        figure = exp.plot(load_results(path))
        figure.savefig(path.with_suffix(".png"), dpi=120, bbox_inches="tight")
        print(f"wrote {path.with_suffix('.png')}")
    return 0
