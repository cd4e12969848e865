"""A bad-input probe beyond ``tests/test_bad_inputs.py``'s table: each input in its own process.

Usage: ``python tools/probe_bad_inputs.py [--jobs 2] [--timeout 60] [--only WORD]``. Every case
is a short Python snippet run in a fresh interpreter (``PYTHONPATH`` = this checkout) with a
timeout, and is classified as

* ``clear``: a ``ValueError``/``TypeError`` (or ``FileNotFoundError`` for files) whose message
  matches the case's pattern (the argument's name or the mismatch);
* ``obscure``: such an error whose message does not match, or another exception type;
* ``silent``: it returned a result (the case says the input is wrong);
* ``hang``: no answer within the timeout; ``crash``: the interpreter died (signal, out of memory).

It prints one line per case and the counts; the exit status is 1 unless every case is clear.
The cases are inputs that the table does not hold (written after it, as an adversarial user
would try them); add new ones at the end.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PRELUDE = """
import math, json, tempfile, os
from fractions import Fraction
import numpy as np, torch
import sxor, sxor.interp as I
from sxor.xor import data, streams, metrics, kparity, dynamics
from sxor import experiments, results
"""

#: (name, snippet, pattern the message must match). The snippet is wrong input: it must raise.
CASES: list[tuple[str, str, str]] = [
    # --- Part I: labels, supports, success
    (
        "labels of NaN inputs",
        "sxor.sparse_xor_labels(torch.full((2, 4), math.nan), torch.tensor([0, 1]))",
        r"x.*\+-?1|±1|\+1",
    ),
    (
        "labels of inf inputs",
        "sxor.sparse_xor_labels(torch.full((2, 4), math.inf), torch.tensor([0, 1]))",
        r"x.*(\+-?1|±1|\+1)",
    ),
    (
        "labels of 0.5 inputs",
        "sxor.sparse_xor_labels(torch.full((2, 4), 0.5), torch.tensor([0, 1]))",
        r"x.*(\+-?1|±1|\+1)",
    ),
    (
        "labels of 0 inputs",
        "sxor.sparse_xor_labels(torch.zeros(2, 4), torch.tensor([0, 1]))",
        r"x.*(\+-?1|±1|\+1)",
    ),
    (
        "parity labels of 0.5 inputs",
        "kparity.parity_labels(torch.full((2, 4), 0.5), torch.tensor([0, 1, 2]))",
        r"x.*(\+-?1|±1|\+1)",
    ),
    (
        "parity labels of NaN inputs",
        "kparity.parity_labels(torch.full((2, 4), math.nan), torch.tensor([0, 1, 2]))",
        r"x.*(\+-?1|±1|\+1)",
    ),
    (
        "success with i* = j*",
        "w = torch.full((4,), 0.25, dtype=torch.float64); metrics.success(torch.tensor(0.0, dtype=torch.float64), w, w, torch.tensor([1, 1]))",
        r"support|i\*|distinct",
    ),
    (
        "target_masses with i* = j*",
        "w = torch.full((4,), 0.25, dtype=torch.float64); metrics.target_masses(w, w, torch.tensor([2, 2]))",
        r"support|distinct",
    ),
    ("failure codes out of range", "metrics.mode_fractions(torch.tensor([0, 7]))", r"code"),
    ("failure codes negative", "metrics.mode_fractions(torch.tensor([-1, 0]))", r"code"),
    # --- Part I: sizes and memory
    ("sphere_embeddings huge", "sxor.sphere_embeddings(10**6, 10**6)", r"memory|GiB|too large"),
    (
        "sphere_embeddings huge batch",
        "sxor.sphere_embeddings(1000, 1000, batch=(10**6,))",
        r"memory|GiB|too large",
    ),
    (
        "random_support huge batch",
        "sxor.random_support(8, batch=(10**13,))",
        r"memory|GiB|too large",
    ),
    (
        "sample_sparse_xor huge n",
        "sxor.sample_sparse_xor(10**12, 16, torch.tensor([0, 1]))",
        r"memory|GiB|too large",
    ),
    (
        "sample_sparse_xor n = 2.5",
        "sxor.sample_sparse_xor(2.5, 16, torch.tensor([0, 1]))",
        r"\bn\b",
    ),
    ("stream_inputs count = 2.5", "streams.stream_inputs(torch.tensor([0]), 0, 2.5, 8)", r"count"),
    ("stream_inputs count = 2.0", "streams.stream_inputs(torch.tensor([0]), 0, 2.0, 8)", r"count"),
    (
        "stream_inputs start = True",
        "streams.stream_inputs(torch.tensor([0]), True, 2, 8)",
        r"start",
    ),
    (
        "stream_inputs huge count",
        "streams.stream_inputs(torch.tensor([0]), 0, 10**12, 8)",
        r"memory|GiB|too large|stream's length",
    ),
    (
        "stream_inputs count past memory",
        "streams.stream_inputs(torch.arange(1000), 0, 10**9, 8)",
        r"memory|GiB",
    ),
    ("stream_inputs key 2^32", "streams.stream_inputs(torch.tensor([2**32]), 0, 2, 8)", r"keys"),
    ("stream_inputs key 2^40", "streams.stream_inputs(torch.tensor([2**40]), 0, 2, 8)", r"keys"),
    (
        "stream_inputs start + count beyond 2^32 words",
        "streams.stream_inputs(torch.tensor([0]), 2**32, 2, 8)",
        r"start",
    ),
    ("stream_inputs d = 0", "streams.stream_inputs(torch.tensor([0]), 0, 2, 0)", r"\bd\b"),
    ("stream_inputs float keys", "streams.stream_inputs(torch.tensor([0.5]), 0, 2, 8)", r"keys"),
    (
        "stream grads ns = [2.5]",
        "V = sxor.sphere_embeddings(8, 4, batch=(1,), dtype=torch.float64); streams.stream_empirical_grads(torch.tensor([0]), [2.5], V, V[:, 0], V[:, 1], torch.tensor([[0, 1]]))",
        r"\bns\b|ns\[",
    ),
    (
        "stream grads ns decreasing",
        "V = sxor.sphere_embeddings(8, 4, batch=(1,), dtype=torch.float64); streams.stream_empirical_grads(torch.tensor([0]), [4, 2], V, V[:, 0], V[:, 1], torch.tensor([[0, 1]]))",
        r"\bns\b|ns\[",
    ),
    ("device that does not exist", "sxor.sphere_embeddings(8, 4, device='tpu')", r"device"),
    ("device cuda:7 unavailable", "sxor.sphere_embeddings(8, 4, device='cuda:7')", r"device|cuda"),
    ("experiments.run bad device", "experiments.run('one-step-eta', 'ci', 'gpu0')", r"device"),
    (
        "experiments.run cuda unavailable",
        "experiments.run('one-step-eta', 'ci', 'cuda:9')",
        r"device|cuda",
    ),
    # --- results files
    (
        "committed results empty",
        "p = results.RESULTS_DIR / 'probe-empty.json'; p.write_text('');\ntry: results.committed_results('probe-empty')\nfinally: p.unlink()",
        r"probe-empty\.json.*python -m sxor run",
    ),
    (
        "committed results truncated",
        "p = results.RESULTS_DIR / 'probe-trunc.json'; p.write_text('{\"experiment\": \"x\", \"rec');\ntry: results.committed_results('probe-trunc')\nfinally: p.unlink()",
        r"probe-trunc\.json.*python -m sxor run",
    ),
    (
        "committed results a list",
        "p = results.RESULTS_DIR / 'probe-list.json'; p.write_text('[1, 2]');\ntry: results.committed_results('probe-list')\nfinally: p.unlink()",
        r"probe-list\.json.*python -m sxor run",
    ),
    (
        "committed results no records",
        "p = results.RESULTS_DIR / 'probe-norec.json'; p.write_text('{\"experiment\": \"x\"}');\ntry: results.committed_results('probe-norec')\nfinally: p.unlink()",
        r"probe-norec\.json.*records",
    ),
    (
        "committed results a directory",
        "p = results.RESULTS_DIR / 'probe-dir.json'; p.mkdir();\ntry: results.committed_results('probe-dir')\nfinally: p.rmdir()",
        r"probe-dir\.json",
    ),
    ("committed results '..'", "results.committed_results('..')", r"name"),
    ("committed results name with NUL", "results.committed_results('a\\x00b')", r"name"),
    (
        "load_results truncated",
        "f = tempfile.NamedTemporaryFile('w', suffix='.json', delete=False); f.write('{'); f.close(); results.load_results(f.name)",
        r"\.json",
    ),
    (
        "compare tol = inf",
        "experiments.compare({'records': [{'d': 1, 'x': 1.0}]}, {'records': [{'d': 1, 'x': 5.0}]}, keys=('d',), tol=math.inf)",
        r"tol",
    ),
    (
        "compare records not a list",
        "experiments.compare({'records': 5}, {'records': []}, keys=('d',))",
        r"records",
    ),
    # --- Part II
    ("random_dataset d = 10**6", "I.random_dataset(2, 3, 1, 10**6)", r"\bd\b"),
    ("random_dataset N = 10**9", "I.random_dataset(10**9, 3, 1, 2)", r"\bN\b|memory|too large"),
    ("random_dataset n = 10**8", "I.random_dataset(2, 10**8, 1, 2)", r"\bn\b|memory|too large"),
    (
        "random_dataset denominator = 0",
        "I.random_dataset(2, 3, 1, 2, denominator=0)",
        r"denominator",
    ),
    (
        "random_dataset denominator = 2.5",
        "I.random_dataset(2, 3, 1, 2, denominator=2.5)",
        r"denominator",
    ),
    ("random_dataset seed = 'a'", "I.random_dataset(2, 3, 1, 2, seed='a')", r"seed"),
    (
        "attention_trajectory steps = 10**9",
        "X = np.random.default_rng(0).normal(size=(5, 2)); I.attention_trajectory(X, np.eye(2), 0.5, np.eye(2), 1.0, 10**9)",
        r"steps",
    ),
    (
        "attention_trajectory steps = 2.5",
        "X = np.random.default_rng(0).normal(size=(5, 2)); I.attention_trajectory(X, np.eye(2), 0.5, np.eye(2), 1.0, 2.5)",
        r"steps",
    ),
    (
        "identity_matrix d = 10**6",
        "from sxor.interp.lemmas import identity_matrix; identity_matrix(10**6)",
        r"\bd\b|memory|too large",
    ),
    (
        "identity_matrix d = 2.5",
        "from sxor.interp.lemmas import identity_matrix; identity_matrix(2.5)",
        r"\bd\b",
    ),
    (
        "construct tau above tau_max",
        "X, Y = I.random_dataset(3, 4, [1, 2, 2], 2, seed=1); I.construct(X, Y, 'softmax', tau=10**9)",
        r"tau_max",
    ),
    (
        "at_temperature above tau_max",
        "X, Y = I.random_dataset(3, 4, [1, 2, 2], 2, seed=1); T = I.construct(X, Y, 'softmax'); T.at_temperature(Fraction(10**6))",
        r"tau_max",
    ),
    (
        "as_exact with zero denominator string",
        "I.as_exact([['1/0', '1']])",
        r"denominator|zero|array",
    ),
    (
        "construct with a Fraction string 1/0 target",
        "I.construct([I.as_exact([[0, 0], [1, 1]])], [[['1/0', '0']]])",
        r"denominator|zero|targets",
    ),
]


def run_case(case: tuple[str, str, str], timeout: float) -> tuple[str, str, str]:
    name, snippet, pattern = case
    code = (
        PRELUDE
        + "\ntry:\n"
        + textwrap.indent(snippet, "    ")
        + """
