"""The per-instance record of the one-step grid and the fresh same-target draws: the committed
per-instance file reproduces the committed grid's counts exactly, its instances are the grid's,
and the instance bootstrap and the same-target table compute what they say."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from sxor.experiments import one_step as exp
from sxor.results import committed_results
from sxor.xor import analysis
from sxor.xor.metrics import FAILURE_MODES


@pytest.fixture(scope="module")
def instances():
    return committed_results("one-step-grid-instances")


def test_committed_instances_reproduce_every_count_of_the_committed_grid(instances):
    grid = {(r["d"], r["m"]): r for r in committed_results("one-step-grid")["records"]}
    ds = {r["d"] for r in instances["records"]}
    assert {1024, 2048, 4096, 8192, 16384, 65536} <= ds
    # every grid cell of those d is there, and nothing else
    assert {(r["d"], r["m"]) for r in instances["records"]} == {k for k in grid if k[0] in ds}
    for r in instances["records"]:
        cell = grid[(r["d"], r["m"])]
        assert r["seeds"] == cell["seeds"] == len(r["mode"]) == len(r["limit_mode"])
        for code, name in enumerate(FAILURE_MODES):
            assert r["mode"].count(str(code)) == cell[name], (r["d"], r["m"], name)
            assert r["limit_mode"].count(str(code)) == cell[f"limit_{name}"], (r["d"], r["m"], name)
        assert set(r["mode"] + r["limit_mode"]) <= set("0123")


def test_committed_instances_are_the_grids_instances(instances):
    # instance k is seeded with k in every block: a fresh block of the first instances at d = 64
    d = 64
    ms = exp.GRID_SIZES["full"]["cells"][d]
    block = exp.grid_block(d, ms, 0, 40)
    rows = {r["m"]: r for r in instances["records"] if r["d"] == d}
    for m in ms:
        assert "".join(str(c) for c in block["out"][str(m)]["mode"]) == rows[m]["mode"][:40]
        assert (
            "".join(str(c) for c in block["out"][str(m)]["limit_mode"])
            == rows[m]["limit_mode"][:40]
        )


def test_instance_outcomes_decode_the_codes():
    records = [
        {"d": 8, "m": 4, "seeds": 4, "mode": "0123", "limit_mode": "0110"},
        {"d": 8, "m": 2, "seeds": 4, "mode": "1100", "limit_mode": "2200"},
    ]
    ms, ok = exp.instance_outcomes({"records": records})[8]
    assert list(ms) == [2, 4] and ok.shape == (4, 2)
    assert ok[:, 1].tolist() == [True, False, False, False] and ok[:, 0].tolist() == [
        False,
        False,
        True,
        True,
    ]
    _, off = exp.instance_outcomes({"records": records}, "no_limit_off_target")[8]
    assert off[:, 1].tolist() == [True, False, False, True] and off[:, 0].all()
    with pytest.raises(ValueError, match="key"):
        exp.instance_outcomes({"records": records}, "same_target")
    with pytest.raises(ValueError, match="different numbers"):
        exp.instance_outcomes({"records": [records[0], {**records[1], "mode": "11"}]})


def _outcomes(rng, n, ms, p):
    """Nested outcomes: instance k succeeds at every m from its own threshold on."""
    thresholds = rng.choice(ms, size=n, p=p)
    return np.asarray(ms), thresholds[:, None] <= np.asarray(ms)[None, :]


def test_instance_bootstrap_point_estimates_equal_the_counts_and_intervals_cover_them():
    rng = np.random.default_rng(1)
    ms = [10, 12, 14, 16, 18, 20]
    outcomes = {
        64: _outcomes(rng, 300, ms, [0.3, 0.3, 0.2, 0.15, 0.04, 0.01]),
        256: _outcomes(rng, 300, ms, [0.1, 0.2, 0.3, 0.2, 0.15, 0.05]),
        1024: _outcomes(rng, 100, ms, [0.0, 0.1, 0.2, 0.3, 0.3, 0.1]),
    }
    boot = exp.bootstrap_instances(outcomes, resamples=200)
    for k, d in enumerate(boot.d):
        ms_d, ok = outcomes[d]
        assert boot.m_star[k] == analysis.smallest_m(ms_d, ok.mean(0))
        assert boot.m_low[k] <= boot.m_star[k] <= boot.m_high[k]
    assert boot.slope_low <= boot.slope <= boot.slope_high
    again = exp.bootstrap_instances(outcomes, resamples=200)  # seeded
    assert np.array_equal(boot.m_low, again.m_low) and boot.slope_high == again.slope_high


def test_instance_bootstrap_draws_the_same_seeds_at_every_d():
    # two d holding the same instances (seed k is instance k at both) get the same resampled
    # curve in every resample: the slope between them is 0 in every resample
    rng = np.random.default_rng(2)
    ms, ok = _outcomes(rng, 200, [10, 12, 14, 16], [0.4, 0.3, 0.25, 0.05])
    boot = exp.bootstrap_instances({64: (ms, ok), 256: (ms, ok)}, resamples=100)
    assert boot.m_low[0] < boot.m_high[0]
    assert abs(boot.slope_low) < 1e-12 and abs(boot.slope_high) < 1e-12
    # the strata: a d with fewer seeds uses the first of them, drawn jointly with the others
    boot = exp.bootstrap_instances(
        {64: (ms, ok), 256: (ms, ok[:100]), 1024: (ms, ok[:100])}, resamples=100
    )
    assert boot.m_low[1] == boot.m_low[2] and boot.m_high[1] == boot.m_high[2]


def test_instance_bootstrap_of_identical_instances_has_no_spread():
    ms = np.array([4, 6, 8])
    ok = np.tile([False, True, True], (50, 1))
    boot = exp.bootstrap_instances({16: (ms, ok), 64: (ms, ok[:20])}, resamples=20)
    assert np.all(boot.m_low == boot.m_high) and abs(boot.slope_low - boot.slope_high) < 1e-12


def test_instance_bootstrap_counts_censored_resamples_and_refuses_bad_arguments():
    ms = np.array([4, 6])
    # at d = 16, 19 of 20 instances succeed at m = 6 (rate 0.95 exactly), 10 at m = 4: a resample
    # that draws the failing instance twice never reaches 95%
    ok16 = np.zeros((20, 2), dtype=bool)
    ok16[1:, 1] = True
    ok16[10:, 0] = True
    outcomes = {16: (ms, ok16), 64: (ms, np.ones((20, 2), dtype=bool))}
    boot = exp.bootstrap_instances(outcomes, resamples=50)
    assert 0 < boot.censored < 0.5
    with pytest.raises(ValueError, match="resamples"):
        exp.bootstrap_instances(outcomes, resamples=1)
    with pytest.raises(ValueError, match="level"):
        exp.bootstrap_instances(outcomes, level=1.0)
    with pytest.raises(ValueError, match="two d"):
        exp.bootstrap_instances({16: outcomes[16]})


def test_same_target_seeds_are_disjoint_from_the_grid_and_across_d():
    full = exp.SAME_TARGET_SIZES["full"]
    ranges = [
        (exp.same_target_seed(d), exp.same_target_seed(d) + full["blocks"] * exp.SAME_TARGET_BLOCK)
        for d in full["d"]
    ]
    grid_last = max(exp.GRID_SIZES["full"]["seeds"].values())
    assert all(a >= grid_last for a, _ in ranges)
    assert all(b1 <= a2 for (_, b1), (a2, _) in itertools.pairwise(ranges))


def test_same_target_table_pools_blocks_and_scores_against_the_prediction():
    p = 0.02
    records = [
        {"d": 1024, "draws": 5000, "limit_same_target": k, "predicted_same_target": p}
        for k in (90, 110)
    ]
    (row,) = exp.same_target_table({"records": records})
    assert (row.d, row.draws, row.events) == (1024, 10000, 200)
    assert math.isclose(row.rate, 0.02) and math.isclose(row.se, math.sqrt(0.02 * 0.98 / 1e4))
    assert row.z == 0.0
    (hi,) = exp.same_target_table({"records": [{**r, "limit_same_target": 114} for r in records]})
    assert math.isclose(hi.z, 28 / math.sqrt(1e4 * p * (1 - p)))


def test_committed_same_target_run_is_complete():
    results = committed_results("one-step-same-target")
    rows = exp.same_target_table(results)
    assert [r.d for r in rows] == exp.SAME_TARGET_SIZES["full"]["d"]
    assert all(r.draws >= 10_000 for r in rows)
    for r in results["records"]:
        assert sum(r[f"limit_{name}"] for name in FAILURE_MODES) == r["draws"]
        assert r["limit_under_stepped"] == 0  # no under-stepping in the argmax limit
        assert r["first_seed"] == exp.same_target_seed(r["d"]) + r["block"] * exp.SAME_TARGET_BLOCK


def test_instance_bootstrap_independent_across_d_breaks_the_pairing():
    # two d holding the same instances: drawn jointly their slope is 0 in every resample,
    # drawn independently it spreads
    rng = np.random.default_rng(2)
    ms, ok = _outcomes(rng, 200, [10, 12, 14, 16], [0.4, 0.3, 0.25, 0.05])
    boot = exp.bootstrap_instances({64: (ms, ok), 256: (ms, ok)}, resamples=100, joint=False)
    assert boot.slope_low < -1e-3 and boot.slope_high > 1e-3
    assert boot.m_star[0] == boot.m_star[1]


def _codes_record(d, m, codes):
    return {"d": d, "m": m, "seeds": len(codes), "mode": codes, "limit_mode": codes}


def test_pooled_same_target_counts_pairs_and_clusters_by_instance():
    d = 1024
    p = float(analysis.predicted_same_target(d))
    # 4 instances, 2 cells with m >= 32; instance 0 fails same-target in both, instance 1 in one
    records = [
        _codes_record(d, 28, "2222"),
        _codes_record(d, 32, "2200"),
        _codes_record(d, 36, "2130"),
    ]
    out = exp.pooled_same_target({"records": records}, [d])
    assert (out.events, out.pairs, out.instances) == (3, 8, 4)
    assert math.isclose(out.expected, 8 * p)
    assert math.isclose(out.z_pairs, (3 - 8 * p) / math.sqrt(8 * p))
    counts = np.array([2, 1, 0, 0])
    assert math.isclose(out.z_instances, (3 - 8 * p) / math.sqrt(4 * counts.var(ddof=1)))
    with pytest.raises(ValueError, match="no cell"):
        exp.pooled_same_target({"records": records}, [d], m_min=40)


def test_pooled_same_target_of_the_committed_grid_instances_matches_the_grid(instances):
    ds = [1024, 2048, 4096, 8192, 16384]
    out = exp.pooled_same_target(instances, ds)
    cells = [
        r for r in committed_results("one-step-grid")["records"] if r["d"] in ds and r["m"] >= 32
    ]
    assert out.events == sum(r["limit_same_target"] for r in cells)
    assert out.pairs == sum(r["seeds"] for r in cells) and out.instances == 1000 * len(ds)
    # an instance failing at several m makes the clustered standard error the larger one
    assert abs(out.z_instances) < abs(out.z_pairs)


def test_fully_seeded_picks_the_d_with_the_most_instances():
    ms = np.array([4, 6])
    ok = np.ones((10, 2), dtype=bool)
    outcomes = {16: (ms, ok), 64: (ms, ok), 256: (ms, ok[:4]), 32: (ms, ok)}
    assert exp.fully_seeded(outcomes) == [16, 32, 64]
    with pytest.raises(ValueError, match="at least one d"):
        exp.fully_seeded({})


def _unequally_seeded(rng, n, n_last):
    """Outcomes at d = 64, 256, 1024 with n instances each and at d = 4096 with n_last."""
    ms = [10, 12, 14, 16, 18, 20]
    return {
        64: _outcomes(rng, n, ms, [0.3, 0.3, 0.2, 0.15, 0.04, 0.01]),
        256: _outcomes(rng, n, ms, [0.1, 0.2, 0.3, 0.2, 0.15, 0.05]),
        1024: _outcomes(rng, n, ms, [0.0, 0.1, 0.2, 0.3, 0.3, 0.1]),
        4096: _outcomes(rng, n_last, ms, [0.0, 0.0, 0.1, 0.2, 0.4, 0.3]),
    }


def test_instance_bootstrap_fits_only_fit_d_and_keeps_the_other_intervals():
    outcomes = _unequally_seeded(np.random.default_rng(3), 300, 60)
    fit_d = exp.fully_seeded(outcomes)
    assert fit_d == [64, 256, 1024]
    part = exp.bootstrap_instances(outcomes, resamples=200, fit_d=fit_d)
    full = exp.bootstrap_instances(outcomes, resamples=200)
    # every d keeps its point and interval, from the same joint resamples whatever the fit
    assert list(part.d) == list(full.d) == [64, 256, 1024, 4096]
    assert np.array_equal(part.m_low, full.m_low) and np.array_equal(part.m_high, full.m_high)
    assert list(part.fit) == [True, True, True, False] and list(part.fit_d()) == fit_d
    assert full.fit is not None and full.fit.all() and list(full.fit_d()) == list(full.d)
    # the line is the least-squares line of the fitted d alone
    line = analysis.fit_line(np.log(np.array(fit_d, dtype=float)), part.m_star[:3])
    assert part.slope == line.slope and part.intercept == line.intercept
    assert part.slope != full.slope and part.slope_low <= part.slope <= part.slope_high
    with pytest.raises(ValueError, match="not in outcomes"):
        exp.bootstrap_instances(outcomes, resamples=10, fit_d=[64, 128])
    with pytest.raises(ValueError, match="two d"):
        exp.bootstrap_instances(outcomes, resamples=10, fit_d=[64])


def test_slope_bootstrap_without_a_mask_fits_every_d():
    boot = analysis.SlopeBootstrap(
        np.array([4, 8]), np.zeros(2), np.zeros(2), np.zeros(2), 0.0, 0.0, 0.0, 0.0, 0.0
    )
    assert boot.fit is None and list(boot.fit_d()) == [4, 8]


def test_instance_bootstrap_slope_interval_is_over_the_fitted_d_only():
    """The slope interval is the percentile interval of the slopes refitted to the fit_d columns
    alone (a mutant taking it over every d would differ), and censored pairs are counted per d."""
    outcomes = _unequally_seeded(np.random.default_rng(5), 200, 40)
    part = exp.bootstrap_instances(outcomes, resamples=300, fit_d=[64, 256, 1024])
    full = exp.bootstrap_instances(outcomes, resamples=300)
    assert (part.slope_low, part.slope_high) != (full.slope_low, full.slope_high)
    assert part.censored_by_d is not None and len(part.censored_by_d) == len(part.d)
    assert part.censored == part.censored_by_d.sum() / (300 * len(part.d))
    assert np.array_equal(part.censored_by_d, full.censored_by_d)


def test_instance_bootstrap_refuses_a_bad_fit_d():
    rng = np.random.default_rng(6)
    ms = [10, 12, 14]
    never = np.zeros((50, 3), dtype=bool)  # this d never reaches the target
    outcomes = {
        64: _outcomes(rng, 50, ms, [0.5, 0.3, 0.2]),
        256: _outcomes(rng, 50, ms, [0.2, 0.4, 0.4]),
        1024: (np.array(ms), never),
    }
    with pytest.raises(ValueError, match="no finite smallest m"):
        exp.bootstrap_instances(outcomes, target=0.5, resamples=10, fit_d=[64, 256, 1024])
    with pytest.raises(TypeError, match="fit_d"):
        exp.bootstrap_instances(outcomes, target=0.5, resamples=10, fit_d=64)
    with pytest.raises(TypeError, match="fit_d"):
        exp.bootstrap_instances(outcomes, target=0.5, resamples=10, fit_d="64")
    gen = exp.bootstrap_instances(outcomes, target=0.5, resamples=10, fit_d=(d for d in (64, 256)))
    listed = exp.bootstrap_instances(outcomes, target=0.5, resamples=10, fit_d=[64, 256])
    assert gen.slope == listed.slope and list(gen.fit_d()) == [64, 256]
