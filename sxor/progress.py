"""Progress bars for long sweeps: one text line that rewrites itself, silenced by ``TQDM_DISABLE``.

A chapter's sweep calls :func:`progress` once per grid cell, often inside another loop. tqdm's
notebook widgets (``tqdm.auto`` in Jupyter and Colab) would leave one finished bar per call on the
page: Colab ignores ``leave=False`` for widgets, and nested widget bars pile up. So this module
uses tqdm's plain text bar, which redraws one line with a carriage return and erases it when it
finishes, and it shows only the outermost of nested bars. Whatever the number of calls, a cell
shows at most one progress line while it runs and none afterwards.

The bar is off wherever its output would be stored or compared rather than watched
(:func:`disabled_by_environment`): when ``TQDM_DISABLE`` is set (tqdm reads it only for some of
its classes, so this module reads it itself; ``tools/execute_notebooks.py`` sets it, so stored
notebooks hold no progress output), and whenever the code runs under pytest. pytest sets
``PYTEST_CURRENT_TEST`` while it sets up and runs a test, and the kernels that nbval starts inherit
it, so a hand-run ``pytest --nbval`` sees no bar on stderr without any environment variable.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm.std import tqdm as _text_tqdm

T = TypeVar("T")

#: Width of the bar line in characters, below the book's 100-character limit on output lines.
NCOLS = 80
#: Seconds between redraws (in a notebook, each redraw is a message to the browser).
MININTERVAL = 0.5


def disabled_by_environment() -> bool:
    """True when ``TQDM_DISABLE`` is set to a non-empty value other than ``0``/``false``, or when
    running under pytest (``PYTEST_CURRENT_TEST`` is set: unit tests, and nbval's kernels)."""
    if os.environ.get("PYTEST_CURRENT_TEST"):
        return True
    return os.environ.get("TQDM_DISABLE", "").strip().lower() not in ("", "0", "false")


class _Bar(_text_tqdm):
    """A text bar that counts how many bars are iterating, so that inner ones stay silent."""

    active = 0

    def __iter__(self) -> Iterator:
        _Bar.active += 1
        try:
            yield from super().__iter__()
        finally:
            _Bar.active -= 1


def progress(iterable: Iterable[T], **kwargs) -> Iterable[T]:
    """Iterate over ``iterable`` behind a one-line text progress bar.

    Keyword arguments go to tqdm (``desc``, ``total``, ...). The bar is disabled when
    ``TQDM_DISABLE`` is set (:func:`disabled_by_environment`) and when another bar of this module
    is already iterating (only the outer loop of nested sweeps shows a bar). It is erased when the
    loop ends (``leave=False``), so consecutive sweeps reuse the same line.
    """
    if "leave" in kwargs:
        raise TypeError("progress() bars never stay on the page; do not pass leave=")
    asked = bool(kwargs.pop("disable", False))
    disable = asked or disabled_by_environment() or _Bar.active > 0
    kwargs.setdefault("ncols", NCOLS)
    kwargs.setdefault("mininterval", MININTERVAL)
    return _Bar(iterable, disable=disable, leave=False, **kwargs)
