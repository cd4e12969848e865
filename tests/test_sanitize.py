"""The nbval sanitize rules mask noise only: a digit changed at print precision must still differ."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CFG = Path(__file__).with_name("nbval_sanitize.cfg")


def rules() -> list[tuple[str, str]]:
    """(regex, replace) pairs in file order, parsed as nbval parses them."""
    lines = [line.strip() for line in CFG.read_text().splitlines()]
    pairs = []
    for i, line in enumerate(lines):
        if line.startswith("regex:"):
            assert lines[i + 1].startswith("replace:"), (
                "each regex: line must be followed by replace:"
            )
            pairs.append((line[len("regex:") :].strip(), lines[i + 1][len("replace:") :].strip()))
    return pairs


def sanitize(text: str) -> str:
    for regex, replace in rules():
        text = re.sub(regex, replace, text)
    return text


def test_there_are_rules():
    assert len(rules()) == 5


@pytest.mark.parametrize(
    "stored, fresh",
    [
        ("loss = 0.1234", "loss = 0.1235"),  # a changed digit at print precision
        ("tensor([0.4860, 0.4595])", "tensor([0.4860, 0.4596])"),
        ("0.12345678", "0.12355678"),  # 4th decimal of a full-precision float
        ("success 0.950", "success 0.940"),
        ("m_95 = 12", "m_95 = 13"),
        ("1.0e-03", "2.0e-03"),
        ("-0.0001", "0.0001"),  # a sign that matters
        ("-0.5", "0.5"),
        ("max error 8.6e-16", "max error 3.2e-09"),  # a rounding error that grew
        ("loss 1.42e-06", "loss 1.43e-06"),
        ("max difference 0.0e+00", "max difference 2.0e-03"),  # zero against a real error
        ("10.0e+00", "0.0e+00"),
        ("lr 0.00301", "lr 0.00307"),  # a chosen format with more than 4 decimals: compared in full
        ("0.497535", "0.497536"),
        ("0.123456789", "0.123456788"),  # 9 decimals: a chosen format, not a bare repr
        ("12.3456789012345", "12.3457789012345"),  # the 4th decimal of a bare repr
        ("-1.5e-10", "1.5e-10"),  # at the 1e-10 edge: compared
        ("2.0e-10", "3.0e-10"),
    ],
)
def test_a_real_change_still_fails(stored, fresh):
    assert sanitize(stored) != sanitize(fresh)


@pytest.mark.parametrize(
    "stored, fresh",
    [
        ("<Figure at 0x7f3a2b1c9d10>", "<Figure at 0x7f99aa00bb11>"),
        ("-0.0000", "0.0000"),
        ("tensor([-0.0000, 1.0000])", "tensor([0.0000, 1.0000])"),
        ("0.1234567890123", "0.1234999999999"),
        ("0.30000000000000004", "0.3000000000000001"),  # bare reprs of the same sum in two orders
        ("max error 8.6e-16", "max error 2.2e-17"),
        ("moved 3.11e-12", "moved 5.58e-13"),
        ("9.9e-11", "1.2e-11"),  # just below 1e-10
        ("max difference 0.0e+00", "max difference 1.1e-16"),  # exact on one machine, not another
        ("max difference 0e+00", "max difference -2.2e-16"),
    ],
)
def test_noise_is_masked(stored, fresh):
    assert sanitize(stored) == sanitize(fresh)
