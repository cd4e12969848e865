"""Nested sample streams, the streamed empirical gradient, and the finite-sample analysis
(per-instance n*, censored quantiles, bootstrap exponents, the SGD scan), each against an
independent reference or a case with a known answer."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sxor.experiments import finite_samples as fs
from sxor.xor.data import sparse_xor_labels
from sxor.xor.dynamics import empirical_grad, minibatch_sgd
from sxor.xor.streams import hash32, stream_bytes, stream_empirical_grads, stream_inputs
from sxor.xor.sweeps import random_instances


def test_hash32_matches_a_pure_python_reference():
    def ref(x):
        x &= 0xFFFFFFFF
        x ^= x >> 16
        x = (x * 0x7FEB352D) & 0xFFFFFFFF
        x ^= x >> 15
        x = (x * 0x846CA68B) & 0xFFFFFFFF
        return x ^ (x >> 16)

    xs = [0, 1, 2, 12345, 2**31 - 1, 2**31, 2**32 - 1, 0xDEADBEEF]
    assert hash32(torch.tensor(xs)).tolist() == [ref(x) for x in xs]


def test_streams_are_nested_and_independent_of_the_chunking():
    keys = torch.tensor([3, 4, 99])
    x = stream_inputs(keys, 0, 500, 37)
    assert x.shape == (3, 500, 37) and set(x.unique().tolist()) == {-1.0, 1.0}
    assert torch.equal(x[:, :200], stream_inputs(keys, 0, 200, 37))
    assert torch.equal(x[:, 123:456], stream_inputs(keys, 123, 333, 37))
    assert torch.equal(
        x[1:2], stream_inputs(keys[1:2], 0, 500, 37)
    )  # one instance alone: same stream
    assert torch.equal(
        x[:, :, :33], stream_inputs(keys, 0, 500, 33)
    )  # same number of words: first d bits


def test_streams_look_like_fair_independent_bits():
    x = stream_inputs(torch.arange(4), 0, 20000, 64)
    assert abs(float(x.mean())) < 0.01  # 5 M bits: std of the mean ~ 4e-4
    corr = (x[..., :-1] * x[..., 1:]).mean()  # neighbouring coordinates
    assert abs(float(corr)) < 0.01
    assert abs(float((x[0] * x[1]).mean())) < 0.01  # two streams


def test_stream_bytes_encode_the_inputs():
    keys = torch.tensor([5, 6])
    b = stream_bytes(keys, 10, 7, 40)
    bits = (b.unsqueeze(-1) >> torch.arange(8)) & 1
    x = (1 - 2 * bits).reshape(2, 7, -1)[..., :40].double()
    assert torch.equal(x, stream_inputs(keys, 10, 7, 40))


def test_stream_bad_input():
    with pytest.raises(ValueError, match="keys"):
        stream_inputs(torch.tensor([[1, 2]]), 0, 3, 8)
    with pytest.raises(ValueError, match="keys"):
        stream_inputs(torch.tensor([-1]), 0, 3, 8)
    with pytest.raises(ValueError, match="count"):
        stream_inputs(torch.tensor([1]), 0, 0, 8)
    with pytest.raises(ValueError, match="d must"):
        stream_inputs(torch.tensor([1]), 0, 3, 0)


@pytest.mark.parametrize("d", [12, 40, 64])
def test_streamed_gradients_equal_the_dense_empirical_gradient_at_every_n(d):
    keys = torch.arange(4) + 11
    inst = random_instances(4, d, 6, seed=2)
    ns = [1, 7, 100, 333, 1000]
    grads = stream_empirical_grads(
        keys, ns, inst.V, inst.theta0, -inst.theta0, inst.support, block=64
    )
    x_all = stream_inputs(keys, 0, ns[-1], d)
    for i, n in enumerate(ns):
        x = x_all[:, :n]
        ref = empirical_grad(
            x, sparse_xor_labels(x, inst.support), inst.V, inst.theta0, -inst.theta0
        )
        for got, want in zip(grads, ref):
            torch.testing.assert_close(got[i], want, atol=1e-15, rtol=1e-10)


def test_streamed_gradient_of_a_minibatch_uses_the_later_samples():
    keys = torch.tensor([1, 2])
    inst = random_instances(2, 16, 5)
    g, gt = stream_empirical_grads(
        keys, [50], inst.V, inst.theta0, inst.theta0 * 0.5, inst.support, start=70
    )
    x = stream_inputs(keys, 70, 50, 16)
    ref = empirical_grad(
        x, sparse_xor_labels(x, inst.support), inst.V, inst.theta0, inst.theta0 * 0.5
    )
    torch.testing.assert_close(g[0], ref[0], atol=1e-15, rtol=1e-10)
    torch.testing.assert_close(gt[0], ref[1], atol=1e-15, rtol=1e-10)


def test_streamed_gradient_bad_input():
    inst = random_instances(2, 16, 5)
    with pytest.raises(ValueError, match="increasing"):
        stream_empirical_grads(
            torch.tensor([1, 2]), [10, 10], inst.V, inst.theta0, -inst.theta0, inst.support
        )
    with pytest.raises(ValueError, match="one key per instance"):
        stream_empirical_grads(
            torch.tensor([1]), [10], inst.V, inst.theta0, -inst.theta0, inst.support
        )


def test_minibatch_sgd_on_streams_reads_consecutive_batches():
    inst = random_instances(3, 16, 6)
    keys = torch.tensor([7, 8, 9])
    eta = 0.3 * 16**2
    run = minibatch_sgd(inst.V, inst.theta0, inst.support, eta, 32, 2, keys=keys)
    # by hand: step 1 on samples 0..31, step 2 on samples 32..63 of each stream
    theta, theta_tilde = inst.theta0, -inst.theta0
    for t in range(2):
        x = stream_inputs(keys, 32 * t, 32, 16)
        g, gt = empirical_grad(x, sparse_xor_labels(x, inst.support), inst.V, theta, theta_tilde)
        theta, theta_tilde = theta - eta * g, theta_tilde - eta * gt
    from sxor.xor.population import population_loss

    torch.testing.assert_close(
        run.loss[-1], population_loss(inst.V, theta, theta_tilde, inst.support)
    )
    with pytest.raises(ValueError, match="keys"):
        minibatch_sgd(inst.V, inst.theta0, inst.support, eta, 32, 2, keys=keys[:2])
    with pytest.raises(ValueError, match="keys"):
        minibatch_sgd(
            inst.V, inst.theta0, inst.support, eta, 32, 2, keys=keys, generator=torch.Generator()
        )


def test_embedding_dim_grows_like_log_d_and_stays_below_d():
    assert [fs.embedding_dim(d) for d in (16, 32, 64, 128, 256)] == [12, 14, 16, 18, 20]
    assert all(fs.embedding_dim(d) < d for d in range(12, 5000))
    with pytest.raises(ValueError):
        fs.embedding_dim(11)


def test_n_grid_is_geometric_and_nested_across_limits():
    grid = fs.n_grid(16, 16 * 256)
    assert grid[0] == 16 and grid[-1] <= 16 * 256 and grid == sorted(set(grid))
    ratios = np.diff(np.log(grid))
    assert np.allclose(ratios, math.log(fs.GRID_RATIO), atol=0.05)
    assert fs.n_grid(16, 8 * 256) == grid[: len(fs.n_grid(16, 8 * 256))]
    with pytest.raises(ValueError):
        fs.n_grid(16, 8)


def _record(modes, ns=(10, 20, 40, 80), population_mode=0, d=16):
    return {"d": d, "n": list(ns), "mode": list(modes), "population_mode": population_mode}


def test_n_star_is_the_start_of_the_final_run_of_successes():
    assert fs.n_star(_record([0, 0, 0, 0])) == 10
    assert fs.n_star(_record([2, 0, 1, 0])) == 80  # a late failure resets n*
    assert fs.n_star(_record([1, 2, 0, 0])) == 40
    assert math.isinf(fs.n_star(_record([0, 0, 0, 2])))  # censored
    with pytest.raises(ValueError):
        fs.n_star({"n": [1, 2], "mode": [0]})


def test_fails_after_success_detects_a_late_failure():
    assert not fs.fails_after_success(_record([0, 0, 0, 0]))
    assert not fs.fails_after_success(_record([1, 2, 0, 0]))
    assert not fs.fails_after_success(_record([1, 1, 1, 1]))
    assert fs.fails_after_success(_record([2, 0, 1, 0]))
    assert fs.fails_after_success(_record([0, 0, 0, 2]))
    with pytest.raises(ValueError):
        fs.fails_after_success({"n": [1, 2], "mode": [0]})


def test_censored_quantile_is_defined_only_below_the_censored_fraction():
    v = np.array([1.0, 2.0, 3.0, math.inf])
    assert fs.censored_quantile(v, 0.5) == 2.0
    assert fs.censored_quantile(v, 0.75) == 3.0
    assert math.isinf(fs.censored_quantile(v, 0.9))
    assert fs.censored_quantile(np.arange(1.0, 101.0), 0.9) == 90.0
    with pytest.raises(ValueError):
        fs.censored_quantile(np.array([1.0, math.nan]), 0.5)


def test_n_star_table_conditions_on_the_population_step():
    recs = [
        _record([0, 0, 0, 0]),
        _record([1, 1, 1, 1], population_mode=2),
        _record([1, 0, 0, 0], d=32),
    ]
    assert {d: v.tolist() for d, v in fs.n_star_table(recs).items()} == {16: [10.0], 32: [20.0]}
    assert len(fs.n_star_table(recs, condition=False)[16]) == 2


def test_bootstrap_exponent_recovers_a_known_exponent_with_censoring():
    rng = np.random.default_rng(1)
    table = {}
    for d in (16, 32, 64, 128):
        v = d**1.5 * rng.lognormal(0, 0.3, 200)
        v[rng.random(200) < 0.1] = math.inf  # 10% censored: the median stays defined
        table[d] = v
    fit = fs.bootstrap_exponent(table, 0.5, num=200)
    assert fit["exponent_low"] < 1.5 < fit["exponent_high"] and abs(fit["exponent"] - 1.5) < 0.1
    assert fit["undefined"] == 0
    with pytest.raises(ValueError, match="censored"):
        fs.bootstrap_exponent(table, 0.95, num=10)


def test_fit_power_law():
    ds = np.array([16, 32, 64, 128])
    p, c = fs.fit_power_law(ds, 3.0 * ds**2.5)
    assert p == pytest.approx(2.5) and c == pytest.approx(3.0)
    with pytest.raises(ValueError):
        fs.fit_power_law([8, 16], [1.0, math.inf])


def test_last_failure_modes_and_mode_fractions():
    recs = [
        _record([2, 0, 0, 0]),
        _record([1, 1, 0, 0]),
        _record([0, 0, 0, 0]),
        _record([3, 3, 3, 3], population_mode=1),
    ]
    assert fs.last_failure_modes(recs) == {
        16: {"off_target": 1, "same_target": 1, "under_stepped": 0}
    }
    ns, frac = fs.mode_fractions_by_n(recs, 16)
    assert ns.tolist() == [10, 20, 40, 80] and np.allclose(frac.sum(-1), 1)
    assert np.allclose(frac[0], [1 / 3, 1 / 3, 1 / 3, 0])


def test_one_step_with_many_samples_agrees_with_the_population_step():
    d = 16
    inst = random_instances(12, d, fs.embedding_dim(d))
    keys = torch.tensor([fs.stream_key(d, k) for k in range(12)])
    codes = fs.one_step_modes(inst.V, inst.theta0, inst.support, keys, [16, 2**15])
    pop = fs.population_modes(inst.V, inst.theta0, inst.support)
    assert (
        codes[-1] == pop
    ).float().mean() >= 10 / 12  # 128 d^2 samples: nearly the population step
    assert (codes[0] == 0).float().mean() < (
        codes[-1] == 0
    ).float().mean()  # 16 samples: much worse


def test_sgd_configs_and_steps_to_rate():
    cfgs = fs.sgd_configs(256)  # every c lambda d >= 1 (256 / 256 = 1): no two c share a batch
    assert len(cfgs) == len(fs.SGD_LAMBDAS) * len(fs.SGD_BATCH_PER_STEP)
    rule = fs.SGD_STEP_RULE
    assert all(
        b * t <= rule["max_samples_over_d"] * 256 and t <= rule["max_steps"] for _, b, t in cfgs
    )
    assert all(
        t >= min(rule["min_steps"], rule["max_samples_over_d"] * 256 // b) for _, b, t in cfgs
    )
    small = fs.sgd_configs(16)  # at d = 16, small lambda: several c give B = 1
    assert len(small) == len(set(small)) < len(fs.SGD_LAMBDAS) * len(fs.SGD_BATCH_PER_STEP)
    assert fs.steps_to_rate([1, 2, 3, 4, -1]) == 4  # 80% of 5 have succeeded by step 4
    assert math.isinf(fs.steps_to_rate([1, 2, 3, -1, -1]))


def test_sgd_steps_follow_the_rule():
    # natural time 4 / lambda, between 64 and 512 steps, and at most 128 d samples
    assert fs.sgd_steps(1 / 256, 0, 64) == 512 and fs.sgd_steps(1 / 64, 0, 64) == 256
    assert fs.sgd_steps(1 / 8, 0, 64) == 64 and fs.sgd_steps(1 / 32, 0, 64) == 128
    assert fs.sgd_steps(1 / 64, 64, 64) == 128  # 128 * 64 samples / batch 64
    assert fs.sgd_batch(1 / 256, 2, 16) == 1 and fs.sgd_batch(1 / 16, 24, 256) == 384
    with pytest.raises(ValueError):
        fs.sgd_steps(0.0, 1, 16)
    with pytest.raises(ValueError):
        fs.sgd_steps(0.1, -1, 16)
    assert fs.refine_configs(16, [(1 / 64, 2), (1 / 64, 4), (1 / 32, 2)]) == [
        (1 / 64, 1, 256),
        (1 / 32, 1, 128),
    ]  # c = 2 and 4 at lambda = 1/64, d = 16: both B = 1


def _sgd(d, lam, batch, steps, first):
    return {
        "d": d,
        "lambda": lam,
        "batch": batch,
        "steps": steps,
        "config": f"l={lam}, B={batch}",
        "first_success": first,
    }


def test_sgd_optimum_position_finds_edges_and_runs_cut_short():
    recs = [
        _sgd(32, lam, b, 100, [t] * 5)
        for lam, b, t in [(0.5, 2, 10), (0.5, 4, 4), (0.5, 8, 3), (0.25, 4, 9), (1.0, 4, 8)]
    ]  # best: lambda 0.5, B 4, N 16
    pos = fs.sgd_optimum_position(recs, 32)
    assert pos["n"] == 16 and pos["lambda"] == 0.5 and pos["batch"] == 4 and pos["steps_used"] == 4
    assert not pos["lambda_edge"] and not pos["batch_edge"] and pos["cut_short"] == []
    assert pos["lambdas"] == [0.25, 0.5, 1.0] and pos["batches"] == [2, 4, 8] and pos["c"] == 4 / 16
    recs.append(_sgd(32, 0.125, 1, 10, [-1] * 5))  # never reaches 80%, read only 10 < 16 samples
    recs.append(_sgd(32, 0.125, 2, 10, [-1] * 5))  # read 20 >= 16 samples: cannot beat N = 16
    pos = fs.sgd_optimum_position(recs, 32)
    assert pos["cut_short"] == ["l=0.125, B=1"] and not pos["lambda_edge"]
    recs.append(_sgd(32, 0.5, 1, 100, [2] * 5))  # batch 1, N = 2: the best, on the batch edge
    pos = fs.sgd_optimum_position(recs, 32)
    assert pos["batch"] == 1 and pos["batch_edge"] and pos["cut_short"] == []


def test_bootstrap_with_a_cap_drops_no_resample():
    rng = np.random.default_rng(2)
    table, cap = {}, {}
    for d in (16, 32, 64, 128):
        v = d**2 * rng.lognormal(0, 1.0, 200)
        cap[d] = 4.0 * d**2
        v[v > cap[d]] = math.inf  # censored at the cap: about 8% of the sample
        table[d] = v
    with pytest.raises(ValueError, match="censored"):
        fs.bootstrap_exponent(table, 0.95, num=10)  # the 95% quantile lies above the cap
    bound = fs.bootstrap_exponent(table, 0.95, num=100, cap=cap)  # a bound: the cap itself, d^2
    assert (
        bound["undefined"] == 0
        and bound["at_cap"] == 100
        and bound["point_at_cap"] == [16, 32, 64, 128]
    )
    assert bound["exponent"] == pytest.approx(2.0) and bound["quantile"] == [
        cap[d] for d in sorted(cap)
    ]
    free = fs.bootstrap_exponent(table, 0.9, num=300)  # near the cap: some resamples censored
    capped = fs.bootstrap_exponent(table, 0.9, num=300, cap=cap)
    assert (
        free["undefined"] > 0 and capped["undefined"] == 0 and capped["at_cap"] == free["undefined"]
    )
    assert (
        capped["exponent"] == free["exponent"]
        and capped["exponent_low"] < 2 < capped["exponent_high"]
    )
    with pytest.raises(ValueError, match="cap"):
        fs.bootstrap_exponent(table, 0.5, num=10, cap={16: 1.0})


def test_n_star_on_a_cut_grid():
    r = _record([1, 0, 2, 0])  # n = 10, 20, 40, 80 at d = 16: 10/256 ... 80/256 d^2
    assert fs.n_star_capped(r, 80 / 256) == 80 and fs.n_star_capped(r, 20 / 256) == 20
    assert math.isinf(fs.n_star_capped(r, 40 / 256)) and math.isinf(fs.n_star_capped(r, 10 / 256))
    with pytest.raises(ValueError, match="no grid"):
        fs.n_star_capped(r, 1 / 256)
    recs = [r, _record([0, 0, 0, 0]), _record([1, 1, 1, 1], population_mode=2)]
    assert {d: v.tolist() for d, v in fs.capped_table(recs, 40 / 256).items()} == {
        16: [math.inf, 10.0]
    }


def test_sgd_best_and_bootstrap_recover_a_known_law():
    recs = []
    for d in (16, 32, 64):
        for batch in (d, 4 * d):
            # with batch d every instance succeeds at step d // 4: N = d^2 / 4; with 4d at step 2: N = 8 d
            first = [d // 4] * 10 if batch == d else [2] * 10
            recs.append({"d": d, "batch": batch, "config": f"B={batch}", "first_success": first})
        recs.append({"d": d, "batch": 0, "config": "population", "first_success": [1] * 10})
    best = fs.sgd_best(recs, 16)
    assert best["n"] == 64 and best["best"] == "B=16"  # d^2/4 = 64 < 8d = 128
    assert fs.sgd_best(recs, 64)["n"] == 512  # 8d = 512 < d^2/4 = 1024
    fit = fs.bootstrap_sgd(recs, num=20)
    assert fit["n"] == [64, 256, 512] and fit["exponent_low"] == pytest.approx(fit["exponent"])


def test_plots_draw_labelled_figures():
    import matplotlib

    matplotlib.use("Agg")
    recs = []
    for d in (16, 32, 64):
        for k in range(20):
            modes = [1] * (k % 5) + [0] * (8 - k % 5)
            recs.append({**_record(modes, ns=[d * 2**i for i in range(8)], d=d), "instance": k})
    sgd = [
        {"d": d, "batch": d, "config": "B=d", "first_success": [3, 4, 5, 2, -1] * 4}
        for d in (16, 32, 64)
    ]
    for fig in (fs.plot_n_star({"records": recs}), fs.plot_sgd({"records": sgd})):
        assert all(ax.get_xlabel() and ax.get_ylabel() and ax.has_data() for ax in fig.axes)
        matplotlib.pyplot.close(fig)


def test_n_star_by_split_sorts_by_m_D_squared():
    recs = []
    for k in range(8):
        D = 0.1 * (k + 1)
        modes = (
            [1] * (8 - k) + [0] * k if k else [1] * 8
        )  # smaller |D|: later success (k = 0: censored)
        recs.append({**_record(modes, ns=[16 * 2**i for i in range(8)]), "m": 4, "D": D})
    groups = fs.n_star_by_split(recs, bins=2)
    assert [g["instances"] for g in groups] == [4, 4] and groups[0]["censored"] == 1
    assert groups[0]["mD2_high"] < groups[1]["mD2_low"]
    assert groups[0]["median_n_over_d2"] > groups[1]["median_n_over_d2"]
    import matplotlib

    matplotlib.use("Agg")
    fig = fs.plot_modes({"records": recs}, ds=(16,))
    assert fig.axes[0].get_xlabel() and fig.axes[0].has_data()
    matplotlib.pyplot.close(fig)


def test_refine_points_hold_the_scans_optimum_and_its_neighbours():
    from sxor.results import committed_results

    scan = committed_results("finite-samples-sgd")
    full, ci = fs.SGD_REFINE_SIZES["full"], fs.SGD_REFINE_SIZES["ci"]
    assert full["d"] == scan["params"]["d"] and full["instances"] >= 200
    lams = list(fs.SGD_LAMBDAS)
    for d in full["d"]:
        pos = fs.sgd_optimum_position(scan["records"], d)
        points = fs.refine_configs(d, full["configs"][d])
        batches = {(lam, b) for lam, b, _ in points}
        assert (pos["lambda"], pos["batch"]) in batches  # the scan's optimum
        k = lams.index(pos["lambda"])
        # its neighbours in lambda (one step each way) and in batch at its lambda
        assert {lams[k - 1], lams[k + 1]} <= {lam for lam, _ in batches}
        at_best = sorted(b for lam, b in batches if lam == pos["lambda"])
        assert at_best[-1] > pos["batch"] and (at_best[0] < pos["batch"] or pos["batch"] == 1)
    for d in ci["d"]:  # the CI points are points of the full run
        assert set(fs.refine_configs(d, ci["configs"][d])) <= set(
            fs.refine_configs(d, full["configs"][d])
        )


def test_committed_one_step_run_is_the_full_config():
    from sxor.results import committed_results

    res = committed_results("finite-samples")
    cfg = fs.SIZES["full"]
    assert cfg["d"] == [16, 32, 64, 128, 256] and res["params"]["d"] == cfg["d"]
    assert res["params"]["instances"] == cfg["instances"] == 200
    keys = [(r["d"], r["instance"]) for r in res["records"]]
    assert sorted(keys) == [(d, k) for d in cfg["d"] for k in range(cfg["instances"])]
    for r in res["records"][:: cfg["instances"]]:  # one record per d: its grid is the protocol's
        assert r["n"] == fs.n_grid(r["d"], cfg["max_n_over_d2"] * r["d"] ** 2)
        assert r["m"] == fs.embedding_dim(r["d"]) and len(r["mode"]) == len(r["n"])
    # the chapter compares the SGD exponent with the one-step exponent over the SGD's d
    assert set(fs.SGD_REFINE_SIZES["full"]["d"]) < set(cfg["d"])


def test_paired_exponent_difference_pairs_the_instances():
    from sxor.results import committed_results

    one, sgd = committed_results("finite-samples"), committed_results("finite-samples-sgd-refine")
    top = {d: max(r["n"][-1] for r in one["records"] if r["d"] == d) for d in one["params"]["d"]}
    out = fs.paired_exponent_difference(one["records"], sgd["records"], top, num=40)
    common = {d: v for d, v in fs.n_star_table(one["records"]).items() if d <= 128}
    p_one = fs.bootstrap_exponent(common, 0.5, num=2, cap={d: top[d] for d in common})["exponent"]
    p_sgd = fs.bootstrap_sgd(sgd["records"], num=2)["exponent"]
    assert out["d"] == [16, 32, 64, 128]
    assert out["difference"] == pytest.approx(p_sgd - p_one, abs=1e-12)
    assert out["low"] <= out["difference"] <= out["high"] and out["undefined"] == 0
    # one-step instances that are not the SGD's instances 0..199 cannot be paired
    shifted = [dict(r, instance=r["instance"] + 1) for r in one["records"]]
    with pytest.raises(ValueError, match="instances"):
        fs.paired_exponent_difference(shifted, sgd["records"], top, num=2)
