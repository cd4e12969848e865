"""Drawing instances on several threads, and writing a sweep's results into preallocated rows,
leave every number as it was."""

from __future__ import annotations

import pytest
import torch

from sxor.xor import sweeps
from sxor.xor.sweeps import nested_instances, sweep, sweep_m


@pytest.mark.parametrize("num", [1, 2, 5])
def test_threads_draw_the_same_instances(num):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = nested_instances(num, 2**12, 20, seed=7)
        torch.set_num_threads(3)
        three = nested_instances(num, 2**12, 20, seed=7)
    finally:
        torch.set_num_threads(before)
    for a, b in zip(one, three):
        assert torch.equal(a, b)


def test_chunked_results_equal_one_chunk():
    def measure(batch):
        return {
            "first": batch.Z[:, 0, :3].sum(-1),
            "support": batch.support,
            "pair": batch.theta0[:, :2],
        }

    whole = sweep_m(measure, 7, 64, [2, 4])
    chunked = sweep_m(measure, 7, 64, [2, 4], budget_bytes=2 * 64 * 4 * 8 * 3)  # chunks of 3
    for m in (2, 4):
        assert set(whole[m]) == {"first", "support", "pair"}
        for key in whole[m]:
            assert whole[m][key].shape[0] == 7 and whole[m][key].dtype == chunked[m][key].dtype
            assert torch.equal(whole[m][key], chunked[m][key])
    flat = sweep(
        lambda b: {"loss": b.V[:, 0, 0], "sup": b.support},
        5,
        32,
        3,
        budget_bytes=4 * 32 * 3 * 8 * 2,
    )
    ref = sweeps.random_instances(5, 32, 3)
    assert torch.equal(flat["loss"], ref.V[:, 0, 0]) and torch.equal(flat["sup"], ref.support)
