"""Command line: ``python -m sxor list``, ``python -m sxor run NAME [--size full] [--device cuda]`` and
``python -m sxor certify FILE``.

``run`` calls :func:`sxor.experiments.run` and writes ``NAME.json`` (records plus command,
device, versions, date and wall time) and, when the experiment has a plot, ``NAME.png``. A
full-size run goes by default into :data:`sxor.results.RESULTS_DIR`, where
:func:`sxor.results.committed_results` reads it; a CI-size run goes by default into
``./sxor-ci-results`` (:data:`CI_OUT`), so it never replaces a committed full run. Whatever
``--out`` says, a results file made by a full run is not replaced by a CI run unless
``--replace-full`` is given. ``--out`` must be a folder that can be created and written to.

``python -m sxor certify FILE [--tau T] [--max-cost C]`` builds the softmax network of chapter 13
for the dataset in ``FILE`` (formats and limits: :mod:`sxor.interp.datafile`) and prints its block
count, ``tau_max`` and the rigorous certificate
(:func:`sxor.interp.certificate.softmax_certificate`). Before starting it estimates the work
(:func:`sxor.interp.datafile.certify_cost`, quadratic in the tokens of a sequence) and refuses a
dataset above the budget ``--max-cost`` (default :data:`sxor.interp.datafile.MAX_COST`, a few
minutes on one CPU core), saying what the dataset would need; long runs report each stage.

Exit status (every command): **0** success (for ``certify``: the certificate proves exact
interpolation), **1** ``certify`` only: not certified (the bound did not shrink to 0; not a proof
of inexactness), **2** bad input (a one-line refusal naming the file or argument and the
problem), **3** internal error (one line with the error's type and message); an interrupted run
(Ctrl-C) exits with 130, as shells report it. No traceback is printed unless ``--debug`` is given.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, cast

from . import experiments
from .results import RESULTS_DIR, save_results

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Default output folder of a CI-size run (relative to the working directory).
CI_OUT = Path("sxor-ci-results")
#: The exit status of success (for ``certify``, exact interpolation proved).
EXIT_OK = 0
#: The exit status when ``certify`` ran but could not prove exact interpolation.
EXIT_NOT_CERTIFIED = 1
#: The exit status of bad input (a one-line refusal naming the file and the problem).
EXIT_BAD_INPUT = 2
#: The exit status of an internal error (one line with its type and message).
EXIT_INTERNAL = 3
#: Estimated cost (units of :func:`sxor.interp.datafile.certify_cost`) above which ``certify``
#: reports each stage on stderr as it starts and ends.
PROGRESS_COST = 10**6


class Refusal(Exception):
    """Bad input: printed as one line ``refused: ...``, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (exit status 2, as every refusal)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _one_line(text: object, width: int = 400) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= width else line[: width - 3] + "..."


def _size_of(path: Path) -> str | None:
    """The ``params.size`` of an existing results file (None when absent or unreadable)."""
    import json

    try:
        size = json.loads(path.read_text()).get("params", {}).get("size")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    return size if isinstance(size, str) else None


