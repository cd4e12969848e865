"""Cost of the exact interpolation construction and of its rigorous softmax certificate.

    .venv/bin/python benchmarks/bench_construct.py                # both ratios and the memory -> sxor/committed/construct-bench.json
    .venv/bin/python benchmarks/bench_construct.py --curves       # cost curves -> sxor/committed/construct-cost.json
    .venv/bin/python benchmarks/bench_construct.py --quick        # one small case, nothing written

**Ratios (default).** For each case of :data:`CASES` (``random_dataset(N, n, m_j, d, seed=0)``), it
times ``construct(X, Y, attention="softmax")`` and ``softmax_certificate`` of this checkout side by
side with the **reference**: the implementation before the fast certificate, the package as it was
at commit :data:`REFERENCE_COMMIT`, extracted from the repository's history (``git archive``) into a
temporary folder. Each timing runs in a fresh subprocess (``process_time``, one thread, under the
same ``nice`` as this script), reference and current **alternately**, ``--repeats`` times (the
reference at the largest case once by default: it takes minutes); the ratio is the ratio of the
medians. Both must agree: the same block count, the same ``tau_max``, and both certificates exactly
``0``. Then the peak memory of the current certificate on ``random_dataset(10, 100, 3, 16)`` in a
fresh subprocess: ``tracemalloc``'s peak of Python allocations during the certificate, and the
process's peak resident set (``ru_maxrss``, which includes the interpreter, numpy and torch).

**Curves (``--curves``).** Construction, certificate and the float64 forward pass
(``T.map`` on float64 tensors) of the current code against ``n`` (N = 10, d = 8), ``N``
(n = 40, d = 8) and ``d`` (N = 10, n = 40), ``m_j = 2``, median of ``--curve-repeats`` runs, each
point in a fresh subprocess. The book's performance appendix fits the exponents from the file.

Timings are printed and written, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sxor.results import RESULTS_DIR, provenance  # noqa: E402  (after sys.path.insert)

#: The package before the fast certificate (the merge base of this work): the reference.
REFERENCE_COMMIT = "18c0cb0"
#: (N, n, m_j, d) of the side-by-side comparison; the issue's two sizes.
CASES = [(10, 40, 2, 8), (10, 100, 3, 16)]
#: The size whose certificate's peak memory is measured.
MEMORY_CASE = (10, 100, 3, 16)
#: The sweeps of the cost curves: (name, values, (N, n, m, d) with the swept one as None).
CURVES = [
    ("n", [10, 20, 40, 80, 160], (10, None, 2, 8)),
    ("N", [5, 10, 20, 40, 80], (None, 40, 2, 8)),
    ("d", [2, 4, 8, 16, 32], (10, 40, 2, None)),
]

CHILD = r"""
import json, sys, time
import torch
torch.set_num_threads(1)
import numpy as np
from sxor.interp.construct import construct, random_dataset, softmax_certificate
N, n, m, d = map(int, sys.argv[1:5])
mode = sys.argv[5]
X, Y = random_dataset(N, n, m, d, seed=0)
t0 = time.process_time()
T = construct(X, Y, attention="softmax")
t1 = time.process_time()
out = {"construct_s": t1 - t0, "blocks": T.num_blocks, "tau_max": T.tau_max}
if mode == "memory":
    import resource, tracemalloc
    tracemalloc.start()
    c = softmax_certificate(T, X, Y)
    out["tracemalloc_peak_bytes"] = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    out["ru_maxrss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
else:
    t1 = time.process_time()
    c = softmax_certificate(T, X, Y)
    out["certificate_s"] = time.process_time() - t1
out["hausdorff_bound"] = str(c["hausdorff_bound"])
out["exact"] = bool(c["exact"])
if mode == "curve":
    Xf = [torch.tensor(np.array(x, dtype=np.float64)) for x in X]
    T.map(Xf)  # warm-up: parameters converted once
    reps, t = 0, time.perf_counter()
    while reps < 3 or time.perf_counter() - t < 0.2:
        T.map(Xf)
        reps += 1
    out["forward_float64_s"] = (time.perf_counter() - t) / reps
print(json.dumps(out))
"""


def extract_reference(dest: Path) -> Path:
    """The package ``sxor/`` at :data:`REFERENCE_COMMIT`, extracted into ``dest``; returns ``dest``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", REFERENCE_COMMIT, "sxor"],
        capture_output=True,
        check=True,
    )
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def child(
    path: Path, N: int, n: int, m: int, d: int, mode: str = "time", timeout: float = 3600
) -> dict:
    """Run :data:`CHILD` with ``sxor`` imported from ``path``, in a fresh one-thread subprocess."""
    env = dict(
        os.environ, PYTHONPATH=str(path), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TQDM_DISABLE="1"
    )
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(N), str(n), str(m), str(d), mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(path),
        check=False,  # a failure is raised below, with the child's stderr
    )
    if done.returncode != 0:
        raise RuntimeError(f"child failed ({path}, {N, n, m, d}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(ref: Path, cases: list, repeats: int, big_reference_repeats: int) -> list[dict]:
    rows = []
    for N, n, m, d in cases:
        big = (N, n, m, d) == tuple(CASES[-1])
        ref_runs, new_runs = [], []
        for r in range(repeats):  # alternate: reference, current, reference, current, ...
            if r < (big_reference_repeats if big else repeats):
                ref_runs.append(child(ref, N, n, m, d))
                print(
                    f"  {N, n, m, d} reference run {r + 1}: construct {ref_runs[-1]['construct_s']:.2f} s, "
                    f"certificate {ref_runs[-1]['certificate_s']:.2f} s",
                    flush=True,
                )
            new_runs.append(child(ROOT, N, n, m, d))
            print(
                f"  {N, n, m, d} current   run {r + 1}: construct {new_runs[-1]['construct_s']:.2f} s, "
                f"certificate {new_runs[-1]['certificate_s']:.2f} s",
                flush=True,
            )
        med = {
            who: {
                k: statistics.median(run[k] for run in runs)
                for k in ("construct_s", "certificate_s")
            }
            for who, runs in (("reference", ref_runs), ("current", new_runs))
        }
        agree = (
            all(run["blocks"] == ref_runs[0]["blocks"] for run in ref_runs + new_runs)
            and all(run["hausdorff_bound"] == "0" for run in ref_runs + new_runs)
            and all(
                abs(run["tau_max"] - ref_runs[0]["tau_max"]) <= 1e-12 * ref_runs[0]["tau_max"]
                for run in ref_runs + new_runs
            )
        )  # to rounding: tau_max may be rounded down now
        row = {
            "N": N,
            "n": n,
            "m": m,
            "d": d,
            "blocks": new_runs[0]["blocks"],
            "tau_max": new_runs[0]["tau_max"],
            "reference": med["reference"],
            "current": med["current"],
            "reference_runs": ref_runs,
            "current_runs": new_runs,
            "construct_ratio": med["reference"]["construct_s"] / med["current"]["construct_s"],
            "certificate_ratio": med["reference"]["certificate_s"]
            / med["current"]["certificate_s"],
            "both_exact_and_agree": agree,
        }
        print(
            f"{N, n, m, d}: construct {med['reference']['construct_s']:.2f} s -> {med['current']['construct_s']:.2f} s "
            f"({row['construct_ratio']:.1f}x); certificate {med['reference']['certificate_s']:.2f} s -> "
            f"{med['current']['certificate_s']:.2f} s ({row['certificate_ratio']:.1f}x); both exact and agree: {agree}",
            flush=True,
        )
        rows.append(row)
    return rows


def curves(repeats: int) -> list[dict]:
    rows = []
    for name, values, base in CURVES:
        for v in values:
            N, n, m, d = (v if b is None else b for b in base)
            runs = [child(ROOT, N, n, m, d, "curve") for _ in range(repeats)]
            row = {
                "sweep": name,
                "N": N,
                "n": n,
                "m": m,
                "d": d,
                "blocks": runs[0]["blocks"],
                "exact": all(r["exact"] for r in runs),
            }
            for k in ("construct_s", "certificate_s", "forward_float64_s"):
                row[k] = statistics.median(r[k] for r in runs)
            print(
                f"  {name} = {v:4d}: construct {row['construct_s']:.3f} s, certificate {row['certificate_s']:.3f} s, "
                f"float64 forward {row['forward_float64_s'] * 1e3:.2f} ms, exact {row['exact']}",
                flush=True,
            )
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="one small case side by side, nothing written"
    )
    parser.add_argument(
        "--curves", action="store_true", help="the cost curves instead of the ratios"
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="alternated repeats per case (default 3)"
    )
    parser.add_argument(
        "--big-reference-repeats",
        type=int,
        default=1,
        help="reference runs at the largest case (default 1: each takes minutes)",
    )
    parser.add_argument("--curve-repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    t0 = time.perf_counter()
    command = "python benchmarks/bench_construct.py " + " ".join(sys.argv[1:])
    if args.curves:
        payload = {"benchmark": "construct-cost", "records": curves(args.curve_repeats)}
        out = args.out or RESULTS_DIR / "construct-cost.json"
    else:
        with tempfile.TemporaryDirectory() as tmp:
            ref = extract_reference(Path(tmp))
            if args.quick:
                compare(ref, [(10, 20, 2, 3)], 1, 1)
                return
            rows = compare(ref, CASES, args.repeats, args.big_reference_repeats)
        mem = child(ROOT, *MEMORY_CASE, mode="memory")
        print(
            f"memory, certificate of random_dataset{MEMORY_CASE}: tracemalloc peak "
            f"{mem['tracemalloc_peak_bytes'] / 2**20:.1f} MiB, process peak RSS {mem['ru_maxrss_bytes'] / 2**20:.0f} MiB"
        )
        payload = {
            "benchmark": "construct",
            "reference_commit": REFERENCE_COMMIT,
            "records": rows,
            "memory": {"case": list(MEMORY_CASE), **mem},
            "targets": {
                "certificate_ratio_min": min(r["certificate_ratio"] for r in rows),
                "construct_ratio_min": min(r["construct_ratio"] for r in rows),
                "certificate_20x": all(r["certificate_ratio"] >= 20 for r in rows),
                "construct_5x": all(r["construct_ratio"] >= 5 for r in rows),
                "memory_below_2GB": mem["ru_maxrss_bytes"] < 2 * 10**9,
            },
        }
        out = args.out or RESULTS_DIR / "construct-bench.json"
    meta = provenance("cpu", command)
    meta.update(
        threads=1,
        wall_seconds=time.perf_counter() - t0,
        niceness=os.nice(0),
        load_average_1min_at_start=load_start,
        load_average_1min_at_end=os.getloadavg()[0],
    )
    payload = {"benchmark": payload.pop("benchmark"), "meta": meta, **payload}
    out.write_text(json.dumps(payload, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
