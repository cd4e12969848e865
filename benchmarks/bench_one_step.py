"""Benchmark of the batched closed-form one step (``sxor.one_step``), see benchmarks/README.md.

    .venv/bin/python benchmarks/bench_one_step.py                 # CPU, writes sxor/committed/bench_one_step.json
    .venv/bin/python benchmarks/bench_one_step.py --device cuda   # GPU, writes sxor/committed/bench_one_step_cuda.json

It measures, for each (d, m, batch):

* closed form, batched: ``sxor.one_step`` on a batch of instances at once, side by side with
  :func:`reference_one_step` (a straightforward batched closed form written here), interleaved,
  median of ``--repeats``: instances per second, the ratio of the two, the largest difference
  of their results, and the memory bandwidth implied by three reads of ``V`` per instance (what
  a three-pass step must move; the kernel reads ``V`` twice from 8 MiB per instance) as a
  fraction of the copy bandwidth ``y.copy_(x)``;
* closed form, one instance at a time in a Python loop;
* autograd through a Monte-Carlo loss (``sxor.xor.reference.monte_carlo_loss``) with enough samples
  that the gradient's relative standard error is ``--epsilon`` (default 1%).

* the **three-read limit** (:func:`bench_limit`, on ``--limit-threads`` threads, default 1 and 2):
  ``sxor.one_step`` with ``V`` stored ``[B, m, d]`` (passed as the transposed view) and stored
  ``[B, d, m]``, the same call with the kernel's other form forced (two reads of ``V`` against
  three), the straightforward reference, and three times the fastest streaming read of the same
  ``V``, all alternated; the fraction of the limit and the ratio to the reference;

and the memory of a streamed sweep (``sxor.xor.sweeps.sweep_m``) for 1x and 10x the seeds, each in a
fresh subprocess, ``--memory-repeats`` times alternately, the median growth over the start (peak
resident memory on CPU, ``torch.cuda.max_memory_allocated`` on GPU), with glibc's mmap threshold
fixed (the verdict) and with its default (reported), see :data:`MEMORY_ALLOCATORS`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import sxor  # noqa: E402  (after sys.path.insert)
from sxor.results import RESULTS_DIR, provenance  # noqa: E402  (after sys.path.insert)
from sxor.xor import (  # noqa: E402  (after sys.path.insert)
    _native_plan,
    analysis,
    native,
    population,
)
from sxor.xor._native_plan import FORM_ENV  # noqa: E402  (after sys.path.insert)
from sxor.xor.population import grad_from_weights, loss_from_weights  # noqa: E402  (after sys.path.insert)
from sxor.xor.reference import autograd_grad, monte_carlo_loss  # noqa: E402  (after sys.path.insert)
from sxor.xor.sweeps import random_instances  # noqa: E402  (after sys.path.insert)

#: (d, m, instances in the batched timing) per device: a small size for the Monte-Carlo comparison,
#: then the three sizes at which sxor.one_step is compared with the straightforward reference.
CONFIGS = {
    "cpu": [(64, 16, 4096), (1024, 32, 256), (16384, 32, 32), (2**20, 40, 2)],
    "cuda": [(64, 16, 65536), (1024, 32, 16384), (16384, 32, 1024), (2**20, 40, 256)],
}
#: The sizes of the three-read limit comparison (:func:`bench_limit`).
LIMIT_CONFIGS = {"cpu": CONFIGS["cpu"][1:], "cuda": CONFIGS["cuda"][1:]}
#: Per-seed loop: instances timed (the rate is per instance, so a few suffice).
LOOP_INSTANCES = 64
#: The H200 target of the issue: one-step instances per second at float64, d = 2^20, m = 40.
GPU_TARGET = {"d": 2**20, "m": 40, "instances_per_s": 1600}


def reference_one_step(V, theta0, support, eta):
    """The straightforward batched closed form that ``sxor.one_step`` is measured against: two
    ``einsum`` scores, the closed-form gradient of each head (two more passes over ``V``), the
    update, two ``einsum`` scores again and the loss from the weights: six passes over ``V``."""
    s = torch.einsum("...dm,...m->...d", V, theta0)
    s_tilde = torch.einsum("...dm,...m->...d", V, -theta0)
    g, h = torch.softmax(s, -1), torch.softmax(s_tilde, -1)
    du_g, du_h = grad_from_weights(g, h, support)
    r = g * (du_g - (g * du_g).sum(-1, keepdim=True))  # softmax pullback J^T u
    r_tilde = h * (du_h - (h * du_h).sum(-1, keepdim=True))
    grad = torch.einsum("...dm,...d->...m", V, r)
    grad_tilde = torch.einsum("...dm,...d->...m", V, r_tilde)
    step = torch.as_tensor(eta, dtype=V.dtype, device=V.device).unsqueeze(-1)
    theta1, theta_tilde1 = theta0 - step * grad, -theta0 - step * grad_tilde
    g1 = torch.softmax(torch.einsum("...dm,...m->...d", V, theta1), -1)
    h1 = torch.softmax(torch.einsum("...dm,...m->...d", V, theta_tilde1), -1)
    return sxor.OneStepResult(theta1, theta_tilde1, loss_from_weights(g1, h1, support), g1, h1)


def three_pass_reference_one_step(V, theta0, support, eta):
    """:func:`reference_one_step` with its passes over ``V`` merged into three ``einsum`` calls
    (no cache blocking): the scores of the first head (the second head's are their negatives),
    both heads' gradients in one call, both heads' new scores in one call. It separates what
    ``sxor.one_step`` gains by reading ``V`` three times (or twice) instead of six from anything
    else."""
    s = torch.einsum("...dm,...m->...d", V, theta0)
    g, h = torch.softmax(s, -1), torch.softmax(-s, -1)
    du_g, du_h = grad_from_weights(g, h, support)
    r = torch.stack(
        [
            g * (du_g - (g * du_g).sum(-1, keepdim=True)),
            h * (du_h - (h * du_h).sum(-1, keepdim=True)),
        ],
        -1,
    )
    grads = torch.einsum("...dm,...dk->...km", V, r)
    step = torch.as_tensor(eta, dtype=V.dtype, device=V.device).unsqueeze(-1)
    theta1, theta_tilde1 = theta0 - step * grads[..., 0, :], -theta0 - step * grads[..., 1, :]
    s1 = torch.einsum("...dm,...km->...dk", V, torch.stack([theta1, theta_tilde1], -2))
    g1, h1 = torch.softmax(s1[..., 0], -1), torch.softmax(s1[..., 1], -1)
    return sxor.OneStepResult(theta1, theta_tilde1, loss_from_weights(g1, h1, support), g1, h1)


def side_by_side(
    fast, slow, device: torch.device, repeats: int, ratios_out: list | None = None
) -> tuple[float, float, float]:
    """Median wall times of ``fast()`` and ``slow()``, called alternately ``repeats`` times each
    (after one warm-up call of each), so that both see the same load on a shared machine, and the
    median over the ``repeats`` adjacent pairs of the ratio ``slow / fast``. Every pair's ratio,
    in order, is appended to ``ratios_out`` when given (the spread of the alternations)."""
    fast(), slow()
    _sync(device)
    t_fast, t_slow = [], []
    for _ in range(repeats):
        for fn, times in ((fast, t_fast), (slow, t_slow)):
            start = time.perf_counter()
            fn()
            _sync(device)
            times.append(time.perf_counter() - start)
    pair_ratios = [s / f for f, s in zip(t_fast, t_slow)]
    if ratios_out is not None:
        ratios_out.extend(pair_ratios)
    ratios = sorted(pair_ratios)
    return (
        float(sorted(t_fast)[repeats // 2]),
        float(sorted(t_slow)[repeats // 2]),
        float(ratios[repeats // 2]),
    )


def max_relative_difference(a, b) -> float:
    """Largest difference between two one-step results, relative to each field's size."""
    return max(float((x - y).abs().max() / y.abs().max().clamp(min=1e-300)) for x, y in zip(a, b))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def best_time(fn, device: torch.device, repeats: int = 3) -> float:
    """Smallest wall time of ``repeats`` calls of ``fn`` (after one warm-up call)."""
    fn()
    _sync(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - start)
    return min(times)


def read_limit(Vt, device: torch.device, repeats: int = 5) -> float:
    """The physical limit of a three-pass step on ``V`` (the kernel's two-read form can beat
    it): three times the fastest streaming read of the same array, ``Vt.sum()`` over ``Vt = V^T [B, m, d]`` contiguous (best of ``repeats``)."""
    return 3 * best_time(Vt.sum, device, repeats=repeats)


def alternate(fns: dict, device: torch.device, repeats: int, rotate: bool = False) -> dict:
    """Median wall time of each function in ``fns``, called in turn ``repeats`` times (after one
    warm-up call each), so that all see the same load on a shared machine; also every time, and
    the same statistics of the process's CPU time (``time.process_time``, all threads), which
    excludes the time spent waiting for a CPU that other processes hold. ``rotate``: each
    alternation starts one function later than the one before, so that no function always
    follows the same other one."""
    for fn in fns.values():
        fn()
    _sync(device)
    times = {key: [] for key in fns}
    cpu = {key: [] for key in fns}
    keys = list(fns)
    for rep in range(repeats):
        shift = rep % len(keys) if rotate else 0
        for key in keys[shift:] + keys[:shift]:
            fn = fns[key]
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            _sync(device)
            times[key].append(time.perf_counter() - start)
            cpu[key].append(time.process_time() - start_cpu)
    return {
        key: {
            "median": float(sorted(t)[repeats // 2]),
            "min": float(min(t)),
            "all": t,
            "cpu_median": float(sorted(cpu[key])[repeats // 2]),
            "cpu_min": float(min(cpu[key])),
        }
        for key, t in times.items()
    }


def bench_limit(
    d: int, m: int, count: int, device: torch.device, dtype: torch.dtype, repeats: int
) -> dict:
    """``sxor.one_step`` against the three-read limit and the straightforward reference, at one
    size and the current thread count: ``V`` stored ``[B, m, d]`` (as the sweeps draw it) and
    passed as its transposed view, and the same ``V`` contiguous ``[B, d, m]``, all alternated.

    The limit is measured inside the alternation too (three times the fastest ``Vt.sum()``), so
    ``fraction_of_limit = limit / median one_step time`` compares numbers taken under one load."""
    eta = analysis.grid_eta(d)
    batch = random_instances(count, d, m, seed=0, dtype=dtype, device=device)
    Vt = batch.V.transpose(-1, -2)
    assert Vt.is_contiguous()
    V_contiguous = batch.V.contiguous()
    fns = {
        "read": Vt.sum,
        "one_step": lambda: sxor.one_step(batch.V, batch.theta0, batch.support, eta),
        "one_step_contiguous_dm": lambda: sxor.one_step(
            V_contiguous, batch.theta0, batch.support, eta
        ),
        "reference": lambda: reference_one_step(batch.V, batch.theta0, batch.support, eta),
    }
    # The kernel's other form, forced (three reads where the plan picks two, and the other way
    # round), so that the plan's choice is measured in the same run.
    fns["one_step"]()  # the plan (measured now, or read) before the alternation
    fused = "two reads of V" in population.last_path().reason

    def other_form():
        saved = os.environ.get(FORM_ENV)
        os.environ[FORM_ENV] = "three" if fused else "fused"
        try:
            return sxor.one_step(batch.V, batch.theta0, batch.support, eta)
        finally:
            if saved is None:
                del os.environ[FORM_ENV]
            else:
                os.environ[FORM_ENV] = saved

    if device.type == "cpu":
        fns["one_step_other_form"] = other_form
    t = alternate(fns, device, repeats)
    limit = 3 * t["read"]["min"]
    one = t["one_step"]["median"]
    fns["one_step"]()
    path = population.last_path()
    fns["one_step_contiguous_dm"]()
    path_dm = population.last_path()
    cpu_limit = 3 * t["read"]["cpu_min"]
    return {
        "path": path.path,
        "path_reason": path.reason,
        "path_contiguous_dm": path_dm.path,
        "load_average_1min": os.getloadavg()[0],
        "d": d,
        "m": m,
        "instances": count,
        "threads": torch.get_num_threads(),
        "limit_seconds": limit,
        "read_seconds_min": t["read"]["min"],
        "one_step_seconds": one,
        "one_step_contiguous_dm_seconds": t["one_step_contiguous_dm"]["median"],
        "reference_seconds": t["reference"]["median"],
        "other_form": None
        if device.type != "cpu"
        else ("three reads of V" if fused else "two reads of V"),
        "one_step_other_form_seconds": t["one_step_other_form"]["median"]
        if device.type == "cpu"
        else None,
        # the planned form over the other, forced, per alternation (median and 95% interval): the
        # verdict on the plan, robust to the drift of a shared machine that moves both medians
        "chosen_over_other_paired_median": float(
            statistics.median(
                a / b for a, b in zip(t["one_step"]["all"], t["one_step_other_form"]["all"])
            )
        )
        if device.type == "cpu"
        else None,
        "chosen_over_other_paired_median_interval_95": median_interval(
            [a / b for a, b in zip(t["one_step"]["all"], t["one_step_other_form"]["all"])]
        )
        if device.type == "cpu"
        else None,
        "fraction_of_limit": limit / one,
        "fraction_of_limit_contiguous_dm": limit / t["one_step_contiguous_dm"]["median"],
        "ratio_vs_reference": t["reference"]["median"] / one,
        # the same fractions in CPU seconds (process_time, all threads): robust to waiting for a
        # CPU on a loaded machine, not to other processes' share of the memory bandwidth
        "cpu_limit_seconds": cpu_limit,
        "cpu_one_step_seconds": t["one_step"]["cpu_median"],
        "cpu_fraction_of_limit": cpu_limit / max(t["one_step"]["cpu_median"], 1e-9),
        "cpu_fraction_of_limit_contiguous_dm": cpu_limit
        / max(t["one_step_contiguous_dm"]["cpu_median"], 1e-9),
        "cpu_ratio_vs_reference": t["reference"]["cpu_median"]
        / max(t["one_step"]["cpu_median"], 1e-9),
        "ratio_vs_reference_pairs": [
            r / f for f, r in zip(t["one_step"]["all"], t["reference"]["all"])
        ],
        # reported beside the fraction (not a target): each alternation's three reads over the step
        # timed right after them, median over the alternations (both sides typical, same moment)
        "fraction_of_limit_paired_median": float(
            sorted(3 * r / f for r, f in zip(t["read"]["all"], t["one_step"]["all"]))[repeats // 2]
        ),
        "times": {key: v["all"] for key, v in t.items()},
        "max_relative_difference_vs_reference": max_relative_difference(
            fns["one_step"](), fns["reference"]()
        ),
    }


def cpu_info() -> dict:
    """The CPU's model name and feature flags (``/proc/cpuinfo``), and whether it has AVX2 and
    AVX-512 (``avx512f``)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {"model": platform.processor() or platform.machine(), "flags": None}
    first = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        first.setdefault(key.strip(), value.strip())
    flags = first.get("flags", "")
    return {
        "model": first.get("model name", platform.machine()),
        "flags": flags,
        "avx2": "avx2" in flags.split(),
        "avx512f": "avx512f" in flags.split(),
        "cpus": native.cpu_count(),
    }


def default_builds() -> list[str]:
    """The kernel builds to measure: ``native`` (``-march=native``), and on a CPU with AVX-512 also
    ``x86-64-v3`` (AVX2, FMA, no AVX-512), the stand-in for an AVX2-only CPU."""
    return ["native", "x86-64-v3"] if cpu_info().get("avx512f") else ["native"]


def use_build(build: str, fresh_plans: bool = False) -> None:
    """Load the kernel built for ``-march=build`` (``native``: the default build) in this process;
    with ``fresh_plans``, forget its plans (the plan file too), so that this run plans again."""
    if build == "native":
        os.environ.pop("SXOR_NATIVE_MARCH", None)
    else:
        os.environ["SXOR_NATIVE_MARCH"] = build
    native.reset()
    if native.library() is None:
        raise SystemExit(
            f"the {build} build of the kernel is unavailable: {native.unavailable_reason()}"
        )
    if fresh_plans:  # the build's forms are planned again, in this run, at its first call of a size
        _native_plan.plan_file(native.library_path()).unlink(missing_ok=True)
        _native_plan.forget()


#: The busy-core setup of :func:`bench_busy`: one spinning Python process per CPU.
SPINNER = "while True: pass"


def bench_busy(d: int, m: int, count: int, device: torch.device, dtype, repeats: int) -> dict:
    """``sxor.one_step`` with every core already busy (one ``python -c 'while True: pass'`` per
    CPU, started a second before): on one thread, on two (the default: the call keeps both), and
    on two with the load check on (``SXOR_NATIVE_LOAD_CHECK=1``, which runs no more threads than
    idle cores), alternated; median wall times, the paths, and the medians of the paired ratios
    with 95% bootstrap intervals."""
    eta = analysis.grid_eta(d)
    batch = random_instances(count, d, m, seed=0, dtype=dtype, device=device)
    before = torch.get_num_threads()
    paths = {}

    def step(threads: int, check: bool, key: str):
        def run():
            torch.set_num_threads(threads)
            saved = os.environ.get("SXOR_NATIVE_LOAD_CHECK")
            os.environ["SXOR_NATIVE_LOAD_CHECK"] = "1" if check else "0"
            try:
                sxor.one_step(batch.V, batch.theta0, batch.support, eta)
                paths[key] = population.last_path().reason
            finally:
                if saved is None:
                    del os.environ["SXOR_NATIVE_LOAD_CHECK"]
                else:
                    os.environ["SXOR_NATIVE_LOAD_CHECK"] = saved

        return run

    fns = {
        "one_thread": step(1, False, "one_thread"),
        "two_threads": step(2, False, "two_threads"),
        "two_threads_load_check": step(2, True, "two_threads_load_check"),
    }
    for fn in fns.values():  # the plans, before the spinners start
        fn()
    spinners = [
        subprocess.Popen([sys.executable, "-c", SPINNER]) for _ in range(native.cpu_count())
    ]
    try:
        time.sleep(1.0)
        t = alternate(fns, device, repeats, rotate=True)
        load = os.getloadavg()[0]
    finally:
        for proc in spinners:
            proc.kill()
        for proc in spinners:
            proc.wait()
        torch.set_num_threads(before)
    one, two = t["one_thread"]["median"], t["two_threads"]["median"]
    # paired: each alternation's two-thread call over its one-thread call (the spinners' share of
    # the cores drifts over seconds; calls of one alternation see about the same drift)
    ratios = {
        key: [b / a for a, b in zip(t["one_thread"]["all"], t[key]["all"])]
        for key in ("two_threads", "two_threads_load_check")
    }
    paired = {key: float(statistics.median(r)) for key, r in ratios.items()}
    interval = {key: median_interval(r) for key, r in ratios.items()}
    return {
        "d": d,
        "m": m,
        "instances": count,
        "busy_setup": f"{len(spinners)} processes `python -c '{SPINNER}'` (one per CPU)",
        "load_average_1min_at_end": load,
        "one_thread_seconds": one,
        "two_threads_seconds": two,
        "two_threads_load_check_seconds": t["two_threads_load_check"]["median"],
        "two_over_one": two / one,
        "two_over_one_paired_median": paired["two_threads"],
        "two_over_one_paired_median_interval_95": interval["two_threads"],
        "two_check_over_one_paired_median": paired["two_threads_load_check"],
        "two_check_over_one_paired_median_interval_95": interval["two_threads_load_check"],
        "paths": paths,
        "times": {key: v["all"] for key, v in t.items()},
    }


def median_interval(values: list[float], draws: int = 2000, seed: int = 0) -> list[float]:
    """A 95% percentile-bootstrap interval of the median of ``values`` (``draws`` resamples,
    seeded, so that the same times give the same interval)."""
    import random

    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(draws))
    return [float(medians[int(0.025 * draws)]), float(medians[int(0.975 * draws) - 1])]


def copy_bandwidth(device: torch.device, nbytes: int) -> float:
    """Bytes per second of ``y.copy_(x)``: one read and one write of ``nbytes``."""
    x = torch.ones(nbytes // 8, dtype=torch.float64, device=device)
    y = torch.empty_like(x)
    return 2 * nbytes / best_time(lambda: y.copy_(x), device, repeats=5)


def mc_samples_needed(
    V, theta0, support, epsilon: float, pilot: int, batches: int, generator
) -> dict:
    """Samples ``n`` for which the Monte-Carlo gradient has relative standard error ``epsilon``.

    The per-sample gradient covariance is estimated from ``batches`` autograd gradients of
    batch means (``pilot`` samples each): ``tr Cov = pilot * sum_k Var(batch-mean gradient_k)``.
    Then ``SE(n) = sqrt(tr Cov / n)`` and ``n = tr Cov / (epsilon ||g||)^2`` with ``g`` the exact
    (closed-form) gradient.
    """
    grads = []
    for _ in range(batches):
        g, g_t = autograd_grad(
            lambda a, b: monte_carlo_loss(V, a, b, support, pilot, generator=generator)[0],
            theta0,
            -theta0,
        )
        grads.append(torch.cat([g, g_t]))
    grads = torch.stack(grads)
    trace_cov = float(pilot * grads.var(0).sum())
    exact = torch.cat(sxor.population_grad(V, theta0, -theta0, support))
    norm = float(exact.norm())
    mean_error = float((grads.mean(0) - exact).norm() / norm)
    return {
        "epsilon": epsilon,
        "per_sample_relative_std": math.sqrt(trace_cov) / norm,
        "n_required": math.ceil(trace_cov / (epsilon * norm) ** 2),
        "pilot_mean_relative_error": mean_error,
        "pilot_samples": pilot * batches,
    }


def time_mc(V, theta0, support, n: int, chunk: int, max_chunks: int, device, generator) -> dict:
    """Seconds for one autograd Monte-Carlo gradient from ``n`` samples, accumulated over chunks.

    At most ``max_chunks`` chunks are run; if ``n`` needs more, the time is extrapolated linearly
    (every chunk does the same work), and the record says so.
    """
    chunks_needed = math.ceil(n / chunk)
    run = min(chunks_needed, max_chunks)

    def work():
        for _ in range(run):
            autograd_grad(
                lambda a, b: monte_carlo_loss(V, a, b, support, chunk, generator=generator)[0],
                theta0,
                -theta0,
            )

    seconds = best_time(work, device, repeats=1) * chunks_needed / run
    return {
        "chunk": chunk,
        "chunks_needed": chunks_needed,
        "chunks_timed": run,
        "extrapolated": run < chunks_needed,
        "seconds_per_instance": seconds,
    }


def bench_config(
    d: int, m: int, count: int, device: torch.device, dtype: torch.dtype, args
) -> dict:
    eta = analysis.grid_eta(d)
    batch = random_instances(count, d, m, seed=0, dtype=dtype, device=device)
    pairs, pairs_three = [], []
    t_batched, t_reference, pair_ratio = side_by_side(
        lambda: sxor.one_step(batch.V, batch.theta0, batch.support, eta),
        lambda: reference_one_step(batch.V, batch.theta0, batch.support, eta),
        device,
        args.repeats,
        pairs,
    )
    _, t_three, three_ratio = side_by_side(
        lambda: sxor.one_step(batch.V, batch.theta0, batch.support, eta),
        lambda: three_pass_reference_one_step(batch.V, batch.theta0, batch.support, eta),
        device,
        args.repeats,
        pairs_three,
    )
    three_difference = max_relative_difference(
        sxor.one_step(batch.V, batch.theta0, batch.support, eta),
        three_pass_reference_one_step(batch.V, batch.theta0, batch.support, eta),
    )
    difference = max_relative_difference(
        sxor.one_step(batch.V, batch.theta0, batch.support, eta),
        reference_one_step(batch.V, batch.theta0, batch.support, eta),
    )
    bytes_model = 3 * d * m * torch.finfo(dtype).bits // 8 * count  # three reads of V
    loop_n = min(LOOP_INSTANCES, count)

    def loop():
        for k in range(loop_n):
            sxor.one_step(batch.V[k], batch.theta0[k], batch.support[k], eta)

    t_loop = best_time(loop, device)
    record = {
        "d": d,
        "m": m,
        "eta": eta,
        "instances": count,
        "closed_form": {
            "seconds": t_batched,
            "instances_per_s": count / t_batched,
            "bandwidth_bytes_per_s": bytes_model / t_batched,
            "bandwidth_fraction_of_copy": bytes_model / t_batched / args.copy_bw,
        },
        "reference": {
            "seconds": t_reference,
            "instances_per_s": count / t_reference,
            "bandwidth_fraction_of_copy": 2 * bytes_model / t_reference / args.copy_bw,
        },
        "ratio_vs_reference": pair_ratio,  # median of the adjacent pairs' ratios
        "ratio_vs_reference_pairs": pairs,  # every alternation's ratio (the spread)
        "three_pass_reference": {
            "seconds": t_three,
            "instances_per_s": count / t_three,
            "ratio_vs_one_step": three_ratio,
            "ratio_pairs": pairs_three,
            "max_relative_difference": three_difference,
        },
        "ratio_of_median_times": t_reference / t_batched,
        "max_relative_difference_vs_reference": difference,
        "loop": {"instances": loop_n, "seconds": t_loop, "instances_per_s": loop_n / t_loop},
    }
    record["speedup_vs_loop"] = (
        record["closed_form"]["instances_per_s"] / record["loop"]["instances_per_s"]
    )
    if d <= args.mc_max_d:
        gen = torch.Generator(device=device).manual_seed(1)
        V0, th0, sup0 = batch.V[0], batch.theta0[0], batch.support[0]
        need = mc_samples_needed(V0, th0, sup0, args.epsilon, args.pilot, args.pilot_batches, gen)
        chunk = max(1, min(args.mc_chunk_bytes // (8 * d * 4), need["n_required"]))
        timing = time_mc(V0, th0, sup0, need["n_required"], chunk, args.mc_max_chunks, device, gen)
        record["monte_carlo"] = {
            **need,
            **timing,
            "instances_per_s": 1 / timing["seconds_per_instance"],
        }
        record["speedup_vs_mc"] = (
            record["closed_form"]["instances_per_s"] / record["monte_carlo"]["instances_per_s"]
        )
    return record


MEMORY_CHILD = r"""
import json, sys, torch
sys.path.insert(0, {root!r})
import sxor
from sxor.xor.sweeps import sweep_m
from sxor.xor import analysis
from sxor.experiments.one_step import grid_measure
device = torch.device({device!r})
d, m, seeds, budget = {d}, {m}, {seeds}, {budget}
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) * 1024
ms = list(range(16, m + 1, 4))
# a tiny sweep first, so that the start already holds what any first call loads (the native
# kernel, torch's lazily built operators): the growth is then the sweep's own memory
sweep_m(grid_measure(analysis.grid_eta(64)), 2, 64, ms, device=device, budget_bytes=budget)
base = hwm()
if device.type == "cuda":
    torch.cuda.reset_peak_memory_stats(device)
eta = analysis.grid_eta(d)
out = sweep_m(grid_measure(eta), seeds, d, ms, device=device, budget_bytes=budget)
assert out[m]["loss"].shape == (seeds,)
peak_gpu = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
print(json.dumps({{"seeds": seeds, "rss_before_bytes": base, "rss_peak_bytes": hwm(), "gpu_peak_bytes": peak_gpu}}))
"""

#: The allocator settings of the memory measurement. ``fixed``: glibc's mmap threshold fixed at
#: 128 KiB (``MALLOC_MMAP_THRESHOLD_`` also switches off its dynamic adjustment) and one malloc
#: arena, so that every large tensor is mapped when allocated and unmapped when freed and the
#: peak resident memory follows the live tensors; ``default``: glibc as it comes, whose
#: threshold rises with the sizes freed, so that freed tensors may stay resident in its heap.
#: Both on one thread (no drawing threads, whose arenas would make the peak depend on timing).
MEMORY_ALLOCATORS = {
    "fixed": {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_ARENA_MAX": "1", "OMP_NUM_THREADS": "1"},
    "default": {"OMP_NUM_THREADS": "1"},
}


def bench_memory(
    device: torch.device,
    d: int,
    m: int,
    seeds: int,
    budget: float,
    repeats: int = 5,
    allocator: str = "fixed",
) -> list[dict]:
    """Peak memory of a streamed sweep for ``seeds`` and ``10 seeds``, each in a fresh process
    with the allocator settings ``MEMORY_ALLOCATORS[allocator]``, ``repeats`` times alternately;
    each row reports the median growth over the start (the statistic, fixed before the runs) and
    lists every run's growth."""
    runs: dict[int, list[dict]] = {seeds: [], 10 * seeds: []}
    env = {**os.environ, "TQDM_DISABLE": "1", **MEMORY_ALLOCATORS[allocator]}
    for _ in range(repeats):
        for n in runs:
            code = MEMORY_CHILD.format(
                root=str(ROOT), device=str(device), d=d, m=m, seeds=n, budget=budget
            )
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
            )
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row["rss_growth_bytes"] = row["rss_peak_bytes"] - row["rss_before_bytes"]
            runs[n].append(row)
    chunk = max(1, int(budget // (2 * d * m * 8)))  # as in sweep_m, m_max = m
    rows = []
    for _n, rs in runs.items():
        growth = sorted(r["rss_growth_bytes"] for r in rs)
        mid = sorted(rs, key=lambda r: r["rss_growth_bytes"])[len(rs) // 2]
        rows.append(
            {
                **mid,
                "d": d,
                "m": m,
                "budget_bytes": budget,
                "chunk": chunk,
                "allocator": allocator,
                "allocator_env": MEMORY_ALLOCATORS[allocator],
                "statistic": f"median of {len(rs)} runs",
                "rss_growth_bytes": growth[len(growth) // 2],
                "rss_growth_all_runs": [r["rss_growth_bytes"] for r in rs],
            }
        )
    return rows


def memory_targets(memory: list[dict], budget: float) -> dict:
    """Whether 10x the seeds stays within the budget and within 10% of 1x (either way)."""
    g1, g10 = memory[0]["rss_growth_bytes"], memory[1]["rss_growth_bytes"]
    return {
        "within_budget": g10 <= budget
        and memory[1]["rss_peak_bytes"] <= 1.2 * memory[0]["rss_peak_bytes"],
        "growth_10x_over_1x": g10 / max(1, g1),
        "flat": max(g1, g10) <= 1.1 * min(g1, g10),
    }


def earlier_runs(out: Path) -> list[dict]:
    """The runs already in the results file ``out`` (its own run first, then those it kept), each
    reduced to its provenance, its limit rows per build and its targets, so that a run on another
    CPU adds to the file instead of replacing it."""
    try:
        old = json.loads(out.read_text())
    except (OSError, ValueError):
        return []
    kept = {
        "meta": old.get("meta"),
        "builds": old.get("builds") or {"native": {"march": "native", "limit": old.get("limit")}},
        "targets": old.get("targets"),
    }
    return [kept, *old.get("earlier_runs", [])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--out", type=Path, default=None, help="results file (default by device)")
    parser.add_argument(
        "--epsilon", type=float, default=0.01, help="relative standard error asked of Monte Carlo"
    )
    parser.add_argument("--pilot", type=int, default=2048, help="samples per pilot batch")
    parser.add_argument("--pilot-batches", type=int, default=32)
    parser.add_argument(
        "--mc-max-d", type=int, default=1024, help="largest d with a Monte-Carlo comparison"
    )
    parser.add_argument(
        "--mc-chunk-bytes", type=int, default=2**27, help="memory per Monte-Carlo chunk"
    )
    parser.add_argument(
        "--mc-max-chunks", type=int, default=4, help="chunks timed before extrapolating"
    )
    parser.add_argument(
        "--memory-budget", type=float, default=2e8, help="sweep budget_bytes in the memory test"
    )
    parser.add_argument(
        "--memory-repeats", type=int, default=5, help="fresh processes per seed count and allocator"
    )
    parser.add_argument(
        "--repeats", type=int, default=9, help="interleaved timings of each implementation"
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's)"
    )
    parser.add_argument(
        "--limit-threads",
        type=int,
        nargs="*",
        default=[1, 2],
        help="thread counts of the limit comparison (fraction of the three-read limit)",
    )
    parser.add_argument(
        "--limit-repeats", type=int, default=9, help="alternations in the limit comparison"
    )
    parser.add_argument(
        "--builds",
        nargs="*",
        default=None,
        help="-march values of the kernel builds in the limit comparison (default: native, and "
        "x86-64-v3 on a CPU with AVX-512)",
    )
    parser.add_argument(
        "--busy-repeats",
        type=int,
        default=31,
        help="alternations with every core busy (0: no busy-core comparison)",
    )
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda asked for, but torch sees no CUDA device")
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    out = args.out or RESULTS_DIR / (
        "bench_one_step.json" if device.type == "cpu" else "bench_one_step_cuda.json"
    )
    dtype = torch.float64
    load_start = os.getloadavg()[0]

    args.copy_bw = copy_bandwidth(device, 2**30 if device.type == "cuda" else 2**28)
    print(f"copy bandwidth: {args.copy_bw / 1e9:.1f} GB/s", flush=True)
    configs = []
    for d, m, count in CONFIGS[device.type]:
        rec = bench_config(d, m, count, device, dtype, args)
        configs.append(rec)
        line = (
            f"d={d} m={m} B={count}: one_step {rec['closed_form']['instances_per_s']:.4g}/s "
            f"({rec['closed_form']['bandwidth_fraction_of_copy']:.2f} of copy bandwidth), "
            f"{rec['ratio_vs_reference']:.2f}x the reference "
            f"({min(rec['ratio_vs_reference_pairs']):.2f}..{max(rec['ratio_vs_reference_pairs']):.2f}), "
            f"{rec['three_pass_reference']['ratio_vs_one_step']:.2f}x the 3-pass reference, "
            f"loop {rec['loop']['instances_per_s']:.4g}/s"
        )
        if "monte_carlo" in rec:
            mc = rec["monte_carlo"]
            line += (
                f", Monte Carlo n={mc['n_required']:.3g} {mc['instances_per_s']:.3g}/s "
                f"(speed-up {rec['speedup_vs_mc']:.3g}x)"
            )
        print(line, flush=True)
    threads_before = torch.get_num_threads()
    builds = {}
    for build in (args.builds or default_builds()) if device.type == "cpu" else ["native"]:
        if device.type == "cpu":
            use_build(build, fresh_plans=True)
        limits = {}
        for threads in args.limit_threads:
            torch.set_num_threads(threads)
            rows = []
            for d, m, count in LIMIT_CONFIGS[device.type]:
                row = bench_limit(d, m, count, device, dtype, args.limit_repeats)
                rows.append(row)
                print(
                    f"{build} threads={threads} d={d} m={m} B={count}: "
                    f"limit {row['limit_seconds'] * 1e3:.1f} ms, "
                    f"one_step {row['one_step_seconds'] * 1e3:.1f} ms ([B, m, d] stored) / "
                    f"{row['one_step_contiguous_dm_seconds'] * 1e3:.1f} ms ([B, d, m] contiguous), "
                    f"other form {(row['one_step_other_form_seconds'] or 0) * 1e3:.1f} ms, "
                    f"reference {row['reference_seconds'] * 1e3:.1f} ms: "
                    f"{row['fraction_of_limit']:.2f} of the limit, "
                    f"{row['ratio_vs_reference']:.2f}x the reference "
                    f"(CPU time: {row['cpu_fraction_of_limit']:.2f} of the limit; "
                    f"{row['path_reason']})",
                    flush=True,
                )
            limits[str(threads)] = rows
        torch.set_num_threads(threads_before)
        busy = []
        if device.type == "cpu" and args.busy_repeats > 0:
            for d, m, count in LIMIT_CONFIGS[device.type]:
                row = bench_busy(d, m, count, device, dtype, args.busy_repeats)
                busy.append(row)
                print(
                    f"{build} busy cores, d={d} m={m} B={count}: one thread "
                    f"{row['one_thread_seconds'] * 1e3:.1f} ms, two "
                    f"{row['two_threads_seconds'] * 1e3:.1f} ms, two with the load check "
                    f"{row['two_threads_load_check_seconds'] * 1e3:.1f} ms",
                    flush=True,
                )
        builds[build] = {
            "march": build,
            "cflags": native._march(native.FLAGS) if device.type == "cpu" else None,
            "library": native.library_path().name if native.library_path() else None,
            "limit": limits,
            "busy": busy,
        }
    if device.type == "cpu":
        use_build("native")
    limits = next(iter(builds.values()))["limit"]
    every_row = [r for b in builds.values() for rows in b["limit"].values() for r in rows]
    every_busy = [r for b in builds.values() for r in b["busy"]]
    memory = bench_memory(device, 16384, 40, 50, args.memory_budget, repeats=args.memory_repeats)
    memory_default = bench_memory(
        device, 16384, 40, 50, args.memory_budget, repeats=args.memory_repeats, allocator="default"
    )
    for row in memory + memory_default:
        print(
            f"memory ({row['allocator']} allocator): {row['seeds']} seeds -> growth "
            f"{row['rss_growth_bytes'] / 2**20:.0f} MiB over the start (median; runs "
            f"{', '.join(f'{g / 2**20:.0f}' for g in row['rss_growth_all_runs'])})",
            flush=True,
        )
    mem_t, mem_default_t = (
        memory_targets(memory, args.memory_budget),
        memory_targets(memory_default, args.memory_budget),
    )

    target_cfg = next(
        (c for c in configs if (c["d"], c["m"]) == (GPU_TARGET["d"], GPU_TARGET["m"])), None
    )
    targets = {
        # the smallest median ratio over every size (d = 64 included), not a pass/fail threshold
        "one_step_vs_reference_smallest_ratio": min(c["ratio_vs_reference"] for c in configs),
        "closed_form_100x_faster_than_mc": all(
            c.get("speedup_vs_mc", math.inf) >= 100 for c in configs
        ),
        "memory_within_budget_for_10x_seeds": mem_t["within_budget"],
        "every_fraction_of_limit_at_least_0.6": all(
            r["fraction_of_limit"] >= 0.6 for rows in limits.values() for r in rows
        ),
        # the same over every build (native and, on an AVX-512 CPU, x86-64-v3)
        "every_build_fraction_of_limit_at_least_0.6": all(
            r["fraction_of_limit"] >= 0.6 for r in every_row
        ),
        "smallest_fraction_of_limit_any_build": min(
            (r["fraction_of_limit"] for r in every_row), default=None
        ),
        # the planned form against the other one, forced, in the same alternation: median times
        "chosen_form_within_5_percent_of_the_other": all(
            r["one_step_other_form_seconds"] is None
            or r["one_step_seconds"] <= 1.05 * r["one_step_other_form_seconds"]
            for r in every_row
        ),
        # the same as the median of the paired ratios (the verdict)
        "chosen_form_within_5_percent_of_the_other_paired": all(
            r.get("chosen_over_other_paired_median") is None
            or r["chosen_over_other_paired_median"] <= 1.05
            for r in every_row
        ),
        # busy cores: two threads asked for no slower than one (median times, 5% allowed)
        "busy_two_threads_not_slower_than_one": all(
            r["two_threads_seconds"] <= 1.05 * r["one_thread_seconds"] for r in every_busy
        )
        if every_busy
        else None,
        # the same as the median of the paired ratios (each two-thread call over the one-thread
        # call of the same alternation), the verdict: it cancels the drift of the busy cores
        "busy_two_threads_not_slower_than_one_paired": all(
            r["two_over_one_paired_median"] <= 1.05 for r in every_busy
        )
        if every_busy
        else None,
        "every_ratio_vs_reference_at_least_2": all(
            r["ratio_vs_reference"] >= 2 for rows in limits.values() for r in rows
        ),
        "every_contiguous_dm_fraction_of_limit_at_least_0.6": all(
            r["fraction_of_limit_contiguous_dm"] >= 0.6 for rows in limits.values() for r in rows
        ),
        "every_cpu_fraction_of_limit_at_least_0.6": all(
            r["cpu_fraction_of_limit"] >= 0.6 for rows in limits.values() for r in rows
        ),
        "every_cpu_ratio_vs_reference_at_least_2": all(
            r["cpu_ratio_vs_reference"] >= 2 for rows in limits.values() for r in rows
        ),
        "smallest_fraction_of_limit": min(
            (r["fraction_of_limit"] for rows in limits.values() for r in rows), default=None
        ),
        # 1x and 10x the seeds within 10% of each other above the baseline (the start), either
        # way: median growths with the fixed allocator settings, and (reported) with glibc's default
        "memory_growth_10x_over_1x": mem_t["growth_10x_over_1x"],
        "memory_flat_in_seeds": mem_t["flat"],
        "memory_growth_10x_over_1x_default_allocator": mem_default_t["growth_10x_over_1x"],
        "memory_flat_in_seeds_default_allocator": mem_default_t["flat"],
        "h200_1600_per_s": (
            target_cfg["closed_form"]["instances_per_s"] >= GPU_TARGET["instances_per_s"]
            if device.type == "cuda" and target_cfg
            else None
        ),
    }
    meta = provenance(device)
    meta["command"] = "python benchmarks/bench_one_step.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    meta["threads"] = torch.get_num_threads()
    meta["load_average_1min_at_start"] = load_start  # other processes competing for the CPU
    meta["load_average_1min_at_end"] = os.getloadavg()[0]
    meta["one_step_path"] = next((r["path_reason"] for rows in limits.values() for r in rows), None)
    meta["cpu"] = cpu_info()
    meta["builds"] = list(builds)
    meta["native_threads"] = native.thread_backend()
    meta["native_openmp_unavailable_reason"] = native.openmp_unavailable_reason()
    payload = {
        "benchmark": "one_step",
        "meta": meta,
        "dtype": "float64",
        "copy_bandwidth_bytes_per_s": args.copy_bw,
        "epsilon": args.epsilon,
        "configs": configs,
        "limit": limits,
        "builds": builds,
        "memory": memory,
        "memory_default_allocator": memory_default,
        "targets": targets,
    }
    payload["earlier_runs"] = earlier_runs(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=1) + "\n")
    print(f"targets: {targets}\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
