"""A native CPU kernel for the one step of :mod:`sxor.xor.population` (softmax heads).

The kernel (``_one_step.c`` beside this file, plain C) does one step for a whole batch in one
call, parallel over instances on ``torch.get_num_threads()`` threads, in the layout ``V`` is stored
in (``[..., m, d]`` contiguous along ``d``, as the sweeps draw it, or ``[..., d, m]``).

It reads ``V`` twice or three times. The torch path reads it three
times: the scores ``s = V theta0``, the gradients ``V^T r``, the new scores. Because
``softmax(s)_i softmax(-s)_i = exp(min s - max s) / (Z_g Z_h)`` is the same at every position, the
pullback ``r`` is ``hh g^2 + c t - L g`` with scalars ``hh, c, t, L`` known only at the end, plus
the label terms at the support; so the first read can also collect ``V^T [1, E, E^2, F, F^2]``
(``E = exp(s - max s)``, ``F = exp(min s - s)``, rescaled as the running maximum and minimum move)
and the gradients follow without a second read (the derivation is in the source). The first read
then keeps five running sums per entry of ``V`` where a pullback of ``r, r~`` keeps two, so which
form is faster depends on the machine and the size: it is measured on the first call at each kind
of problem and kept in a plan file beside the compiled library (:func:`plan_form`, from
``sxor/xor/_native_plan.py``); ``SXOR_ONE_STEP_FORM=fused`` or ``three`` forces a form, and
``size`` the fixed rule of earlier versions (two reads from 8 MiB per instance), for results that
do not depend on the machine's timings. The two forms differ in rounding only (both are compared
with the torch path in the tests).

Threads (:func:`threads_for`): a call runs on ``torch.get_num_threads()`` threads, however busy
the machine. Where other processes keep every core busy, the scheduler shares the cores among all
runnable threads, so a call on two threads often gets more of them than a call on one, although a
thread that waits for a core holds up the end of the call. Measured on an AMD EPYC (2 cores, both
kept busy by a spinning process each; ``benchmarks/bench_one_step.py``, medians of paired ratios):
in the latest run two threads took 0.55 to 0.92 times as long as one and the opposite policy 0.89
to 1.03 times; an earlier run on the same CPU model found two threads 13% slower at ``d = 2^14``.
The comparison does not reproduce to 5% on that machine. ``SXOR_NATIVE_LOAD_CHECK=1``
switches on the opposite policy of earlier versions (no more threads than idle cores, counted from
the runnable threads of other processes in ``/proc/loadavg``), for machines where it pays.

It is compiled on first use with the system C compiler
(``gcc -O3 -march=native -fopenmp``, or ``-march=$SXOR_NATIVE_MARCH``, e.g. ``x86-64-v3`` for an
AVX2-only build on a machine with AVX-512, never ``-ffast-math``; OpenMP's ``simd`` pragmas vectorise
the reductions) into a per-user cache keyed by the source, the flags, the compiler's version and
the CPU's flags, so a different machine or compiler compiles its own copy; the library is written
to a temporary name and renamed, so concurrent first uses never load a half-written file; a
cached file that does not load (truncated, foreign, stale) is built again.

Threads (:func:`thread_backend`): with ``-fopenmp`` the library needs ``libgomp.so.1``. When
torch's own OpenMP runtime is that library (as in the PyPI wheels of recent torch releases), the
dynamic loader resolves the name to it, and the kernel's parallel region runs on torch's worker
threads. Separate threads would compete for the cores with torch's workers, which spin for a
while after each parallel torch operation (on two cores a two-thread call then ran hardly faster
than a one-thread call). Where torch uses another runtime (a renamed libgomp, LLVM's libomp,
Intel's libiomp5), loading the OpenMP build would bring a second runtime with threads of its own;
on Linux the loader's map of the process is compared before and after loading, and if a new
OpenMP runtime appeared the POSIX-threads build is used instead, with the reason in
:func:`openmp_unavailable_reason`. That build (``-fopenmp-simd`` only, POSIX threads) is also
used when the compiler cannot build with OpenMP, or with ``SXOR_NATIVE_OPENMP=0``.

Fork: libgomp is not fork-safe. In a child forked after a parallel region of the parent, a call
on more than one thread hangs, as torch's own parallel operations do; use the ``spawn`` start
method (as ``SXOR_WORKERS`` does), one thread in the child, or ``SXOR_NATIVE_OPENMP=0``.

When no compiler is found (or ``$CC`` names none), the cache cannot be written, compilation
fails, or ``SXOR_NATIVE=0`` (or ``false``, ``no``, ``off``) is set, :func:`library`
returns ``None`` with the reason in :func:`unavailable_reason`, and the callers use the torch
path (same results to rounding).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import _native_plan

SOURCE = Path(__file__).with_name("_one_step.c")
#: Compiler flags, without ``-ffast-math`` so that IEEE semantics hold (``inf * 0 = nan`` flags a
#: non-finite V, and a NaN propagates); the reductions are vectorised by ``omp simd reduction``
#: pragmas instead.
FLAGS = [
    "-O3",
    "-march=native",
    "-fopenmp",
    "-pthread",
    "-fPIC",
    "-shared",
    "-std=gnu99",
    "-fno-math-errno",
]
#: The same without an OpenMP runtime (the kernel then starts POSIX threads).
FLAGS_PTHREADS = [f if f != "-fopenmp" else "-fopenmp-simd" for f in FLAGS]

_state: dict = {}
#: Values of ``SXOR_NATIVE`` that switch the kernel off.
_OFF = ("0", "false", "no", "off")


def _cache_dir() -> Path:
    root = (
        os.environ.get("SXOR_NATIVE_CACHE")
        or os.environ.get("XDG_CACHE_HOME")
        or str(Path.home() / ".cache")
    )
    return Path(root) / "sxor" / "native"


def _compiler() -> str | None:
    """The C compiler: ``$CC`` when set (one program, found on ``PATH`` or by its path; anything
    else raises RuntimeError rather than silently compiling with another one), else gcc or cc."""
    cc = os.environ.get("CC", "").strip()
    if cc:
        found = shutil.which(cc)
        if found is None:
            raise RuntimeError(
                f"CC={cc!r} is not an executable compiler (a single program, on PATH or by path)"
            )
        return found
    for name in ("gcc", "cc"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _cpu_flags() -> str:
    """The CPU model and feature flags (what ``-march=native`` compiles for)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() + platform.machine()
    keep = [
        line
        for line in text.splitlines()
        if line.startswith(("model name", "flags", "Features", "CPU part"))
    ]
    return "\n".join(sorted(set(keep)))


