r"""A four-panel schematic of chapter 13's construction in the plane: separation, leaders, collapse,
interpolation.

:func:`plot_phases` draws, for a hardmax network built by :func:`~sxor.interp.construct` on a
2-D dataset (leader route), the tokens of every sequence at the end of each phase, with the
geometry the proofs use: the box :math:`[1,R]^2` that holds the bulk tokens after the
translation, the diagonal on which the leaders :math:`c_\ell\mathbf 1` sit beyond the box, and
the parking circle :math:`\{|q|=\varrho\}` whose arc in the negative quadrant holds the parked
tokens. Arrows show what the collapse and the interpolation do. The panels are stacked two by
two and the legend sits below them, so the figure stays legible at phone width.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .plots import COLORS, MARKERS, _check_ax, _float

#: Titles of the four panels, in order.
PHASE_TITLES = ("1. separation", "2. leader selection", "3. collapse", "4. interpolation")


def _check_network(T, sequences, targets):
    from .network import InterpolatingTransformer

    if not isinstance(T, InterpolatingTransformer):
        raise TypeError(
            f"T must be an InterpolatingTransformer (from sxor.interp.construct), got {type(T).__name__}"
        )
    if T.info.get("route") != "leaders":
        raise ValueError(
            "the schematic needs the four-phase (leader) route: some m_j > 1; "
            f"this network took the {T.info.get('route')!r} route"
        )
    if T.d != 2:
        raise ValueError(
            f"the schematic draws the plane: the tokens must have d = 2, got d = {T.d}"
        )
    if isinstance(sequences, (str, bytes)) or not hasattr(sequences, "__len__"):
        raise TypeError(
            f"sequences must be a list of [n, 2] arrays, got {type(sequences).__name__}"
        )
    if isinstance(targets, (str, bytes)) or not hasattr(targets, "__len__"):
        raise TypeError(f"targets must be a list of [m, 2] arrays, got {type(targets).__name__}")
    if len(sequences) != len(targets):
        raise ValueError(f"{len(sequences)} input sequences but {len(targets)} target sets")


def _scatter(ax, seqs, *, size=46, alpha=0.85, zorder=3):
    for j, s in enumerate(seqs):
        pts = _float(s, f"sequence {j}")
        uniq, counts = np.unique(pts, axis=0, return_counts=True)
        ax.scatter(
            uniq[:, 0],
            uniq[:, 1],
            s=size + 22 * (counts - 1),
            marker=MARKERS[j % 8],
            color=COLORS[j % 8],
            alpha=alpha,
            zorder=zorder,
            label=f"$X_{{{j + 1}}}$",
        )


def _geometry(ax, R: float, rho: float, lim: tuple[float, float]):
    """The box [1, R]^2, the diagonal beyond it and the parking circle (its negative-quadrant arc bold)."""
    from matplotlib.patches import Circle, Rectangle

    ax.add_patch(
        Rectangle(
            (1, 1),
            R - 1,
            R - 1,
            facecolor="0.9",
            edgecolor="0.35",
            lw=1.2,
            zorder=1,
            label=r"box $[1,R]^2$",
        )
    )
    ax.plot(
        [R, lim[1]], [R, lim[1]], ls=":", color="0.4", lw=1.0, zorder=1, label="leaders' diagonal"
    )
    ax.add_patch(Circle((0, 0), rho, fill=False, ls="--", edgecolor="0.6", lw=0.8, zorder=1))
    t = np.linspace(np.pi, 1.5 * np.pi, 100)
    ax.plot(
        rho * np.cos(t),
        rho * np.sin(t),
        color="0.25",
        lw=2.0,
        zorder=1,
        label=r"parking arc $|\xi|=\varrho$",
    )


def _arrows(ax, before, after):
    for b, a in zip(before, after):
        B, A = _float(b), _float(a)
        for x, y in {(tuple(p), tuple(q)) for p, q in zip(B, A) if tuple(p) != tuple(q)}:
            ax.annotate(
                "",
                xy=y,
                xytext=x,
                zorder=2,
                arrowprops={
                    "arrowstyle": "->",
                    "color": "0.45",
                    "lw": 0.9,
                    "shrinkA": 3,
                    "shrinkB": 5,
                },
            )


def plot_phases(T, sequences: Sequence, targets: Sequence, *, fontsize: float = 11.0):
    r"""Draw the four phases of ``T`` on ``sequences`` as a 2 x 2 figure; return the figure.

    Panel 1: the tokens after separation (pairwise disjoint sequences). Panel 2: after the
    leader-selection moves: bulk tokens in the box :math:`[1,R]^2` (shaded), one leader per
    sequence on the diagonal beyond it, the other :math:`m_j-1` chosen tokens parked on the arc of
    the circle of radius :math:`\varrho` in the negative quadrant. Panel 3: the collapse, with
    arrows from every bulk token to its leader. Panel 4: the interpolation moves, with arrows
    from the collapsed points to the targets (open diamonds). The box, the diagonal and the
    circle are drawn in panels 2 to 4 and use ``T.info["box"]`` (:math:`R`) and
    ``T.info["park_radius"]`` (:math:`\varrho`).

    Parameters
    ----------
    T
        A hardmax :class:`~sxor.interp.network.InterpolatingTransformer` built by
        :func:`~sxor.interp.construct` on the leader route (some :math:`m_j>1`), with ``d = 2``.
    sequences
        The input sequences ``X_j [n_j, 2]`` the network was built for.
    targets
        The target sets ``Y_j [m_j, 2]``, one per sequence.
    fontsize
        Font size of titles, labels and legend (ticks one point smaller), ``> 0``.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, with four axes in reading order and the legend below them.

    Raises
    ------
    TypeError
        for a ``T`` that is not an ``InterpolatingTransformer`` and ``sequences``/``targets`` that
        are not lists of arrays.
    ValueError
        for a network on the mean route, tokens with ``d != 2``, not one target set per sequence,
        a ``fontsize <= 0``, and inputs that
        :meth:`~sxor.interp.network.InterpolatingTransformer.snapshots` refuses.
    """
    import matplotlib.pyplot as plt

    _check_network(T, sequences, targets)
    if isinstance(fontsize, bool) or not isinstance(fontsize, (int, float)) or not fontsize > 0:
        raise ValueError(f"fontsize must be a positive number, got {fontsize!r}")
    snap = T.snapshots(list(sequences))
    R, rho = float(T.info["box"]), float(T.info["park_radius"])
    pts = np.concatenate(
        [
            _float(s)
            for key in ("separation", "leaders", "collapse", "interpolation")
            for s in snap[key]
        ]
        + [_float(y, f"target {j}") for j, y in enumerate(targets)]
    )
    hi = max(float(pts.max()), R) + 1.5
    lo = min(float(pts.min()), -rho) - 1.0
    lim = (lo, hi)
    fig, axes = plt.subplots(2, 2, figsize=(7.0, 7.6), sharex=True, sharey=True)
    panels = [
        ("separation", None),
        ("leaders", None),
        ("collapse", "leaders"),
        ("interpolation", "collapse"),
    ]
    for ax, title, (key, before) in zip(axes.flat, PHASE_TITLES, panels):
        _check_ax(ax)
        if key != "separation":
            _geometry(ax, R, rho, lim)
        if before is not None:
            _arrows(ax, snap[before], snap[key])
        _scatter(ax, snap[key])
        if key == "leaders":
            lead = np.array([_float(s)[0] for s in snap[key]])
            ax.scatter(
                lead[:, 0],
                lead[:, 1],
                s=230,
                facecolor="none",
                edgecolor="k",
                lw=1.2,
                zorder=4,
                label="leader",
            )
        if key == "interpolation":
            for j, y in enumerate(targets):
                yy = _float(y, f"target {j}")
                ax.scatter(
                    yy[:, 0],
                    yy[:, 1],
                    s=170,
                    marker="D",
                    facecolors="none",
                    edgecolors=COLORS[j % 8],
                    lw=1.6,
                    zorder=4,
                    label="targets $Y_j$" if j == 0 else None,
                )
        ax.axhline(0, color="0.85", lw=0.6, zorder=0)
        ax.axvline(0, color="0.85", lw=0.6, zorder=0)
        ax.set_xlim(lim)
        ax.set_ylim(lim)
        ax.set_aspect("equal")
        ax.set_title(title, fontsize=fontsize)
        ax.tick_params(labelsize=fontsize - 1)
    for ax in axes[1]:
        ax.set_xlabel("$x_1$", fontsize=fontsize)
    for ax in axes[:, 0]:
        ax.set_ylabel("$x_2$", fontsize=fontsize)
    handles, labels = {}, []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
    legend = fig.legend(
        [handles[lab] for lab in labels],
        labels,
        loc="lower center",
        ncol=3,
        fontsize=fontsize,
        frameon=False,
        bbox_to_anchor=(0.5, 0.0),
        handletextpad=0.4,
        columnspacing=1.2,
        scatterpoints=1,
        markerscale=1.0,
    )
    for h in legend.legend_handles:
        if h is not None and hasattr(h, "set_sizes"):
            h.set_sizes([60])
    fig.tight_layout(rect=(0, 0.12, 1, 1), h_pad=1.5)
    return fig
