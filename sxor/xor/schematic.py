r"""A schematic of the two-head attention model of Part I, drawn from actual numbers.

:func:`draw_two_head_model` draws one forward pass of

.. math::
   \begin{aligned}
   \gamma &= \operatorname{softmax}(V\theta),\quad
   \tilde\gamma = \operatorname{softmax}(V\tilde\theta),\\
   f(x) &= -(\gamma\cdot x)(\tilde\gamma\cdot x)
   \end{aligned}

for a small input: the bits :math:`x_i` are the values, the frozen keys :math:`v_i \in S^{m-1}`
sit beside them, the two learnable queries :math:`\theta,\tilde\theta` feed the two softmax heads,
and the line from position :math:`i` to a head is drawn with a width proportional to the weight
that head gives to :math:`i`. The numbers printed on the figure (the weights, the two head
outputs, :math:`f(x)`) are computed by :func:`sxor.xor.model.attention` and
:func:`sxor.xor.model.predict_from_weights`, so the picture cannot disagree with the model.

The layout is one column of positions on the left, the two heads in the middle and the product on
the right, at most :data:`MAX_POSITIONS` positions, so that it stays legible when the page is
390 px wide.
"""

from __future__ import annotations

import torch

from .checks import check_embeddings, check_query, check_support, check_tensor
from .model import attention, predict_from_weights

#: The most positions the schematic draws (more would not be legible on a phone).
MAX_POSITIONS = 10

#: The grey of the frozen parts (the learnable queries and their heads are coloured).
FROZEN = "0.45"
#: The colours of head 1 and head 2.
HEAD_COLORS = ("tab:blue", "tab:orange")


def _check_inputs(x, V, theta, theta_tilde, support) -> tuple[int, int]:
    d, m = check_embeddings(V)
    if d > MAX_POSITIONS:
        raise ValueError(f"V has d={d} rows; the schematic draws at most {MAX_POSITIONS} positions")
    if V.dim() != 2:
        raise ValueError(
            f"V must be one matrix of shape [d, m] (no batch), got shape {tuple(V.shape)}"
        )
    check_query("theta", theta, m, like=V)
    check_query("theta_tilde", theta_tilde, m, like=V)
    if theta.dim() != 1 or theta_tilde.dim() != 1:
        raise ValueError("theta and theta_tilde must be vectors of shape [m] (no batch)")
    x = check_tensor("x", x, 1, real=True, finite=True)
    if x.shape != (d,):
        raise ValueError(f"x must have shape [d] = [{d}], got shape {tuple(x.shape)}")
    if not bool(((x == 1) | (x == -1)).all()):
        raise ValueError("x must have entries in {+1, -1}")
    if support is not None:
        check_support(support, d)
        if support.dim() != 1:
            raise ValueError(
                f"support must have shape [2] (no batch), got shape {tuple(support.shape)}"
            )
    return d, m


