"""``python -m sxor``: see :mod:`sxor.cli`."""

from .cli import main

raise SystemExit(main())
