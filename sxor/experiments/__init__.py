"""Named experiments: one runner for the command line and the notebooks.

Each chapter has a module named after it (``one_step``, ``why_transformer``, ``why_softmax``,
``finite_samples``, ``beyond_two_bits``, ``regularised_training``) that holds or gathers its names;
a chapter with several families of sweeps keeps each family in a module named after the chapter
and the family (``one_step_grid``, ``finite_samples_sgd``, ...). A module registers its sweeps
with :func:`register`; every sweep has two sizes, ``ci`` (what the notebook runs, well under a
minute on a CPU) and ``full`` (the committed results in :data:`sxor.results.RESULTS_DIR`).
Modules are discovered, not listed.

:func:`run` is the one way to run an experiment: it returns exactly the results-file shape
(``experiment``, ``params`` with ``size``, ``records``, ``meta``) that the command line saves and
:func:`sxor.results.committed_results` loads, and :func:`compare` checks a CI run against the
committed full run on the cells they share, matched by exact keys.
"""

from __future__ import annotations

import importlib
import math
import numbers
import pkgutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from ..book import bound, default_device
from ..results import check_device, provenance

#: The sizes every experiment has.
SIZES = ("ci", "full")

#: An experiment's ``run(size, device) -> (params, records)``.
RunFunction = Callable[[str, torch.device], tuple[dict, list[dict]]]


@dataclass(frozen=True)
class Experiment:
    """A named sweep: ``run(size, device) -> (params, records)`` and ``plot(results) -> Figure``."""

    name: str
    description: str
    run: RunFunction
    plot: Callable[[dict], object] | None = None
    #: Record fields that identify a cell exactly; set when the CI run's cells are a subset of
    #: the full run's (same seeds), so that :func:`compare` can check one against the other.
    compare_keys: tuple[str, ...] | None = None
    #: The relative tolerance of that comparison (single-precision training needs more than 1e-9).
    compare_tol: float = 1e-9
    #: Record fields holding one value per instance, where the CI run's instances are the first
    #: ones of the full run's: :func:`compare` checks them on the CI run's length.
    compare_prefix: tuple[str, ...] = ()


REGISTRY: dict[str, Experiment] = {}


def register(
    name: str,
    description: str,
    plot: Callable[[dict], object] | None = None,
    compare_keys: Sequence[str] | None = None,
    compare_tol: float = 1e-9,
    compare_prefix: Sequence[str] = (),
) -> Callable[[RunFunction], RunFunction]:
    """Decorator registering an experiment's ``run(size, device) -> (params, records)``.

    Parameters
    ----------
    name
        The name the command line and :func:`run` use (``"one-step-grid"``); also the stem of
        its committed results file.
    description
        One line for ``python -m sxor list``.
    plot
        Optional ``plot(results) -> Figure``; the command line saves it beside the results.
    compare_keys
        Record fields that identify a cell exactly, when the CI run's cells are a subset of the
        full run's (same seeds): :func:`compare` then checks one against the other by default,
        and ``tests/test_portability.py`` re-runs it under another summation order.
    compare_tol
        The relative tolerance :func:`compare` uses by default for this experiment.
    compare_prefix
        Per-instance list fields whose CI lists are the first entries of the full run's (the CI
        run has fewer instances per cell): :func:`compare` checks them on the CI length.
    """

    def wrap(fn: RunFunction) -> RunFunction:
        keys = tuple(compare_keys) if compare_keys is not None else None
        REGISTRY[name] = Experiment(
            name, description, fn, plot, keys, float(compare_tol), tuple(compare_prefix)
        )
        return fn

    return wrap


@contextmanager
def one_thread() -> Iterator[None]:
    """Run the block on one torch thread and restore the count after it: for experiments on tiny
    matrices, where one thread is fastest and immune to oversubscription."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def size_config(size: str, sizes: dict[str, dict]) -> dict:
    """The configuration of ``size`` (``"ci"`` or ``"full"``) from an experiment's ``sizes`` table.

    Raises
    ------
    ValueError
        When ``sizes`` has no entry ``size``.
    """
    if size not in sizes:
        raise ValueError(f"size must be one of {sorted(sizes)}, got {size!r}")
    return sizes[size]


def load_all() -> dict[str, Experiment]:
    """Import every module of this package (each registers its experiments) and return the registry."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return REGISTRY


def get(name: str) -> Experiment:
    """The experiment called ``name``; ValueError lists the known ones otherwise."""
    experiments = load_all()
    if name not in experiments:
        raise ValueError(f"unknown experiment {name!r}; known: {sorted(experiments)}")
    return experiments[name]


