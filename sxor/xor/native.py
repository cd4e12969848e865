"""A native CPU kernel for the one step of :mod:`sxor.xor.population` (softmax heads).

The kernel (``_one_step.c`` beside this file, plain C) does the three passes over ``V`` of one
step for a whole batch in one call, parallel over instances on ``torch.get_num_threads()`` POSIX
threads, in the layout ``V`` is stored in (``[..., m, d]`` contiguous along ``d``, as the sweeps
draw it, or ``[..., d, m]``). It is compiled on first use with the system C compiler
(``gcc -O3 -march=native -fopenmp-simd``: OpenMP's ``simd`` pragmas vectorise the reductions, no
OpenMP runtime is linked, and never ``-ffast-math``) into a per-user cache keyed by the source, the compiler's version and the CPU's
flags, so a different machine or compiler compiles its own copy; the library is written to a
temporary name and renamed, so concurrent first uses never load a half-written file; a cached
file that does not load (truncated, foreign, stale) is built again.

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
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("_one_step.c")
#: Compiler flags, without ``-ffast-math`` so that IEEE semantics hold (``inf * 0 = nan`` flags a
#: non-finite V, and a NaN propagates); the reductions are vectorised by ``omp simd reduction``
#: pragmas instead.
FLAGS = ["-O3", "-march=native", "-fopenmp-simd", "-pthread", "-fPIC", "-shared", "-std=gnu99", "-fno-math-errno"]

_state: dict = {}
#: Values of ``SXOR_NATIVE`` that switch the kernel off.
_OFF = ("0", "false", "no", "off")


def _cache_dir() -> Path:
    root = os.environ.get("SXOR_NATIVE_CACHE") or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "sxor" / "native"


def _compiler() -> str | None:
    """The C compiler: ``$CC`` when set (one program, found on ``PATH`` or by its path; anything
    else raises RuntimeError rather than silently compiling with another one), else gcc or cc."""
    cc = os.environ.get("CC", "").strip()
    if cc:
        found = shutil.which(cc)
        if found is None:
            raise RuntimeError(f"CC={cc!r} is not an executable compiler (a single program, on PATH or by path)")
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
    keep = [line for line in text.splitlines() if line.startswith(("model name", "flags", "Features", "CPU part"))]
    return "\n".join(sorted(set(keep)))


def cache_key(cc: str) -> str:
    """Hash of the kernel's source, the flags, the compiler's version and the CPU's flags."""
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, errors="replace", timeout=60).stdout
    h = hashlib.sha256()
    for part in (SOURCE.read_bytes(), " ".join(FLAGS).encode(), version.encode(), _cpu_flags().encode(),
                 platform.machine().encode()):
        h.update(part)
        h.update(b"\0")
    return h.hexdigest()[:24]


def _compile() -> ctypes.CDLL:
    cc = _compiler()
    if cc is None:
        raise RuntimeError("no C compiler (gcc or cc) on PATH")
    if not SOURCE.exists():
        raise RuntimeError(f"kernel source {SOURCE.name} not installed")
    target = _cache_dir() / f"one_step-{cache_key(cc)}.so"
    if target.exists():
        try:
            return _load(str(target))
        except (OSError, AttributeError) as err:  # a stale, truncated or foreign file: build it again
            stale = f"{target.name} in the cache could not be loaded ({err}); "
    else:
        stale = ""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(fd)
    try:
        proc = subprocess.run([cc, *FLAGS, "-o", tmp, str(SOURCE), "-lm"], capture_output=True, text=True,
                              errors="replace", timeout=300)
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
        raise RuntimeError(f"{stale}the freshly built {target.name} could not be loaded ({err})") from None


def _load(path: str) -> ctypes.CDLL:
    """Load the library at ``path`` and declare its two entry points (AttributeError if absent)."""
    lib = ctypes.CDLL(path)
    i64, p, c_int = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int
    for name in ("sxor_one_step_f64", "sxor_one_step_f32"):
        fn = getattr(lib, name)
        fn.restype = i64
        fn.argtypes = [i64, i64, i64, p, i64, i64, i64, p, i64, p, i64, p, i64, p, i64, c_int, c_int, c_int,
                       p, p, p, p, p, p, p, p]
    return lib


def library() -> ctypes.CDLL | None:
    """The compiled kernel, compiling it on first use; ``None`` if unavailable (see
    :func:`unavailable_reason`). The outcome is remembered for the process."""
    if os.environ.get("SXOR_NATIVE", "1").strip().lower() in _OFF:  # read at every call (tests switch it)
        _state["off"] = os.environ["SXOR_NATIVE"].strip()
        return None
    _state.pop("off", None)
    if "lib" not in _state:
        try:
            _state["lib"], _state["why"] = _compile(), None
        except (OSError, RuntimeError, subprocess.SubprocessError) as err:
            _state["lib"], _state["why"] = None, f"native kernel unavailable: {err}"
        except Exception as err:  # noqa: BLE001 - whatever went wrong, fall back and say what
            _state["lib"], _state["why"] = None, f"native kernel unavailable: {type(err).__name__}: {err}"
    return _state["lib"]


def unavailable_reason() -> str | None:
    """Why :func:`library` returned ``None`` (``None`` when it is loaded or not yet tried)."""
    return f"disabled by SXOR_NATIVE={_state['off']}" if _state.get("off") else _state.get("why")


def reset() -> None:
    """Forget the outcome of the last :func:`library` call (the next one compiles or loads again)."""
    _state.clear()
