"""The FFNN baseline: shapes, parameter count, the exact width-2 network, training and the width search."""

from __future__ import annotations

import math
import statistics

import pytest
import torch

import sxor
from sxor.xor.ffnn import (
    WIDTH1_LOSS_FLOOR,
    FFNNParams,
    exact_xor_network,
    ffnn_forward,
    ffnn_loss,
    init_ffnn,
    parameter_count,
    smallest_reliable_width,
    train_ffnn,
    width1_loss_floor_network,
    width_records,
)


def test_parameter_count_counts_every_tensor_entry():
    params = init_ffnn(13, 5, restarts=1)
    assert sum(p.numel() for p in params) == parameter_count(13, 5) == 5 * 15 + 1


def test_forward_matches_torch_nn_per_restart():
    params = init_ffnn(6, 3, restarts=2, generator=torch.Generator().manual_seed(0))
    x = sxor.all_inputs(6)
    out = ffnn_forward(x, params)
    assert out.shape == (2, 64) and out.dtype == torch.float64
    for r in range(2):
        net = torch.nn.Sequential(
            torch.nn.Linear(6, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1)
        ).double()
        with torch.no_grad():
            net[0].weight.copy_(params.W[r]), net[0].bias.copy_(params.b[r])
            net[2].weight.copy_(params.a[r].unsqueeze(0)), net[2].bias.copy_(params.c[r].view(1))
        torch.testing.assert_close(out[r], net(x).squeeze(-1), rtol=0, atol=1e-14)


def test_init_is_the_linear_layer_default_range_and_respects_dtype():
    params = init_ffnn(
        100, 50, restarts=3, dtype=torch.float32, generator=torch.Generator().manual_seed(1)
    )
    assert all(p.dtype == torch.float32 for p in params)
    assert float(params.W.abs().max()) <= 1 / math.sqrt(100)
    assert float(params.a.abs().max()) <= 1 / math.sqrt(50)
    assert float(params.W.abs().max()) > 0.9 / math.sqrt(100)


@pytest.mark.parametrize("d,support", [(2, (0, 1)), (7, (5, 2)), (10, (0, 9))])
def test_exact_network_computes_sparse_xor_on_the_whole_cube(d, support):
    x = sxor.all_inputs(d)
    y = sxor.sparse_xor_labels(x, torch.tensor(support))
    params = exact_xor_network(d, support)
    assert torch.equal(ffnn_forward(x, params)[0], y)
    loss, se = ffnn_loss(x, y, params)
    assert float(loss) == 0.0 and float(se) == 0.0


def test_training_reaches_the_target_and_reports_consistent_counts():
    threads = torch.get_num_threads()
    runs = train_ffnn(6, [1, 4], (1, 4), restarts=3, max_steps=400, seed=0)
    assert torch.get_num_threads() == threads  # the single-threaded loop restores the setting
    assert runs.test_loss.shape == runs.steps.shape == (2, 3)
    assert not runs.success[0].any()  # width 1 cannot go below 1/3
    assert bool((runs.test_loss[0] > WIDTH1_LOSS_FLOOR - 0.02).all())
    assert runs.success[1].any()
    assert bool(((runs.steps > 0) | (runs.steps == -1)).all())
    assert torch.equal(runs.samples[runs.steps > 0], 256 * runs.steps[runs.steps > 0])
    # the reported test loss is the kept network's loss on fresh samples: recompute it on others
    x, y = sxor.sample_sparse_xor(20000, 6, (1, 4), generator=torch.Generator().manual_seed(99))
    for k in range(2):
        fresh, se = ffnn_loss(x, y, runs.params[k])
        assert bool(
            (torch.abs(fresh - runs.test_loss[k]) < 5 * (se + runs.test_loss_se[k]) + 1e-9).all()
        )