def run(name: str, size: str = "ci", device: torch.device | str | None = None) -> dict:
    """Run a named experiment: the one way the chapters and the command line run a sweep.

    Parameters
    ----------
    name
        A registered experiment (``python -m sxor list`` shows them).
    size
        ``"ci"``, what a notebook runs (well under a minute on a CPU), or ``"full"``, what the
        committed results file holds.
    device
        Where to compute; default :func:`sxor.book.default_device`.

    Returns
    -------
    dict
        ``{"experiment", "params", "records", "meta"}``: ``params`` starts with ``size``;
        ``meta`` holds the equivalent command line, the device, the library versions, the date
        and the wall time in seconds. This is exactly what ``python -m sxor run`` writes to disk.

    Raises
    ------
    ValueError
        For an unknown experiment (the message lists the known ones) or size, and a device that
        does not exist or is not available here (the message lists the available ones).
    """
    exp = get(name)
    if size not in SIZES:
        raise ValueError(f"size must be one of {list(SIZES)}, got {size!r}")
    device = check_device("device", device)
    if device is not None and device.type == "meta":
        raise ValueError(
            "device 'meta' holds shapes without values: an experiment needs cpu or cuda"
        )
    if device is None:
        device = default_device()
    start = time.perf_counter()
    params, records = exp.run(size, device)
    wall = time.perf_counter() - start
    meta = provenance(device, command=f"python -m sxor run {name} --size {size}")
    meta["wall_seconds"] = round(wall, 1)
    return {
        "experiment": name,
        "params": {"size": size, **params},
        "records": records,
        "meta": meta,
    }


@dataclass(frozen=True)
class Comparison:
    """The outcome of :func:`compare`: how many cells were shared and the largest difference.

    ``problems`` lists the structural mismatches found (a field missing on one side, lists of
    different lengths, NaN, a number against ``None``, different strings), at most ten, each as
    ``"field of cell {...}: why"``; any problem makes ``max_difference`` infinite.
    """

    shared: int
    max_difference: float
    tol: float
    problems: tuple[str, ...] = ()

    @property
    def agrees(self) -> bool:
        return self.shared > 0 and not self.problems and self.max_difference < self.tol

    def __str__(self) -> str:
        text = (
            f"CI run vs committed full run: {self.shared} shared cells, "
            f"largest difference {bound(self.max_difference, self.tol)}"
        )
        if self.problems:
            text += "; DISAGREES: " + "; ".join(self.problems[:3])
        return text


