"""Command line: ``python -m sxor list``, ``python -m sxor run NAME [--size full] [--device cuda]`` and
``python -m sxor certify FILE``.

``run`` calls :func:`sxor.experiments.run` and writes ``NAME.json`` (records plus command,
device, versions, date and wall time) and, when the experiment has a plot, ``NAME.png``. A
full-size run goes by default into :data:`sxor.results.RESULTS_DIR`, where
:func:`sxor.results.committed_results` reads it; a CI-size run goes by default into
``./sxor-ci-results`` (:data:`CI_OUT`), so it never replaces a committed full run. Whatever
``--out`` says, a results file made by a full run is not replaced by a CI run unless
``--replace-full`` is given.

``python -m sxor certify FILE [--tau T]`` builds the softmax network of chapter 13 for the dataset
in ``FILE`` (formats: :mod:`sxor.interp.datafile`) and prints its block count, ``tau_max`` and the
rigorous certificate (:func:`sxor.interp.certificate.softmax_certificate`). Exit status 0 when the
certificate proves exact interpolation, 1 when it does not, 2 when the file is refused (the reason
is printed).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, cast

from . import experiments
from .results import RESULTS_DIR, save_results

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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
    run.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"output folder (default {RESULTS_DIR} for --size full, ./{CI_OUT} for --size ci)",
    )
    run.add_argument(
        "--replace-full",
        action="store_true",
        help="allow a CI run to replace a results file made by a full run",
    )
    cert = sub.add_parser(
        "certify", help="build the softmax network for a dataset file and certify it"
    )
    cert.add_argument("file", type=Path, help="a .json or .npz dataset (see sxor.interp.datafile)")
    cert.add_argument(
        "--tau",
        default=None,
        help="temperature, a rational such as 1/10 (default: about tau_max / 2)",
    )
    args = parser.parse_args(argv)
    if args.command == "certify":
        return certify(args.file, args.tau)

    if args.command == "list":
        for name, exp in sorted(experiments.load_all().items()):
            print(f"{name:28s} {exp.description}")
        return 0

    exp = experiments.get(args.name)
    out = args.out if args.out is not None else (RESULTS_DIR if args.size == "full" else CI_OUT)
    target = out / f"{exp.name}.json"
    if args.size != "full" and not args.replace_full and _size_of(target) == "full":
        parser.error(
            f"{target} holds a full-size run; a {args.size} run would replace it: "
            "choose another --out, or pass --replace-full"
        )
    results = experiments.run(exp.name, args.size, args.device)
    path = save_results(target, results)
    print(f"wrote {path} ({results['meta']['wall_seconds']:.0f} s)")
    if exp.plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        # Experiment.plot is documented to return a Figure (typed as object in sxor.experiments)
        figure = cast("Figure", exp.plot(results))
        figure.savefig(path.with_suffix(".png"), dpi=120, bbox_inches="tight")
        print(f"wrote {path.with_suffix('.png')}")
    return 0


def certify(file: Path, tau: str | None = None) -> int:
    """``python -m sxor certify``: print the block count, ``tau_max`` and the certificate; return the exit status."""
    import sys
    import time
    from fractions import Fraction

    from .interp.construct import construct, softmax_certificate
    from .interp.datafile import load_dataset

    try:
        X, Y, file_tau = load_dataset(file)
        chosen_tau = file_tau  # --tau, when given, replaces the file's
        if tau is not None:
            try:
                chosen_tau = Fraction(tau)
            except (ValueError, ZeroDivisionError):
                raise ValueError(f"--tau {tau!r} is not a rational number") from None
        t0 = time.perf_counter()
        T = construct(X, Y, attention="softmax", tau=chosen_tau)
        t1 = time.perf_counter()
        c = softmax_certificate(T, X, Y)
        t2 = time.perf_counter()
    except ValueError as err:
        print(f"refused: {err}", file=sys.stderr)
        return 2
    d = X[0].shape[1]
    print(
        f"dataset {file}: N = {len(X)} sequences, n_j in [{min(len(x) for x in X)}, {max(len(x) for x in X)}], "
        f"m_j in [{min(len(y) for y in Y)}, {max(len(y) for y in Y)}], d = {d}"
    )
    print(
        f"softmax network: {T.num_blocks} blocks ({T.info.get('route')} route), {T.num_parameters} parameters; "
        f"built in {t1 - t0:.2f} s"
    )
    print(f"tau_max = {T.tau_max:.6g}; tau = {T.tau} (= {float(T.tau):.6g})")
    print(
        f"certificate ({t2 - t1:.2f} s): hausdorff_bound = {c['hausdorff_bound']}, exact = {c['exact']}, "
        f"certified = {c['certified']}, collapse deviation <= {float(c['deviation']):.3e}"
        + (f" (radius {float(c['radius']):.3e})" if c["radius"] is not None else "")
    )
    return 0 if c["exact"] else 1