def test_a_width_does_not_depend_on_the_widths_beside_it():
    alone = train_ffnn(5, 3, (0, 4), restarts=2, max_steps=100, seed=4)
    together = train_ffnn(5, [2, 3, 1], (0, 4), restarts=2, max_steps=100, seed=4)
    torch.testing.assert_close(alone.test_loss[0], together.test_loss[1], rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(alone.params[0].W, together.params[1].W, rtol=1e-12, atol=1e-14)
    assert torch.equal(alone.steps[0], together.steps[1])


def test_hand_written_step_is_autograd_plus_torch_adam():
    """The batched loop's backward pass and Adam equal autograd and torch.optim.Adam on the same batches."""
    d, w, R, T = 7, 3, 2, 5
    runs = train_ffnn(d, w, (2, 6), restarts=R, max_steps=T, eval_every=1000, seed=11)
    init = init_ffnn(d, w, restarts=R, generator=torch.Generator().manual_seed(1_000_003 * 11 + w))
    leaves = [p.clone().requires_grad_(True) for p in init]
    opt = torch.optim.Adam(leaves, lr=1e-2)
    gen = torch.Generator().manual_seed(11)
    for _ in range(T):
        x = torch.randint(0, 2, (R, 256, d), generator=gen).double().mul_(-2).add_(1)
        y = sxor.sparse_xor_labels(x, torch.tensor([2, 6]))
        loss, _ = ffnn_loss(x, y, FFNNParams(*leaves))
        opt.zero_grad()
        loss.sum().backward()
        opt.step()
    for mine, ref in zip(runs.params[0], leaves):
        torch.testing.assert_close(mine, ref.detach(), rtol=1e-10, atol=1e-12)


def test_width_one_floor_is_attained_and_not_beaten():
    for d, support in [(4, (0, 3)), (7, (5, 2))]:
        x = sxor.all_inputs(d)
        y = sxor.sparse_xor_labels(x, torch.tensor(support))
        loss, _ = ffnn_loss(x, y, width1_loss_floor_network(d, support))
        assert abs(float(loss) - WIDTH1_LOSS_FLOOR) < 1e-14
    # random width-1 networks on the whole cube never go below 1/3
    gen = torch.Generator().manual_seed(0)
    x = sxor.all_inputs(5)
    y = sxor.sparse_xor_labels(x, torch.tensor([1, 3]))
    params = FFNNParams(
        torch.randn(4000, 1, 5, generator=gen, dtype=torch.float64),
        torch.randn(4000, 1, generator=gen, dtype=torch.float64),
        3 * torch.randn(4000, 1, generator=gen, dtype=torch.float64),
        torch.randn(4000, generator=gen, dtype=torch.float64),
    )
    loss, _ = ffnn_loss(x, y, params)
    assert float(loss.min()) >= WIDTH1_LOSS_FLOOR - 1e-12


def test_width_records_and_reliability_on_a_small_run():
    runs = train_ffnn(6, [1, 3], (0, 5), restarts=4, max_steps=300, seed=3)
    records = width_records(runs)
    assert [r["width"] for r in records] == [1, 3]
    assert records[0]["successes"] == 0 and records[0]["median_samples"] is None
    assert records[0]["steps"] == [-1] * 4 and records[0]["samples_per_success"] is None
    r = records[1]
    assert r["parameters"] == parameter_count(6, 3) and r["restarts"] == 4
    ok = [s for s in r["steps"] if s > 0]
    assert len(ok) == r["successes"] >= 1
    assert r["median_samples"] == pytest.approx(256 * statistics.median(ok))
    spent = sum(s if s > 0 else 300 for s in r["steps"]) * 256
    assert r["samples_per_success"] == pytest.approx(spent / r["successes"])
    synthetic = [
        {"d": 8, "width": 1, "successes": 0, "restarts": 10},
        {"d": 8, "width": 2, "successes": 3, "restarts": 10},
        {"d": 8, "width": 3, "successes": 9, "restarts": 10},
        {"d": 8, "width": 4, "successes": 10, "restarts": 10},
    ]
    assert smallest_reliable_width(synthetic, 0.9)[8]["width"] == 3
    assert smallest_reliable_width(synthetic, 0.1)[8]["width"] == 2
    assert smallest_reliable_width(synthetic, 1.0)[8]["width"] == 4
    assert 16 not in smallest_reliable_width(synthetic, 0.5)


def test_experiment_helpers_on_synthetic_records():
    from sxor.experiments import why_transformer as exp

    grid = {
        "records": [
            {"d": 64, "m": 4, "seeds": 100, "success": 40},
            {"d": 64, "m": 8, "seeds": 100, "success": 80},
            {"d": 64, "m": 16, "seeds": 100, "success": 95},
            {"d": 128, "m": 4, "seeds": 100, "success": 10},
            {"d": 128, "m": 8, "seeds": 100, "success": 50},
            {"d": 128, "m": 16, "seeds": 100, "success": 85},
        ]
    }
    m = exp.transformer_smallest_m(grid, 0.9)
    # the grid m from which every grid m reaches 90% (the crossing lies between 8 and 16)
    assert m[64] == 16 and math.isnan(m[128])
    records = [
        {"d": 8, "width": w, "parameters": parameter_count(8, w), "restarts": 10, "successes": s}
        for w, s in [(1, 0), (2, 4), (3, 9), (4, 10)]
    ]
    assert exp.smallest_parameters(records, 0.9) == {8: parameter_count(8, 3)}
    assert exp.smallest_parameters(records, 1e-9) == {8: parameter_count(8, 2)}
    ds, widths, rates = exp.rate_table(records)
    assert ds == [8] and widths == [1, 2, 3, 4] and rates[:, 0].tolist() == [0.0, 0.4, 0.9, 1.0]
    fig = exp.plot_parameters({"records": records}, grid)
    assert fig.axes[0].get_xscale() == "log" and fig.axes[0].get_xlabel() == "input length d"
    assert exp.plot_rates({"records": records}).axes[0].get_ylabel() == "hidden width w"


def test_clopper_pearson_interval():
    from sxor.experiments.why_transformer import clopper_pearson

    lo, hi = clopper_pearson(9, 10)
    assert lo == pytest.approx(0.5550, abs=1e-4) and hi == pytest.approx(0.9975, abs=1e-4)
    assert clopper_pearson(0, 10)[0] == 0.0 and clopper_pearson(10, 10)[1] == 1.0
    assert clopper_pearson(0, 10)[1] == pytest.approx(1 - 0.025**0.1, abs=1e-9)
    with pytest.raises(ValueError):
        clopper_pearson(11, 10)


def test_a_run_stops_only_when_the_test_check_confirms_validation():
    # one validation sample: a width-1 network fits it long before the population loss is small, so
    # validation passes at checks where the test set does not; such runs must keep training to the budget
    runs = train_ffnn(6, [1, 4], (1, 4), restarts=6, max_steps=300, n_val=1, seed=2)
    assert int(runs.rejected[0].sum()) > 0
    assert not runs.success[0].any() and bool((runs.steps[0] == -1).all())
    ok = runs.success
    assert bool((runs.test_loss[ok] < runs.target).all())
    assert runs.held_out_loss.shape == runs.steps.shape
    records = width_records(runs)
    assert records[0]["rejected_runs"] == int((runs.rejected[0] > 0).sum()) > 0
    assert (
        records[0]["samples_per_success"] is None
    )  # rejected runs are failures, charged the budget
    r = records[1]
    assert r["held_out_failures"] == int((ok[1] & (runs.held_out_loss[1] >= runs.target)).sum())
    if r["successes"]:
        assert r["max_held_out_loss"] == pytest.approx(float(runs.held_out_loss[1][ok[1]].max()))


def test_the_interval_rule_is_the_same_for_both_models():
    from sxor.experiments.why_transformer import (
        consistent_with,
        ffnn_consistent_width,
        smallest_consistent,
        transformer_consistent_m,
    )

    assert consistent_with(7, 10) and not consistent_with(6, 10)  # upper ends 0.933 and 0.878
    assert consistent_with(888, 1000) and not consistent_with(870, 1000)
    # a consistent size followed by one shown below the rate does not count
    assert smallest_consistent([(1, 9, 10), (2, 2, 10), (3, 10, 10)]) == 3
    assert smallest_consistent([(1, 1, 10), (2, 2, 10)]) is None
    records = [
        {"d": 8, "width": w, "successes": s, "restarts": 10}
        for w, s in [(1, 0), (2, 6), (3, 7), (4, 10)]
    ]
    assert ffnn_consistent_width(records)[8]["width"] == 3
    grid = {
        "records": [
            {"d": 64, "m": m, "success": s, "seeds": 1000}
            for m, s in [(8, 712), (12, 870), (16, 888), (20, 904)]
        ]
    }
    assert transformer_consistent_m(grid) == {64: 16}


def test_join_restarts_appends_the_second_batch_after_the_first():
    from sxor.experiments import why_transformer as exp

    first = train_ffnn(6, [1, 3, 4], (0, 5), restarts=3, max_steps=150, seed=6)
    more = train_ffnn(6, [3, 4], (0, 5), restarts=2, max_steps=150, seed=6 + exp.MORE_SEED)
    rows = exp.join_restarts(first, more)
    assert [row.widths for row in rows] == [(1,), (3,), (4,)]
    assert rows[0].steps.shape == (1, 3) and rows[1].steps.shape == (1, 5)
    for k, row in enumerate(rows):
        torch.testing.assert_close(
            row.steps[0, :3], first.steps[k]
        )  # the first batch is kept as it was
        torch.testing.assert_close(row.held_out_loss[0, :3], first.held_out_loss[k])
        torch.testing.assert_close(row.params[0].W[:3], first.params[k].W)
    torch.testing.assert_close(rows[2].steps[0, 3:], more.steps[1])
    torch.testing.assert_close(rows[2].params[0].a[3:], more.params[1].a)
    joined = width_records(rows[2])[0]
    assert (
        joined["restarts"] == 5
        and joined["steps"] == width_records(first)[2]["steps"] + width_records(more)[1]["steps"]
    )
    assert (
        joined["successes"]
        == width_records(first)[2]["successes"] + width_records(more)[1]["successes"]
    )
    with pytest.raises(ValueError, match="widths"):
        exp.join_restarts(more, first)
    with pytest.raises(ValueError, match="max_steps"):
        exp.join_restarts(first, train_ffnn(6, [3], (0, 5), restarts=1, max_steps=100, seed=7))


def test_the_full_size_measures_widths_2_to_5_from_50_restarts_and_ci_matches_it():
    from sxor.experiments.why_transformer import SIZES

    full, ci = SIZES["full"], SIZES["ci"]
    restarts = {
        w: full["restarts"]
        + (full["more_restarts"]["restarts"] if w in full["more_restarts"]["widths"] else 0)
        for w in full["widths"]
    }
    assert all(restarts[w] >= 50 for w in (2, 3, 4, 5))
    # the CI run is compared cell for cell with the full run: its widths must have the same restarts
    more = ci.get("more_restarts") or {"widths": [], "restarts": 0}
    assert all(
        ci["restarts"] + (more["restarts"] if w in more["widths"] else 0) == restarts[w]
        for w in ci["widths"]
    )


#: Stopping steps of the committed 10-restart run of widths 2-5 (before the second batch of
#: restarts was added): the first 10 restarts of the committed file must still be exactly these.
_FIRST_TEN = {
    (8, 2): [-1, -1, -1, 1725, -1, -1, -1, 100, -1, -1],
    (8, 3): [100, 200, -1, -1, 100, 150, 150, -1, 200, 100],
    (8, 4): [175, 125, 125, 250, 100, 100, 125, 100, 100, 125],
    (8, 5): [125, 75, 100, -1, 125, 75, 75, 125, 75, 125],
    (16, 2): [-1, 200, 17075, -1, -1, -1, -1, -1, 125, 175],
    (16, 3): [-1, 125, 150, 125, 150, -1, -1, 150, 125, -1],
    (16, 4): [150, 100, 125, 125, 150, 125, 125, 125, 150, 100],
    (16, 5): [75, 75, 125, 100, 100, 100, 100, -1, 100, 125],
    (32, 2): [125, 125, -1, 200, 125, -1, -1, 125, -1, -1],
    (32, 3): [150, -1, 100, 225, 125, 125, 150, 125, 125, 100],
    (32, 4): [100, 150, 150, 100, 125, 125, 125, 125, 150, 150],
    (32, 5): [125, 75, 100, 125, 75, 100, 100, 100, 175, 100],
    (64, 2): [100, 175, -1, -1, -1, -1, -1, 125, 125, 125],
    (64, 3): [125, 125, 150, -1, 125, 125, 125, 225, 6500, 7725],
    (64, 4): [175, 200, 125, 100, 150, 125, 6125, 125, 100, 150],
    (64, 5): [100, 100, 125, 150, 75, 125, 75, 100, 125, 150],
    (128, 2): [-1, 5425, -1, -1, 225, 200, 200, 250, -1, 125],
    (128, 3): [125, -1, -1, 125, 200, 450, 175, 175, 175, 125],
    (128, 4): [150, 100, 175, 175, 175, 125, 150, 100, 125, 150],
    (128, 5): [125, 175, 175, 125, 125, 125, 125, 150, 125, 100],
}


def test_committed_run_keeps_the_first_ten_restarts_and_has_50_for_widths_2_to_5():
    from sxor.results import committed_results

    records = {(r["d"], r["width"]): r for r in committed_results("why-transformer")["records"]}
    for key, steps in _FIRST_TEN.items():
        assert records[key]["steps"][:10] == steps, key
        assert records[key]["restarts"] == len(records[key]["steps"]) >= 50
        assert records[key]["successes"] == sum(s > 0 for s in records[key]["steps"])


def test_interval_threshold_and_matched_reliability_on_synthetic_data():
    from sxor.experiments import why_transformer as exp

    assert [exp.interval_threshold(n) for n in (10, 50, 1000)] == [7, 41, 881]
    with pytest.raises(ValueError):
        exp.interval_threshold(0)
    records = [
        {"d": 64, "width": w, "parameters": parameter_count(64, w), "restarts": 50, "successes": s}
        for w, s in [(2, 20), (3, 42), (4, 46), (5, 50)]
    ]
    grid = {
        "records": [
            {"d": 64, "m": m, "seeds": 1000, "success": s}
            for m, s in [(8, 700), (12, 885), (16, 905)]
        ]
        + [{"d": 128, "m": m, "seeds": 1000, "success": s} for m, s in [(8, 600), (12, 800)]]
    }
    rows = exp.matched_reliability(records, grid)
    assert [r["d"] for r in rows] == [64, 128]
    r = rows[0]
    assert (
        r["ffnn_point"]["size"] == 4 and r["ffnn_interval"]["size"] == 3
    )  # 42/50 passes the interval rule only
    assert r["ffnn_interval"]["interval"] == pytest.approx(exp.clopper_pearson(42, 50))
    assert r["tf_point"]["size"] == 16 and r["tf_point"]["parameters"] == 32  # a size that was run
    assert r["tf_point"]["successes"] == 905 and r["tf_interval"]["size"] == 12
    assert r["ratio_point"] == pytest.approx(parameter_count(64, 4) / 32)
    assert r["ratio_interval"] == pytest.approx(parameter_count(64, 3) / 24)
    assert r["floor_ratio"] == pytest.approx(133 / 32)
    assert (
        rows[1]["ffnn_point"] is None
        and rows[1]["tf_point"] is None
        and rows[1]["ratio_point"] is None
    )
    fig = exp.plot_reliability({"records": records}, grid)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "success rate, exact 95% interval" and ax.get_legend() is not None
    assert len(ax.get_legend().get_texts()) == 4 + 2  # four widths, the transformer by each rule


def test_parameters_figure_keeps_its_legend_off_the_axis_label():
    from sxor.experiments import why_transformer as exp

    records = [
        {"d": d, "width": w, "parameters": parameter_count(d, w), "restarts": 50, "successes": s}
        for d in (64, 128)
        for w, s in [(2, 20), (3, 46)]
    ]
    grid = {
        "records": [
            {"d": d, "m": m, "seeds": 1000, "success": s}
            for d in (64, 128)
            for m, s in [(8, 700), (16, 950)]
        ]
    }
    import matplotlib.pyplot as plt

    from sxor import book

    with plt.rc_context():
        book.use_style()  # the style the chapter draws in
        fig = exp.plot_parameters({"records": records}, grid)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ax = fig.axes[0]
        legend = ax.get_legend().get_window_extent(renderer)
        label = ax.xaxis.label.get_window_extent(renderer)
        plt.close(fig)
    assert legend.y1 < label.y0  # the legend sits wholly below the x-axis label
