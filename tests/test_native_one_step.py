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
    return (
        (*out.step, out.head, out.head_tilde)
        if isinstance(out, population.StepAndLimit)
        else tuple(out)
    )


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
SHAPES = [
    (2, 1, 3),
    (2, 2, 3),
    (3, 2, 1),
    (17, 3, 4),
    (64, 4, 5),
    (1000, 7, 3),
    (1025, 32, 2),
    (4099, 5, 2),
    (2048, 40, 1),
]


@pytest.fixture(autouse=True)
def _all_threads(monkeypatch):
    """Every test runs on the threads it asks for, however busy the machine (the fall back to
    fewer threads under load has tests of its own, which switch the check on again)."""
    monkeypatch.setenv("SXOR_NATIVE_LOAD_CHECK", "0")


def force_fused(monkeypatch, fused: bool) -> None:
    """Make the kernel take the fused first pass (two reads of V) or the three-pass form at every
    size (SXOR_ONE_STEP_FORM)."""
    monkeypatch.setenv("SXOR_ONE_STEP_FORM", "fused" if fused else "three")


@pytest.fixture(params=["three reads", "two reads"])
def form(request, monkeypatch):
    """Runs a test once with the kernel's three-pass form and once with its fused first pass."""
    force_fused(monkeypatch, request.param == "two reads")
    return request.param