def draw_two_head_model(
    x: torch.Tensor,
    V: torch.Tensor,
    theta: torch.Tensor,
    theta_tilde: torch.Tensor,
    support: torch.Tensor | None = None,
    ax=None,
):
    r"""Draw the two-head model's forward pass on one input.

    Parameters
    ----------
    x
        One input, shape ``[d]``, entries in ``{+1, -1}``, ``2 <= d <= MAX_POSITIONS``.
    V
        Frozen keys, shape ``[d, m]`` (rows on the sphere; one instance, no batch).
    theta, theta_tilde
        The two queries, shape ``[m]``, same dtype and device as ``V``.
    support
        Optional support ``(i*, j*)``, shape ``[2]``: these positions are marked and the label
        :math:`y=-x_{i^*}x_{j^*}` is printed beside :math:`f(x)`.
    ax
        A matplotlib axes to draw on; a new figure of size 6.4 x 5.2 inches when ``None``.

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn on. Its axes carry the attribute ``schematic``, a dict with the
        weights ``gamma`` and ``gamma_tilde``, the head outputs ``head_outputs`` and the output
        ``f`` (floats), which are the numbers printed on the figure.

    Raises
    ------
    ValueError
        If a shape, dtype or value is wrong (a wrong type raises
        :class:`~sxor.xor.checks.ArgumentTypeError`, also a ``ValueError``), or ``d`` exceeds
        :data:`MAX_POSITIONS`.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    d, m = _check_inputs(x, V, theta, theta_tilde, support)
    x = x.to(V.dtype)
    gamma = attention(V, theta)
    gamma_tilde = attention(V, theta_tilde)
    outputs = [float(gamma @ x), float(gamma_tilde @ x)]
    f = float(predict_from_weights(x[None], gamma, gamma_tilde)[0])

    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 5.2))
    else:
        fig = ax.figure
    ax.set_axis_off()
    ax.set_xlim(-0.2, 10.1)
    ax.set_ylim(-0.9, d + 0.9)
    ax.grid(False)

    def box(cx, cy, text, *, w, h, color="k", face="white", size=11, weight="normal"):
        ax.add_patch(
            FancyBboxPatch(
                (cx - w / 2, cy - h / 2),
                w,
                h,
                boxstyle="round,pad=0.04,rounding_size=0.12",
                fc=face,
                ec=color,
                lw=1.4,
                zorder=3,
            )
        )
        ax.text(
            cx,
            cy,
            text,
            ha="center",
            va="center",
            fontsize=size,
            color="k",
            zorder=4,
            fontweight=weight,
        )

    targets = set() if support is None else {int(t) for t in support}
    ys = [d - 0.5 - i for i in range(d)]  # position i from top to bottom
    x_key, x_bit, x_head, x_out = 0.55, 2.0, 5.5, 8.85
    head_y = [d * 0.78, d * 0.22]
    for i, yi in enumerate(ys):
        face = "#fde2e2" if i in targets else "white"
        box(x_key, yi, rf"$v_{{{i + 1}}}$", w=0.8, h=0.62, color=FROZEN, face="0.93", size=10)
        box(x_bit, yi, f"${int(x[i]):+d}$", w=0.9, h=0.62, face=face, size=11)
    ax.text(
        x_key,
        d + 0.25,
        f"keys\n(frozen, $S^{{{m - 1}}}$)",
        ha="center",
        va="bottom",
        fontsize=10,
        color=FROZEN,
    )
    ax.text(x_bit, d + 0.25, "bits $x_i$\n(values)", ha="center", va="bottom", fontsize=10)

    weights = [gamma.tolist(), gamma_tilde.tolist()]
    names = [(r"$\theta$", r"$\gamma$"), (r"$\tilde\theta$", r"$\tilde\gamma$")]
    for k in range(2):
        color = HEAD_COLORS[k]
        for i, yi in enumerate(ys):
            w = weights[k][i]
            ax.plot(
                [x_bit + 0.47, x_head - 1.3],
                [yi, head_y[k]],
                color=color,
                lw=0.3 + 9.0 * w,
                alpha=0.75,
                solid_capstyle="round",
                zorder=1,
            )
        query, weight = names[k]
        box(
            x_head,
            head_y[k],
            f"head {k + 1}\n{weight}$=$softmax$(V${query}$)$\n"
            f"{weight}$\\cdot x = {outputs[k]:+.2f}$",
            w=2.6,
            h=1.35,
            color=color,
            size=10,
        )
        dy = 0.95 if k == 0 else -0.95
        ax.annotate(
            f"query {query}\n(learnable)",
            xy=(x_head, head_y[k] + dy * 0.72),
            xytext=(x_head, head_y[k] + dy * 1.45),
            ha="center",
            va="center",
            fontsize=10,
            color=color,
            arrowprops={"arrowstyle": "->", "color": color, "lw": 1.2},
        )
        ax.annotate(
            "",
            xy=(x_out - 1.22, d / 2 + (0.3 if k == 0 else -0.3)),
            xytext=(x_head + 1.34, head_y[k]),
            arrowprops={"arrowstyle": "->", "color": color, "lw": 1.4},
        )
    label = "" if support is None else f"\n$y = {int(-x[min(targets)] * x[max(targets)]):+d}$"
    box(
        x_out,
        d / 2,
        r"$f(x) =$" + "\n" + r"$-(\gamma\cdot x)(\tilde\gamma\cdot x)$" + f"\n$= {f:+.2f}$" + label,
        w=2.3,
        h=1.9 if support is not None else 1.5,
        size=10,
    )
    if targets:
        ax.text(
            x_bit, -0.75, r"shaded: the support $i^*, j^*$", ha="center", va="center", fontsize=10
        )
    ax.schematic = {
        "gamma": gamma.tolist(),
        "gamma_tilde": gamma_tilde.tolist(),
        "head_outputs": outputs,
        "f": f,
    }
    return fig
