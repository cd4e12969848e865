"""The trained-depth experiment's bookkeeping (section 15c): thresholds, censoring, intervals."""

from __future__ import annotations

import math

import pytest

from sxor.experiments.trained_depth import SIZES, run_depth
from sxor.experiments.trained_depth_report import depth_table, growth_fit


def _rec(L, seed, hit, N=2):
    return {
        "kind": "depth", "N": N, "m": 1, "n": 3, "seed": seed, "L": L,
        "interpolates": hit, "diverged": False, "construction_blocks": 3,
    }  # fmt: skip


def test_smallest_depths_and_censoring():
    records = [_rec(1, s, s == 0) for s in range(4)]  # 1 of 4
    records += [_rec(2, s, s < 2) for s in range(4)]  # 2 of 4: half
    records += [_rec(3, s, True) for s in range(4)]  # 4 of 4
    records += [_rec(1, s, False, N=4) for s in range(4)]  # never: censored
    records.append({"kind": "scan", "N": 9})
    by_N = {t["N"]: t for t in depth_table(records)}
    assert by_N[2]["L_half"] == 2 and by_N[2]["L_90"] == 3
    assert by_N[4]["L_half"] is None and by_N[4]["L_max_tried"] == 1
    lo, hi = by_N[2]["per_L"][0]["ci"]
    assert 0 < lo < 0.25 < hi < 1
    assert by_N[4]["per_L"][0]["ci"][0] == 0.0


def test_ci_cells_are_full_cells_with_full_settings():
    ci, full = SIZES["ci"], SIZES["full"]
    for key in ("d", "steps", "polish", "newton", "lr", "objective", "tol", "cluster_tol"):
        assert ci[key] == full[key]
    assert set(ci["Ls"]) <= set(full["Ls"]) and full["Ls"] == sorted(full["Ls"])
    assert set(ci["Ns"]) <= set(full["Ns"]) and set(ci["ms"]) <= set(full["ms"])
    assert set(ci["ns"]) <= set(full["ns"]) and ci["seeds"] <= full["seeds"]


def test_growth_fit_recovers_a_known_exponent_and_leaves_censored_cells_out():
    # L_half = N / 2 exactly (N = 2, 4, 8): slope 1 whatever the resampling; N = 16 censored
    records = []
    for N, need in ((2, 1), (4, 2), (8, 4), (16, 99)):
        for L in (1, 2, 4, 8):
            records += [_rec(L, s, need <= L, N=N) for s in range(5)]
    fits = growth_fit(records, draws=200)
    assert [f["n"] for f in fits] == [3, None]  # one (n, m) and the pooled fit
    for f in fits:
        assert f["slope"] == pytest.approx(1.0)
        assert f["interval_95"] == pytest.approx([1.0, 1.0]) and f["usable"] == 1.0
    # one uncensored N only: no slope
    one = [r for r in records if r["N"] in (2, 16)]
    assert growth_fit(one, draws=20)[0]["slope"] is None


def test_a_noisy_cell_widens_the_interval_around_the_slope():
    records = []
    for N, need in ((2, 1), (4, 2), (8, 4)):
        for L in (1, 2, 4, 8):
            records += [_rec(L, s, need <= L or (N == 8 and L == 2 and s < 2), N=N)
                        for s in range(5)]  # fmt: skip
    fit = growth_fit(records, draws=400)[0]
    low, high = fit["interval_95"]
    assert low <= fit["slope"] <= high and high - low > 0.1
    assert math.isfinite(fit["slope"])


def test_workers_give_the_same_records_as_one_process(monkeypatch):
    cfg = dict(SIZES["ci"], scan={"N": 2, "m": 1, "n": 3, "L": 1, "settings": [[1e-2, 20, "chamfer"]]},
               steps=20, polish=5, newton=3, seeds=1)  # fmt: skip
    monkeypatch.setenv("SXOR_WORKERS", "1")
    one = run_depth(cfg)
    monkeypatch.setenv("SXOR_WORKERS", "2")
    two = run_depth(cfg)
    assert [r["kind"] for r in one] == ["construction", "depth", "scan"]
    assert one == two