@pytest.mark.parametrize("d, m, count", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("layout", ["md", "dm"])
@pytest.mark.parametrize("limit", [False, True])
@pytest.mark.parametrize("fused", [False, True])
def test_native_step_equals_the_torch_path(monkeypatch, d, m, count, dtype, layout, limit, fused):
    if m == 1 and limit:
        pytest.skip("ties in the limit's argmax")
    force_fused(monkeypatch, fused)
    inst = random_instances(count, d, m, seed=11, dtype=dtype)
    V = inst.V if layout == "md" else inst.V.contiguous()
    assert (V.stride(-2) == 1) == (layout == "md") or m == 1
    eta = torch.logspace(0, 6, count, dtype=dtype)
    fn = population.one_step_and_limit if limit else sxor.one_step
    fast, slow = both_paths(monkeypatch, lambda: fn(V, inst.theta0, inst.support, eta))
    assert_same(fast, slow, dtype)
    fn(V, inst.theta0, inst.support, eta)
    reason = (
        population.last_path().reason
    )  # (d = 2: both positions are the support, redone in three)
    assert ("two reads of V" in reason) if fused else "three reads of V; form forced" in reason


@pytest.mark.parametrize("order", ["ascending", "descending"])
@pytest.mark.parametrize("spread", [1.0, 50.0, 800.0])
@pytest.mark.parametrize("layout", ["md", "dm"])
def test_the_fused_first_pass_rescales_as_the_extremes_move(monkeypatch, order, spread, layout):
    """Rows sorted by their first score, so that the running maximum (or minimum) of the fused pass
    moves in every block of 1024 positions; with a spread of 800 most weights underflow to 0."""
    force_fused(monkeypatch, True)
    inst = random_instances(2, 5000, 6, seed=13)
    theta0 = inst.theta0 * spread
    scores = torch.einsum("bdm,bm->bd", inst.V, theta0)
    idx = scores.argsort(-1, descending=order == "descending")
    V = torch.take_along_dim(inst.V, idx.unsqueeze(-1), -2)
    V = V.contiguous() if layout == "dm" else V.transpose(-1, -2).contiguous().transpose(-1, -2)
    for fn in (sxor.one_step, population.one_step_and_limit):
        fast, slow = both_paths(monkeypatch, lambda fn=fn: fn(V, theta0, inst.support, 1e4))
        assert_same(fast, slow, torch.float64)


def _saturated(count: int, d: int, m: int, seed: int, spread: float):
    """Instances whose second head is saturated on a support position: theta0 of norm ``spread``
    and the support at the largest and the smallest score, where the true gradient of the second
    head nearly vanishes and the fused first pass would cancel badly."""
    gen = torch.Generator().manual_seed(seed)
    V = torch.randn(count, d, m, generator=gen, dtype=torch.float64)
    theta0 = torch.randn(count, m, generator=gen, dtype=torch.float64)
    theta0 *= spread / theta0.norm(dim=-1, keepdim=True)
    s = torch.einsum("bdm,bm->bd", V, theta0)
    return V, theta0, torch.stack([s.argmax(-1), s.argmin(-1)], -1)


@pytest.mark.parametrize("layout", ["md", "dm"])
def test_a_saturated_head_is_redone_in_three_passes_and_said(monkeypatch, layout):
    """Where the fused combination would lose the gradient to cancellation, the instance comes from
    the three-pass form (bitwise), the limit's heads equal the torch path's, and the path says how
    many instances were redone."""
    V, theta0, support = _saturated(4, 3000, 7, seed=10, spread=50.0)
    V = V.contiguous() if layout == "dm" else V.transpose(-1, -2).contiguous().transpose(-1, -2)
    force_fused(monkeypatch, False)
    three = population.one_step_and_limit(V, theta0, support, 1e12)
    force_fused(monkeypatch, True)
    fast, slow = both_paths(
        monkeypatch, lambda: population.one_step_and_limit(V, theta0, support, 1e12)
    )
    population.one_step_and_limit(V, theta0, support, 1e12)
    reason = population.last_path().reason
    assert (
        "of 4 instances in three (cancellation); form forced" in reason
        and "two reads of V, 0 of" not in reason
    )
    assert torch.equal(fast.head, slow.head) and torch.equal(fast.head_tilde, slow.head_tilde)
    for a, b in zip(fields(fast), fields(three)):
        assert torch.equal(a, b)  # every one of these instances was redone


@pytest.mark.parametrize(
    "dtype, size", [(torch.float64, 1e-165), (torch.float64, 1e170), (torch.float32, 1e-25)]
)
def test_the_guard_holds_at_extreme_magnitudes_of_v(monkeypatch, dtype, size):
    """The saturated instances with V scaled by ``size`` and theta0 by its inverse (the same scores):
    the guard's sums of squares underflow or overflow there, and the instances must still be handed
    to the three-pass form rather than pass the test by accident."""
    V, theta0, support = _saturated(4, 3000, 7, seed=10, spread=50.0)
    V, theta0 = (V * size).to(dtype), (theta0 / size).to(dtype)
    force_fused(monkeypatch, False)
    three = population.one_step_and_limit(V, theta0, support, 1e12)
    force_fused(monkeypatch, True)
    fused = population.one_step_and_limit(V, theta0, support, 1e12)
    assert "4 of 4 instances in three (cancellation)" in population.last_path().reason
    for a, b in zip(fields(fused), fields(three)):
        assert torch.equal(a.nan_to_num(), b.nan_to_num()) and torch.equal(a.isnan(), b.isnan())


def test_typical_instances_keep_the_fused_pass(monkeypatch):
    """Keys on the sphere with |s| <= 1 (the book's sweeps) never trigger the three-pass redo for
    m >= 2 (the guard's ratio stays near 4 to 20; for m = 1 it is near 200, below the 256 allowed)."""
    force_fused(monkeypatch, True)
    for d, m in [(64, 4), (1024, 4), (5000, 16), (20000, 40)]:
        inst = random_instances(8, d, m, seed=d)
        population.one_step_and_limit(inst.V, inst.theta0, inst.support, analysis.grid_eta(d))
        assert "two reads of V; form forced" in population.last_path().reason, (
            d,
            m,
            population.last_path(),
        )


@pytest.mark.parametrize("layout", ["md", "dm"])
@pytest.mark.usefixtures("form")
def test_one_instance_and_scalar_eta(monkeypatch, layout):
    inst = random_instances(1, 300, 6, seed=4)
    V = inst.V[0] if layout == "md" else inst.V[0].contiguous()
    fast, slow = both_paths(
        monkeypatch, lambda: sxor.one_step(V, inst.theta0[0], inst.support[0], 1e4)
    )
    assert fast.loss.shape == () and fast.attention.shape == (300,)
    assert_same(fast, slow, torch.float64)


@pytest.mark.usefixtures("form")
def test_broadcast_query_and_support(monkeypatch):
    inst = random_instances(4, 128, 5, seed=6)
    fast, slow = both_paths(
        monkeypatch, lambda: sxor.one_step(inst.V, inst.theta0[0], inst.support[1], 3e3)
    )
    assert fast.theta.shape == (4, 5)
    assert_same(fast, slow, torch.float64)


@pytest.mark.parametrize("eta", [1e12, 0.0])
@pytest.mark.usefixtures("form")
def test_extreme_step_sizes_stay_finite(monkeypatch, eta):
    inst = random_instances(3, 512, 8, seed=9)
    fast, slow = both_paths(
        monkeypatch, lambda: population.one_step_and_limit(inst.V, inst.theta0, inst.support, eta)
    )
    assert all(bool(torch.isfinite(t).all()) for t in fast.step)
    assert_same(fast, slow, torch.float64)


@pytest.mark.usefixtures("form")
def test_the_grid_eta_at_long_d(monkeypatch):
    d = 2**15
    inst = random_instances(2, d, 12, seed=3)
    eta = analysis.grid_eta(d)
    assert_same(
        *both_paths(monkeypatch, lambda: sxor.one_step(inst.V, inst.theta0, inst.support, eta)),
        torch.float64,
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.usefixtures("form")
def test_factored_step_equals_the_torch_path(monkeypatch, dtype):
    nested = nested_instances(3, 700, 9, seed=2, dtype=dtype)
    for m in (2, 4, 9):  # (m = 1: ties in the argmax, see SHAPES)
        b = at_m(nested, m)
        fast, slow = both_paths(
            monkeypatch,
            lambda b=b: population.one_step_and_limit_factored(
                b.Z, b.scale, b.theta0, b.support, 5e4
            ),
        )
        assert_same(fast, slow, dtype)
        dense = b.dense()
        assert_same(
            fast, population.one_step_and_limit(dense.V, dense.theta0, dense.support, 5e4), dtype
        )


@pytest.mark.usefixtures("form")
def test_native_step_equals_the_benchmark_reference():
    spec = importlib.util.spec_from_file_location(
        "bench_one_step", ROOT / "benchmarks" / "bench_one_step.py"
    )
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


def _step_on_one_and_on(threads: int, inst, eta):
    """``one_step_and_limit`` on 1 thread and on ``threads``, with the path of the second call;
    torch's thread count is restored afterwards."""
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = population.one_step_and_limit(inst.V, inst.theta0, inst.support, eta)
        torch.set_num_threads(threads)
        many = population.one_step_and_limit(inst.V, inst.theta0, inst.support, eta)
        return one, many, population.last_path()
    finally:
        torch.set_num_threads(before)


@pytest.mark.usefixtures("form")
def test_threads_do_not_change_the_result():
    one, three, path = _step_on_one_and_on(3, random_instances(7, 2000, 10, seed=8), 1e5)
    assert "3 threads" in path.reason
    for a, b in zip(fields(one), fields(three)):
        assert torch.equal(a, b)  # each instance is computed by one thread, in one order


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("layout", ["md", "dm"])
@pytest.mark.usefixtures("form")
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


@pytest.mark.usefixtures("form")
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
    assert (
        population.last_path().path == "torch"
        and "batch dimensions" in population.last_path().reason
    )
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
        assert (
            len(built) == 1 and built[0].name.startswith("one_step-") and built[0].suffix == ".so"
        )
    finally:
        native.reset()


def test_no_compiler_falls_back_with_the_reason(monkeypatch):
    monkeypatch.setattr(native, "_compiler", lambda: None)
    native.reset()
    try:
        inst = random_instances(2, 32, 3, seed=0)
        sxor.one_step(inst.V, inst.theta0, inst.support, 10.0)
        assert population.last_path() == (
            "torch",
            "native kernel unavailable: no C compiler (gcc or cc) on PATH",
        )
    finally:
        native.reset()


# --- Adversarial inputs: every pointer, stride and size the kernel is handed -------------------------


def test_unchecked_support_out_of_range_never_reaches_the_kernel():
    """The unchecked entry points (check=False, the factored step) must not let the kernel index
    the weights outside [0, d): the torch path takes the call (and refuses it)."""
    inst = random_instances(3, 64, 5, seed=1)
    for bad in (10**9, 64, -1):
        support = inst.support.clone()
        support[1, 0] = bad
        with pytest.raises((RuntimeError, IndexError)):
            population.one_step_and_limit(inst.V, inst.theta0, support, 1e3, check=False)
        assert population.last_path() == (
            "torch",
            "a support position outside [0, d) or with i* == j*",
        )
    nested = nested_instances(2, 64, 4, seed=2)
    b = at_m(nested, 4)
    support = b.support.clone()
    support[0, 1] = 10**9
    with pytest.raises((RuntimeError, IndexError)):
        population.one_step_and_limit_factored(b.Z, b.scale, b.theta0, support, 1e3)
    assert population.last_path().path == "torch"


@pytest.mark.usefixtures("form")
def test_unchecked_equal_support_positions_match_the_torch_path(monkeypatch):
    inst = random_instances(4, 64, 5, seed=1)
    support = inst.support.clone()
    support[:, 1] = support[:, 0]
    fast = population.one_step_and_limit(inst.V, inst.theta0, support, 1e3, check=False)
    assert population.last_path() == ("torch", "a support position outside [0, d) or with i* == j*")
    monkeypatch.setenv("SXOR_NATIVE", "0")
    slow = population.one_step_and_limit(inst.V, inst.theta0, support, 1e3, check=False)
    for a, b in zip(fields(fast), fields(slow)):
        assert torch.equal(a, b)


def test_unchecked_short_query_is_not_broadcast_by_the_kernel():
    inst = random_instances(4, 64, 5, seed=1)
    with pytest.raises(RuntimeError):
        population.one_step_and_limit(inst.V, inst.theta0[:, :1], inst.support, 1e3, check=False)
    assert population.last_path() == (
        "torch",
        "the queries, support or scale do not match the embeddings' d and m",
    )


@pytest.mark.parametrize("limit", [False, True])
@pytest.mark.usefixtures("form")
def test_an_empty_batch(monkeypatch, limit):
    inst = random_instances(3, 64, 5, seed=1)
    fn = population.one_step_and_limit if limit else sxor.one_step
    fast, slow = both_paths(
        monkeypatch, lambda: fn(inst.V[:0], inst.theta0[:0], inst.support[:0], 1e3)
    )
    assert fast.theta.shape == (0, 5) if not limit else fast.step.theta.shape == (0, 5)
    assert_same(fast, slow, torch.float64)


@pytest.mark.parametrize("layout", ["md", "dm"])
@pytest.mark.usefixtures("form")
def test_views_that_start_mid_storage(monkeypatch, layout):
    inst = random_instances(4, 64, 5, seed=1)
    base = inst.V if layout == "md" else inst.V.contiguous()
    big = torch.cat([base, base.flip(0)], 0)  # the same layout, twice the batch
    if layout == "md":
        big = torch.cat([base.transpose(-1, -2), base.flip(0).transpose(-1, -2)], 0).transpose(
            -1, -2
        )
    V = big[3:7]
    assert V.storage_offset() > 0 and (V.stride(-2) == 1) == (layout == "md")
    theta0 = torch.cat([inst.theta0, inst.theta0])[3:7]
    support = torch.cat([inst.support, inst.support])[3:7]
    fast, slow = both_paths(
        monkeypatch, lambda: population.one_step_and_limit(V, theta0, support, 1e3)
    )
    assert_same(fast, slow, torch.float64)


@pytest.mark.usefixtures("form")
def test_expanded_embeddings_with_zero_strides(monkeypatch):
    inst = random_instances(4, 64, 5, seed=1)
    dm = inst.V.contiguous()
    batch = dm[:1].expand(4, 64, 5)  # stride 0 along the batch
    assert batch.stride(0) == 0
    assert_same(
        *both_paths(
            monkeypatch,
            lambda: population.one_step_and_limit(batch, inst.theta0, inst.support, 1e3),
        ),
        torch.float64,
    )
    rows = dm[:, :1].expand(4, 64, 5)  # stride 0 along d: every score equal
    assert rows.stride(-2) == 0
    assert_same(
        *both_paths(monkeypatch, lambda: sxor.one_step(rows, inst.theta0, inst.support, 1e3)),
        torch.float64,
    )
    # The limit's argmax is a d-way tie; the kernel computes every score in one order, so the tie
    # goes to the first index (torch.argmax's rule), where the torch path's products may differ
    # in the last bit from row to row.
    tied = population.one_step_and_limit(rows, inst.theta0, inst.support, 1e3)
    assert population.last_path().path == "native"
    assert torch.equal(tied.head, torch.zeros(4, dtype=torch.int64))
    assert torch.equal(tied.head_tilde, torch.zeros(4, dtype=torch.int64))
    cols = dm[..., :1].contiguous().expand(4, 64, 5)  # stride 0 along m, 1 along d ([m, d] branch)
    assert cols.stride(-1) == 0 and cols.stride(-2) == 1
    assert_same(
        *both_paths(monkeypatch, lambda: sxor.one_step(cols, inst.theta0, inst.support, 1e3)),
        torch.float64,
    )


@pytest.mark.usefixtures("form")
def test_all_equal_scores_and_a_zero_query(monkeypatch):
    inst = random_instances(4, 64, 5, seed=1)
    zero = torch.zeros_like(inst.theta0)
    fast, slow = both_paths(monkeypatch, lambda: sxor.one_step(inst.V, zero, inst.support, 1e3))
    assert_same(fast, slow, torch.float64)


@pytest.mark.parametrize("eta", ["per-instance", "one-element", 0.0, 1e12])
@pytest.mark.usefixtures("form")
def test_step_sizes(monkeypatch, eta):
    inst = random_instances(4, 256, 6, seed=5)
    eta = {
        "per-instance": torch.tensor([0.0, 1.0, 1e6, 1e12], dtype=torch.float64),
        "one-element": torch.tensor([7e3], dtype=torch.float64),
    }.get(eta, eta)
    for fn in (sxor.one_step, population.one_step_and_limit):
        fast, slow = both_paths(
            monkeypatch, lambda fn=fn: fn(inst.V, inst.theta0, inst.support, eta)
        )
        assert_same(fast, slow, torch.float64)
        assert all(bool(torch.isfinite(t).all()) for t in fields(fast) if t.is_floating_point())


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.uint8])
@pytest.mark.usefixtures("form")
def test_support_dtypes(monkeypatch, dtype):
    inst = random_instances(4, 64, 5, seed=1)
    support = inst.support.to(dtype)
    fast, slow = both_paths(monkeypatch, lambda: sxor.one_step(inst.V, inst.theta0, support, 1e3))
    assert_same(fast, slow, torch.float64)
    assert_same(fast, sxor.one_step(inst.V, inst.theta0, inst.support, 1e3), torch.float64)