def _check_tol(tol) -> float:
    if isinstance(tol, bool) or not isinstance(tol, (int, float)):
        raise TypeError(f"tol must be a real number > 0, got {tol!r} of type {type(tol).__name__}")
    if not (math.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be finite and > 0, got {tol}")
    return float(tol)


def _records(run: dict, which: str) -> list:
    if not isinstance(run, dict) or "records" not in run:
        raise ValueError(
            f"the {which} run has no 'records' (a results dict as returned by sxor.experiments.run)"
        )
    records = run["records"]
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ValueError(f"the {which} run's 'records' must be a list of dicts")
    return records


def compare(
    ci: dict,
    full: dict,
    keys: Sequence[str] | None = None,
    tol: float | None = None,
    prefix: Sequence[str] | None = None,
) -> Comparison:
    """Compare a CI run with the committed full run on the records they share.

    Records are matched by the exact values of ``keys``. Every other field of matched records is
    compared: numbers (also inside lists and dicts) with a relative tolerance,
    :math:`|a - b| \\le \\mathrm{tol}\\cdot\\max(1, |a|, |b|)`; NaN agrees with nothing, an
    infinity only with the same infinity, ``None`` (how NaN and infinities are saved) only with
    ``None``; strings and booleans must be equal; lists must have equal lengths and dicts equal
    keys; a field present on one side only is a disagreement.

    Parameters
    ----------
    ci, full
        Results dicts as returned by :func:`run` (``full`` usually from
        :func:`sxor.results.committed_results`).
    keys
        Record fields that identify a grid cell (default: the experiment's registered
        ``compare_keys``), at least one. Their values must be exact (integers or strings, never a
        computed float), so that cells match on every machine; every record of ``ci`` needs a
        partner, and no two records of either run may share a key.
    tol
        Largest relative difference that counts as agreement, finite and :math:`> 0` (default:
        the experiment's registered ``compare_tol``, else ``1e-9``).
    prefix
        Fields holding one value per instance where the CI run's instances are the first ones of
        the full run's (default: the experiment's registered ``compare_prefix``, else none): a CI
        list is compared with the same number of leading entries of the full list, which must be
        at least as long. Every other list must have the same length on both sides.

    Returns
    -------
    Comparison
        Prints as ``CI run vs committed full run: N shared cells, largest difference < 1e-09``,
        identical on every machine while the runs agree.

    Raises
    ------
    ValueError
        When a run has no ``records``, the CI run has none at all, ``keys`` is empty, a key value
        is a float or missing, two records of one run share a key, a record of ``ci`` has no
        partner in ``full``, the experiments differ, or ``tol`` is NaN, infinite or :math:`\\le 0`.
    """
    ci_records, full_records = _records(ci, "CI"), _records(full, "full")
    registered = get(ci["experiment"]) if ci.get("experiment") else None
    if tol is None:
        tol = registered.compare_tol if registered is not None else 1e-9
    tol = _check_tol(tol)
    if keys is None:
        keys = registered.compare_keys if registered is not None else None
        if keys is None:
            raise ValueError(
                f"experiment {ci.get('experiment')!r} registers no compare_keys: pass keys"
            )
    if isinstance(keys, str) or not all(isinstance(k, str) for k in keys):
        raise TypeError(f"keys must be a sequence of field names, got {keys!r}")
    keys = tuple(keys)
    if not keys:
        raise ValueError("keys must name at least one record field")
    if full.get("experiment", ci.get("experiment")) != ci.get("experiment"):
        raise ValueError(f"cannot compare {ci.get('experiment')!r} with {full.get('experiment')!r}")
    if not ci_records:
        raise ValueError("the CI run has no records: nothing to compare")
    if prefix is None:
        prefix = registered.compare_prefix if registered is not None else ()
    prefixed = set(prefix)

    def key(record: dict, which: str) -> tuple:
        missing = [k for k in keys if k not in record]
        if missing:
            raise ValueError(f"a record of the {which} run lacks the key fields {missing}")
        values = tuple(record[k] for k in keys)
        if any(isinstance(v, float) for v in values):
            raise ValueError(
                f"comparison keys {list(keys)} must be exact (int or str), got {values}"
            )
        return values

    index: dict[tuple, dict] = {}
    for r in full_records:
        k = key(r, "full")
        if k in index:
            raise ValueError(f"two records of the full run share the key {dict(zip(keys, k))}")
        index[k] = r
    seen: set[tuple] = set()
    worst = 0.0
    problems: list[str] = []
    for rec in ci_records:
        k = key(rec, "CI")
        if k in seen:
            raise ValueError(f"two records of the CI run share the key {dict(zip(keys, k))}")
        seen.add(k)
        if k not in index:
            raise ValueError(
                f"the CI record {dict(zip(keys, k))} has no partner in the committed run"
            )
        other = index[k]
        for field in sorted(set(rec) | set(other), key=str):
            if field in keys:
                continue
            if field not in rec or field not in other:
                why: str | None = f"only in the {'CI' if field in rec else 'full'} run"
                diff = math.inf
            elif (
                field in prefixed
                and isinstance(rec[field], list)
                and isinstance(other[field], list)
                and len(rec[field]) <= len(other[field])
            ):
                diff, why = _difference(rec[field], other[field][: len(rec[field])])
            else:
                diff, why = _difference(rec[field], other[field])
            if why is not None and len(problems) < 10:
                problems.append(f"{field} of cell {dict(zip(keys, k))}: {why}")
            worst = max(worst, diff)
    return Comparison(len(ci_records), worst, tol, tuple(problems))


def _difference(a, b) -> tuple[float, str | None]:
    """``(relative difference, why they cannot agree or None)`` of two record values."""
    if a is None or b is None:
        return (0.0, None) if a is None and b is None else (math.inf, f"{a!r} against {b!r}")
    if isinstance(a, (str, bool, np.bool_)) or isinstance(b, (str, bool, np.bool_)):
        same = isinstance(a, str) == isinstance(b, str) and a == b
        return (0.0, None) if same else (math.inf, f"{a!r} against {b!r}")
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        if not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))):
            return math.inf, f"a list against {b!r}" if isinstance(
                a, (list, tuple)
            ) else f"{a!r} against a list"
        if len(a) != len(b):
            return math.inf, f"lists of lengths {len(a)} and {len(b)}"
        worst, why = 0.0, None
        for x, y in zip(a, b):
            diff, reason = _difference(x, y)
            worst, why = max(worst, diff), why or reason
        return worst, why
    if isinstance(a, dict) or isinstance(b, dict):
        if not (isinstance(a, dict) and isinstance(b, dict)) or set(a) != set(b):
            return math.inf, "dicts with different keys"
        worst, why = 0.0, None
        for name in a:
            diff, reason = _difference(a[name], b[name])
            worst, why = max(worst, diff), why or reason
        return worst, why
    if not (isinstance(a, numbers.Real) and isinstance(b, numbers.Real)):
        return math.inf, f"values of types {type(a).__name__} and {type(b).__name__}"
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.inf, f"NaN ({a!r} against {b!r})"
    if math.isinf(a) or math.isinf(b):
        return (0.0, None) if a == b else (math.inf, f"{a!r} against {b!r}")
    return abs(a - b) / max(1.0, abs(a), abs(b)), None
