"""Static checks of the committed notebooks, complementing nbval.

nbval silently skips a code cell whose stored ``execution_count`` is None, so a notebook saved
with cleared outputs would pass it: here every notebook must have been executed top to bottom in
a fresh kernel. The Colab cell must install the package from the repository URL set once in
``_config.yml``, at the release tag of the package's version (``tools/colab.py``), so that a reader
in Colab runs the code that made the committed outputs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").rglob("*.ipynb"))
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())

from tools.check_site import toc_pages  # noqa: E402  (the repository root is on sys.path: tests/ is a package)
from tools.colab import release_tag  # noqa: E402  (same)


def toc_files() -> set[str]:
    """Every page of ``_toc.yml`` (the same parser the site check uses)."""
    return set(toc_pages(yaml.safe_load((ROOT / "_toc.yml").read_text())))


def code_cells(path: Path):
    nb = nbformat.read(path, as_version=4)
    return [cell for cell in nb.cells if cell.cell_type == "code" and cell.source.strip()]


def test_every_notebook_is_in_the_table_of_contents_and_every_entry_exists():
    toc = toc_files()
    for path in NOTEBOOKS:
        assert path.relative_to(ROOT).with_suffix("").as_posix() in toc, (
            f"{path} is not in _toc.yml"
        )
    for entry in toc:
        assert any((ROOT / f"{entry}{ext}").is_file() for ext in (".ipynb", ".md")), (
            f"_toc.yml: {entry} missing"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_cells_were_executed_in_order_from_a_fresh_kernel(path):
    counts = [cell.execution_count for cell in code_cells(path)]
    assert None not in counts, f"{path.name}: {counts.count(None)} code cell(s) never executed"
    assert counts == list(range(1, len(counts) + 1)), (
        f"{path.name}: cells not executed in order: {counts}"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_stored_errors_and_no_skipped_cells(path):
    for cell in code_cells(path):
        tags = cell.metadata.get("tags", [])
        assert "nbval-skip" not in tags, f"{path.name}: a skipped cell is never checked"
        for output in cell.outputs:
            assert output.output_type != "error", f"{path.name}: stored error output"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_colab_cell_installs_from_the_configured_repository(path):
    first = code_cells(path)[0]
    url = CONFIG["repository"]["url"]
    assert '"google.colab" in sys.modules' in first.source, (
        f"{path.name}: first cell is not the Colab cell"
    )
    installs = re.findall(r"git\+(\S+?)@", first.source)
    assert installs == [url], f"{path.name}: Colab cell installs {installs}, _config.yml says {url}"
    tags = re.findall(r"git\+\S+?@([^\"'\s]+)", first.source)
    assert tags == [release_tag()], (
        f"{path.name}: Colab cell installs {tags}, the package is {release_tag()}: "
        "run `python tools/colab.py pin`"
    )
    assert "remove-cell" in first.metadata.get("tags", []), (
        f"{path.name}: tag the Colab cell remove-cell"
    )
    assert not first.outputs, f"{path.name}: the Colab cell must print nothing outside Colab"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_widget_cells_are_not_compared_and_setup_is_used(path):
    cells = code_cells(path)
    assert any("sxor.book.setup(" in cell.source for cell in cells[:3]), (
        f"{path.name}: call sxor.book.setup() early"
    )
    for cell in cells:
        if re.search(r"\binteract(ive)?\s*\(|widgets\.", cell.source):
            assert "nbval-ignore-output" in cell.metadata.get("tags", []), (
                f"{path.name}: untagged widget cell"
            )


def test_committed_results_load_from_the_package():
    from sxor.results import RESULTS_DIR, committed_results

    files = sorted(RESULTS_DIR.glob("*.json"))
    assert files, f"no committed results in {RESULTS_DIR}"
    for path in files:
        assert committed_results(path.stem) == json.loads(path.read_text())


def test_missing_results_raise_file_not_found_saying_what_to_run(monkeypatch, tmp_path):
    import sxor.results as results

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match=r"python -m sxor run nope --size full"):
        results.committed_results("nope")
