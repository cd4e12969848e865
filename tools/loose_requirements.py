"""Print ``requirements.txt`` with its pins dropped: the newest release of every package.

Usage: ``python tools/loose_requirements.py [requirements.txt]`` (``make nightly`` installs what
it prints, to build and test the book with the newest releases of everything it uses).

A pin ``name==version`` (or any other version specifier, and any environment marker) becomes
``name``; options such as ``-e .`` and comments are kept as they are. One bound stays on purpose,
:data:`KEPT`: Jupyter Book 2 is another program (a Node.js site generator that downloads its
theme when it builds), not a newer release of the book's toolchain.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

#: Bounds kept in the loose list, with the reason above.
KEPT = {"jupyter-book": "jupyter-book<2"}
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*([<>=!~;@ ].*)?$")


def loosen(text: str) -> str:
    out = []
    for line in text.splitlines():
        stripped = line.split("#", 1)[0].strip()
        if not stripped or stripped.startswith("-"):
            out.append(line)
            continue
        match = REQUIREMENT.match(stripped)
        if match is None:
            raise ValueError(f"not a requirement line: {line!r}")
        name, extras = match.group(1), match.group(2) or ""
        out.append(KEPT.get(name.lower(), name + extras))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "requirements.txt")
    sys.stdout.write(loosen(path.read_text()))
