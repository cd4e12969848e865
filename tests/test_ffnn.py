"""The FFNN baseline: shapes, parameter count, the exact width-2 network, training and the width search."""

from __future__ import annotations

import math

import pytest
import torch

import sxor
from sxor.xor.ffnn import (
    FFNNParams,
    exact_xor_network,
    ffnn_forward,
    ffnn_loss,
    init_ffnn,
    parameter_count,
    smallest_width,
    train_ffnn,
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
        net = torch.nn.Sequential(torch.nn.Linear(6, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1)).double()
        with torch.no_grad():
            net[0].weight.copy_(params.W[r]), net[0].bias.copy_(params.b[r])
            net[2].weight.copy_(params.a[r].unsqueeze(0)), net[2].bias.copy_(params.c[r].view(1))
        torch.testing.assert_close(out[r], net(x).squeeze(-1), rtol=0, atol=1e-14)


def test_init_is_the_linear_layer_default_range_and_respects_dtype():
    params = init_ffnn(100, 50, restarts=3, dtype=torch.float32, generator=torch.Generator().manual_seed(1))
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
    out = train_ffnn(6, 4, (1, 4), restarts=3, max_steps=400, seed=0)
    assert torch.get_num_threads() == threads  # the single-threaded loop restores the setting
    assert out.test_loss.shape == (3,)
    ok = out.test_loss < 0.01
    assert ok.any()
    assert bool(((out.steps > 0) | (out.steps == -1)).all())
    assert torch.equal(out.samples[out.steps > 0], 256 * out.steps[out.steps > 0])
    # the reported test loss is the trained network's loss on fresh samples: recompute it on others
    x, y = sxor.sample_sparse_xor(20000, 6, (1, 4), generator=torch.Generator().manual_seed(99))
    fresh, se = ffnn_loss(x, y, out.params)
    assert bool((torch.abs(fresh - out.test_loss) < 5 * (se + out.test_loss_se) + 1e-9).all())


def test_width_one_cannot_learn_but_the_search_finds_a_wider_network():
    records = smallest_width(6, [1, 4], (0, 5), restarts=3, max_steps=300, seed=3)
    assert [r["width"] for r in records] == [1, 4]
    assert records[0]["successes"] == 0 and records[0]["steps"] is None
    assert records[0]["best_test_loss"] > 0.1
    assert records[1]["successes"] >= 1 and records[1]["test_loss"] < 0.01
    assert records[1]["parameters"] == parameter_count(6, 4)


def test_bad_input_raises():
    with pytest.raises(ValueError, match="width"):
        init_ffnn(5, 0)
    with pytest.raises(ValueError, match="d must be"):
        parameter_count(1, 3)
    with pytest.raises(ValueError, match="last dimension"):
        ffnn_forward(torch.ones(3, 4), init_ffnn(5, 2))
    with pytest.raises(ValueError, match="optimizer"):
        train_ffnn(5, 2, (0, 1), optimizer="lbfgs")
    with pytest.raises(ValueError, match="i\\* != j\\*"):
        train_ffnn(5, 2, (1, 1))
    with pytest.raises(ValueError, match="increasing"):
        smallest_width(5, [2, 1], (0, 1))
    assert isinstance(exact_xor_network(4, (0, 1)), FFNNParams)


def test_experiment_helpers_on_synthetic_records():
    from sxor.experiments import why_transformer as exp

    records = [
        {"model": "transformer", "d": 8, "m": 4, "seeds": 100, "successes": 40},
        {"model": "transformer", "d": 8, "m": 8, "seeds": 100, "successes": 60},
        {"model": "transformer", "d": 8, "m": 16, "seeds": 100, "successes": 80},
        {"model": "ffnn", "d": 8, "width": 1, "parameters": 11, "steps": None},
        {"model": "ffnn", "d": 8, "width": 2, "parameters": 21, "steps": 100, "samples": 25600},
    ]
    assert exp.transformer_smallest_m(records, 0.5)[8] == pytest.approx(6.0)  # halfway from 4 to 8
    assert math.isnan(exp.transformer_smallest_m(records, 0.95)[8])
    assert exp.ffnn_smallest(records)[8]["width"] == 2
    fig = exp.plot_parameters({"records": records})
    assert fig.axes[0].get_xscale() == "log" and fig.axes[0].get_xlabel() == "input length d"


def test_transformer_success_counts_match_a_direct_computation():
    from sxor.experiments import why_transformer as exp
    from sxor.xor.metrics import success
    from sxor.xor.sweeps import random_instances

    (rec,) = exp.transformer_success(16, [6], 30)
    inst = random_instances(30, 16, 6, seed=0)
    out = sxor.one_step(inst.V, inst.theta0, inst.support, rec["eta"])
    direct = int(success(out.loss, out.attention, out.attention_tilde, inst.support).sum())
    assert rec["successes"] == direct and rec["parameters"] == 12
