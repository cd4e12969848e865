"""Contracts a second adversary's mutants reached and the table did not (Part I)."""

from __future__ import annotations

import math

import pytest
import torch

import sxor
from sxor.xor import checks, metrics, streams
from sxor.xor.kparity import parity_labels
from sxor.xor.population import one_step
from sxor.xor.sweeps import random_instances


@pytest.mark.parametrize("d, m, B", [(512, 64, 40), (2048, 256, 5)])
def test_per_instance_step_sizes_on_a_batch_split_into_cache_blocks(d, m, B):
    # 256 KiB and 4 MiB per instance: blocks of 16 instances, and one instance per block
    inst = random_instances(B, d, m, seed=3)
    eta = torch.linspace(0.5, 40.0, B, dtype=torch.float64)
    batch = one_step(inst.V, inst.theta0, inst.support, eta)
    for k in (0, 1, B // 2, B - 1):
        alone = one_step(inst.V[k], inst.theta0[k], inst.support[k], float(eta[k]))
        torch.testing.assert_close(batch.theta[k], alone.theta, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(batch.loss[k], alone.loss, rtol=1e-12, atol=1e-14)
    first = one_step(inst.V, inst.theta0, inst.support, float(eta[0]))
    assert not torch.allclose(first.theta[-1], batch.theta[-1])  # the last step size really acts


def test_failure_mode_codes_are_0_to_3():
    assert metrics.FAILURE_MODES == ("success", "off_target", "same_target", "under_stepped")
    assert metrics.mode_fractions(torch.tensor([0, 1, 2, 3])) == dict.fromkeys(
        metrics.FAILURE_MODES, 0.25
    )
    for bad in ([0, 4], [-1, 0], [0.0, 1.0]):
        with pytest.raises(ValueError, match="codes"):
            metrics.mode_fractions(torch.tensor(bad))


def test_success_refuses_both_heads_on_one_target():
    w = torch.tensor([0.97, 0.01, 0.01, 0.01], dtype=torch.float64)
    loss = torch.tensor(0.0, dtype=torch.float64)
    assert bool(metrics.success(loss, w, w.flip(0), torch.tensor([0, 3])))
    for fn in (
        lambda s: metrics.success(loss, w, w, s),
        lambda s: metrics.target_masses(w, w, s),
        lambda s: metrics.failure_modes(loss, w, w, s),
    ):
        with pytest.raises(ValueError, match=r"i\* != j\*"):
            fn(torch.tensor([0, 0]))
        with pytest.raises(ValueError, match="support out of range"):
            fn(torch.tensor([0, 4]))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 0.5, 0.0, 2.0])
def test_labels_need_inputs_of_the_hypercube(bad):
    x = torch.ones(3, 5, dtype=torch.float64)
    assert sxor.sparse_xor_labels(x, torch.tensor([0, 1])).tolist() == [-1.0] * 3
    x[1, 4] = bad  # not even on the support: the contract is about x
    with pytest.raises(ValueError, match=r"x must have entries \+1 or -1"):
        sxor.sparse_xor_labels(x, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"x must have entries \+1 or -1"):
        parity_labels(x, torch.tensor([0, 1, 2]))


def test_stream_keys_at_and_above_2_to_the_32_are_refused():
    top = streams.stream_inputs(torch.tensor([2**32 - 1]), 0, 4, 40)
    zero = streams.stream_inputs(torch.tensor([0]), 0, 4, 40)
    assert not torch.equal(top, zero)
    for key in (2**32, 2**32 + 1, 2**40, -1):
        with pytest.raises(ValueError, match=r"keys must lie in \[0, 2\^32\)"):
            streams.stream_inputs(torch.tensor([key]), 0, 4, 40)


def test_stream_sizes_are_integers_within_the_stream():
    keys = torch.tensor([3])
    assert streams.stream_length(32) == 2**32 and streams.stream_length(33) == 2**31
    last = streams.stream_inputs(keys, 2**31 - 1, 1, 40)  # the last sample of a d = 40 stream
    assert last.shape == (1, 1, 40)
    for start, count, what in [
        (2**31 - 1, 2, "length"),
        (2**31, 1, "length"),
        (0, 2.0, "count"),
        (0, 2.5, "count"),
        (True, 2, "start"),
        (-1, 2, "start"),
        (0, 0, "count"),
    ]:
        with pytest.raises(ValueError, match=what):
            streams.stream_inputs(keys, start, count, 40)
    inst = random_instances(1, 8, 4, seed=0)
    args = (keys, None, inst.V, inst.theta0, -inst.theta0, inst.support)
    for ns, what in [
        ([2.5], r"ns\[0\]"),
        ([4, 2], "increasing"),
        ([], "non-empty"),
        (4, "list"),
        ([True], r"ns\[0\]"),
    ]:
        with pytest.raises(ValueError, match=what):
            streams.stream_empirical_grads(*args[:1], ns, *args[2:])


def test_devices_that_do_not_exist_or_are_not_here():
    assert checks.check_device("device", "cpu") == torch.device("cpu")
    assert checks.check_device("device", None) is None
    assert "cpu" in checks.available_devices()
    for bad in ("tpu", "gpu0", "cuda:99", "ipu", "hip"):
        with pytest.raises(ValueError, match=r"device .*available here: \['cpu'"):
            sxor.sphere_embeddings(4, 2, device=bad)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="not available in this process"):
            sxor.random_support(4, device="cuda")
    with pytest.raises(TypeError, match="device must be a device string"):
        sxor.all_inputs(4, device=0.5)
    from sxor import experiments

    with pytest.raises(ValueError, match="not a device"):
        experiments.run("one-step-eta", "ci", "gpu0")


def test_sizes_that_cannot_fit_are_refused_before_allocating():
    for call, what in [
        (lambda: sxor.sphere_embeddings(10**6, 10**6), r"sphere_embeddings\(d, m, batch\)"),
        (lambda: sxor.sphere_embeddings(1000, 1000, batch=(10**6,)), "sphere_embeddings"),
        (lambda: sxor.random_support(8, batch=(10**13,)), r"random_support\(d, batch\)"),
        (
            lambda: sxor.sample_sparse_xor(10**12, 16, torch.tensor([0, 1])),
            r"sample_sparse_xor\(n, d\)",
        ),
        (lambda: streams.stream_inputs(torch.tensor([0]), 0, 10**9, 8), "stream_inputs"),
    ]:
        with pytest.raises(ValueError, match=what + r".*GiB.*MAX_BYTES"):
            call()
    # just below the limit the estimate passes (on the meta device nothing is allocated)
    rows = checks.MAX_BYTES // (8 * 1024)
    assert sxor.sphere_embeddings(rows, 1024, device="meta").shape == (rows, 1024)
    with pytest.raises(ValueError, match="MAX_BYTES"):
        sxor.sphere_embeddings(rows + 1, 1024, device="meta")
