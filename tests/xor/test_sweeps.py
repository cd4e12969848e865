"""The sweep machinery: instance k is the same whatever the chunking, and memory is chunked."""

from __future__ import annotations

import torch

import sxor
from sxor.xor.sweeps import chunk_size, random_instances, sweep


def test_instance_k_does_not_depend_on_the_batch_it_is_drawn_in():
    whole = random_instances(6, 8, 3, seed=10)
    tail = random_instances(2, 8, 3, seed=14)
    torch.testing.assert_close(whole.V[4:], tail.V)
    torch.testing.assert_close(whole.theta0[4:], tail.theta0)
    assert torch.equal(whole.support[4:], tail.support)


def test_instances_are_valid():
    inst = random_instances(50, 6, 4, seed=0)
    torch.testing.assert_close(inst.V.norm(dim=-1), torch.ones(50, 6, dtype=torch.float64))
    torch.testing.assert_close(inst.theta0.norm(dim=-1), torch.ones(50, dtype=torch.float64))
    assert bool((inst.support[:, 0] != inst.support[:, 1]).all())


def test_sweep_results_do_not_depend_on_the_memory_budget():
    def measure(batch):
        res = sxor.one_step(batch.V, batch.theta0, batch.support, 1e3)
        return {"loss": res.loss}

    small = sweep(measure, 7, 10, 3, seed=2, budget_bytes=1)  # one instance per chunk
    large = sweep(measure, 7, 10, 3, seed=2)
    torch.testing.assert_close(small["loss"], large["loss"])
    assert small["loss"].shape == (7,)


def test_chunk_size_respects_the_budget():
    per_instance = 4 * 1024 * 40 * 8
    assert chunk_size(1024, 40, budget_bytes=10 * per_instance) == 10
    assert chunk_size(2**20, 40, budget_bytes=1.0) == 1
