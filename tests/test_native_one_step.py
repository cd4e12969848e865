"""The native one-step kernel (:mod:`sxor.xor.native`) against the torch path and the reference.

Every comparison runs the same call twice, once with the kernel and once with ``SXOR_NATIVE=0``
(the torch path), and checks :func:`sxor.xor.population.last_path` says which path ran.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

import sxor
from sxor.xor import analysis, native, population
from sxor.xor.sweeps import at_m, nested_instances, random_instances

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(native.library() is None, reason=f"{native.unavailable_reason()}")


def both_paths(monkeypatch, fn):
    """``fn()`` through the kernel and through the torch path, asserting which path each took."""
    monkeypatch.delenv("SXOR_NATIVE", raising=False)
    fast = fn()
    assert population.last_path().path == "native", population.last_path()
    monkeypatch.setenv("SXOR_NATIVE", "0")
    slow = fn()
    assert population.last_path() == ("torch", "disabled by SXOR_NATIVE=0")
    monkeypatch.delenv("SXOR_NATIVE")
    return fast, slow


def fields(out):
    return (*out.step, out.head, out.head_tilde) if isinstance(out, population.StepAndLimit) else tuple(out)


def assert_same(fast, slow, dtype):
    tol = {torch.float64: 1e-11, torch.float32: 2e-4}[dtype]
    for a, b in zip(fields(fast), fields(slow)):
        assert a.shape == b.shape and a.dtype == b.dtype
        if a.dtype == torch.int64:
            assert torch.equal(a, b)
        else:
            scale = float(b.abs().max()) if b.numel() else 1.0
            torch.testing.assert_close(a, b, rtol=tol, atol=tol * max(scale, 1e-300))


#: With m = 1 every row of V is +-1, so the limit's argmax is a tie broken by rounding: m = 1 is
#: compared without the limit only.
SHAPES = [(2, 1, 3), (2, 2, 3), (3, 2, 1), (17, 3, 4), (64, 4, 5), (1000, 7, 3), (1025, 32, 2), (4099, 5, 2), (2048, 40, 1)]


@pytest.mark.parametrize("d, m, count", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("layout", ["md", "dm"])
@pytest.mark.parametrize("limit", [False, True])
def test_native_step_equals_the_torch_path(monkeypatch, d, m, count, dtype, layout, limit):
    if m == 1 and limit:
        pytest.skip("ties in the limit's argmax")
    inst = random_instances(count, d, m, seed=11, dtype=dtype)
    V = inst.V if layout == "md" else inst.V.contiguous()
    assert (V.stride(-2) == 1) == (layout == "md") or m == 1
    eta = torch.logspace(0, 6, count, dtype=dtype)
    fn = population.one_step_and_limit if limit else sxor.one_step
    assert_same(*both_paths(monkeypatch, lambda: fn(V, inst.theta0, inst.support, eta)), dtype)


@pytest.mark.parametrize("layout", ["md", "dm"])
def test_one_instance_and_scalar_eta(monkeypatch, layout):
    inst = random_instances(1, 300, 6, seed=4)
    V = inst.V[0] if layout == "md" else inst.V[0].contiguous()
    fast, slow = both_paths(monkeypatch, lambda: sxor.one_step(V, inst.theta0[0], inst.support[0], 1e4))
    assert fast.loss.shape == () and fast.attention.shape == (300,)
    assert_same(fast, slow, torch.float64)


def test_broadcast_query_and_support(monkeypatch):
    inst = random_instances(4, 128, 5, seed=6)
    fast, slow = both_paths(monkeypatch, lambda: sxor.one_step(inst.V, inst.theta0[0], inst.support[1], 3e3))
    assert fast.theta.shape == (4, 5)
    assert_same(fast, slow, torch.float64)


@pytest.mark.parametrize("eta", [1e12, 0.0])
def test_extreme_step_sizes_stay_finite(monkeypatch, eta):
    inst = random_instances(3, 512, 8, seed=9)
    fast, slow = both_paths(monkeypatch, lambda: population.one_step_and_limit(inst.V, inst.theta0, inst.support, eta))
    assert all(bool(torch.isfinite(t).all()) for t in fast.step)
    assert_same(fast, slow, torch.float64)


def test_the_grid_eta_at_long_d(monkeypatch):
    d = 2**15
    inst = random_instances(2, d, 12, seed=3)
    eta = analysis.grid_eta(d)
    assert_same(*both_paths(monkeypatch, lambda: sxor.one_step(inst.V, inst.theta0, inst.support, eta)), torch.float64)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_factored_step_equals_the_torch_path(monkeypatch, dtype):
    nested = nested_instances(3, 700, 9, seed=2, dtype=dtype)
    for m in (2, 4, 9):  # (m = 1: ties in the argmax, see SHAPES)
        b = at_m(nested, m)
        fast, slow = both_paths(monkeypatch, lambda: population.one_step_and_limit_factored(
            b.Z, b.scale, b.theta0, b.support, 5e4))
        assert_same(fast, slow, dtype)
        dense = b.dense()
        assert_same(fast, population.one_step_and_limit(dense.V, dense.theta0, dense.support, 5e4), dtype)


def test_native_step_equals_the_benchmark_reference():
    spec = importlib.util.spec_from_file_location("bench_one_step", ROOT / "benchmarks" / "bench_one_step.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench_one_step"] = bench
    spec.loader.exec_module(bench)
    for d, m, count in [(1024, 32, 8), (4096, 40, 2)]:
        inst = random_instances(count, d, m, seed=1)
        eta = analysis.grid_eta(d)
        fast = sxor.one_step(inst.V, inst.theta0, inst.support, eta)
        assert population.last_path().path == "native"
        ref = bench.reference_one_step(inst.V, inst.theta0, inst.support, eta)
        assert bench.max_relative_difference(fast, ref) < 1e-10


def test_threads_do_not_change_the_result():
    inst = random_instances(7, 2000, 10, seed=8)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = population.one_step_and_limit(inst.V, inst.theta0, inst.support, 1e5)
        torch.set_num_threads(3)
        three = population.one_step_and_limit(inst.V, inst.theta0, inst.support, 1e5)
        assert "3 threads" in population.last_path().reason
    finally:
        torch.set_num_threads(before)
    for a, b in zip(fields(one), fields(three)):
        assert torch.equal(a, b)  # each instance is computed by one thread, in one order


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("layout", ["md", "dm"])
def test_non_finite_v_gives_the_same_clear_error(bad, layout):
    inst = random_instances(3, 64, 4, seed=2)
    V = (inst.V if layout == "md" else inst.V.contiguous()).clone()
    theta0 = inst.theta0.clone()
    theta0[:, 2] = 0  # a zero query coordinate must not hide the bad entry
    V[2, 7, 2] = bad
    with pytest.raises(ValueError, match="V"):
        sxor.one_step(V, theta0, inst.support, 1e3)
    with pytest.raises(ValueError, match="V"):
        population.one_step_and_limit(V, theta0, inst.support, 1e3)


def test_unchecked_non_finite_v_gives_nan_not_an_error():
    inst = random_instances(2, 64, 4, seed=2)
    V = inst.V.clone()
    V[0, 3, 1] = float("nan")
    out = population.one_step_and_limit(V, inst.theta0, inst.support, 1e3, check=False)
    assert population.last_path().path == "native"
    assert bool(out.step.loss[0].isnan()) and bool(torch.isfinite(out.step.loss[1]))


def test_the_torch_path_is_taken_and_said_where_the_kernel_does_not_apply():
    inst = random_instances(2, 32, 3, seed=0)
    sxor.one_step(inst.V, inst.theta0, inst.support, 10.0, "erf")
    assert population.last_path().path == "torch" and "kind" in population.last_path().reason
    V = inst.V.clone().requires_grad_(True)
    out = sxor.one_step(V, inst.theta0, inst.support, 10.0)
    assert population.last_path() == ("torch", "an autograd graph is being recorded")
    out.loss.sum().backward()
    assert V.grad is not None and bool(torch.isfinite(V.grad).all())
    sxor.one_step(inst.V.unsqueeze(0).expand(2, 2, 32, 3), inst.theta0, inst.support, 10.0)
    assert population.last_path().path == "torch" and "batch dimensions" in population.last_path().reason
    sxor.one_step(inst.V, inst.theta0.unsqueeze(0).expand(3, 2, 3), inst.support, 10.0)
    assert population.last_path().path == "torch"
    strided = torch.randn(2, 64, 6, dtype=torch.float64)[:, ::2, ::2]
    strided.div_(strided.norm(dim=-1, keepdim=True))  # in place: still a view strided along d and m
    sxor.one_step(strided, inst.theta0, inst.support, 10.0)
    assert population.last_path() == ("torch", "embeddings strided along both d and m")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_gpu_tensors_take_the_torch_path():
    inst = random_instances(2, 64, 4, seed=0, device="cuda")
    sxor.one_step(inst.V, inst.theta0, inst.support, 10.0)
    assert population.last_path().path == "torch" and "cuda" in population.last_path().reason


def test_cache_key_follows_the_cpu_and_the_compiler(monkeypatch):
    cc = native._compiler()
    key = native.cache_key(cc)
    monkeypatch.setattr(native, "_cpu_flags", lambda: "model name : another cpu\nflags : sse2")
    assert native.cache_key(cc) != key


def test_compiles_into_a_fresh_cache_atomically(monkeypatch, tmp_path):
    monkeypatch.setenv("SXOR_NATIVE_CACHE", str(tmp_path))
    native.reset()
    try:
        assert native.library() is not None
        built = list((tmp_path / "sxor" / "native").iterdir())
        assert len(built) == 1 and built[0].name.startswith("one_step-") and built[0].suffix == ".so"
    finally:
        native.reset()


def test_no_compiler_falls_back_with_the_reason(monkeypatch):
    monkeypatch.setattr(native, "_compiler", lambda: None)
    native.reset()
    try:
        inst = random_instances(2, 32, 3, seed=0)
        sxor.one_step(inst.V, inst.theta0, inst.support, 10.0)
        assert population.last_path() == ("torch", "native kernel unavailable: no C compiler (gcc or cc) on PATH")
    finally:
        native.reset()
