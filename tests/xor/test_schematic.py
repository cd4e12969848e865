"""The schematic of the two-head model draws the model's own numbers and refuses bad input."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

import sxor
from sxor.xor.schematic import MAX_POSITIONS, draw_two_head_model


def instance(d=6, m=5, seed=0):
    gen = torch.Generator().manual_seed(seed)
    V = sxor.sphere_embeddings(d, m, generator=gen)
    theta, theta_tilde = 3 * torch.randn(2, m, generator=gen, dtype=torch.float64)
    x = torch.tensor([1.0, -1.0] * (d // 2) + [1.0] * (d % 2), dtype=torch.float64)
    return x, V, theta, theta_tilde


def test_numbers_on_the_figure_are_the_model():
    x, V, theta, theta_tilde = instance()
    support = torch.tensor([1, 4])
    fig = draw_two_head_model(x, V, theta, theta_tilde, support)
    info = fig.axes[0].schematic
    gamma, gamma_tilde = sxor.attention(V, theta), sxor.attention(V, theta_tilde)
    assert torch.allclose(torch.tensor(info["gamma"], dtype=torch.float64), gamma, atol=1e-15)
    assert torch.allclose(
        torch.tensor(info["gamma_tilde"], dtype=torch.float64), gamma_tilde, atol=1e-15
    )
    f = sxor.predict(x[None], V, theta, theta_tilde)[0]
    assert abs(info["f"] - float(f)) < 1e-12
    assert abs(info["head_outputs"][0] * info["head_outputs"][1] + info["f"]) < 1e-12
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert f"{info['f']:+.2f}" in texts and "head 1" in texts and "head 2" in texts
    label = -x[1] * x[4]
    assert f"y = {int(label):+d}" in texts
    plt.close(fig)


def test_line_widths_follow_the_weights():
    x, V, theta, theta_tilde = instance(d=8, m=6, seed=2)
    fig = draw_two_head_model(x, V, theta, theta_tilde)
    lines = fig.axes[0].lines
    assert len(lines) == 2 * 8  # one line per position and head
    for k, w in enumerate((sxor.attention(V, theta), sxor.attention(V, theta_tilde))):
        widths = torch.tensor([line.get_linewidth() for line in lines[8 * k : 8 * (k + 1)]])
        assert torch.equal(torch.argsort(widths), torch.argsort(w))
    plt.close(fig)


def test_draws_on_a_given_axes():
    x, V, theta, theta_tilde = instance()
    fig, ax = plt.subplots()
    assert draw_two_head_model(x, V, theta, theta_tilde, ax=ax) is fig
    plt.close(fig)


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda a: dict(a, x=a["x"][:-1]), "x must have shape"),
        (lambda a: dict(a, x=2 * a["x"]), "entries in"),
        (lambda a: dict(a, theta=a["theta"][:-1]), "theta"),
        (lambda a: dict(a, V=a["V"][None]), "no batch"),
        (lambda a: dict(a, support=torch.tensor([2, 2])), "i\\* != j\\*"),
        (lambda a: dict(a, support=torch.tensor([0, 9])), "out of range"),
    ],
)
def test_bad_input_is_refused(change, match):
    x, V, theta, theta_tilde = instance()
    args = {"x": x, "V": V, "theta": theta, "theta_tilde": theta_tilde, "support": None}
    with pytest.raises(ValueError, match=match):
        draw_two_head_model(**change(args))


def test_too_many_positions_is_refused():
    x, V, theta, theta_tilde = instance(d=MAX_POSITIONS + 2)
    with pytest.raises(ValueError, match="at most"):
        draw_two_head_model(x, V, theta, theta_tilde)


def test_wrong_type_is_refused():
    x, V, theta, theta_tilde = instance()
    with pytest.raises(TypeError):
        draw_two_head_model(x.tolist(), V, theta, theta_tilde)