def test_mixed_dtypes_are_refused_not_converted():
    inst = random_instances(2, 64, 5, seed=1)
    with pytest.raises(ValueError, match="theta0"):
        sxor.one_step(inst.V.float(), inst.theta0, inst.support, 1e3)
    with pytest.raises(TypeError, match="support"):
        sxor.one_step(inst.V, inst.theta0, inst.support.double(), 1e3)


@pytest.mark.usefixtures("form")
def test_more_threads_than_instances():
    one, many, path = _step_on_one_and_on(8, random_instances(2, 300, 5, seed=1), 1e4)
    assert path.path == "native" and "2 threads" in path.reason
    for a, b in zip(fields(one), fields(many)):
        assert torch.equal(a, b)


def test_misaligned_embeddings_take_the_torch_path(monkeypatch):
    inst = random_instances(2, 32, 4, seed=1)
    raw = bytearray(inst.V.numel() * 8 + 8)
    try:
        V = torch.frombuffer(raw, dtype=torch.float64, offset=4, count=inst.V.numel()).view(
            inst.V.shape
        )
    except (RuntimeError, ValueError):
        pytest.skip("this torch refuses unaligned buffers")
    V.copy_(inst.V)
    if V.data_ptr() % 8 == 0:
        pytest.skip("the buffer came out aligned")
    fast = sxor.one_step(V, inst.theta0, inst.support, 1e3)
    assert population.last_path() == (
        "torch",
        "embeddings, queries or scale not aligned to their element size",
    )
    assert_same(fast, sxor.one_step(inst.V, inst.theta0, inst.support, 1e3), torch.float64)


