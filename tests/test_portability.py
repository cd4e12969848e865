"""Every number a notebook prints from a comparison with a committed run is the same on any machine.

The committed full-size runs were made on one CPU; a reader re-runs the CI size on another. For
every experiment that registers ``compare_keys`` (its notebook prints
:func:`sxor.experiments.compare` of its CI run against the committed file), the CI size is
re-run here in a fresh process under a different summation order: two threads instead of the
notebook's one and, where the CPU has AVX-512, torch's AVX2 kernels and numpy without its
AVX-512 loops, as on an older machine. What the notebook prints must come out unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from sxor import experiments

COMPARED = sorted(name for name, exp in experiments.load_all().items() if exp.compare_keys)

SCRIPT = """
import json, sys, torch
from sxor import experiments
from sxor.results import committed_results
torch.set_num_threads(2)
name = sys.argv[1]
ci = experiments.run(name, "ci", "cpu")
cmp = experiments.compare(ci, committed_results(name))
print(json.dumps({"printed": str(cmp), "agrees": cmp.agrees, "cells": len(ci["records"]),
                  "capability": torch.backends.cpu.get_cpu_capability()}))
"""


def other_machine_env() -> dict[str, str]:
    env = {**os.environ, "TQDM_DISABLE": "1"}
    if torch.backends.cpu.get_cpu_capability() == "AVX512":
        from numpy._core._multiarray_umath import __cpu_features__

        env["ATEN_CPU_CAPABILITY"] = "avx2"
        env["NPY_DISABLE_CPU_FEATURES"] = ",".join(
            f for f, on in __cpu_features__.items() if on and f.startswith("AVX512")
        )
    return env


def test_some_experiment_is_compared():
    assert {"one-step-eta", "why-transformer"} <= set(COMPARED)


@pytest.mark.parametrize("name", COMPARED)
def test_printed_comparison_is_unchanged_under_another_summation_order(name):
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, name],
        env=other_machine_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["agrees"], result["printed"]
    # exactly the line the notebook prints on the machine that made the committed outputs
    ci_cells = result["cells"]
    tol = experiments.get(name).compare_tol
    assert result["printed"] == (
        f"CI run vs committed full run: {ci_cells} shared cells, largest difference < {tol:.0e}"
    )
