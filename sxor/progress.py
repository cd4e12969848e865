"""Progress bars for long sweeps: tqdm, silenced when ``TQDM_DISABLE`` is set (as CI does).

tqdm's notebook bars ignore the ``TQDM_DISABLE`` environment variable, and a bar stored in a
notebook becomes a widget output; this wrapper reads the variable itself.
"""

from __future__ import annotations

import os
from typing import Iterable, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def progress(iterable: Iterable[T], **kwargs) -> Iterable[T]:
    """``tqdm(iterable, **kwargs)``, disabled when ``TQDM_DISABLE`` is set to a non-empty value
    other than ``0``/``false``."""
    disabled = os.environ.get("TQDM_DISABLE", "").strip().lower() not in ("", "0", "false")
    return tqdm(iterable, disable=disabled, leave=False, **kwargs)
