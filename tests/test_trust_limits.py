"""Results files that are corrupted or misnamed, and the documented size limits of Part II."""

from __future__ import annotations

import json

import numpy as np
import pytest

import sxor.interp as I
from sxor import results
from sxor.interp import clustering, dataset
from sxor.interp.lemmas import identity_matrix


@pytest.fixture
def committed(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "content, why",
    [
        ("", "is empty"),
        ("  \n", "is empty"),
        ('{"experiment": "x", "rec', "not valid JSON"),
        ("[1, 2]", "holds a JSON list, not an object"),
        ('{"experiment": "x"}', "lacks 'experiment' and a list of 'records'"),
        ('{"experiment": "x", "records": 3}', "a list of 'records'"),
    ],
)
def test_a_corrupted_committed_file_names_itself_and_the_command(committed, content, why):
    (committed / "x.json").write_text(content)
    with pytest.raises(ValueError, match=why) as info:
        results.committed_results("x")
    assert str(committed / "x.json") in str(info.value)
    assert "python -m sxor run x --size full" in str(info.value)


def test_a_directory_missing_file_and_bad_names(committed):
    (committed / "d.json").mkdir()
    with pytest.raises(
        ValueError, match=r"d\.json is not a file.*python -m sxor run d --size full"
    ):
        results.committed_results("d")
    with pytest.raises(FileNotFoundError, match="python -m sxor run nope --size full"):
        results.committed_results("nope")
    for bad in ("", "..", "../x", "a/b", "a\\b", "x.json", "a\x00b", " x", 3, None):
        with pytest.raises(ValueError, match="name must be an experiment name"):
            results.committed_results(bad)
    good = {"experiment": "ok", "params": {}, "meta": {}, "records": []}
    (committed / "ok-1_b.json").write_text(json.dumps(good))
    assert results.committed_results("ok-1_b") == good
    (committed / "bench.json").write_text(json.dumps({"benchmark": "b", "configs": []}))
    assert results.committed_results("bench")["benchmark"] == "b"


def test_load_results_names_the_file(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("{")
    with pytest.raises(ValueError, match=r"r\.json is not valid JSON"):
        results.load_results(path)
    with pytest.raises(FileNotFoundError, match=r"no results file .*missing\.json"):
        results.load_results(tmp_path / "missing.json")


def test_random_dataset_limits_are_refused_before_drawing():
    assert dataset.MAX_DATASET_ENTRIES == 10**6
    for args, kw, what in [
        ((2, 3, 1, 10**6), {}, "MAX_DATASET_ENTRIES"),
        ((10**9, 3, 1, 2), {}, "MAX_DATASET_ENTRIES"),
        ((2, [10**6, 3], [1, 1], 2), {}, "MAX_DATASET_ENTRIES"),
        ((2, 3, 1, 2), {"denominator": 0}, "denominator"),
        ((2, 3, 1, 2), {"denominator": 2.5}, "denominator"),
        ((2, 3, 1, 2), {"seed": "a"}, "seed"),
        ((2, 3, 1, 2), {"seed": 1.0}, "seed"),
    ]:
        with pytest.raises(ValueError, match=what):
            I.random_dataset(*args, **kw)
    with pytest.raises(ValueError, match="1000002 coordinates"):
        I.random_dataset(1, 2, 1, 10**6 // 3 + 1)  # one coordinate per sequence over: refused
    X, _Y = I.random_dataset(1, 2, 1, 1000)
    assert X[0].shape == (2, 1000)


def test_attention_trajectory_and_identity_limits():
    X = np.random.default_rng(0).normal(size=(5, 2))
    assert clustering.MAX_TRAJECTORY_STEPS == 10**6 and clustering.MAX_TRAJECTORY_ENTRIES == 10**8
    for steps in (10**9, 10**6 + 1):
        with pytest.raises(ValueError, match="steps"):
            I.attention_trajectory(X, np.eye(2), 0.5, np.eye(2), 1.0, steps)
    big = np.zeros((10**4, 10**3))
    with pytest.raises(ValueError, match=r"\(steps \+ 1\) n d"):
        I.attention_trajectory(big, np.eye(10**3), 0.5, np.eye(10**3), 1.0, 10)
    assert I.attention_trajectory(X, np.eye(2), 0.5, np.eye(2), 1.0, 3).shape == (4, 5, 2)
    assert identity_matrix(3).tolist() == I.as_exact(np.eye(3, dtype=int)).tolist()
    with pytest.raises(ValueError, match="d must be <= 1000"):
        identity_matrix(1001)


def test_a_zero_denominator_is_refused_by_name():
    with pytest.raises(
        ValueError, match="tokens contains the string '1/0', a fraction with zero denominator"
    ):
        I.as_exact([["1/0", "1"]], "tokens")