def _march(flags: list[str]) -> list[str]:
    """``flags`` with ``-march=native`` replaced by ``-march=$SXOR_NATIVE_MARCH`` when set."""
    arch = os.environ.get("SXOR_NATIVE_MARCH", "").strip()
    if not arch:
        return flags
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", arch):
        raise RuntimeError(f"SXOR_NATIVE_MARCH={arch!r} is not a -march value")
    return [f"-march={arch}" if f == "-march=native" else f for f in flags]


def _want_openmp() -> bool:
    return os.environ.get("SXOR_NATIVE_OPENMP", "1").strip().lower() not in _OFF


def cache_key(cc: str, flags: list[str] | None = None) -> str:
    """Hash of the kernel's source, the flags (default :data:`FLAGS`), the compiler's version and
    the CPU's flags."""
    # check=False: whatever the compiler prints (or nothing, if it fails) goes into the hash
    version = subprocess.run(
        [cc, "--version"], check=False, capture_output=True, text=True, errors="replace", timeout=60
    ).stdout
    h = hashlib.sha256()
    for part in (
        SOURCE.read_bytes(),
        " ".join(_march(FLAGS) if flags is None else flags).encode(),
        version.encode(),
        _cpu_flags().encode(),
        platform.machine().encode(),
    ):
        h.update(part)
        h.update(b"\0")
    return h.hexdigest()[:24]


