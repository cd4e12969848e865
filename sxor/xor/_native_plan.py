"""Which form of the native one-step kernel runs: chosen by measurement, cached per machine.

The kernel (:mod:`sxor.xor.native`) has two forms of its first two steps, both exact to rounding:
three reads of ``V`` (scores, then ``V^T r``, then the new scores) or two (the first read also
collects ``V^T [1, E, E^2, F, F^2]``). Which is faster depends on the CPU (its vector registers,
caches and memory bandwidth), on the size of an instance and on the number of threads, so it is
measured, as FFTW's planner measures its plans: the first call at a given kind of problem on a
machine times both forms on the call's own instances (as many as there are threads, and at least
32 MiB of ``V`` where the call has them, so that the timed calls read ``V`` from memory as the call
does; alternately, the smallest time of each after a warm-up call), runs the faster, and keeps
the choice in a plan file next to the compiled library (so keyed like it: the kernel's source,
the flags, the compiler and the CPU). Later calls, in this process or another, read the plan.

A kind of problem (:func:`plan_key`): the dtype, the layout of ``V``, the bytes of one
instance rounded down to a power of two, and the threads of the call (two threads share one
memory bus, which can change which form is faster).
``SXOR_ONE_STEP_FORM=size`` restores the fixed rule of earlier versions (two reads from 8 MiB per
instance), which, like a forced form, makes results independent of the machine's timings. ``SXOR_ONE_STEP_FORM=fused`` (two reads)
or ``three`` forces a form and skips the measurement; ``auto`` (the default) plans. The form
changes the rounding of a result (never more than the tests' tolerances), so a plan makes results
depend on the machine's timings; forcing a form makes them depend on the problem only.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, NamedTuple

#: The environment variable that forces a form.
FORM_ENV = "SXOR_ONE_STEP_FORM"
#: Its values: two reads of ``V``, three reads, or chosen by measurement (the default).
FORMS = ("fused", "three", "auto", "size")
#: ``size``: the fixed rule the kernel followed before it planned (two reads from this many bytes
#: of ``V`` per instance, three below), for results that depend on the problem only.
SIZE_RULE_BYTES = 8 << 20
#: Each form is timed until it has run this long in total (at least 3 timed calls, at most 50).
PROBE_SECONDS = 0.005


class Plan(NamedTuple):
    """The form a call takes (:func:`plan_form`) and why."""

    fused: bool  #: two reads of ``V`` (the fused first pass) rather than three
    how: str  #: ``"forced"``, ``"measured"`` (in this call) or ``"cached"`` (an earlier plan)
    seconds: dict | None  #: the measured time of each form, ``{"fused": s, "three": s}``
    instances: int  #: instances per timed call
    threads: int = 0  #: threads of the timed calls

    def describe(self) -> str:
        """One line for :func:`sxor.xor.population.last_path`."""
        if self.how == "forced":
            return f"form forced by {FORM_ENV}"
        assert self.seconds is not None
        times = ", ".join(
            f"{'two' if k == 'fused' else 'three'} reads {v * 1e3:.3g} ms"
            for k, v in sorted(self.seconds.items())
        )
        where = "measured now" if self.how == "measured" else "plan cache"
        return (
            f"form measured ({times} per call of {self.instances} instances on {self.threads} "
            f"threads; {where})"
        )


def forced_form() -> str:
    """``"fused"``, ``"three"``, ``"auto"`` or ``"size"`` from :data:`FORM_ENV` (ValueError for
    another)."""
    value = os.environ.get(FORM_ENV, "auto").strip().lower() or "auto"
    if value not in FORMS:
        raise ValueError(f"{FORM_ENV}={value!r}: expected one of {', '.join(FORMS)}")
    return value


def plan_key(d: int, m: int, itemsize: int, layout: str, threads: int = 1) -> str:
    """The kind of problem a plan is made for: dtype size, layout,
    ``floor(log2(d m itemsize))`` and the threads of the call. The threads belong to the kind:
    two threads share one memory bus, so the form that reads ``V`` less often can win on two
    threads and lose on one (measured on an AMD EPYC at ``d = 2^14``, ``m = 32``: 15% apart on two
    threads, 5% the other way on one). Under a plan the form, and so the last bits of a result,
    may therefore differ between thread counts; a forced form (``SXOR_ONE_STEP_FORM``) never
    does."""
    return (
        f"{8 * itemsize}bit {layout} 2^{int(math.log2(max(1, d * m * itemsize)))}B "
        f"{max(1, int(threads))}t"
    )


def _time_forms(run: Callable[[bool], object]) -> tuple[dict, bool]:
    """Smallest wall time of ``run(True)`` and ``run(False)``, alternated after one warm-up call
    of each, at least 3 calls each and until each has run :data:`PROBE_SECONDS`; and whether
    every call returned a false value (the kernel's count of instances with non-finite scores:
    a plan is not kept from instances that stop early)."""
    best = {"fused": math.inf, "three": math.inf}
    total = {"fused": 0.0, "three": 0.0}
    clean = not any([run(True), run(False)])
    for rep in range(50):
        for key in best:
            start = time.perf_counter()
            clean &= not run(key == "fused")
            took = time.perf_counter() - start
            best[key], total[key] = min(best[key], took), total[key] + took
        if rep >= 2 and min(total.values()) >= PROBE_SECONDS:
            break
    return best, clean


class _Plans:
    """Plans in this process, per plan file (module state, set without a global statement)."""

    loaded: ClassVar[dict[str, dict]] = {}


def plan_file(library_path: str | os.PathLike) -> Path:
    """The plan file of a compiled library: beside it, named after it."""
    path = Path(library_path)
    return path.with_name(path.name.rsplit(".so", 1)[0] + ".plan.json")


def _read(path: Path | None) -> dict:
    """The plans of a plan file (``None``: those of this process only, no library file known)."""
    if str(path) not in _Plans.loaded:
        try:
            plans = json.loads(path.read_text()) if path is not None else {}
        except (OSError, ValueError):
            plans = {}
        _Plans.loaded[str(path)] = plans if isinstance(plans, dict) else {}
    return _Plans.loaded[str(path)]


def _write(path: Path | None, key: str, entry: dict) -> None:
    """Add ``key: entry`` to the plan file (read again first, so that plans written meanwhile by
    another process are kept); written to a temporary name and renamed. A cache that cannot be
    written keeps the plan in this process only."""
    _Plans.loaded.pop(str(path), None)
    plans = dict(_read(path))
    plans[key] = entry
    _Plans.loaded[str(path)] = plans
    if path is None:
        return
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(suffix=".json", dir=path.parent)
        with os.fdopen(fd, "w") as f:
            json.dump(plans, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def plan_form(
    library_path: str | os.PathLike | None,
    key: str,
    instances: int,
    threads: int,
    run: Callable[[bool], object],
    nbytes: int = 0,
) -> Plan:
    """The form for a problem of kind ``key`` (``nbytes`` of ``V`` per instance): forced
    (:data:`FORM_ENV`; ``size``: by :data:`SIZE_RULE_BYTES`), from the plan file of
    the library at ``library_path``, or measured now with ``run(fused)`` (the kernel on
    ``instances`` instances of the call) and written to the plan file (not when a call of
    ``run`` returned a true value: instances whose scores were not finite)."""
    form = forced_form()
    if form == "size":
        return Plan(nbytes >= SIZE_RULE_BYTES, "forced", None, 0, 0)
    if form != "auto":
        return Plan(form == "fused", "forced", None, 0, 0)
    path = plan_file(library_path) if library_path else None
    entry = _read(path).get(key)
    if isinstance(entry, dict) and entry.get("form") in ("fused", "three"):
        return Plan(
            entry["form"] == "fused",
            "cached",
            entry["seconds"],
            entry["instances"],
            entry.get("threads", 0),
        )
    seconds, clean = _time_forms(run)
    fused = seconds["fused"] <= seconds["three"]
    entry = {
        "form": "fused" if fused else "three",
        "seconds": seconds,
        "instances": instances,
        "threads": threads,
        "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if clean:
        _write(path, key, entry)
    return Plan(fused, "measured", seconds, instances, threads)


def forget() -> None:
    """Forget the plans read in this process (the files stay; the next call reads them again)."""
    _Plans.loaded.clear()
