"""A second hostile probe: the command line and the library, each input in its own process.

Usage: ``python tools/probe_hostile.py [--jobs 2] [--timeout 60] [--only WORD]``. Inputs not in
``tests/test_bad_inputs.py``, ``tests/test_cli_certify.py`` or ``tools/probe_bad_inputs.py``,
written as an adversarial user would try them. Two kinds:

* **command line**: ``python -m sxor ARGS`` in a fresh folder holding the files the case writes.
  A bad input must exit with status 2 and print exactly one line on stderr, ``refused: ...`` or
  ``python -m sxor ...: error: ...``, matching the case's pattern (``clear``); exit 3 or a line
  that does not match is ``obscure``; a traceback, or any other status, is a ``crash``; exit 0 or
  1 is ``silent``. A case marked *valid* (an extreme but admissible input) must give a result
  (exit 0 or 1) instead: that is ``clear``, a refusal is ``obscure``.
* **library**: a snippet run as in ``tools/probe_bad_inputs.py`` (its :func:`run_case`).

No answer within the timeout is a ``hang``. It prints one line per case and the counts; the exit
status is 1 when there is a crash, a hang or a silent result, or more than 3 obscure errors.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tools.probe_bad_inputs import run_case, tally  # noqa: E402 (after the path is set)

GOOD = {"inputs": [[[0, 0], [1, 0], [0, 1]], [[2, 2], [3, 1]]], "targets": [[[1, 1]], [[5, 5]]]}


class Cli(NamedTuple):
    name: str
    setup: Callable[[Path], list[str]]  # writes the files into the folder, returns the arguments
    pattern: str
    valid: bool = False


def _json(payload: object, name: str = "d.json") -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        (folder / name).write_text(text)
        return ["certify", name]

    return setup


def _good_with(*args: str) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        (folder / "g.json").write_text(json.dumps(GOOD))
        return ["certify", "g.json", *args]

    return setup


def _npz(**arrays: object) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        base = {"inputs_0": np.array([[0, 0], [1, 0], [0, 1]]), "targets_0": np.array([[1, 1]])}
        np.savez(folder / "d.npz", **(base | arrays))
        return ["certify", "d.npz"]

    return setup


def _bytes(data: bytes, name: str) -> Callable[[Path], list[str]]:
    def setup(folder: Path) -> list[str]:
        (folder / name).write_bytes(data)
        return ["certify", name]

    return setup


def _npz_bomb(folder: Path) -> list[str]:
    """An NPZ whose header claims 10^12 entries but holds a few bytes."""
    with zipfile.ZipFile(folder / "d.npz", "w") as z:
        for key, shape in (("inputs_0", (10**6, 10**6)), ("targets_0", (1, 2))):
            with z.open(f"{key}.npy", "w") as f:
                np.lib.format.write_array_header_1_0(
                    f, {"descr": "<i8", "fortran_order": False, "shape": shape}
                )
                f.write(b"\0" * 64)
    return ["certify", "d.npz"]


def _npz_with_text(folder: Path) -> list[str]:
    _npz()(folder)
    with zipfile.ZipFile(folder / "d.npz", "a") as z:
        z.writestr("README.txt", "hello")
    return ["certify", "d.npz"]


def _truncated_npz(folder: Path) -> list[str]:
    _npz()(folder)
    data = (folder / "d.npz").read_bytes()
    (folder / "d.npz").write_bytes(data[: len(data) // 2])
    return ["certify", "d.npz"]


def _fifo(folder: Path) -> list[str]:
    os.mkfifo(folder / "d.json")
    return ["certify", "d.json"]


def _loop(folder: Path) -> list[str]:
    (folder / "d.json").symlink_to(folder / "d.json")
    return ["certify", "d.json"]


def _folder(folder: Path) -> list[str]:
    (folder / "d.json").mkdir()
    return ["certify", "d.json"]


def _many_entries(folder: Path) -> list[str]:
    tokens = [[i, 0] for i in range(600_000)]
    (folder / "d.json").write_text(json.dumps({"inputs": [tokens], "targets": [[[1, 1]]]}))
    return ["certify", "d.json"]


def _args(*argv: str) -> Callable[[Path], list[str]]:
    return lambda folder: list(argv)


def _out_file(folder: Path) -> list[str]:
    (folder / "f").write_text("x")
    return ["run", "one-step-eta", "--size", "full", "--out", "f"]


SEQ = [[0, 0], [1, 0], [0, 1]]
CLI: list[Cli] = [
    Cli("empty file", _json(""), "not valid JSON"),
    Cli("JSON null", _json("null"), "JSON object"),
    Cli("JSON string", _json('"abc"'), "JSON object"),
    Cli("inputs a string", _json({"inputs": "abc", "targets": []}), "'inputs' must be a list"),
    Cli("targets a number", _json({"inputs": [SEQ], "targets": 5}), "'targets' must be a list"),
    Cli("tokens of dimension 0", _json({"inputs": [[[]]], "targets": [[[]]]}), r"d >= 1|dimension"),
    Cli("d = 1 with m = 2", _json({"inputs": [[[0], [1]]], "targets": [[[2], [3]]]}), "d = 1"),
    Cli("tau '1/0'", _json(GOOD | {"tau": "1/0"}), "zero denominator"),
    Cli("tau '-1/2'", _json(GOOD | {"tau": "-1/2"}), "tau > 0"),
    Cli("tau 'inf'", _json(GOOD | {"tau": "inf"}), "not a rational"),
    Cli("coordinate '0x10'", _json({"inputs": [[["0x10", 0]]], "targets": [[[1, 1]]]}), "rational"),
    Cli("coordinate '1e'", _json({"inputs": [[["1e", 0]]], "targets": [[[1, 1]]]}), "rational"),
    Cli("coordinate ''", _json({"inputs": [[["", 0]]], "targets": [[[1, 1]]]}), "rational"),
    Cli("coordinate '1/-2'", _json({"inputs": [[["1/-2", 0]]], "targets": [[[1, 1]]]}), "rational"),
    Cli(
        "exponent with underscores",
        _json({"inputs": [[["1e1_000_000_000", 0]]], "targets": [[[1, 1]]]}),
        "exponent",
    ),
    Cli(
        "exponent +999999",
        _json({"inputs": [[["1e+999999", 0]]], "targets": [[[1, 1]]]}),
        "exponent",
    ),
    Cli(
        "2000-digit decimal",
        _json({"inputs": [[["0." + "0" * 1999 + "1", 0]]], "targets": [[[1, 1]]]}),
        "digits",
    ),
    Cli(
        "string padded with 3000 spaces",
        _json({"inputs": [[[" " * 3000 + "1", 0]]], "targets": [[[1, 1]]]}),
        "characters",
    ),
    # a byte-order mark is allowed in JSON read as bytes (RFC 8259 lets parsers ignore it)
    Cli(
        "valid: UTF-8 BOM", _bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode(), "d.json"), "", True
    ),
    Cli("a FIFO", _fifo, "not a regular file"),
    Cli("a symlink loop", _loop, "no such file|cannot read"),
    Cli("a folder named .json", _folder, "not a regular file"),
    Cli("an NPZ that is JSON text", _bytes(json.dumps(GOOD).encode(), "d.npz"), "NPZ"),
    Cli("a JSON that is zip bytes", _bytes(b"PK\x03\x04" + bytes(range(256)), "d.json"), "JSON"),
    Cli(
        "NPZ with a pickled object array",
        _npz(inputs_0=np.array([[1, None]], dtype=object)),
        "NPZ|dtype",
    ),
    Cli("NPZ float16", _npz(inputs_0=np.zeros((3, 2), dtype=np.float16)), "dtype float16"),
    Cli("NPZ complex", _npz(targets_0=np.ones((1, 2), dtype=complex)), "dtype complex"),
    Cli(
        "NPZ inputs_0 and inputs_2",
        _npz(inputs_2=np.eye(2, dtype=int), targets_2=np.ones((1, 2), dtype=int)),
        "inputs_0..inputs_",
    ),
    Cli("NPZ empty sequence", _npz(inputs_0=np.zeros((0, 2), dtype=int)), "empty"),
    Cli(
        "NPZ d = 0",
        _npz(inputs_0=np.zeros((3, 0), dtype=int), targets_0=np.zeros((1, 0), dtype=int)),
        r"d >= 1|dimension",
    ),
    Cli("NPZ with a text member", _npz_with_text, "not an array"),
    Cli("NPZ header claiming 10^12 entries", _npz_bomb, "MAX_ENTRIES"),
    Cli("NPZ truncated", _truncated_npz, "NPZ"),
    Cli("600 000 tokens", _many_entries, "MAX_ENTRIES"),
    Cli("--tau of spaces", _good_with("--tau", "   "), "--tau"),
    Cli("--tau of 1001 digits", _good_with("--tau", "1" * 1001), "digits"),
    Cli("--max-cost 1/3", _good_with("--max-cost", "1/3"), "--max-cost"),
    Cli("--max-cost inf", _good_with("--max-cost", "inf"), "--max-cost"),
    Cli("certify two files", _good_with("g.json"), "unrecognized arguments"),
    Cli("list --bogus", _args("list", "--bogus"), "unrecognized arguments"),
    Cli("file name ''", _args("certify", ""), "not a regular file"),
    Cli("run --out /dev/null", _args("run", "one-step-eta", "--out", "/dev/null"), "not a folder"),
    Cli("run --size full --out a file", _out_file, "not a folder"),
    Cli("run --device cuda:99", _args("run", "one-step-eta", "--device", "cuda:99"), "device"),
    Cli("run ../etc", _args("run", "../etc"), "unknown experiment"),
    Cli("run --device meta", _args("run", "one-step-eta", "--device", "meta"), "meta"),
    # extreme but admissible: a result, not a refusal
    Cli("valid: uppercase .JSON", _json(GOOD, "d.JSON"), "", valid=True),
    Cli("valid: --tau 1e-1000", _good_with("--tau", "1e-1000"), "", valid=True),
    Cli(
        "valid: NPZ of uint64 near 2^64",
        _npz(
            inputs_0=np.array([[2**64 - 1, 0], [0, 2**64 - 1], [1, 1]], dtype=np.uint64),
            targets_0=np.array([[2**64 - 2, 5]], dtype=np.uint64),
        ),
        "",
        valid=True,
    ),
    Cli(
        "valid: NPZ in Fortran order",
        _npz(inputs_0=np.asfortranarray(np.array([[0, 0], [1, 0], [0, 1]]))),
        "",
        valid=True,
    ),
    Cli(
        "valid: 300-digit coordinates",
        _json({"inputs": [[["1" * 300, 0], [0, 1], [1, 1]]], "targets": [[[2, 2]]]}),
        "",
        valid=True,
    ),
]

#: Library inputs (name, snippet, pattern), run by :func:`tools.probe_bad_inputs.run_case`.
LIBRARY: list[tuple[str, str, str]] = [
    (
        "construct with a meta tensor",
        "I.construct([torch.zeros(3, 2, dtype=torch.long, device='meta')], [[[1, 1]]])",
        r"meta",
    ),
    (
        "attention_scores of meta tokens",
        "I.attention_scores(torch.zeros(3, 2, device='meta'), torch.eye(2))",
        r"meta",
    ),
    (
        "hausdorff of meta tokens",
        "I.hausdorff(torch.zeros(3, 2, device='meta'), torch.zeros(2, 2))",
        r"meta",
    ),
    (
        "scores with theta batch (4,) and V batch (3,)",
        "V = sxor.sphere_embeddings(8, 4, batch=(3,), dtype=torch.float64); sxor.scores(V, torch.zeros(4, 4, dtype=torch.float64))",
        r"batch",
    ),
    (
        "predict_from_weights x batch (2,) weights batch (3,)",
        "g = torch.full((3, 8), 1 / 8, dtype=torch.float64); sxor.predict_from_weights(torch.ones(2, 5, 8), g, g)",
        r"batch",
    ),
    (
        "labels with an int16 support holding -1",
        "sxor.sparse_xor_labels(torch.ones(2, 8), torch.tensor([-1, 1], dtype=torch.int16))",
        r"support",
    ),
    (
        "sample with a uint8 support holding 255",
        "sxor.sample_sparse_xor(4, 8, torch.tensor([0, 255], dtype=torch.uint8))",
        r"support",
    ),
    ("random_support d = 2^63", "sxor.random_support(2**63)", r"\bd\b"),
    ("sphere_embeddings d = 2^70", "sxor.sphere_embeddings(2**70, 2)", r"\bd\b|memory|GiB"),
    ("all_inputs of a meta tensor", "sxor.all_inputs(torch.tensor(5, device='meta'))", r"\bd\b"),
    (
        "describe width True",
        "results.describe({'experiment': 'x', 'params': {}, 'meta': {}}, width=True)",
        r"width",
    ),
    ("describe a string", "results.describe('results')", r"results"),
    (
        "describe meta a string",
        "results.describe({'experiment': 'x', 'params': {}, 'meta': 'm'})",
        r"meta",
    ),
    (
        "certificate tau a huge string",
        "X, Y = I.random_dataset(2, 3, [1, 2], 2, seed=1); T = I.construct(X, Y, 'softmax'); I.softmax_certificate(T, X, Y, tau='1e1000000000')",
        r"tau",
    ),
    ("as_exact of exponent 10^8", "I.as_exact([['1e99999999']])", r"exponent"),
    ("as_exact of 2000 nines", "I.as_exact([['9' * 2000]])", r"digits"),
    (
        "construct with a 1e-5000 token",
        "I.construct([[['1e-5000', 0], [1, 1]]], [[[0, 0]]])",
        r"exponent",
    ),
    (
        "hausdorff of 10^5 float32 tokens each",
        "I.hausdorff(torch.zeros(10**5, 2), torch.zeros(10**5, 2))",
        r"GiB|memory",
    ),
    (
        "self_attention of 10^5 tokens",
        "I.self_attention(torch.zeros(10**5, 2), torch.eye(2), 1.0, torch.eye(2), 1.0)",
        r"GiB|memory",
    ),
    (
        "load_dataset of an int",
        "from sxor.interp.datafile import load_dataset; load_dataset(123)",
        r"path",
    ),
    (
        "certify_cost of nothing",
        "from sxor.interp.datafile import certify_cost; certify_cost([], [])",
        r"certify_cost|N >= 1",
    ),
    (
        "sqrt_upper of 'abc'",
        "from sxor.interp.exact import sqrt_upper; sqrt_upper('abc')",
        r"\bx\b",
    ),
    (
        "sqrt_upper bits 2.5",
        "from sxor.interp.exact import sqrt_upper; sqrt_upper(Fraction(2), 2.5)",
        r"bits",
    ),
    (
        "radius_absorbed radius -1",
        "from sxor.interp.certificate import radius_absorbed; radius_absorbed([], [np.array([[Fraction(0)] * 2], dtype=object)], -1, [np.array([[Fraction(0)] * 2], dtype=object)])",
        r"radius",
    ),
    (
        "radius_absorbed one centre two targets",
        "from sxor.interp.certificate import radius_absorbed; z = np.array([[Fraction(0)] * 2], dtype=object); radius_absorbed([], [z], 0, [z, z])",
        r"target",
    ),
    ("available_memory of 'tpu'", "results.available_memory('tpu')", r"device"),
    ("experiments.run on meta", "experiments.run('one-step-eta', 'ci', 'meta')", r"meta"),
    (
        "at_temperature of a string",
        "X, Y = I.random_dataset(2, 3, [1, 2], 2, seed=1); I.construct(X, Y, 'softmax').at_temperature('1e400')",
        r"tau",
    ),
    (
        "hand-built tau_max then tau 10^9",
        "import dataclasses; X, Y = I.random_dataset(2, 3, [1, 2], 2, seed=1); T = I.construct(X, Y, 'softmax'); H = dataclasses.replace(T, radius=T.spread / (1 + Fraction(1, 2**90))); H.at_temperature(10**40)",
        r"tau_max",
    ),
    (
        "interpolation_errors with 3-d targets",
        "X, Y = I.random_dataset(2, 3, [1, 2], 2, seed=1); T = I.construct(X, Y); I.interpolation_errors(T, X, [np.array([[1, 2, 3]], dtype=object)] * 2)",
        r"dimension|targets",
    ),
]


def run_cli(case: Cli, timeout: float) -> tuple[str, str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1"}
    with tempfile.TemporaryDirectory() as folder:
        argv = case.setup(Path(folder))
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "sxor", *argv],
                cwd=folder,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,  # the exit status is classified below
            )
        except subprocess.TimeoutExpired:
            return case.name, "hang", f"no answer within {timeout:.0f} s"
    err = proc.stderr.strip()
    if "Traceback" in proc.stderr or proc.returncode not in (0, 1, 2, 3):
        return case.name, "crash", f"exit {proc.returncode}: {err[-160:]}"
    if case.valid:
        if proc.returncode in (0, 1):
            return case.name, "clear", f"exit {proc.returncode}: a result"
        return case.name, "obscure", f"exit {proc.returncode} on valid input: {err[:160]}"
    if proc.returncode in (0, 1):
        return case.name, "silent", f"exit {proc.returncode}: {proc.stdout.strip()[:120]}"
    one_line = err.count("\n") == 0 and err.startswith(("refused: ", "python -m sxor"))
    if proc.returncode == 2 and one_line and re.search(case.pattern, err):
        return case.name, "clear", err[:160]
    return case.name, "obscure", f"exit {proc.returncode}: {err[:200]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--only", help="run the cases whose name contains this word")
    args = parser.parse_args(argv)
    cli = [c for c in CLI if not args.only or args.only in c.name]
    lib = [c for c in LIBRARY if not args.only or args.only in c[0]]
    jobs: list[Callable[[], tuple[str, str, str]]] = [
        (lambda c=c: run_cli(c, args.timeout)) for c in cli
    ] + [(lambda c=c: run_case(c, args.timeout)) for c in lib]
    counts = tally(jobs, args.jobs)
    print(
        f"{len(jobs)} hostile inputs ({len(cli)} command line, {len(lib)} library): "
        + ", ".join(f"{v} {k}" for k, v in counts.items())
    )
    bad = counts["crash"] + counts["hang"] + counts["silent"]
    return 0 if bad == 0 and counts["obscure"] <= 3 else 1


if __name__ == "__main__":
    sys.exit(main())
