"""Results files: JSON with the records of a sweep and how they were made.

Every file written by the command line records the command, the device, the library versions and
the date beside the numbers, so a committed file says exactly how to reproduce it.
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

#: Folder of the committed full-size results, shipped as package data so that an installed
#: ``sxor`` (Colab) has them too. The command line writes here and :func:`committed_results`
#: reads here, so there is one copy of each file.
RESULTS_DIR = Path(__file__).resolve().parent / "committed"


def available_devices() -> list[str]:
    """The device strings this process can use: ``cpu``, ``cuda:0`` ... and ``mps`` when present."""
    names = ["cpu"]
    if torch.cuda.is_available():
        names += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        names.append("mps")
    return names


def available_memory(device: torch.device | str | None = None) -> int | None:
    """Bytes of memory available for new tensors on ``device`` (default cpu): ``MemAvailable`` of
    ``/proc/meminfo`` on the CPU, the free memory of a CUDA device; ``None`` where unknown (other
    systems, the meta device, which allocates nothing)."""
    try:
        dev = torch.device("cpu" if device is None else device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"device {device!r} is not a device") from None
    if dev.type == "cuda" and torch.cuda.is_available():
        return int(torch.cuda.mem_get_info(dev)[0])
    if dev.type != "cpu":
        return None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_allocation(
    what: str, nbytes: int, limit: int, limit_name: str, device: object = None
) -> None:
    """Refuse, before allocating, ``nbytes`` above ``limit`` (named ``limit_name`` in the message)
    or above half the memory available on ``device`` (:func:`available_memory`; the other half
    leaves room for the intermediates of the computation)."""
    if nbytes > limit:
        raise ValueError(
            f"{what} would allocate {nbytes / 2**30:.3g} GiB, above the limit {limit_name} = "
            f"{limit / 2**30:.3g} GiB: choose smaller sizes (or raise the limit on purpose)"
        )
    free = available_memory(device if isinstance(device, (str, torch.device)) else None)
    if free is not None and 2 * nbytes > free:
        raise ValueError(
            f"{what} would allocate {nbytes / 2**30:.3g} GiB, more than half the "
            f"{free / 2**30:.3g} GiB of memory available on this machine: choose smaller sizes"
        )


def check_device(name: str, device: object) -> torch.device | None:
    """Require ``None``, a ``torch.device`` or a device string that exists and is available here.

    Returns the ``torch.device`` (``None`` stays ``None``: the default device). An unknown string
    (``"tpu"``, ``"gpu0"``) or a device this process cannot use (``"cuda"`` without a GPU,
    ``"cuda:7"`` on a machine with one) raises :class:`ValueError` listing the available ones.
    """
    if device is None:
        return None
    if isinstance(device, (bool, np.bool_)) or not isinstance(device, (str, torch.device)):
        raise TypeError(
            f"{name} must be a device string such as 'cpu' or 'cuda', got "
            f"{type(device).__name__} {device!r}"
        )
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        raise ValueError(
            f"{name} {device!r} is not a device; available here: {available_devices()}"
        ) from None
    if dev.type in (
        "cpu",
        "meta",
    ):  # meta: shapes only, nothing allocated (tests of the size guards)
        return dev
    if dev.type == "cuda":
        ok = torch.cuda.is_available() and (
            dev.index is None or dev.index < torch.cuda.device_count()
        )
    elif dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        ok = mps is not None and mps.is_available()
    else:
        ok = False
    if not ok:
        raise ValueError(
            f"{name} {str(dev)!r} is not available in this process; available here: "
            f"{available_devices()}"
        )
    return dev


def provenance(device: torch.device | str, command: str | None = None) -> dict[str, Any]:
    """Command (default: this process's ``python -m sxor`` arguments), device, versions and date."""
    device = torch.device(device)
    name = (
        torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else platform.processor() or "cpu"
    )
    return {
        "command": command if command is not None else "python -m sxor " + " ".join(sys.argv[1:]),
        "device": f"{device.type}: {name}",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def save_results(path: str | Path, results: dict) -> Path:
    """Write a results dict (``experiment``, ``params``, ``meta``, ``records``, as returned by
    :func:`sxor.experiments.run`) as indented JSON."""
    missing = {"experiment", "params", "meta", "records"} - set(results)
    if missing:
        raise ValueError(f"results lack the keys {sorted(missing)}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {k: results[k] for k in ("experiment", "params", "meta", "records")}
    path.write_text(json.dumps(payload, indent=1, sort_keys=False) + "\n")
    return path


def load_results(path: str | Path, *, remake: str | None = None) -> dict:
    """Read a results file written by :func:`save_results`.

    Parameters
    ----------
    path
        The JSON file.
    remake
        The command that regenerates the file, quoted in every error (default: none quoted).

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    ValueError
        When ``path`` is a directory or unreadable, is empty, is not valid JSON (truncated, say),
        is not a JSON object, or holds neither ``experiment`` with a list of ``records`` (a run)
        nor ``benchmark`` (a file of ``benchmarks/``); the message names the file (and the
        command that regenerates it).
    """
    path = Path(path)
    fix = f"; regenerate it with `{remake}`" if remake else ""
    if not path.exists():
        raise FileNotFoundError(f"no results file {path}{fix}")
    if not path.is_file():
        raise ValueError(f"the results file {path} is not a file (a directory?){fix}")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read the results file {path}: {err}{fix}") from None
    if not text.strip():
        raise ValueError(f"the results file {path} is empty{fix}")
    try:
        results = json.loads(text)
    except ValueError as err:
        raise ValueError(
            f"the results file {path} is not valid JSON (truncated?): {err}{fix}"
        ) from None
    if not isinstance(results, dict):
        raise ValueError(
            f"the results file {path} holds a JSON {type(results).__name__}, not an object{fix}"
        )
    is_run = "experiment" in results and isinstance(results.get("records"), list)
    if not (is_run or "benchmark" in results):
        raise ValueError(
            f"the results file {path} lacks 'experiment' and a list of 'records' "
            f"(or, for a benchmark, 'benchmark'){fix}"
        )
    return results


#: An experiment name: letters, digits, '-' and '_', starting with a letter or digit.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def committed_results(name: str) -> dict:
    """The committed full-size results file ``NAME.json`` of :data:`RESULTS_DIR`.

    The files are package data, so this works in a checkout and in an installed package alike,
    with no network.

    Parameters
    ----------
    name
        The experiment's name, e.g. ``"one-step-grid"`` (letters, digits, ``-`` and ``_``; no
        path, no extension).

    Raises
    ------
    FileNotFoundError
        When the file is missing; the message gives the command that makes it,
        ``python -m sxor run NAME --size full``.
    ValueError
        When ``name`` is not a plain name, and when the file is a directory, unreadable, empty,
        not valid JSON, not an object or without ``records`` (the message names the file and the
        command that regenerates it).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"name must be an experiment name such as 'one-step-grid', got {name!r}")
    path = RESULTS_DIR / f"{name}.json"
    command = f"python -m sxor run {name} --size full"
    if not path.exists():
        raise FileNotFoundError(f"no committed results file {path}; make it with `{command}`")
    return load_results(path, remake=command)


def finite_or_none(x: float) -> float | None:
    """``x`` as a float, or ``None`` (JSON ``null``) when it is nan or infinite."""
    x = float(x)
    return x if np.isfinite(x) else None


def describe(results: dict, width: int = 100) -> list[str]:
    """Lines (at most ``width`` characters) saying how a results file was made: its experiment and
    size, the command, device, library versions, date and wall time of :func:`provenance`, the
    ``note`` of its meta when there is one (how a file was made, when not by one run of its
    command), and its parameters. Used by the book's reproducibility appendix.

    Raises TypeError unless ``results`` is a dict, and ValueError unless it has the keys
    ``experiment``, ``params`` and ``meta``, the last two dicts, and ``width`` is an int >= 20.
    """
    import textwrap

    if not isinstance(results, Mapping):
        raise TypeError(f"results must be a dict (a results file), got {type(results).__name__}")
    missing = {"experiment", "params", "meta"} - set(results)
    if missing:
        raise ValueError(f"results lack the keys {sorted(missing)}")
    for key in ("params", "meta"):
        if not isinstance(results[key], dict):
            raise ValueError(
                f"results['{key}'] must be a dict (a JSON object), got "
                f"{type(results[key]).__name__}"
            )
    if isinstance(width, bool) or not isinstance(width, int) or width < 20:
        raise ValueError(f"width must be an int >= 20, got {width!r}")
    meta, params = results["meta"], dict(results["params"])
    size = params.pop("size", "?")
    wall = meta.get("wall_seconds")
    lines = [
        f"{results['experiment']} (size {size}): {meta.get('command', '?')}",
        f"  made on {meta.get('device', '?')}, torch {meta.get('torch', '?')}, "
        f"numpy {meta.get('numpy', '?')}, {meta.get('date', '?')}"
        + (f", {wall:.0f} s wall" if isinstance(wall, (int, float)) else ""),
    ]
    if meta.get("note"):  # how the file was made, when not by one run of its command
        lines += textwrap.wrap(
            "note: " + str(meta["note"]),
            width=width,
            initial_indent="  ",
            subsequent_indent="    ",
            break_long_words=True,
        )
    text = "; ".join(f"{k} = {v}" for k, v in params.items())
    lines += textwrap.wrap(
        "parameters: " + text,
        width=width,
        initial_indent="  ",
        subsequent_indent="    ",
        break_long_words=True,
    )
    return lines