@pytest.mark.parametrize("layout", ["md", "dm"])
@pytest.mark.usefixtures("form")
def test_against_the_enumerated_reference(layout):
    """theta1 = theta0 - eta dL/dtheta with L summed over all 2^d inputs (autograd), and the loss
    after the step, both from sxor.xor.reference (d = 10)."""
    from sxor.xor import reference

    inst = random_instances(3, 10, 3, seed=7)
    V = inst.V if layout == "md" else inst.V.contiguous()
    eta = 30.0
    fast = sxor.one_step(V, inst.theta0, inst.support, eta)
    assert population.last_path().path == "native"

    def loss(a, b):
        return reference.enumerated_loss(V, a, b, inst.support)

    grad, grad_tilde = reference.autograd_grad(loss, inst.theta0, -inst.theta0)
    torch.testing.assert_close(fast.theta, inst.theta0 - eta * grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(
        fast.theta_tilde, -inst.theta0 - eta * grad_tilde, rtol=1e-10, atol=1e-12
    )
    torch.testing.assert_close(
        fast.loss, loss(fast.theta, fast.theta_tilde), rtol=1e-10, atol=1e-12
    )


# --- The compile cache -------------------------------------------------------------------------------


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("SXOR_NATIVE_CACHE", str(tmp_path))
    native.reset()
    yield tmp_path / "sxor" / "native"
    native.reset()


@pytest.mark.parametrize("content", ["garbage", "foreign library"])
def test_a_corrupt_or_foreign_cached_library_is_built_again(fresh_cache, content, monkeypatch):
    import _ctypes

    monkeypatch.delenv("SXOR_ONE_STEP_FORM", raising=False)  # the default: a measured plan is kept

    target = fresh_cache / f"one_step-{native.cache_key(native._compiler())}.so"
    target.parent.mkdir(parents=True)
    target.write_bytes(
        b"\x7fELF not really" if content == "garbage" else Path(_ctypes.__file__).read_bytes()
    )
    assert native.library() is not None, native.unavailable_reason()
    inst = random_instances(2, 32, 3, seed=0)
    sxor.one_step(inst.V, inst.theta0, inst.support, 10.0)
    assert population.last_path().path == "native"
    built = sorted(p.name for p in fresh_cache.iterdir())  # the library and its plans
    assert built == sorted([target.name, target.name.replace(".so", ".plan.json")])


def test_an_unwritable_cache_falls_back_with_the_reason(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("SXOR_NATIVE_CACHE", str(blocker))  # a directory cannot be made under a file
    native.reset()
    try:
        inst = random_instances(2, 32, 3, seed=0)
        out = sxor.one_step(inst.V, inst.theta0, inst.support, 10.0)
        path = population.last_path()
        assert (
            path.path == "torch"
            and path.reason.startswith("native kernel unavailable:")
            and "a-file" in path.reason
        )
        assert bool(torch.isfinite(out.loss).all())
    finally:
        native.reset()


def test_a_missing_cc_is_reported_not_replaced(monkeypatch, tmp_path):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    native.reset()
    try:
        inst = random_instances(2, 32, 3, seed=0)
        sxor.one_step(inst.V, inst.theta0, inst.support, 10.0)
        path = population.last_path()
        assert path.path == "torch" and "CC=" in path.reason and "no-such-cc" in path.reason
    finally:
        native.reset()


@pytest.mark.parametrize("value", ["0", "off", "False"])
def test_sxor_native_off_values(monkeypatch, value):
    monkeypatch.setenv("SXOR_NATIVE", value)
    inst = random_instances(2, 32, 3, seed=0)
    sxor.one_step(inst.V, inst.theta0, inst.support, 10.0)
    assert population.last_path() == ("torch", f"disabled by SXOR_NATIVE={value}")


def test_two_processes_compiling_at_once(tmp_path):
    import os
    import subprocess

    code = (
        "from sxor.xor import native, population; from sxor.xor.sweeps import random_instances; import sxor\n"
        "i = random_instances(2, 32, 3, seed=0); sxor.one_step(i.V, i.theta0, i.support, 10.0)\n"
        "print(population.last_path().path)"
    )
    env = {
        **os.environ,
        "SXOR_NATIVE_CACHE": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        "OMP_NUM_THREADS": "1",
    }
    env.pop("SXOR_NATIVE", None)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert [o.strip() for o, _ in outs] == ["native", "native"], outs
    built = {p.name for p in (tmp_path / "sxor" / "native").iterdir()}
    libs = [name for name in built if name.endswith(".so")]
    # the library and its plans, no temporary file left behind
    assert len(libs) == 1 and built - set(libs) <= {libs[0].replace(".so", ".plan.json")}


@pytest.mark.usefixtures("form")
def test_factored_step_without_a_scale(monkeypatch):
    """``scale=None``: ``Z`` is still ``V^T [..., m, d]`` (the kernel once read it as ``[d, m]``, out
    of bounds when d > m)."""
    nested = nested_instances(3, 700, 9, seed=2)
    b = at_m(nested, 4)
    Z = b.Z * b.scale.unsqueeze(-2)  # V^T with the rows' scale applied
    fast, slow = both_paths(
        monkeypatch,
        lambda: population.one_step_and_limit_factored(Z, None, b.theta0, b.support, 5e4),
    )
    assert fast.step.attention.shape == (3, 700)
    assert_same(fast, slow, torch.float64)
    assert_same(
        fast,
        population.one_step_and_limit_factored(b.Z, b.scale, b.theta0, b.support, 5e4),
        torch.float64,
    )


def test_unchecked_scalar_query_or_support_is_not_broadcast_by_the_kernel():
    inst = random_instances(2, 64, 5, seed=1)
    with pytest.raises((RuntimeError, IndexError)):
        population.one_step_and_limit(inst.V, inst.theta0[0, 0], inst.support, 1e3, check=False)
    assert population.last_path().path == "torch"
    with pytest.raises((RuntimeError, IndexError)):
        population.one_step_and_limit(inst.V, inst.theta0, inst.support[0, 0], 1e3, check=False)
    assert population.last_path().path == "torch"


@pytest.mark.usefixtures("form")
def test_lazily_negated_views_are_not_read_as_their_stored_values(monkeypatch):
    """torch._neg_view keeps the un-negated values in memory with a flag: the kernel must not read
    them raw (it once returned the step of -V or -theta0 silently)."""
    inst = random_instances(3, 64, 5, seed=1)
    expected = sxor.one_step(inst.V, inst.theta0, inst.support, 1e3)
    V = torch._neg_view(-inst.V)
    assert V.is_neg()
    assert_same(sxor.one_step(V, inst.theta0, inst.support, 1e3), expected, torch.float64)
    assert population.last_path() == (
        "torch",
        "embeddings with a lazy negation (the kernel reads the stored values)",
    )
    theta0 = torch._neg_view(-inst.theta0)
    assert_same(sxor.one_step(inst.V, theta0, inst.support, 1e3), expected, torch.float64)
    assert population.last_path().path == "native"
    eta = torch._neg_view(torch.full((3,), -1e3, dtype=torch.float64))
    assert_same(sxor.one_step(inst.V, inst.theta0, inst.support, eta), expected, torch.float64)
    assert population.last_path().path == "native"


def test_an_unexpected_failure_while_building_falls_back_with_the_reason(monkeypatch):
    def boom(cc, flags=None):
        raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")

    monkeypatch.setattr(native, "cache_key", boom)
    native.reset()
    try:
        inst = random_instances(2, 32, 3, seed=0)
        sxor.one_step(inst.V, inst.theta0, inst.support, 10.0)
        path = population.last_path()
        assert path.path == "torch" and path.reason.startswith(
            "native kernel unavailable: UnicodeDecodeError"
        )
    finally:
        native.reset()


def test_concurrent_calls_from_python_threads():
    """ctypes releases the GIL: calls from several Python threads run the kernel at once, each on
    its own outputs and workspaces."""
    from concurrent.futures import ThreadPoolExecutor

    batches = [random_instances(5, 500 + 37 * k, 6, seed=k) for k in range(6)]
    serial = [population.one_step_and_limit(b.V, b.theta0, b.support, 1e4) for b in batches]
    assert population.last_path().path == "native"
    with ThreadPoolExecutor(3) as pool:
        parallel = list(
            pool.map(
                lambda b: population.one_step_and_limit(b.V, b.theta0, b.support, 1e4), batches
            )
        )
    for one, other in zip(serial, parallel):
        for a, b in zip(fields(one), fields(other)):
            assert torch.equal(a, b)


# --- Threads: OpenMP (torch's runtime) or POSIX threads ----------------------------------------------


def _two_thread_step(inst, eta):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        return population.one_step_and_limit(
            inst.V, inst.theta0, inst.support, eta
        ), population.last_path()
    finally:
        torch.set_num_threads(before)


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/self/maps (Linux)")
def test_the_openmp_kernel_shares_torchs_runtime():
    """Built with OpenMP, the kernel adds no second OpenMP runtime to the process: its libgomp is
    the one torch loaded (a second runtime would bring its own threads, competing with torch's)."""
    native.reset()
    before = native._openmp_runtimes()
    assert native.library() is not None, native.unavailable_reason()
    if (
        native.openmp_unavailable_reason() is not None
    ):  # a build failure or a second runtime, said why
        pytest.skip(f"kernel built without OpenMP: {native.openmp_unavailable_reason()}")
    assert native.thread_backend() == "OpenMP"
    _, path = _two_thread_step(random_instances(4, 600, 5, seed=3), 1e4)
    assert path.path == "native" and "threads (OpenMP)" in path.reason
    assert native._openmp_runtimes() == before  # no runtime came with the kernel


def test_posix_threads_build_on_request_gives_the_same_results(monkeypatch, fresh_cache):
    force_fused(monkeypatch, False)  # each build has its own plans: the same form in both
    inst = random_instances(6, 900, 7, seed=4)
    openmp, first = _two_thread_step(inst, 1e5)
    if native.openmp_unavailable_reason() is None:
        assert "2 threads (OpenMP)" in first.reason
    monkeypatch.setenv("SXOR_NATIVE_OPENMP", "0")
    native.reset()
    assert native.library() is not None, native.unavailable_reason()
    assert native.thread_backend() == "POSIX threads" and native.openmp_unavailable_reason() is None
    posix, path = _two_thread_step(inst, 1e5)
    assert path.path == "native" and "2 threads (POSIX)" in path.reason
    assert sum(p.name.endswith("-pthreads.so") for p in fresh_cache.iterdir()) == 1
    for a, b in zip(fields(openmp), fields(posix)):
        assert torch.equal(a, b)  # each instance is computed by one thread, in one order


def test_a_failed_openmp_build_falls_back_to_posix_threads_with_the_reason(
    monkeypatch, fresh_cache
):
    monkeypatch.setattr(native, "FLAGS", [*native.FLAGS, "-fno-such-flag-for-sxor"])
    assert native.library() is not None, native.unavailable_reason()
    assert native.thread_backend() == "POSIX threads"
    assert "compilation failed" in native.openmp_unavailable_reason()
    _, path = _two_thread_step(random_instances(3, 500, 4, seed=5), 1e4)
    assert path.path == "native" and "(POSIX)" in path.reason


def test_an_openmp_build_that_brings_a_second_runtime_is_replaced(monkeypatch, fresh_cache):
    """Where torch's OpenMP runtime is not libgomp.so.1, loading the OpenMP build maps another
    runtime: the POSIX-threads build is used instead, and the reason names the new runtime."""
    calls = []

    def runtimes():
        calls.append(None)
        return {"/torch/lib/libiomp5.so"} | ({"/usr/lib/libgomp.so.1"} if len(calls) > 1 else set())

    monkeypatch.setattr(native, "_openmp_runtimes", runtimes)
    assert native.library() is not None, native.unavailable_reason()
    assert native.thread_backend() == "POSIX threads"
    assert "second OpenMP runtime (/usr/lib/libgomp.so.1)" in native.openmp_unavailable_reason()
    _, path = _two_thread_step(random_instances(3, 500, 4, seed=6), 1e4)
    assert path.path == "native" and "(POSIX)" in path.reason


# --- The form chosen by measurement, and the threads under load ------------------------------------


def test_an_unknown_form_is_refused_with_its_name(monkeypatch):
    monkeypatch.setenv("SXOR_ONE_STEP_FORM", "twice")
    inst = random_instances(2, 64, 4, seed=1)
    with pytest.raises(ValueError, match="SXOR_ONE_STEP_FORM='twice': expected one of fused"):
        sxor.one_step(inst.V, inst.theta0, inst.support, 1.0)


def test_the_form_is_measured_once_then_read_from_the_plan_beside_the_library(
    monkeypatch, fresh_cache
):
    """The first call of a kind measures both forms on its own instances and says so with the
    times; the plan file lies beside the library, named after it; the next call (also after the
    process forgets what it read) reads the plan; forcing skips it."""
    monkeypatch.delenv("SXOR_ONE_STEP_FORM", raising=False)
    inst = random_instances(3, 3000, 8, seed=2)
    fast, slow = both_paths(
        monkeypatch, lambda: sxor.one_step(inst.V, inst.theta0, inst.support, 5.0)
    )
    assert_same(fast, slow, torch.float64)
    sxor.one_step(inst.V, inst.theta0, inst.support, 5.0)
    reason = population.last_path().reason
    assert "form measured (two reads " in reason and "plan cache)" in reason, reason
    plan_path = native._native_plan.plan_file(native.library_path())
    assert plan_path.parent == native.library_path().parent
    assert plan_path.name == native.library_path().name.replace(".so", ".plan.json")
    plans = __import__("json").loads(plan_path.read_text())
    kind = native._native_plan.plan_key(3000, 8, 8, "[m, d]").rsplit(" ", 1)[0]  # any threads
    key = next(k for k in plans if k.rsplit(" ", 1)[0] == kind)
    assert plans[key]["form"] in ("fused", "three") and plans[key]["instances"] >= 1
    chosen = "two reads of V" if plans[key]["form"] == "fused" else "three reads of V"
    assert chosen in reason
    native._native_plan.forget()
    sxor.one_step(inst.V, inst.theta0, inst.support, 5.0)
    assert "plan cache)" in population.last_path().reason
    force_fused(monkeypatch, plans[key]["form"] != "fused")
    sxor.one_step(inst.V, inst.theta0, inst.support, 5.0)
    reason = population.last_path().reason
    assert "form forced by SXOR_ONE_STEP_FORM" in reason and chosen not in reason


def test_the_planner_runs_the_faster_form_and_keys_by_kind(tmp_path, monkeypatch):
    """With a form that takes longer, the planner picks the other, writes it, reads it back; the
    kinds differ by dtype, layout, the power of two of an instance's bytes and the threads (two
    threads share the memory bus, so the faster form can differ); a corrupt plan file is measured
    again."""
    import time

    from sxor.xor import _native_plan as plan

    monkeypatch.delenv("SXOR_ONE_STEP_FORM", raising=False)
    plan.forget()
    lib = tmp_path / "one_step-abc.so"
    calls = []

    def run(fused):
        calls.append(fused)
        time.sleep(0.003 if fused else 0.0)

    first = plan.plan_form(lib, "k", 2, 1, run)
    assert not first.fused and first.how == "measured" and first.seconds["fused"] >= 0.003
    assert calls.count(True) >= 3 and calls.count(False) >= 3
    assert (
        "two reads 3" in first.describe()
        and "per call of 2 instances on 1 threads; measured now" in first.describe()
    )
    plan.forget()
    again = plan.plan_form(lib, "k", 2, 1, lambda fused: pytest.fail("measured again"))
    assert again == first._replace(how="cached")
    keys = {
        plan.plan_key(*args)
        for args in [
            (1024, 32, 8, "[m, d]"),
            (1024, 32, 4, "[m, d]"),
            (1024, 32, 8, "[d, m]"),
            (2048, 32, 8, "[m, d]"),
            (1024, 32, 8, "[m, d]", 2),
        ]
    }
    assert len(keys) == 5
    assert plan.plan_key(1024, 32, 8, "[m, d]") == plan.plan_key(1024, 32, 8, "[m, d]", 1)
    assert plan.plan_key(1024, 32, 8, "[m, d]") == plan.plan_key(1500, 32, 8, "[m, d]")
    plan.plan_file(lib).write_text("{not json")
    plan.forget()
    assert plan.plan_form(lib, "k", 2, 1, run).how == "measured"
    monkeypatch.setenv("SXOR_ONE_STEP_FORM", "fused")
    assert plan.plan_form(lib, "k", 2, 1, lambda fused: pytest.fail("measured")) == (
        True,
        "forced",
        None,
        0,
        0,
    )
    plan.forget()


def test_the_plan_cache_is_keyed_like_the_library(monkeypatch):
    """A build for another -march (SXOR_NATIVE_MARCH) is another library, so another plan file."""
    cc = native._compiler()
    monkeypatch.delenv("SXOR_NATIVE_MARCH", raising=False)  # -march=native, the default
    key = native.cache_key(cc)
    monkeypatch.setenv("SXOR_NATIVE_MARCH", "x86-64-v3")
    assert native.cache_key(cc) != key
    assert "-march=x86-64-v3" in native._march(native.FLAGS)
    monkeypatch.setenv("SXOR_NATIVE_MARCH", "native; rm")
    with pytest.raises(RuntimeError, match="is not a -march value"):
        native._march(native.FLAGS)


def test_fewer_threads_when_other_processes_hold_the_cores(monkeypatch):
    monkeypatch.setenv("SXOR_NATIVE_LOAD_CHECK", "1")
    monkeypatch.setattr(native, "cpu_count", lambda: 2)
    monkeypatch.setattr(native, "_running_threads", lambda: (5, 1))  # 4 others on 2 CPUs
    assert native.threads_for(2) == (1, "1 of 2 threads: 4 runnable threads of other processes")
    monkeypatch.setattr(native, "_running_threads", lambda: (2, 1))  # one other: one core idle
    assert native.threads_for(2)[0] == 1
    monkeypatch.setattr(
        native, "_running_threads", lambda: (3, 2)
    )  # our own threads only... 1 other
    assert native.threads_for(2)[0] == 1
    monkeypatch.setattr(native, "_running_threads", lambda: (2, 2))  # only our own threads
    assert native.threads_for(2) == (2, None)
    monkeypatch.setattr(native, "_running_threads", lambda: None)  # no /proc
    assert native.threads_for(2) == (2, None)
    monkeypatch.setattr(native, "_running_threads", lambda: (9, 1))
    assert native.threads_for(1) == (1, None)
    monkeypatch.setenv("SXOR_NATIVE_LOAD_CHECK", "0")
    assert native.threads_for(2) == (2, None)
    monkeypatch.delenv("SXOR_NATIVE_LOAD_CHECK")  # the default: every thread asked for
    assert native.threads_for(2) == (2, None)


def test_a_busy_machine_runs_the_call_on_fewer_threads_and_says_so(monkeypatch):
    monkeypatch.setenv("SXOR_NATIVE_LOAD_CHECK", "1")
    monkeypatch.setattr(native, "cpu_count", lambda: 2)
    monkeypatch.setattr(native, "_running_threads", lambda: (4, 1))
    inst = random_instances(4, 500, 6, seed=4)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        sxor.one_step(inst.V, inst.theta0, inst.support, 2.0)
    finally:
        torch.set_num_threads(before)
    reason = population.last_path().reason
    assert reason.startswith("C kernel, 1 threads") and "(1 of 2 threads: 3 runnable" in reason


def test_running_threads_reads_this_process():
    counts = native._running_threads()
    if counts is None:
        pytest.skip("no /proc")
    total, own = counts
    assert total >= own >= 1


def test_no_plan_is_kept_from_instances_with_non_finite_scores(tmp_path, monkeypatch):
    from sxor.xor import _native_plan as plan

    monkeypatch.delenv("SXOR_ONE_STEP_FORM", raising=False)
    plan.forget()
    lib = tmp_path / "one_step-def.so"
    assert plan.plan_form(lib, "k", 1, 1, lambda fused: 1).how == "measured"
    assert not plan.plan_file(lib).exists()
    assert plan.plan_form(lib, "k", 1, 1, lambda fused: 0).how == "measured"
    assert plan.plan_form(lib, "k", 1, 1, lambda fused: pytest.fail("measured")).how == "cached"
    plan.forget()


@pytest.mark.parametrize("dtype, fused", [(torch.float64, True), (torch.float32, False)])
def test_the_size_rule_on_request(monkeypatch, dtype, fused):
    """SXOR_ONE_STEP_FORM=size: two reads from 8 MiB per instance (d = 2^17, m = 8 is 8 MiB in
    float64 and 4 MiB in float32), whatever the machine's timings."""
    monkeypatch.setenv("SXOR_ONE_STEP_FORM", "size")
    inst = random_instances(1, 2**17, 8, seed=3, dtype=dtype)
    sxor.one_step(inst.V, inst.theta0, inst.support, 1e3)
    reason = population.last_path().reason
    assert ("two reads of V; form forced" if fused else "three reads of V; form forced") in reason
    from sxor.xor import _native_plan as plan

    run = lambda fused: pytest.fail("measured")  # noqa: E731 (a one-line stand-in)
    assert plan.plan_form(None, "k", 1, 1, run, nbytes=8 << 20).fused
    assert not plan.plan_form(None, "k", 1, 1, run, nbytes=(8 << 20) - 1).fused


def test_the_form_is_measured_on_enough_instances_to_leave_the_cache(monkeypatch, fresh_cache):
    """The planner times the forms on at least PROBE_BYTES of V where the call has that many
    instances (and on as many as threads in any case), never on more than the call's."""
    import json

    from sxor.xor import _step_path

    monkeypatch.delenv("SXOR_ONE_STEP_FORM", raising=False)
    inst = random_instances(5, 500, 4, seed=3)  # 16000 bytes of V per instance
    monkeypatch.setattr(_step_path, "PROBE_BYTES", 40000)  # 2.5 instances: 3
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        sxor.one_step(inst.V, inst.theta0, inst.support, 5.0)
        plans = json.loads(native._native_plan.plan_file(native.library_path()).read_text())
        assert [p["instances"] for p in plans.values()] == [3]
        native._native_plan.plan_file(native.library_path()).unlink()
        native._native_plan.forget()
        monkeypatch.setattr(_step_path, "PROBE_BYTES", 10**9)  # more than the call has: all 5
        sxor.one_step(inst.V, inst.theta0, inst.support, 5.0)
        plans = json.loads(native._native_plan.plan_file(native.library_path()).read_text())
        assert [p["instances"] for p in plans.values()] == [5]
    finally:
        torch.set_num_threads(before)
