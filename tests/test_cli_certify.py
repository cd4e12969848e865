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
from sxor.interp.datafile import certify_cost, load_dataset
from tests.hang_guard import hang_guard

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


# ------------------------------------------------------------ hostile files: one line, exit 2


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


HOSTILE_JSON = [
    ("nested 10^5 deep", _deep(10**5), "nested too deeply"),
    ("nested 10^5 deep inside inputs", '{"inputs": ' + _deep(10**5) + "}", "nested too deeply"),
    ("exponent 10^9", {"inputs": [[["1e1000000000", 0]]], "targets": [[[1, 1]]]}, "exponent"),
    ("negative exponent", {"inputs": [[["1e-99999", 0]]], "targets": [[[1, 1]]]}, "exponent"),
    ("5000 digits", {"inputs": [[["1" * 5000, 0]]], "targets": [[[1, 1]]]}, "digits"),
    ("5000-digit integer", '{"inputs": [[[' + "7" * 5000 + ", 0]]]}", "not valid JSON"),
    (
        "2000-digit integer",
        '{"inputs": [[[' + "7" * 2000 + ', 0]]], "targets": [[[1, 1]]]}',
        "digits",
    ),
    ("tau 1e1000", GOOD | {"tau": "1e1000"}, "tau_max"),
    ("tau 1e-100000", GOOD | {"tau": "1e-100000"}, "exponent"),
    ("tau a list", GOOD | {"tau": [1]}, "tau"),
    ("tau zero", GOOD | {"tau": 0}, "tau > 0"),
    (
        "ragged tokens",
        {"inputs": [[[0, 0], [1]]], "targets": [[[1, 1]]]},
        "ragged tokens in sequence inputs[0]",
    ),
    ("ragged targets", {"inputs": [[[0, 0], [1, 1]]], "targets": [[[1, 1], [2]]]}, "ragged"),
    (
        "a token too deep",
        {"inputs": [[[[0], 0]]], "targets": [[[1, 1]]]},
        r"inputs[0][0][0] is a JSON list",
    ),
    (
        "a sequence not a list",
        {"inputs": [5], "targets": [[[1, 1]]]},
        "inputs[0] must be a sequence",
    ),
    (
        "a token not a list",
        {"inputs": [[5]], "targets": [[[1, 1]]]},
        "inputs[0][0] must be a token",
    ),
    ("empty sequence", {"inputs": [[]], "targets": [[[1, 1]]]}, "empty"),
    (
        "duplicate key",
        '{"inputs": [[[0, 0]]], "inputs": [[[1, 1]]], "targets": [[[1, 1]]]}',
        "more than once",
    ),
    ("NaN", '{"inputs": [[[NaN, 0]]], "targets": [[[1, 1]]]}', "JSON float"),
    ("null coordinate", {"inputs": [[[None, 0]]], "targets": [[[1, 1]]]}, "None"),
    ("true coordinate", {"inputs": [[[True, 0]]], "targets": [[[1, 1]]]}, "True"),
    ("dict coordinate", {"inputs": [[[{}, 0]]], "targets": [[[1, 1]]]}, "JSON dict"),
    ("inputs a dict", {"inputs": {}, "targets": []}, "'inputs' must be a list"),
    ("utf-16 garbage", "\udcff", "not valid JSON"),
]


