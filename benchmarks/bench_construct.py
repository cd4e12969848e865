"""Time to build and exactly verify the interpolation construction (hardmax, and softmax with its certificate).

Usage: ``python benchmarks/bench_construct.py [--quick]``. Prints CPU seconds (``process_time``,
single-threaded pure-Python Fraction arithmetic, so one core) for the reference case
``N = 10, n_j = 50, d = 3`` (target: under 10 s for build + verification) and how the time grows
with ``N`` and with ``n_j``. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import time

from sxor.interp.construct import construct, interpolation_errors, random_dataset, softmax_certificate


def run(N: int, n: int, d: int, m: int, seed: int = 0) -> tuple[float, float, int, bool]:
    """(build seconds, verify seconds, blocks, exact) for one random dataset with shared tokens."""
    X, Y = random_dataset(N, n, [1 + (j + seed) % m for j in range(N)], d, seed=seed, denominator=8)
    t0 = time.process_time()
    T = construct(X, Y)
    t1 = time.process_time()
    exact = all(e == 0 for e in interpolation_errors(T, X, Y))
    t2 = time.process_time()
    return t1 - t0, t2 - t1, T.num_blocks, exact


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="only the reference case")
    args = parser.parse_args()
    print("reference case N=10, n_j=50, d=3, m_j in {1,2,3}:")
    build, verify, L, exact = run(10, 50, 3, 3)
    print(f"  build {build:.2f} s + exact verification {verify:.2f} s = {build + verify:.2f} s; "
          f"L = {L} blocks; exact: {exact}")
    X, Y = random_dataset(10, 50, [1 + j % 3 for j in range(10)], 3, seed=0, denominator=8)
    t0 = time.process_time()
    T = construct(X, Y, attention="softmax")
    t1 = time.process_time()
    c = softmax_certificate(T, X, Y)
    t2 = time.process_time()
    print(f"  softmax: build {t1 - t0:.2f} s + rigorous certificate {t2 - t1:.2f} s; L = {T.num_blocks}; "
          f"certified exact: {c['exact']}")
    if args.quick:
        return
    print("\ngrowth with N (n_j = 50, d = 3):")
    for N in (2, 5, 10, 20):
        build, verify, L, exact = run(N, 50, 3, 3)
        print(f"  N={N:3d}: build {build:6.2f} s, verify {verify:6.2f} s, L={L:3d}, exact={exact}")
    print("\ngrowth with n_j (N = 10, d = 3):")
    for n in (10, 25, 50, 100):
        build, verify, L, exact = run(10, n, 3, 3)
        print(f"  n_j={n:4d}: build {build:6.2f} s, verify {verify:6.2f} s, L={L:3d}, exact={exact}")


if __name__ == "__main__":
    main()