except (ValueError, TypeError, FileNotFoundError, IsADirectoryError) as e:
    print("RAISED", type(e).__name__, str(e).replace("\\n", " ")[:400])
except Exception as e:
    print("OTHER", type(e).__name__, str(e).replace("\\n", " ")[:400])
else:
    print("RETURNED")
"""
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1"}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,  # the exit status is read below
        )
    except subprocess.TimeoutExpired:
        return name, "hang", f"no answer within {timeout:.0f} s"
    lines = [l for l in proc.stdout.splitlines() if l.startswith(("RAISED", "OTHER", "RETURNED"))]
    if proc.returncode != 0 or not lines:
        return name, "crash", f"exit {proc.returncode}: {proc.stderr.strip()[-160:]}"
    line = lines[-1]
    if line == "RETURNED":
        return name, "silent", "returned a result"
    if line.startswith("OTHER"):
        return name, "obscure", line[6:200]
    message = line.split(" ", 2)[2] if line.count(" ") >= 2 else ""
    if re.search(pattern, message, flags=re.IGNORECASE):
        return name, "clear", line[7:160]
    return name, "obscure", line[7:200]


def tally(jobs: list[Callable[[], tuple[str, str, str]]], workers: int) -> dict[str, int]:
    """Run the probes ``jobs`` on ``workers`` threads, print one line per case as it ends, and
    count the outcomes."""
    counts = dict.fromkeys(("clear", "obscure", "silent", "hang", "crash"), 0)
    with futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for name, outcome, detail in pool.map(lambda job: job(), jobs):
            counts[outcome] += 1
            print(f"{outcome:8s} {name:45s} {detail[:110]}", flush=True)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--only", help="run the cases whose name contains this word")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if not args.only or args.only in c[0]]
    counts = tally([(lambda c=c: run_case(c, args.timeout)) for c in cases], args.jobs)
    print(f"{len(cases)} bad inputs: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0 if counts["clear"] == len(cases) else 1


if __name__ == "__main__":
    sys.exit(main())