def _compile() -> ctypes.CDLL:
    """The library built with OpenMP (:data:`FLAGS`) when :func:`_want_openmp`, falling back to
    :data:`FLAGS_PTHREADS` when that build fails or loads a second OpenMP runtime; the reason of
    the fallback is kept (:func:`openmp_unavailable_reason`)."""
    cc = _compiler()
    if cc is None:
        raise RuntimeError("no C compiler (gcc or cc) on PATH")
    if not SOURCE.exists():
        raise RuntimeError(f"kernel source {SOURCE.name} not installed")
    _state["openmp_failed"] = None
    if _want_openmp():
        before = _openmp_runtimes()
        try:
            lib = _compile_with(cc, _march(FLAGS))
        except RuntimeError as err:
            _state["openmp_failed"] = str(err)
        else:
            added = _openmp_runtimes() - before
            if not added:
                return lib
            _state["openmp_failed"] = (
                f"the OpenMP build loaded a second OpenMP runtime ({', '.join(sorted(added))}) "
                "beside torch's, whose threads would compete with torch's"
            )
    return _compile_with(cc, _march(FLAGS_PTHREADS))


#: File names of OpenMP runtimes (GNU libgomp, renamed copies of it, LLVM libomp, Intel libiomp5).
_OPENMP_RUNTIME = re.compile(r"lib(gomp|omp|iomp5)([-.][^/]*)?\.so[^/]*$")


