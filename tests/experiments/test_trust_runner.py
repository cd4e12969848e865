"""The runner's promises: compare never says "agrees" when the runs differ, and the command line
never replaces a committed full-size results file with a CI-size run."""

from __future__ import annotations

import json
import math

import pytest

from sxor import cli, experiments
from sxor.results import RESULTS_DIR

FULL = {
    "experiment": None,
    "records": [
        {"d": 4, "k": 1, "x": 2.0, "v": [1.0, 2.0], "s": "a", "n": None},
        {"d": 4, "k": 2, "x": 3.0, "v": [1.0], "s": "b", "n": 1.0},
    ],
}


def _ci(**changes):
    rec = {"d": 4, "k": 1, "x": 2.0, "v": [1.0, 2.0], "s": "a", "n": None}
    rec.update(changes)
    return {"experiment": None, "records": [rec]}


def _cmp(ci, full=FULL, **kw):
    return experiments.compare(ci, full, keys=kw.pop("keys", ("d", "k")), **kw)


def test_identical_cells_agree_and_print_machine_independently():
    c = _cmp(_ci())
    assert c.agrees and c.shared == 1 and c.max_difference == 0 and not c.problems
    assert str(c) == "CI run vs committed full run: 1 shared cells, largest difference < 1e-09"


@pytest.mark.parametrize(
    "changes, why",
    [
        ({"x": math.nan}, "NaN"),
        ({"x": math.inf}, "inf"),
        ({"v": [1.0, 2.0, 3.0]}, "lengths 3 and 2"),
        ({"v": [1.0]}, "lengths 1 and 2"),
        ({"n": 1.0}, "None"),  # the full run saved NaN/inf as null
        ({"s": "b"}, "'b' against 'a'"),
        ({"extra": 1.0}, "only in the CI run"),
        ({"v": 1.0}, "list"),
        ({"x": 2.0 + 1e-6}, None),  # a plain difference above tol
    ],
)
def test_differing_cells_never_agree(changes, why):
    c = _cmp(_ci(**changes))
    assert not c.agrees
    if why is not None:
        assert any(why in p for p in c.problems), c.problems
        assert c.max_difference == math.inf and "DISAGREES" in str(c)


def test_infinities_and_nans():
    inf_full = {"records": [{"d": 1, "k": 1, "x": math.inf}]}
    assert _cmp({"records": [{"d": 1, "k": 1, "x": math.inf}]}, inf_full).agrees
    assert not _cmp({"records": [{"d": 1, "k": 1, "x": -math.inf}]}, inf_full).agrees
    assert not _cmp({"records": [{"d": 1, "k": 1, "x": 1.0}]}, inf_full).agrees
    nan_full = {"records": [{"d": 1, "k": 1, "x": math.nan}]}
    assert not _cmp({"records": [{"d": 1, "k": 1, "x": math.nan}]}, nan_full).agrees
    assert not _cmp({"records": [{"d": 1, "k": 1, "x": 1.0}]}, nan_full).agrees
    none_full = {"records": [{"d": 1, "k": 1, "x": None}]}
    assert _cmp({"records": [{"d": 1, "k": 1, "x": None}]}, none_full).agrees


def test_a_field_missing_from_the_ci_record_is_a_disagreement():
    rec = dict(_ci()["records"][0])
    del rec["x"]
    c = _cmp({"records": [rec]})
    assert not c.agrees and any("only in the full run" in p for p in c.problems)