@pytest.mark.parametrize("name, payload, reason", HOSTILE_JSON, ids=[h[0] for h in HOSTILE_JSON])
def test_hostile_json_files_are_refused_in_one_line(tmp_path, capsys, name, payload, reason):
    path = tmp_path / "bad.json"
    if isinstance(payload, str):
        path.write_bytes(payload.encode("utf-8", "surrogateescape"))
    else:
        path.write_text(json.dumps(payload))
    with hang_guard(f"certify {name}"):
        assert main(["certify", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("refused: ") and err.count("\n") == 1, err
    assert str(path) in err and reason in err, err
    assert len(err) < 600


def _npz(tmp_path, name, **extra):
    arrays = {"inputs_0": np.array([[0, 0], [1, 0], [0, 1]]), "targets_0": np.array([[1, 1]])}
    np.savez(tmp_path / name, **(arrays | extra))
    return tmp_path / name


@pytest.mark.parametrize(
    "extra, reason",
    [
        ({"denominator": np.array([2, 3])}, "'denominator' must be a single integer"),
        ({"denominator": np.array([[2]])}, "'denominator' must be a single integer"),
        ({"tau": np.array([1, 2])}, "'tau' must be a single integer"),
        ({"tau": np.array([[1]])}, "'tau' must be a single integer"),
        ({"inputs_0": np.arange(4)}, "shape [n_j, d]"),
        ({"targets_0": np.ones((1, 1, 2), dtype=int)}, "shape [n_j, d]"),
        ({"inputs_0": np.array([[True, False]])}, "dtype bool"),
        ({"tau": np.int64(0)}, "tau > 0"),
        ({"denominator": np.int64(-3)}, "denominator must be a positive"),
        ({"extra": np.int64(1)}, "unknown array"),
    ],
)
def test_hostile_npz_files_are_refused_in_one_line(tmp_path, capsys, extra, reason):
    path = _npz(tmp_path, "bad.npz", **extra)
    assert main(["certify", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("refused: ") and err.count("\n") == 1 and reason in err, err


def test_entries_and_file_size_are_bounded_before_reading(tmp_path, capsys, monkeypatch):
    import sxor.interp.datafile as datafile

    path = _write(tmp_path, "good.json", GOOD)
    monkeypatch.setattr(datafile, "MAX_FILE_BYTES", 10)
    assert main(["certify", str(path)]) == 2
    assert "MAX_FILE_BYTES" in capsys.readouterr().err
    monkeypatch.undo()
    monkeypatch.setattr(datafile, "MAX_ENTRIES", 5)
    assert main(["certify", str(path)]) == 2
    assert "MAX_ENTRIES" in capsys.readouterr().err
    # NPZ: the shapes come from the array headers, so a huge array is refused unread
    assert main(["certify", str(_npz(tmp_path, "ok.npz"))]) == 2
    assert "MAX_ENTRIES" in capsys.readouterr().err


def test_the_cost_is_estimated_before_starting(tmp_path, capsys):
    big = {"inputs": [[[i, (i * i) % 20011] for i in range(20000)]], "targets": [[[0, 1], [1, 0]]]}
    path = _write(tmp_path, "big.json", big)
    with hang_guard("certify of one sequence of 20 000 tokens"):
        assert main(["certify", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "estimated cost" in err and "--max-cost 8.1e8" in err, err
    X, Y, _ = load_dataset(path)
    assert certify_cost(X, Y) == 2 * (20000**2 + 16 * 4 * 20000) <= 8.1e8
    # a small budget refuses a small file, a larger one lets it through
    good = _write(tmp_path, "good.json", GOOD)
    assert main(["certify", str(good), "--max-cost", "10"]) == 2
    assert "--max-cost" in capsys.readouterr().err
    assert main(["certify", str(good), "--max-cost", "1e9"]) == 0
    for bad in ("0", "-5", "abc", "1e5000"):
        assert main(["certify", str(good), "--max-cost", bad]) == 2
        assert "--max-cost" in capsys.readouterr().err


def test_bigger_numbers_cost_more():
    X, Y = random_dataset(2, 4, 2, 2, seed=3)
    big = [x * Fraction(10**300) for x in X], [y * Fraction(10**300) for y in Y]
    assert certify_cost(*big) > 5 * certify_cost(X, Y)  # (997 bits / 64)^2 on the pairs


def test_long_runs_report_their_stages(tmp_path, capsys, monkeypatch):
    from sxor import cli

    monkeypatch.setattr(cli, "PROGRESS_COST", 0)
    assert main(["certify", str(_write(tmp_path, "good.json", GOOD))]) == 0
    err = capsys.readouterr().err
    assert "estimated cost" in err and "building the network" in err and "certified in" in err


@pytest.mark.parametrize(
    "tau, reason",
    [
        ("1e400", "tau_max"),
        ("1e-100000", "exponent"),
        ("1/0", "zero denominator"),
        ("-1", "tau > 0"),
        ("0", "tau > 0"),
        ("nan", "not a rational"),
        ("1" * 5000, "digits"),
    ],
)
def test_hostile_temperatures_are_refused_in_one_line(tmp_path, capsys, tau, reason):
    path = _write(tmp_path, "good.json", GOOD)
    assert main(["certify", str(path), "--tau", tau]) == 2
    err = capsys.readouterr().err
    assert err.startswith("refused: ") and err.count("\n") == 1 and reason in err, err


def test_a_tiny_temperature_prints_short_lines(tmp_path, capsys):
    path = _write(tmp_path, "good.json", GOOD)
    assert main(["certify", str(path), "--tau", "1e-1000"]) == 0
    out = capsys.readouterr().out
    assert "1.0e-1000" in out and max(len(line) for line in out.splitlines()) < 200


def test_internal_errors_exit_3_with_the_message_and_debug_shows_the_traceback(
    tmp_path, capsys, monkeypatch
):
    construct = sys.modules["sxor.interp.construct"]

    def broken(*args, **kwargs):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(construct, "softmax_certificate", broken)
    path = _write(tmp_path, "good.json", GOOD)
    assert main(["certify", str(path)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("internal error: RuntimeError: boom second line") and err.count("\n") == 1
    with pytest.raises(RuntimeError, match="boom"):
        main(["certify", str(path), "--debug"])


def test_argument_errors_are_one_line_with_status_2(capsys):
    for argv in (["certify"], ["certify", "a.json", "--bogus"], ["nothing"], []):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "error:" in err, err


def test_the_help_documents_exit_codes_and_budgets(capsys):
    with pytest.raises(SystemExit):
        main(["certify", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for text in (
        "exit status",
        "0 success",
        "1 not certified",
        "2 bad input",
        "3 internal error",
        "--max-cost",
        "--debug",
        "MiB",
    ):
        assert text in out, text


def test_run_refuses_an_out_that_is_a_file_or_cannot_be_created(tmp_path, capsys):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert main(["run", "one-step-eta", "--out", str(a_file)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("refused: ") and "is a file, not a folder" in err and err.count("\n") == 1
    assert main(["run", "one-step-eta", "--out", str(a_file / "sub")]) == 2
    assert "cannot create the folder" in capsys.readouterr().err
    (tmp_path / "out" / "one-step-eta.json").mkdir(parents=True)
    assert main(["run", "one-step-eta", "--out", str(tmp_path / "out")]) == 2
    assert "is not a file" in capsys.readouterr().err
    assert main(["run", "no-such-experiment"]) == 2
    assert "unknown experiment" in capsys.readouterr().err
    assert main(["run", "one-step-eta", "--device", "tpu"]) == 2
    assert "--device" in capsys.readouterr().err


def test_no_traceback_from_the_module(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text(_deep(10**5))
    done = subprocess.run(
        [sys.executable, "-m", "sxor", "certify", str(deep)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,  # the exit status is the subject of the test
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "nested too deeply" in done.stderr
