"""Helpers of the one-step chapters' experiments: loss crossings, grid counts, failure summary,
and the grid's blocks of seeds concatenating to one run."""

from __future__ import annotations

import math

import numpy as np

from sxor.experiments import one_step as exp


def test_loss_crossings_interpolate_in_log_log():
    records = [
        {"d": 64, "eta_index": k, "eta_over_d2": 10.0**k, "median_loss": 10.0 ** (-k)}
        for k in range(4)
    ]
    assert math.isclose(exp.loss_crossings(records)[64], 100.0, rel_tol=1e-12)
    never = [{**r, "median_loss": 1.0} for r in records]
    assert math.isnan(exp.loss_crossings(never)[64])


def test_grid_counts_and_complements():
    records = [
        {"d": 8, "m": m, "seeds": 10, "success": m, "limit_off_target": 10 - m} for m in (4, 2)
    ]
    ms, k, n = exp.grid_counts(records)[8]
    assert list(ms) == [2, 4] and list(k) == [2, 4] and list(n) == [10, 10]
    assert list(exp.grid_counts(records, "no_limit_off_target")[8][1]) == [2, 4]


def test_grid_blocks_concatenate_to_one_block():
    ms = [6, 10]
    one = exp.grid_block(64, ms, 0, 12)
    parts = [exp.grid_block(64, ms, 0, 5), exp.grid_block(64, ms, 5, 12)]
    assert exp._grid_records(64, ms, [one]) == exp._grid_records(64, ms, parts)


def test_failure_summary_pools_cells():
    cells = [
        {"d": 64, "m": m, "seeds": 100, "limit_same_target": 7, "under_stepped": 1}
        for m in (16, 32, 40)
    ]
    s = exp.failure_summary({"records": cells, "params": {"c": 100.0}}, samples=500)
    assert s.d == [64] and s.same_target[0] == 14 and s.same_trials[0] == 200
    assert s.under_stepped[0] == 3 and s.under_trials[0] == 300
    assert np.isclose(s.same_predicted[0], 2 / np.pi * np.arctan(np.sqrt(62) / 64))
