"""One choice of PyTorch's vectorised CPU kernels, so that stored outputs reproduce on any x86-64 CPU.

PyTorch picks its CPU kernels by what the processor offers (AVX2, AVX-512, ...). Kernels of
different vector widths add up the same numbers in different orders, so the last bits of a sum
differ between an AVX2 and an AVX-512 machine, and a long chaotic run (one-sample SGD at the
edge of its step cap) can end differently. The committed outputs were made with the AVX2 kernels;
every x86-64 CPU that has AVX-512 also has AVX2, so asking for AVX2 everywhere makes the outputs
the same on all of them. The variable ``ATEN_CPU_CAPABILITY`` must be set before ``torch`` is
imported: the root ``conftest.py`` (pytest and nbval's kernels) and ``tools/execute_notebooks.py``
set it; set it by hand for command-line runs (``ATEN_CPU_CAPABILITY=avx2 python -m sxor run ...``).
A value already in the environment is kept; a CPU without AVX2 keeps PyTorch's own choice.

The book's own C kernel (``sxor/xor/_one_step.c``) has the same two sources of machine
dependence, and the same pin covers both: it is built for ``x86-64-v3`` (AVX2 and FMA: the
vector width of the machines the outputs were made on) instead of ``-march=native``
(``SXOR_NATIVE_MARCH``), and its form is chosen by the fixed size rule
(``SXOR_ONE_STEP_FORM=size``) instead of by timing both forms on the machine at hand, whose
choice could differ from run to run in the last bits. Readers' own runs keep the fastest
settings: the pin applies to the book's tests and stored outputs only.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

#: The kernels the committed outputs were made with.
CAPABILITY = "avx2"
#: The settings of ``sxor``'s native kernel that go with it (``sxor/xor/native.py``).
NATIVE = {"SXOR_NATIVE_MARCH": "x86-64-v3", "SXOR_ONE_STEP_FORM": "size"}


def cpu_has_avx2(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU lists the ``avx2`` flag (False where ``/proc/cpuinfo`` is missing)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return False
    return any(
        line.startswith("flags") and "avx2" in line.split(":", 1)[-1].split()
        for line in text.splitlines()
    )


def pin(
    environ: MutableMapping[str, str] = os.environ, cpuinfo: Path = Path("/proc/cpuinfo")
) -> str | None:
    """Set ``ATEN_CPU_CAPABILITY`` to :data:`CAPABILITY` and the native kernel's settings
    (:data:`NATIVE`), each unless set already, on a CPU with AVX2 (others keep their defaults).

    Returns the PyTorch value in force afterwards (None when PyTorch chooses for itself).
    """
    if cpu_has_avx2(cpuinfo):
        for key, value in {"ATEN_CPU_CAPABILITY": CAPABILITY, **NATIVE}.items():
            environ.setdefault(key, value)
    return environ.get("ATEN_CPU_CAPABILITY")