def test_a_cell_stops_at_the_first_depth_where_90_percent_interpolate(monkeypatch):
    from sxor.experiments import trained_depth as td

    calls = []

    def fake_fit(X, Y, L, seed, cfg, device, **override):
        calls.append((L, seed))
        ok = L >= 3 or (L == 2 and seed < 4)  # L = 2: 4 of 5 (80%), L = 3: 5 of 5
        return {"interpolates": ok, "error": 0.0 if ok else 1.0, "diverged": False}

    monkeypatch.setattr(td, "_fit", fake_fit)
    cfg = dict(SIZES["full"], seeds=5)
    records = td._cell(3, 1, 2, cfg, "cpu")
    assert sorted({L for L, _ in calls}) == [1, 2, 3]  # stops after L = 3, never tries 4, 6, 8
    assert [r["kind"] for r in records].count("construction") == 5
    assert {r["L"] for r in records if r["kind"] == "depth"} == {1, 2, 3}


def test_teacher_runs_start_from_seeds_other_than_the_teachers(monkeypatch):
    from sxor.experiments import trained_depth as td

    seeds = []

    def fake_fit(X, Y, L, seed, cfg, device, **override):
        seeds.append(seed)
        return {"interpolates": False, "error": 1.0, "diverged": False}

    monkeypatch.setattr(td, "_fit", fake_fit)
    cfg = dict(SIZES["full"], teacher=dict(SIZES["full"]["teacher"], seeds=3))
    records = td._teacher(2, cfg, "cpu")
    assert [r["L"] for r in records] == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert set(seeds) == {100, 101, 102} and cfg["teacher"]["seed"] not in seeds


def test_censored_cells_bound_the_exponent_from_below():
    from sxor.experiments.trained_depth_report import censored_bounds

    records = []
    for N, need in ((2, 1), (4, 2), (8, 99)):
        for L in (1, 2, 4, 8):
            records += [_rec(L, s, need <= L, N=N) for s in range(5)]
    (b,) = censored_bounds(records)
    assert (b["N0"], b["L0"], b["N1"], b["L_max"]) == (4, 2, 8, 8)
    assert b["exponent_above"] == pytest.approx(2.0)  # L(8) > 8 = 2 * (8 / 4)^2


def test_fisher_and_mcnemar_exact_tests_against_hand_counts():
    from sxor.experiments.trained_depth_report import fisher_exact, mcnemar_exact

    # 0/5 against 5/5: only the observed table and its mirror are as unlikely: 2 / C(10, 5)
    assert abs(fisher_exact(0, 5, 5, 5) - 2 / 252) < 1e-15
    # 2/5 against 5/5: of the C(10, 7) = 120 ways to place 7 successes, k1 = 2 and k1 = 5 have
    # C(5, 2) C(5, 5) = 10 each, k1 = 3 and 4 have 50 each
    assert abs(fisher_exact(2, 5, 5, 5) - 20 / 120) < 1e-15
    assert fisher_exact(3, 5, 3, 5) == 1.0
    assert abs(mcnemar_exact(0, 5) - 2 / 32) < 1e-15 and mcnemar_exact(4, 4) == 1.0
    assert mcnemar_exact(0, 0) == 1.0
    with pytest.raises(ValueError, match="must not exceed"):
        fisher_exact(6, 5, 0, 5)
    with pytest.raises(ValueError, match="non-negative int"):
        mcnemar_exact(-1, 2)


def test_paired_runs_count_only_the_runs_both_lists_share():
    from sxor.experiments.trained_depth_report import paired_runs

    def run(seed, L, ok, N=2):
        return {"kind": "depth", "n": 3, "m": 1, "N": N, "seed": seed, "L": L, "interpolates": ok}

    first = [run(0, 1, True), run(1, 1, True), run(2, 1, False), run(3, 1, True, N=4)]
    second = [run(0, 1, True), run(1, 1, False), run(2, 1, True), run(2, 2, True)]
    out = paired_runs(first, second)
    assert (out["runs"], out["both"], out["only_first"], out["only_second"]) == (3, 1, 1, 1)
    assert out["p_mcnemar"] == 1.0 and list(out["by_N"]) == [2]
    # seed 1 leans to the first setting, seed 2 to the second, seed 0 to neither
    assert (out["datasets"], out["datasets_first_more"], out["datasets_second_more"]) == (3, 1, 1)
    assert out["p_sign_datasets"] == 1.0