def _parser() -> _Parser:
    epilog = (
        "exit status: 0 success (certify: exact interpolation proved), 1 not certified, "
        "2 bad input (one-line refusal), 3 internal error; --debug prints the traceback"
    )
    parser = _Parser(prog="python -m sxor", description=__doc__, epilog=epilog)
    sub = parser.add_subparsers(dest="command", required=True)
    debug = _Parser(add_help=False)
    debug.add_argument("--debug", action="store_true", help="print the traceback of an error")
    sub.add_parser("list", help="list the named experiments", parents=[debug])
    run = sub.add_parser(
        "run",
        help="run one experiment and write its results file and figure",
        parents=[debug],
        epilog=epilog,
    )
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
    from .interp.datafile import MAX_COST, MAX_ENTRIES, MAX_FILE_BYTES
    from .interp.exact import MAX_DIGITS, MAX_EXPONENT

    cert = sub.add_parser(
        "certify",
        help="build the softmax network for a dataset file and certify it",
        parents=[debug],
        epilog=(
            f"limits: files up to {MAX_FILE_BYTES // 2**20} MiB and {MAX_ENTRIES} numbers, rational "
            f"strings up to {MAX_DIGITS} digits and exponent +-{MAX_EXPONENT}; the estimated cost "
            "d (f sum_j n_j^2 + 16 (2N + sum_j m_j) sum_j n_j), f = max(1, bits // 64)^2 "
            "(sxor.interp.datafile.certify_cost), must stay within --max-cost; runs above "
            f"{PROGRESS_COST:.0e} units report each stage on stderr. " + epilog
        ),
    )
    cert.add_argument("file", type=Path, help="a .json or .npz dataset (see sxor.interp.datafile)")
    cert.add_argument(
        "--tau",
        default=None,
        help="temperature, a rational such as 1/10 (default: about tau_max / 2)",
    )
    cert.add_argument(
        "--max-cost",
        default=None,
        help=f"budget in cost units (default {MAX_COST:.0e}, a few minutes on one CPU core; "
        "one unit is about 1-3 microseconds, measured)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: the process's arguments); return the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "certify":
            return certify(args.file, args.tau, args.max_cost)
        if args.command == "list":
            for name, exp in sorted(experiments.load_all().items()):
                print(f"{name:28s} {exp.description}")
            return EXIT_OK
        return _run(parser, args)
    except Refusal as err:
        print(f"refused: {_one_line(err)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as err:
        if args.debug:
            raise
        print(
            f"internal error: {type(err).__name__}: {_one_line(err)} "
            "(rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _writable_folder(out: Path, target: Path) -> None:
    """Refuse an ``--out`` that is a file, cannot be created, or cannot be written to."""
    if out.exists() and not out.is_dir():
        raise Refusal(f"--out {out}: is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise Refusal(f"--out {out}: cannot create the folder ({err.strerror or err})") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise Refusal(f"--out {out}: the folder is not writable")
    for path in (target, target.with_suffix(".png")):
        if path.exists() and not path.is_file():
            raise Refusal(f"--out {out}: {path.name} exists and is not a file")


def _run(parser: _Parser, args: argparse.Namespace) -> int:
    from .results import check_device

    try:
        exp = experiments.get(args.name)
        device = check_device("--device", args.device)
    except (ValueError, TypeError) as err:
        raise Refusal(str(err)) from None
    if device is not None and device.type == "meta":
        raise Refusal("--device meta holds shapes without values: an experiment needs cpu or cuda")
    out = args.out if args.out is not None else (RESULTS_DIR if args.size == "full" else CI_OUT)
    target = out / f"{exp.name}.json"
    _writable_folder(out, target)
    if args.size != "full" and not args.replace_full and _size_of(target) == "full":
        parser.error(
            f"{target} holds a full-size run; a {args.size} run would replace it: "
            "choose another --out, or pass --replace-full"
        )
    results = experiments.run(exp.name, args.size, args.device)
    try:
        path = save_results(target, results)
    except OSError as err:
        raise Refusal(f"--out {out}: cannot write {target.name} ({err.strerror or err})") from None
    print(f"wrote {path} ({results['meta']['wall_seconds']:.0f} s)")
    if exp.plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        # Experiment.plot is documented to return a Figure (typed as object in sxor.experiments)
        figure = cast("Figure", exp.plot(results))
        figure.savefig(path.with_suffix(".png"), dpi=120, bbox_inches="tight")
        print(f"wrote {path.with_suffix('.png')}")
    return EXIT_OK


def _round_up(cost: int) -> str:
    """``cost`` rounded *up* to two significant digits, as ``8.1e8``."""
    e = max(len(str(cost)) - 2, 0)
    top = -(-cost // 10**e)
    return f"{top / 10:.1f}e{e + 1}" if e else str(top)


def _budget(max_cost: str | None) -> int:
    from .interp.datafile import MAX_COST
    from .interp.exact import exact_scalar

    if max_cost is None:
        return MAX_COST
    try:
        value = exact_scalar("--max-cost", max_cost)
    except ValueError as err:
        raise Refusal(f"{err} (a positive number such as 1e9)") from None
    if not value > 0:
        raise Refusal(f"--max-cost must be > 0, got {max_cost!r}")
    return math.ceil(value)


def certify(file: Path, tau: str | None = None, max_cost: str | None = None) -> int:
    """``python -m sxor certify``: print the block count, ``tau_max`` and the certificate; return the exit status."""
    from fractions import Fraction

    import mpmath

    from .interp.construct import construct, softmax_certificate
    from .interp.datafile import certify_cost, load_dataset
    from .interp.exact import approx, exact_scalar, short
    from .interp.network import check_temperature

    budget = _budget(max_cost)
    try:
        X, Y, chosen_tau = load_dataset(file)
        if tau is not None:  # --tau replaces the file's
            chosen_tau = check_temperature(exact_scalar("--tau", tau))
    except ValueError as err:
        raise Refusal(str(err)) from None
    cost = certify_cost(X, Y)
    if cost > budget:
        raise Refusal(
            f"{file}: the estimated cost is {cost:.3g} units (N = {len(X)} sequences, "
            f"longest n_j = {max(len(x) for x in X)}, d = {X[0].shape[1]}), above the budget "
            f"{budget:.2g}; pass --max-cost {_round_up(cost)} to run it anyway "
            "(one unit is about 1-3 microseconds on one CPU core, measured)"
        )
    talk = cost > PROGRESS_COST

    def stage(text: str) -> None:
        if talk:
            print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)

    stage(f"estimated cost {cost:.2g} units (budget {budget:.2g}); building the network")
    t0 = time.perf_counter()
    try:
        T = construct(X, Y, attention="softmax", tau=chosen_tau)
    except ValueError as err:
        raise Refusal(f"{file}: {err}") from None
    t1 = time.perf_counter()
    stage(f"built {T.num_blocks} blocks in {t1 - t0:.1f} s; certifying")
    c = softmax_certificate(T, X, Y)
    t2 = time.perf_counter()
    stage(f"certified in {t2 - t1:.1f} s")
    d = X[0].shape[1]
    print(
        f"dataset {file}: N = {len(X)} sequences, n_j in [{min(len(x) for x in X)}, "
        f"{max(len(x) for x in X)}], m_j in [{min(len(y) for y in Y)}, {max(len(y) for y in Y)}], "
        f"d = {d}"
    )
    print(
        f"softmax network: {T.num_blocks} blocks ({T.info.get('route')} route), "
        f"{T.num_parameters} parameters; built in {t1 - t0:.2f} s"
    )
    print(
        f"tau_max = {mpmath.nstr(T.tau_max_mp, 6)}; tau = {short(Fraction(T.tau))} (= {approx(T.tau)})"
    )
    print(
        f"certificate ({t2 - t1:.2f} s): hausdorff_bound = {short(c['hausdorff_bound'])}, "
        f"exact = {c['exact']}, certified = {c['certified']}, "
        f"collapse deviation <= {approx(c['deviation'], 4)}"
        + (f" (radius {approx(c['radius'], 4)})" if c["radius"] is not None else "")
    )
    return EXIT_OK if c["exact"] else EXIT_NOT_CERTIFIED
