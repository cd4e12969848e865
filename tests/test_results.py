"""Results files: shape, loading, and the description the reproducibility appendix prints."""

from __future__ import annotations

import pytest

from sxor.results import RESULTS_DIR, committed_results, describe, finite_or_none, save_results


def test_describe_names_command_machine_and_every_parameter():
    results = {
        "experiment": "x",
        "params": {"size": "full", "d": [4, 8], "seeds": 3},
        "meta": {
            "command": "python -m sxor run x --size full",
            "device": "cpu: test",
            "torch": "t",
            "numpy": "n",
            "date": "today",
            "wall_seconds": 12.4,
        },
    }
    lines = describe(results, width=60)
    assert lines[0] == "x (size full): python -m sxor run x --size full"
    assert "cpu: test" in lines[1] and lines[1].endswith("12 s wall")
    assert "d = [4, 8]" in " ".join(lines) and "seeds = 3" in " ".join(lines)
    assert all(len(line) <= 60 for line in lines)
    with pytest.raises(ValueError, match="lack the keys"):
        describe({"meta": {}})


def test_describe_prints_a_note_on_how_the_file_was_made():
    results = {
        "experiment": "x",
        "params": {"size": "full"},
        "meta": {"command": "c", "note": "joined from four processes " * 4},
    }
    lines = describe(results, width=60)
    text = " ".join(line.strip() for line in lines)
    assert "note: joined from four processes" in text and text.index("note:") < text.index(
        "parameters:"
    )
    assert all(len(line) <= 60 for line in lines)
    assert not any("note" in line for line in describe({**results, "meta": {"command": "c"}}))


def test_every_committed_run_can_be_described_within_the_page_width():
    for path in sorted(RESULTS_DIR.glob("*.json")):
        results = committed_results(path.stem)
        if "experiment" in results:
            assert all(len(line) <= 100 for line in describe(results)), path.name


def test_save_results_round_trips_and_refuses_a_partial_dict(tmp_path):
    results = {"experiment": "x", "params": {"size": "ci"}, "records": [{"a": 1}], "meta": {}}
    path = save_results(tmp_path / "x.json", results)
    assert path.read_text().startswith("{")
    with pytest.raises(ValueError, match="records"):
        save_results(tmp_path / "y.json", {"experiment": "x", "params": {}, "meta": {}})


def test_finite_or_none():
    assert finite_or_none(1.5) == 1.5 and finite_or_none(float("nan")) is None
    assert finite_or_none(float("inf")) is None
