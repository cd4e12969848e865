"""``python -m sxor certify FILE``: good files are certified, bad ones refused with the reason."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from sxor.cli import main
from sxor.interp import random_dataset
from sxor.interp.datafile import load_dataset

GOOD = {
    "inputs": [[[0, 0], [1, 0], [0, 1]], [[2, 2], [3, 1]]],
    "targets": [[[1, 1], ["1/2", 0]], [[5, 5]]],
}


def _write(tmp_path, name, payload):
    path = tmp_path / name
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    return path


def test_certify_a_json_file(tmp_path, capsys):
    assert main(["certify", str(_write(tmp_path, "good.json", GOOD))]) == 0
    out = capsys.readouterr().out
    assert "N = 2 sequences" in out and "blocks" in out and "tau_max = " in out
    assert "hausdorff_bound = 0, exact = True, certified = True" in out


def test_certify_an_npz_file_with_a_denominator(tmp_path, capsys):
    X, Y = random_dataset(3, 5, [2, 1, 3], 3, seed=1, denominator=4)
    arrays = {
        f"inputs_{j}": np.array([[int(v * 4) for v in row] for row in x]) for j, x in enumerate(X)
    }
    arrays |= {
        f"targets_{j}": np.array([[int(v * 4) for v in row] for row in y]) for j, y in enumerate(Y)
    }
    np.savez(tmp_path / "data.npz", denominator=4, **arrays)
    X2, Y2, tau = load_dataset(tmp_path / "data.npz")
    assert (
        tau is None
        and all((a == b).all() for a, b in zip(X, X2))
        and all((a == b).all() for a, b in zip(Y, Y2))
    )
    assert main(["certify", str(tmp_path / "data.npz")]) == 0
    assert "exact = True" in capsys.readouterr().out


def test_certify_with_a_temperature(tmp_path, capsys):
    path = _write(tmp_path, "good.json", GOOD | {"tau": "1/1000"})
    assert load_dataset(path)[2] == Fraction(1, 1000)
    assert main(["certify", str(path)]) == 0
    assert "tau = 1/1000" in capsys.readouterr().out
    assert main(["certify", str(path), "--tau", "1/7"]) == 0
    assert "tau = 1/7" in capsys.readouterr().out


BAD_JSON = [
    ("repeated token", {"inputs": [[[0, 0], [0, 0]]], "targets": [[[1, 1]]]}, "repeats the token"),
    ("float", {"inputs": [[[0.1, 0]]], "targets": [[[1, 1]]]}, "JSON float"),
    ("integer-valued float", {"inputs": [[[1.0, 0]]], "targets": [[[1, 1]]]}, "JSON float"),
    ("float tau", GOOD | {"tau": 0.5}, "JSON float"),
    ("m > n", {"inputs": [[[0, 0]]], "targets": [[[1, 1], [2, 2]]]}, "m <= n"),
    ("missing targets", {"inputs": [[[0, 0]]]}, "missing key"),
    ("unknown key", GOOD | {"targetz": []}, "unknown key"),
    ("not an object", [1, 2], "JSON object"),
    ("not JSON", "{inputs: ", "not valid JSON"),
    ("not a number", {"inputs": [[["x", 0]]], "targets": [[[1, 1]]]}, "not a rational"),
    (
        "same inputs, other targets",
        {"inputs": [[[0, 0]], [[0, 0]]], "targets": [[[1, 1]], [[2, 2]]]},
        "targets",
    ),
    (
        "mixed dimensions",
        {"inputs": [[[0, 0]], [[0, 0, 1]]], "targets": [[[1, 1]], [[2, 2, 2]]]},
        "dimension",
    ),
    ("empty", {"inputs": [], "targets": []}, "empty"),
]


@pytest.mark.parametrize("name, payload, reason", BAD_JSON, ids=[b[0] for b in BAD_JSON])
def test_bad_json_files_are_refused_with_the_reason(tmp_path, capsys, name, payload, reason):
    path = _write(tmp_path, "bad.json", payload)
    assert main(["certify", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("refused: ") and str(path) in err and reason in err


def test_bad_npz_files_and_paths_are_refused(tmp_path, capsys):
    np.savez(tmp_path / "float.npz", inputs_0=np.zeros((2, 2)), targets_0=np.ones((1, 2)))
    np.savez(tmp_path / "missing.npz", inputs_0=np.zeros((2, 2), dtype=int))
    np.savez(
        tmp_path / "den.npz",
        inputs_0=np.eye(2, dtype=int),
        targets_0=np.ones((1, 2), dtype=int),
        denominator=0,
    )
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    (tmp_path / "data.csv").write_text("1,2\n")
    cases = [
        ("float.npz", "dtype float64"),
        ("missing.npz", "targets_0"),
        ("den.npz", "denominator"),
        ("junk.npz", "NPZ"),
        ("data.csv", "unknown format"),
        ("nothing.json", "no such file"),
    ]
    for name, reason in cases:
        assert main(["certify", str(tmp_path / name)]) == 2, name
        assert reason in capsys.readouterr().err, name
    assert main(["certify", str(_write(tmp_path, "good.json", GOOD)), "--tau", "one"]) == 2
    assert "--tau" in capsys.readouterr().err


def test_certify_runs_as_a_module(tmp_path):
    path = _write(tmp_path, "good.json", GOOD)
    done = subprocess.run(
        [sys.executable, "-m", "sxor", "certify", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,  # the exit status is the subject of the test
    )
    assert done.returncode == 0 and "exact = True" in done.stdout
    bad = _write(tmp_path, "bad.json", BAD_JSON[0][1])
    done = subprocess.run(
        [sys.executable, "-m", "sxor", "certify", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,  # the exit status is the subject of the test
    )
    assert done.returncode == 2 and "refused" in done.stderr
