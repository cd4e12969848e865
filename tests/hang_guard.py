"""A hang guard for the unit tests: fail a call that gives no answer within a generous limit.

Tests assert behaviour, never wall-clock time (how fast a call is belongs in ``benchmarks/``);
the guard only turns a hang into a failure, with a limit of at least 60 seconds so that a busy
machine never trips it.
"""

from __future__ import annotations

import contextlib
import signal

import pytest

#: Seconds after which a call counts as hanging (never below 60).
HANG_SECONDS = 60


class _Hang(Exception):
    pass


def _raise_hang(signum, frame):
    raise _Hang()


@contextlib.contextmanager
def hang_guard(what: str, seconds: int = HANG_SECONDS):
    """Fail the test when the body runs longer than ``seconds`` (POSIX alarms; elsewhere no guard)."""
    if seconds < 60:
        raise ValueError(f"a hang guard allows at least 60 s, got {seconds}")
    alarm = hasattr(signal, "SIGALRM")
    if alarm:
        previous = signal.signal(signal.SIGALRM, _raise_hang)
        signal.alarm(int(seconds))
    try:
        yield
    except _Hang:
        pytest.fail(f"{what} hangs (no answer within {seconds} s)")
    finally:
        if alarm:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