def _openmp_runtimes() -> set[str]:
    """Paths of the OpenMP runtimes mapped into this process (empty where ``/proc/self/maps`` is
    not available, so that the check then never rejects a build)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if len(line.split()) >= 6}
    except OSError:
        return set()
    return {p for p in paths if _OPENMP_RUNTIME.search(p)}


def _compile_with(cc: str, flags: list[str]) -> ctypes.CDLL:
    suffix = "" if "-fopenmp" in flags else "-pthreads"
    target = _cache_dir() / f"one_step-{cache_key(cc, flags)}{suffix}.so"
    _state["path"] = target
    if target.exists():
        try:
            return _load(str(target))
        except (
            OSError,
            AttributeError,
        ) as err:  # a stale, truncated or foreign file: build it again
            stale = f"{target.name} in the cache could not be loaded ({err}); "
    else:
        stale = ""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(fd)
    try:
        proc = subprocess.run(
            [cc, *flags, "-o", tmp, str(SOURCE), "-lm"],
            check=False,  # the return code is read below, to raise with the compiler's message
            capture_output=True,
            text=True,
            errors="replace",
            timeout=300,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{stale}compilation failed: {proc.stderr.strip()[:500]}")
        os.chmod(tmp, 0o755)  # mkstemp makes it 0600
        os.replace(tmp, target)  # atomic: a concurrent loader sees no file or the whole file
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    # After a rebuild, load through a path spelled differently: the dynamic loader would otherwise
    # hand back a library it already mapped under the old file's name.
    try:
        return _load(os.path.join(str(target.parent), ".", target.name) if stale else str(target))
    except (OSError, AttributeError) as err:
        raise RuntimeError(
            f"{stale}the freshly built {target.name} could not be loaded ({err})"
        ) from None


def _load(path: str) -> ctypes.CDLL:
    """Load the library at ``path`` and declare its entry points (AttributeError if one is absent)."""
    lib = ctypes.CDLL(path)
    i64, p, c_int = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int
    lib.sxor_openmp.restype, lib.sxor_openmp.argtypes = c_int, []
    for name in ("sxor_one_step_f64", "sxor_one_step_f32"):
        fn = getattr(lib, name)
        fn.restype = i64
        fn.argtypes = [
            i64,
            i64,
            i64,
            p,
            i64,
            i64,
            i64,
            p,
            i64,
            p,
            i64,
            p,
            i64,
            p,
            i64,
            c_int,
            c_int,
            c_int,
            c_int,
            p,
            p,
            p,
            p,
            p,
            p,
            p,
            p,
        ]
    return lib


def library_path() -> Path | None:
    """The file of the loaded kernel (``None`` when none is loaded); its plans lie beside it."""
    return _state.get("path") if _state.get("lib") is not None else None


def plan_form(d: int, m: int, itemsize: int, layout: str, threads: int, instances: int, run):
    """The form of the kernel for this problem (``_native_plan.plan_form``): forced
    by ``SXOR_ONE_STEP_FORM``, read from the plan file of the loaded library, or measured now by
    ``run(fused)`` (the kernel on ``instances`` of the call's instances)."""
    key = _native_plan.plan_key(d, m, itemsize, layout, threads)
    return _native_plan.plan_form(
        library_path(), key, instances, threads, run, nbytes=d * m * itemsize
    )


def _running_threads() -> tuple[int, int] | None:
    """Runnable threads of the whole machine (``/proc/loadavg``) and of this process (state R in
    ``/proc/self/task``), or ``None`` where these files are not readable."""
    try:
        with open("/proc/loadavg") as f:
            total = int(f.read().split()[3].split("/")[0])
        own = 0
        for task in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{task}/stat") as f:
                    own += f.read().rsplit(")", 1)[1].split()[0] == "R"
            except OSError:
                continue  # a thread that ended meanwhile
    except (OSError, ValueError, IndexError):
        return None
    return total, max(own, 1)


def cpu_count() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def threads_for(requested: int) -> tuple[int, str | None]:
    """The threads a call runs on and, when fewer than ``requested``, why: ``requested``, unless
    ``SXOR_NATIVE_LOAD_CHECK=1`` asks for no more than the idle cores (the CPUs less the runnable
    threads of other processes), at least one (see the module's notes on threads)."""
    if requested <= 1 or os.environ.get("SXOR_NATIVE_LOAD_CHECK", "0").strip().lower() in _OFF:
        return requested, None
    counts = _running_threads()
    if counts is None:
        return requested, None
    others = max(0, counts[0] - counts[1])
    idle = cpu_count() - others
    if idle >= requested:
        return requested, None
    n = max(1, idle)
    return n, f"{n} of {requested} threads: {others} runnable threads of other processes"


def library() -> ctypes.CDLL | None:
    """The compiled kernel, compiling it on first use; ``None`` if unavailable (see
    :func:`unavailable_reason`). The outcome is remembered for the process."""
    if (
        os.environ.get("SXOR_NATIVE", "1").strip().lower() in _OFF
    ):  # read at every call (tests switch it)
        _state["off"] = os.environ["SXOR_NATIVE"].strip()
        return None
    _state.pop("off", None)
    if "lib" not in _state:
        try:
            _state["lib"], _state["why"] = _compile(), None
        except (OSError, RuntimeError, subprocess.SubprocessError) as err:
            _state["lib"], _state["why"] = None, f"native kernel unavailable: {err}"
        except Exception as err:
            _state["lib"], _state["why"] = (
                None,
                f"native kernel unavailable: {type(err).__name__}: {err}",
            )
    return _state["lib"]


def thread_backend() -> str | None:
    """How the loaded kernel runs its threads: ``"OpenMP"`` (torch's runtime, see the module's
    docstring) or ``"POSIX threads"``; ``None`` when no kernel is loaded."""
    lib = _state.get("lib")
    if lib is None:
        return None
    return "OpenMP" if lib.sxor_openmp() else "POSIX threads"


def openmp_unavailable_reason() -> str | None:
    """Why the loaded kernel uses POSIX threads although OpenMP was tried: the OpenMP build failed
    or would have loaded a second OpenMP runtime (``None`` if it was not tried or was kept)."""
    return _state.get("openmp_failed")


def unavailable_reason() -> str | None:
    """Why :func:`library` returned ``None`` (``None`` when it is loaded or not yet tried)."""
    return f"disabled by SXOR_NATIVE={_state['off']}" if _state.get("off") else _state.get("why")


def reset() -> None:
    """Forget the outcome of the last :func:`library` call (the next one compiles or loads again)."""
    _state.clear()
