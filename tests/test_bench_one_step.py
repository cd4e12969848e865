"""The one-step benchmark's reference implementation agrees with ``sxor.one_step``, and its timing
helpers and device plumbing work (on CPU; the CUDA path is the same code with ``--device cuda``)."""

from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path

import pytest
import torch

import sxor
from sxor.xor import analysis
from sxor.xor.sweeps import random_instances

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location(
        "bench_one_step", ROOT / "benchmarks" / "bench_one_step.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_one_step"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("d, m, count", [(64, 8, 16), (1024, 12, 4), (3 * 4096, 6, 2)])
def test_one_step_equals_the_straightforward_reference(bench, d, m, count):
    inst = random_instances(count, d, m, seed=1)
    eta = analysis.grid_eta(d)
    fast = sxor.one_step(inst.V, inst.theta0, inst.support, eta)
    for reference in (bench.reference_one_step, bench.three_pass_reference_one_step):
        ref = reference(inst.V, inst.theta0, inst.support, eta)
        assert bench.max_relative_difference(fast, ref) < 1e-10
        torch.testing.assert_close(fast.loss, ref.loss, atol=1e-12, rtol=0)


def test_side_by_side_times_both_and_interleaves(bench):
    calls = []
    fast, slow, ratio = bench.side_by_side(
        lambda: calls.append("f"), lambda: calls.append("s"), torch.device("cpu"), 3
    )
    assert fast >= 0 and slow >= 0 and ratio > 0
    assert calls == ["f", "s"] * 4
    pairs = []
    bench.side_by_side(lambda: None, lambda: None, torch.device("cpu"), 5, pairs)
    assert len(pairs) == 5 and all(r > 0 for r in pairs)


def test_cuda_request_without_a_gpu_is_refused(bench, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit):
        bench.main(["--device", "cuda"])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_reference_on_cuda_matches_cpu(bench):
    inst = random_instances(4, 256, 8, seed=0)
    eta = analysis.grid_eta(256)
    cpu = sxor.one_step(inst.V, inst.theta0, inst.support, eta)
    gpu = sxor.one_step(inst.V.cuda(), inst.theta0.cuda(), inst.support.cuda(), eta)
    torch.testing.assert_close(gpu.loss.cpu(), cpu.loss)


def test_cache_blocks_give_the_same_step_as_one_block(bench, monkeypatch):
    from sxor.xor import population

    monkeypatch.setenv("SXOR_NATIVE", "0")  # the torch path's blocking, not the native kernel

    inst = random_instances(12, 256, 8, seed=3)
    eta = torch.linspace(1e3, 1e7, 12, dtype=torch.float64)
    whole = sxor.one_step(inst.V, inst.theta0, inst.support, eta)
    monkeypatch.setattr(population, "_CACHE_BYTES", 256 * 8 * 8 * 5)  # blocks of 5 instances
    assert len(population._cache_blocks(inst.V, inst.theta0, inst.support, eta)) == 3
    blocked = sxor.one_step(inst.V, inst.theta0, inst.support, eta)
    for a, b in zip(whole, blocked):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_one_instance_blocks_give_the_same_step(monkeypatch):
    from sxor.xor import population

    monkeypatch.setenv("SXOR_NATIVE", "0")  # the torch path's blocking, not the native kernel

    inst = random_instances(3, 64, 4, seed=5)
    whole = sxor.one_step(inst.V, inst.theta0, inst.support, 1e5)
    monkeypatch.setattr(population, "_CACHE_BYTES", 1)
    single = sxor.one_step(inst.V, inst.theta0, inst.support, 1e5)
    assert single.loss.shape == (3,) and single.attention.shape == (3, 64)
    for a, b in zip(whole, single):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_limit_comparison_records_the_limit_and_both_ratios(bench):
    row = bench.bench_limit(256, 8, 4, torch.device("cpu"), torch.float64, 3)
    assert row["limit_seconds"] == 3 * row["read_seconds_min"] > 0
    assert row["fraction_of_limit"] == row["limit_seconds"] / row["one_step_seconds"]
    assert row["ratio_vs_reference"] > 0 and len(row["ratio_vs_reference_pairs"]) == 3
    assert row["max_relative_difference_vs_reference"] < 1e-10
    assert (
        row["cpu_limit_seconds"] >= 0
        and row["cpu_fraction_of_limit"] >= 0
        and row["cpu_ratio_vs_reference"] >= 0
    )
    assert row["path"] in ("native", "torch") and row["path_reason"]
    # the other form is the one the plan did not choose
    chosen_two = "two reads of V" in row["path_reason"]
    assert row["other_form"] == ("three reads of V" if chosen_two else "two reads of V")
    assert row["one_step_other_form_seconds"] > 0


@pytest.mark.parametrize("limit", [False, True])
def test_blocked_matrix_vector_passes_give_the_same_step(monkeypatch, limit):
    """The long-d path (matrix-vector products over column blocks of V^T) against the batched one."""
    from sxor.xor import population

    monkeypatch.setenv("SXOR_NATIVE", "0")  # the torch path's blocking, not the native kernel

    inst = random_instances(3, 1000, 6, seed=7)
    eta = torch.tensor([1e2, 1e4, 1e6], dtype=torch.float64)
    fn = sxor.one_step if not limit else population.one_step_and_limit
    whole = fn(inst.V, inst.theta0, inst.support, eta)
    monkeypatch.setattr(population, "_MV_MIN_D", 512)
    monkeypatch.setattr(population, "_MV_BLOCK", 300)  # blocks that do not divide d
    assert population._mv_path(inst.V.transpose(-1, -2), inst.theta0.unsqueeze(-2))
    blocked = fn(inst.V, inst.theta0, inst.support, eta)
    for a, b in zip(
        whole if not limit else (*whole.step, whole.head, whole.head_tilde),
        blocked if not limit else (*blocked.step, blocked.head, blocked.head_tilde),
    ):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_random_instances_store_v_contiguous_along_d():
    inst = random_instances(2, 16, 3, seed=0)
    assert inst.V.shape == (2, 16, 3) and inst.V.transpose(-1, -2).is_contiguous()


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
@pytest.mark.parametrize("zero_query", [False, True])
def test_non_finite_v_is_refused_from_the_first_pass(bad, zero_query):
    """A non-finite entry of V is caught from the scores, also where theta0 is zero in its column."""
    inst = random_instances(2, 64, 4, seed=2)
    V, theta0 = inst.V.clone(), inst.theta0.clone()
    if zero_query:
        theta0[:, 1:] = 0
        theta0[:, 0] = 1
    V[1, 5, 2] = bad
    with pytest.raises(ValueError, match="V"):
        sxor.one_step(V, theta0, inst.support, 1e3)


def test_the_cpu_and_the_builds_are_recorded(bench):
    info = bench.cpu_info()
    assert info["model"] and info["cpus"] >= 1
    if info["flags"] is not None:
        assert info["avx512f"] == ("avx512f" in info["flags"].split())
    builds = bench.default_builds()
    assert builds[0] == "native" and (("x86-64-v3" in builds) == bool(info.get("avx512f")))


def test_the_median_interval_holds_the_median_and_narrows_with_more_values(bench):
    values = [1.0 + 0.1 * ((7 * i) % 11) for i in range(31)]
    low, high = bench.median_interval(values)
    assert low <= statistics.median(values) <= high
    wide = bench.median_interval(values[:7])
    assert wide[1] - wide[0] >= high - low
    assert bench.median_interval([2.0] * 9) == [2.0, 2.0]


def test_the_busy_core_comparison_stops_its_spinners(bench, monkeypatch):
    import os

    row = bench.bench_busy(256, 4, 2, torch.device("cpu"), torch.float64, 1)
    assert row["one_thread_seconds"] > 0 and row["two_threads_seconds"] > 0
    # the paired ratio of the single alternation is the ratio of its two calls
    one, two = row["times"]["one_thread"][0], row["times"]["two_threads"][0]
    assert row["two_over_one_paired_median"] == pytest.approx(two / one)
    assert row["two_check_over_one_paired_median"] > 0
    low, high = row["two_over_one_paired_median_interval_95"]
    assert low <= row["two_over_one_paired_median"] <= high
    assert set(row["paths"]) == {"one_thread", "two_threads", "two_threads_load_check"}
    assert "processes `python -c 'while True: pass'`" in row["busy_setup"]
    # no spinner is left: every child of this process has been waited for
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_a_new_run_keeps_the_earlier_ones(bench, tmp_path):
    out = tmp_path / "bench.json"
    assert bench.earlier_runs(out) == []
    out.write_text('{"meta": {"date": "d0"}, "limit": {"1": []}, "targets": {}}')
    first = bench.earlier_runs(out)
    assert first == [
        {
            "meta": {"date": "d0"},
            "builds": {"native": {"march": "native", "limit": {"1": []}}},
            "targets": {},
        }
    ]
    import json

    out.write_text(json.dumps({"meta": {"date": "d1"}, "builds": {}, "earlier_runs": first}))
    assert [r["meta"]["date"] for r in bench.earlier_runs(out)] == ["d1", "d0"]
