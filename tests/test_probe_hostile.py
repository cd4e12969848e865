"""The fast part of ``tools/probe_hostile.py``: hostile inputs, each in its own process.

The whole probe (80 inputs, a few minutes) is ``python tools/probe_hostile.py``; here a sample
of both kinds runs, each within the probe's own timeout (a hang is a failure, not a slow pass).
"""

from __future__ import annotations

import pytest

from tools.probe_bad_inputs import run_case
from tools.probe_hostile import CLI, LIBRARY, run_cli

FAST_CLI = [
    "exponent with underscores",
    "string padded with 3000 spaces",
    "NPZ header claiming 10^12 entries",
    "run --device meta",
    "valid: --tau 1e-1000",
]
FAST_LIBRARY = [
    "construct with a meta tensor",
    "hand-built tau_max then tau 10^9",
]


def test_the_probe_holds_sixty_new_inputs_with_unique_names():
    names = [c.name for c in CLI] + [c[0] for c in LIBRARY]
    assert len(names) >= 60 and len(set(names)) == len(names)
    assert set(FAST_CLI) <= {c.name for c in CLI}
    assert set(FAST_LIBRARY) <= {c[0] for c in LIBRARY}


@pytest.mark.parametrize("name", FAST_CLI)
def test_hostile_command_lines_get_a_result_or_a_one_line_refusal(name):
    case = next(c for c in CLI if c.name == name)
    _, outcome, detail = run_cli(case, timeout=120)
    assert outcome == "clear", detail


@pytest.mark.parametrize("name", FAST_LIBRARY)
def test_hostile_library_calls_get_a_clear_error(name):
    case = next(c for c in LIBRARY if c[0] == name)
    _, outcome, detail = run_case(case, timeout=120)
    assert outcome == "clear", detail