@pytest.mark.parametrize(
    "ci, full, kw, match",
    [
        ({"records": []}, FULL, {}, "no records"),
        ({}, FULL, {}, "CI run has no 'records'"),
        (_ci(), {"experiment": None}, {}, "full run has no 'records'"),
        (_ci(), {"records": FULL["records"] * 2}, {}, "two records of the full run share"),
        ({"records": _ci()["records"] * 2}, FULL, {}, "two records of the CI run share"),
        (_ci(d=5), FULL, {}, "no partner"),
        (_ci(d=4.0), FULL, {}, "exact"),
        (_ci(), FULL, {"tol": math.nan}, "tol must be finite"),
        (_ci(), FULL, {"tol": math.inf}, "tol must be finite"),
        (_ci(), FULL, {"tol": -1e-9}, "tol must be finite and > 0"),
        (_ci(), FULL, {"tol": 0.0}, "> 0"),
        (_ci(), FULL, {"keys": ()}, "at least one"),
        (_ci(), FULL, {"keys": ("d", "missing")}, "lacks the key fields"),
    ],
)
def test_compare_refuses_what_it_cannot_compare(ci, full, kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        _cmp(ci, full, **kw)


def test_compare_refuses_a_string_for_keys():
    with pytest.raises(TypeError, match="keys must be a sequence"):
        experiments.compare(_ci(), FULL, keys="d")


# ------------------------------------------------------------------ the command line


@pytest.fixture
def tiny():
    """A registered two-size experiment, removed from the registry afterwards."""
    experiments.load_all()

    @experiments.register("trust-tiny", "a one-record experiment for the command-line tests")
    def _tiny(size, device):
        return {"steps": 1 if size == "ci" else 3}, [{"d": 1, "x": 1.0 if size == "ci" else 1.5}]

    yield "trust-tiny"
    experiments.REGISTRY.pop("trust-tiny")


def test_a_ci_run_writes_outside_the_committed_folder(tiny, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    committed = tmp_path / "committed"
    monkeypatch.setattr(cli, "RESULTS_DIR", committed)
    assert cli.main(["run", "trust-tiny"]) == 0
    written = tmp_path / "sxor-ci-results" / "trust-tiny.json"
    assert json.loads(written.read_text())["params"]["size"] == "ci"
    assert not committed.exists()
    assert cli.main(["run", "trust-tiny", "--size", "full"]) == 0
    assert json.loads((committed / "trust-tiny.json").read_text())["params"]["size"] == "full"
    assert cli.CI_OUT.name == "sxor-ci-results" and RESULTS_DIR.name == "committed"


def test_a_ci_run_never_replaces_a_full_run_without_the_flag(tiny, tmp_path, capsys):
    assert cli.main(["run", "trust-tiny", "--size", "full", "--out", str(tmp_path)]) == 0
    target = tmp_path / "trust-tiny.json"
    before = target.read_text()
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "trust-tiny", "--out", str(tmp_path)])
    assert exit_.value.code == 2
    assert "holds a full-size run" in capsys.readouterr().err
    assert target.read_text() == before
    assert cli.main(["run", "trust-tiny", "--out", str(tmp_path), "--replace-full"]) == 0
    assert json.loads(target.read_text())["params"]["size"] == "ci"
    # a CI file may be replaced by a CI run, and a corrupted one too (regenerating is the fix)
    assert cli.main(["run", "trust-tiny", "--out", str(tmp_path)]) == 0
    target.write_text("{ truncated")
    assert cli.main(["run", "trust-tiny", "--out", str(tmp_path)]) == 0


def test_per_instance_lists_compare_on_the_ci_length_only_when_declared():
    full = {"records": [{"d": 1, "k": 1, "first": [3, 5, 7, 9]}]}
    ci = {"records": [{"d": 1, "k": 1, "first": [3, 5]}]}
    assert not _cmp(ci, full).agrees  # undeclared: lengths 2 and 4 disagree
    assert _cmp(ci, full, prefix=("first",)).agrees
    assert not _cmp(
        {"records": [{"d": 1, "k": 1, "first": [3, 6]}]}, full, prefix=("first",)
    ).agrees
    longer = {"records": [{"d": 1, "k": 1, "first": [3, 5, 7, 9, 11]}]}
    assert not _cmp(longer, full, prefix=("first",)).agrees  # the CI list may not be longer
    assert experiments.get("finite-samples-sgd").compare_prefix == ("first_success",)
