"""Named experiments that the command line (``python -m sxor``) can run at a chosen size.

An experiment is registered with :func:`register` and has two sizes: ``ci`` (what the notebook
runs, well under a minute on a CPU) and ``full`` (the committed results in ``results/``). Its
``run`` returns parameters and a list of JSON-serialisable records; its ``plot`` draws a figure
from a loaded results file, so the notebook and the CLI share one plotting function.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

import torch

#: Modules that register experiments; each chapter's sweeps live in one of them.
MODULES: list[str] = ["one_step", "variants", "finite_samples", "ffnn", "regularised"]


@dataclass(frozen=True)
class Experiment:
    """A named sweep: ``run(size, device) -> (params, records)`` and ``plot(results) -> Figure``."""

    name: str
    description: str
    run: Callable[[str, torch.device], tuple[dict, list[dict]]]
    plot: Callable[[dict], object] | None = None


REGISTRY: dict[str, Experiment] = {}


def register(name: str, description: str, plot: Callable[[dict], object] | None = None):
    """Decorator registering ``run`` under ``name``."""

    def wrap(run):
        REGISTRY[name] = Experiment(name, description, run, plot)
        return run

    return wrap


def size_config(size: str, sizes: dict[str, dict]) -> dict:
    """The configuration of ``size`` (``"ci"`` or ``"full"``) from an experiment's ``sizes`` table."""
    if size not in sizes:
        raise ValueError(f"size must be one of {sorted(sizes)}, got {size!r}")
    return sizes[size]


def load_all() -> dict[str, Experiment]:
    """Import every experiment module and return the registry."""
    for module in MODULES:
        importlib.import_module(f"{__name__}.{module}")
    return REGISTRY


def get(name: str) -> Experiment:
    """The experiment called ``name``; ValueError lists the known ones otherwise."""
    experiments = load_all()
    if name not in experiments:
        raise ValueError(f"unknown experiment {name!r}; known: {sorted(experiments)}")
    return experiments[name]
