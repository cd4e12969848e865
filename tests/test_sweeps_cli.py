"""The command line writes a self-describing results file and reproduces the committed numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sxor import experiments
from sxor.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_list_names_the_one_step_experiments(capsys):
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    for name in ("one-step-eta", "one-step-grid", "one-step-prediction"):
        assert name in listed


def test_ci_run_writes_provenance_and_reproduces_the_committed_cells(tmp_path):
    assert main(["run", "one-step-eta", "--size", "ci", "--device", "cpu", "--out", str(tmp_path)]) == 0
    fresh = json.loads((tmp_path / "one-step-eta.json").read_text())
    assert (tmp_path / "one-step-eta.png").stat().st_size > 0
    assert fresh["experiment"] == "one-step-eta" and fresh["params"]["size"] == "ci"
    for key in ("command", "device", "python", "torch", "numpy", "date"):
        assert fresh["meta"][key], key
    assert fresh["meta"]["device"].startswith("cpu")

    committed = json.loads((ROOT / "results" / "one-step-eta.json").read_text())
    assert committed["params"]["size"] == "full"
    ci_d = {r["d"] for r in fresh["records"]}
    shared = [r for r in committed["records"] if r["d"] in ci_d]
    assert len(shared) == len(fresh["records"]) > 0
    for new, old in zip(fresh["records"], shared):
        assert new.keys() == old.keys()
        for key in new:
            assert new[key] == pytest.approx(old[key], rel=1e-12, abs=1e-15), (new["d"], new["eta_over_d2"], key)


def test_unknown_size_and_experiment_are_rejected():
    with pytest.raises(ValueError, match="size"):
        experiments.get("one-step-eta").run("huge", "cpu")
    with pytest.raises(ValueError, match="unknown experiment"):
        experiments.get("no-such-experiment")
