"""The command line writes a self-describing results file and reproduces the committed numbers."""

from __future__ import annotations

import json

import pytest

from sxor import experiments
from sxor.cli import main
from sxor.results import committed_results


def test_list_names_the_one_step_experiments(capsys):
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    for name in ("one-step-eta", "one-step-grid", "one-step-prediction"):
        assert name in listed


def test_ci_run_writes_provenance_and_reproduces_the_committed_cells(tmp_path):
    assert (
        main(["run", "one-step-eta", "--size", "ci", "--device", "cpu", "--out", str(tmp_path)])
        == 0
    )
    fresh = json.loads((tmp_path / "one-step-eta.json").read_text())
    assert (tmp_path / "one-step-eta.png").stat().st_size > 0
    assert fresh["experiment"] == "one-step-eta" and fresh["params"]["size"] == "ci"
    for key in ("command", "device", "python", "torch", "numpy", "date"):
        assert fresh["meta"][key], key
    assert fresh["meta"]["device"].startswith("cpu")

    comparison = experiments.compare(
        fresh, committed_results("one-step-eta"), keys=("d", "eta_index"), tol=1e-9
    )
    assert comparison.shared == len(fresh["records"]) > 0
    assert comparison.agrees, str(comparison)


def test_runner_returns_the_results_file_shape():
    results = experiments.run("one-step-eta", "ci", "cpu")
    assert list(results) == ["experiment", "params", "records", "meta"]
    assert results["params"]["size"] == "ci"
    assert results["meta"]["command"] == "python -m sxor run one-step-eta --size ci"
    assert results["meta"]["wall_seconds"] >= 0


def test_compare_matches_exact_keys_and_flags_a_changed_value():
    full = {"records": [{"d": 4, "k": 0, "x": 1.0}, {"d": 4, "k": 1, "x": 2.0}]}
    ci = {"records": [{"d": 4, "k": 1, "x": 2.0 + 1e-14}]}
    ok = experiments.compare(ci, full, keys=("d", "k"))
    assert ok.agrees and ok.shared == 1 and str(ok).endswith("< 1e-09")
    bad = experiments.compare({"records": [{"d": 4, "k": 1, "x": 2.1}]}, full, keys=("d", "k"))
    assert not bad.agrees and "not below" in str(bad)
    with pytest.raises(ValueError, match="no partner"):
        experiments.compare({"records": [{"d": 5, "k": 1, "x": 2.0}]}, full, keys=("d", "k"))
    with pytest.raises(ValueError, match="exact"):
        experiments.compare({"records": [{"d": 4.0, "k": 1, "x": 2.0}]}, full, keys=("d", "k"))
