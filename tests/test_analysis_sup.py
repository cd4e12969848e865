"""The per-input error bound and the one home of the grid's step-size constant."""

from __future__ import annotations

import itertools

import torch

from sxor.xor import analysis
from sxor.xor.model import predict_from_weights


def _sup_error(g, h, support):
    d = g.shape[-1]
    x = torch.tensor(list(itertools.product([-1.0, 1.0], repeat=d)), dtype=torch.float64)
    y = -x[:, support[0]] * x[:, support[1]]
    return float((predict_from_weights(x, g, h) - y).abs().max())


def test_sup_error_bound_holds_on_every_input_and_is_tight_for_pure_heads():
    gen = torch.Generator().manual_seed(0)
    support = torch.tensor([1, 4])
    for _ in range(50):
        g = torch.softmax(3 * torch.randn(7, generator=gen, dtype=torch.float64), -1)
        h = torch.softmax(3 * torch.randn(7, generator=gen, dtype=torch.float64), -1)
        assert _sup_error(g, h, support) <= float(analysis.sup_error_bound(g, h, support)) + 1e-12
    g, h = torch.zeros(7, dtype=torch.float64), torch.zeros(7, dtype=torch.float64)
    g[4], h[1] = 1.0, 1.0
    assert float(analysis.sup_error_bound(g, h, support)) == 0.0 == _sup_error(g, h, support)


def test_mass_09_on_different_targets_bounds_the_error_by_038():
    # the chapter's lemma: masses >= mu on different targets give |f - y| <= 2 (1 - mu^2) < 1
    g = torch.tensor([0.9, 0.0, 0.05, 0.05], dtype=torch.float64)
    h = torch.tensor([0.0, 0.9, 0.1, 0.0], dtype=torch.float64)
    bound = float(analysis.sup_error_bound(g, h, torch.tensor([0, 1])))
    assert abs(bound - 2 * (1 - 0.81)) < 1e-12


def test_grid_c_has_one_home():
    from sxor.experiments import one_step

    assert one_step.GRID_C == analysis.GRID_C == 100.0
    assert analysis.grid_eta(64) == 100.0 * 64**2 * torch.log(torch.tensor(64.0, dtype=torch.float64)).item()
