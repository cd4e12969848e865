"""Nested instances: one draw per instance serves every m of a grid; rows on the sphere at each m;
instance k independent of chunking and of which m are asked for; memory chunked."""

from __future__ import annotations

import pytest
import torch

import sxor
from sxor.xor import analysis
from sxor.xor.population import one_step_and_limit, one_step_and_limit_factored
from sxor.xor.sweeps import at_m, nested_instances, sweep_m


def test_rows_are_unit_vectors_and_the_first_m_columns_of_one_draw():
    nested = nested_instances(3, 50, 12, seed=4)
    for m in (2, 7, 12):
        dense = at_m(nested, m).dense()
        assert dense.V.shape == (3, 50, m)
        torch.testing.assert_close(dense.V.norm(dim=-1), torch.ones(3, 50, dtype=torch.float64))
        torch.testing.assert_close(dense.theta0.norm(dim=-1), torch.ones(3, dtype=torch.float64))
        z = nested.Z[:, :m].transpose(-1, -2)
        torch.testing.assert_close(dense.V, z / z.norm(dim=-1, keepdim=True))


def test_nested_rows_are_uniform_on_the_sphere_at_each_m():
    nested = nested_instances(1, 20000, 6, seed=0)
    for m in (3, 6):
        V = at_m(nested, m).dense().V[0]
        torch.testing.assert_close(
            V.T @ V / V.shape[0], torch.eye(m, dtype=torch.float64) / m, atol=0.01, rtol=0
        )


def test_instance_k_does_not_depend_on_the_batch():
    whole = nested_instances(5, 9, 4, seed=10)
    tail = nested_instances(2, 9, 4, seed=13)
    assert torch.equal(whole.Z[3:], tail.Z) and torch.equal(whole.support[3:], tail.support)


def test_factored_step_equals_the_dense_step_and_the_argmax_limit():
    nested = nested_instances(6, 200, 16, seed=1)
    inst = at_m(nested, 10)
    dense = inst.dense()
    eta = analysis.grid_eta(200)
    fact = one_step_and_limit_factored(inst.Z, inst.scale, inst.theta0, inst.support, eta)
    ref = one_step_and_limit(dense.V, dense.theta0, dense.support, eta)
    torch.testing.assert_close(fact.step.loss, ref.step.loss, atol=1e-12, rtol=0)
    torch.testing.assert_close(fact.step.theta, ref.step.theta, rtol=1e-10, atol=1e-9)
    limit = analysis.argmax_limit(dense.V, dense.theta0, dense.support)
    assert torch.equal(fact.head, limit.head) and torch.equal(fact.head_tilde, limit.head_tilde)
    one = sxor.one_step(dense.V, dense.theta0, dense.support, eta)
    torch.testing.assert_close(one.loss, ref.step.loss)


def test_sweep_m_is_independent_of_budget_and_of_the_m_asked_for():
    def measure(batch):
        out = one_step_and_limit_factored(batch.Z, batch.scale, batch.theta0, batch.support, 1e5)
        return {"loss": out.step.loss, "head": out.head}

    full = sweep_m(measure, 7, 30, [4, 6, 8, 10], m_max=10, seed=2)
    some = sweep_m(measure, 7, 30, [8], m_max=10, seed=2, budget_bytes=1)  # one instance per chunk
    assert set(full) == {4, 6, 8, 10} and full[8]["loss"].shape == (7,)
    assert torch.equal(full[8]["loss"], some[8]["loss"]) and torch.equal(
        full[8]["head"], some[8]["head"]
    )


def test_sweep_m_rejects_m_beyond_m_max():
    with pytest.raises(ValueError, match="m_max"):
        sweep_m(lambda b: {}, 2, 10, [4, 12], m_max=8)
    with pytest.raises(ValueError, match="m must lie"):
        at_m(nested_instances(1, 5, 3), 4)
