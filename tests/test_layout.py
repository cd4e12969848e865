"""The tree shows the two papers and the machinery apart.

Part I lives in ``sxor.xor``, Part II in ``sxor.interp``, the book's machinery at the top of
``sxor`` (``book``, ``results``, ``progress``, ``cli``, the runner in ``experiments/__init__``).
Part II and the machinery import nothing from Part I; Part I may import the machinery. The
experiment modules (one per chapter) and the package's ``__init__`` (which re-exports the most used
Part I names) sit above both.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SXOR = Path(__file__).resolve().parents[1] / "sxor"
MACHINERY = [
    "_version.py",
    "book.py",
    "results.py",
    "progress.py",
    "cli.py",
    "__main__.py",
    "experiments/__init__.py",
]
PART2 = sorted(str(p.relative_to(SXOR)) for p in (SXOR / "interp").rglob("*.py"))


def imported_modules(path: Path) -> set[str]:
    """Absolute names of the ``sxor`` modules that ``path`` imports (relative imports resolved)."""
    package = ["sxor", *path.relative_to(SXOR).parent.parts]
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names.add(module)
            names |= {f"{module}.{alias.name}" for alias in node.names}
    return names


def test_imports_are_resolved():
    assert "sxor.xor.data" in imported_modules(SXOR / "xor" / "reference.py")
    assert "sxor.book.default_device" in imported_modules(SXOR / "__init__.py")


@pytest.mark.parametrize("module", MACHINERY + PART2)
def test_machinery_and_part2_import_nothing_from_part1(module):
    bad = sorted(
        n for n in imported_modules(SXOR / module) if n == "sxor.xor" or n.startswith("sxor.xor.")
    )
    assert not bad, f"sxor/{module} imports Part I: {bad}"


def test_part1_and_part2_are_subpackages():
    assert (SXOR / "xor" / "__init__.py").is_file() and (SXOR / "interp" / "__init__.py").is_file()
    top = sorted(p.name for p in SXOR.glob("*.py"))
    assert top == [
        "__init__.py",
        "__main__.py",
        "_version.py",
        "book.py",
        "cli.py",
        "progress.py",
        "results.py",
    ], top
