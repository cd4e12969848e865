"""The pin of PyTorch's CPU kernels (tools/cpu_kernels.py) and that it is in force under pytest."""

from __future__ import annotations

import os
import subprocess
import sys

import torch

from tools.cpu_kernels import CAPABILITY, cpu_has_avx2, pin


def test_pin_sets_avx2_on_a_cpu_with_avx2(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2 avx512f\n")
    env: dict[str, str] = {}
    assert pin(env, info) == CAPABILITY and env["ATEN_CPU_CAPABILITY"] == "avx2"
    assert env["SXOR_NATIVE_MARCH"] == "x86-64-v3" and env["SXOR_ONE_STEP_FORM"] == "size"


def test_pin_keeps_a_value_already_set_and_leaves_other_cpus_alone(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("flags\t\t: fpu sse2 avx\n")
    assert not cpu_has_avx2(info)
    env: dict[str, str] = {}
    assert pin(env, info) is None and env == {}
    assert pin({"ATEN_CPU_CAPABILITY": "default"}, info) == "default"
    assert not cpu_has_avx2(tmp_path / "missing")


def test_pytest_runs_with_the_pinned_kernels():
    if not cpu_has_avx2():
        return  # PyTorch chooses for itself on a CPU without AVX2
    assert os.environ.get("ATEN_CPU_CAPABILITY") == CAPABILITY
    assert torch.backends.cpu.get_cpu_capability() == os.environ["ATEN_CPU_CAPABILITY"].upper()


def test_notebook_kernels_inherit_the_pin():
    code = "import os; print(os.environ.get('ATEN_CPU_CAPABILITY'))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == str(os.environ.get("ATEN_CPU_CAPABILITY"))
