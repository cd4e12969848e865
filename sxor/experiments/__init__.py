"""Named experiments: one runner for the command line and the notebooks.

Each module of this package serves one chapter and is named after it (``one_step``,
``why_transformer``, ``why_softmax``, ``finite_samples``, ``beyond_two_bits``,
``regularised_training``). A module registers its sweeps with :func:`register`; every sweep has
two sizes, ``ci`` (what the notebook runs, well under a minute on a CPU) and ``full`` (the
committed results in :data:`sxor.results.RESULTS_DIR`). Modules are discovered, not listed.

:func:`run` is the one way to run an experiment: it returns exactly the results-file shape
(``experiment``, ``params`` with ``size``, ``records``, ``meta``) that the command line saves and
:func:`sxor.results.committed_results` loads, and :func:`compare` checks a CI run against the
committed full run on the cells they share, matched by exact keys.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from ..book import bound, default_device
from ..results import provenance

#: The sizes every experiment has.
SIZES = ("ci", "full")


@dataclass(frozen=True)
class Experiment:
    """A named sweep: ``run(size, device) -> (params, records)`` and ``plot(results) -> Figure``."""

    name: str
    description: str
    run: Callable[[str, torch.device], tuple[dict, list[dict]]]
    plot: Callable[[dict], object] | None = None
    #: Record fields that identify a cell exactly; set when the CI run's cells are a subset of
    #: the full run's (same seeds), so that :func:`compare` can check one against the other.
    compare_keys: tuple[str, ...] | None = None
    #: The relative tolerance of that comparison (single-precision training needs more than 1e-9).
    compare_tol: float = 1e-9


REGISTRY: dict[str, Experiment] = {}


def register(name: str, description: str, plot: Callable[[dict], object] | None = None,
             compare_keys: Sequence[str] | None = None, compare_tol: float = 1e-9):
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
    """

    def wrap(fn):
        keys = tuple(compare_keys) if compare_keys is not None else None
        REGISTRY[name] = Experiment(name, description, fn, plot, keys, float(compare_tol))
        return fn

    return wrap


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
        For an unknown experiment (the message lists the known ones) or size.
    """
    exp = get(name)
    if size not in SIZES:
        raise ValueError(f"size must be one of {list(SIZES)}, got {size!r}")
    device = torch.device(device) if device is not None else default_device()
    start = time.perf_counter()
    params, records = exp.run(size, device)
    wall = time.perf_counter() - start
    meta = provenance(device, command=f"python -m sxor run {name} --size {size}")
    meta["wall_seconds"] = round(wall, 1)
    return {"experiment": name, "params": {"size": size, **params}, "records": records, "meta": meta}


@dataclass(frozen=True)
class Comparison:
    """The outcome of :func:`compare`: how many cells were shared and the largest difference."""

    shared: int
    max_difference: float
    tol: float

    @property
    def agrees(self) -> bool:
        return self.shared > 0 and self.max_difference < self.tol

    def __str__(self) -> str:
        return (f"CI run vs committed full run: {self.shared} shared cells, "
                f"largest difference {bound(self.max_difference, self.tol)}")


def compare(ci: dict, full: dict, keys: Sequence[str] | None = None, tol: float | None = None) -> Comparison:
    """Compare a CI run with the committed full run on the records they share.

    Records are matched by the exact values of ``keys``.
    Every other numeric field of matched records is compared with a relative tolerance,
    :math:`|a - b| \\le \\mathrm{tol}\\cdot\\max(1, |a|, |b|)`.

    Parameters
    ----------
    ci, full
        Results dicts as returned by :func:`run` (``full`` usually from
        :func:`sxor.results.committed_results`).
    keys
        Record fields that identify a grid cell (default: the experiment's registered
        ``compare_keys``). Their values must be exact (integers or strings, never a computed
        float), so that cells match on every machine; every record of ``ci`` needs a partner.
    tol
        Largest relative difference that counts as agreement (default: the experiment's
        registered ``compare_tol``, else ``1e-9``).

    Returns
    -------
    Comparison
        Prints as ``CI run vs committed full run: N shared cells, largest difference < 1e-09``,
        identical on every machine while the runs agree.

    Raises
    ------
    ValueError
        When a key value is a float, or a record of ``ci`` has no partner in ``full``.
    """
    registered = get(ci["experiment"]) if ci.get("experiment") else None
    if tol is None:
        tol = registered.compare_tol if registered is not None else 1e-9
    if keys is None:
        keys = registered.compare_keys if registered is not None else None
        if keys is None:
            raise ValueError(f"experiment {ci.get('experiment')!r} registers no compare_keys: pass keys")
    if full.get("experiment", ci.get("experiment")) != ci.get("experiment"):
        raise ValueError(f"cannot compare {ci.get('experiment')!r} with {full.get('experiment')!r}")

    def key(record: dict) -> tuple:
        values = tuple(record[k] for k in keys)
        if any(isinstance(v, float) for v in values):
            raise ValueError(f"comparison keys {list(keys)} must be exact (int or str), got {values}")
        return values

    index = {key(r): r for r in full["records"]}
    worst = 0.0
    for rec in ci["records"]:
        k = key(rec)
        if k not in index:
            raise ValueError(f"the CI record {dict(zip(keys, k))} has no partner in the committed run")
        other = index[k]
        for field, a in rec.items():
            if field in keys or isinstance(a, (str, bool)) or a is None:
                continue
            for x, y in zip(_flat(a), _flat(other[field])):
                if x is None or y is None:
                    worst = math.inf if (x is None) != (y is None) else worst
                    continue
                worst = max(worst, abs(x - y) / max(1.0, abs(x), abs(y)))
    return Comparison(len(ci["records"]), worst, tol)


def _flat(value) -> list:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _flat(v)]
    return [value]
