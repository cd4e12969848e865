"""Matplotlib drawings of 2-D token clouds shared by the Part II chapters."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .clustering import convex_hull_2d
from .layers import Array

MARKERS = ["o", "*", "^", "s", "P", "X", "v", "D"]
#: Marker area, in points^2, of every entry of a token legend. The drawn sizes grow with the
#: number of tokens at a point (up to 150 for a target), which made the legend's markers overlap.
LEGEND_MARKER_SIZE = 50
COLORS = [
    "tab:blue",
    "tab:green",
    "tab:orange",
    "tab:purple",
    "tab:red",
    "tab:brown",
    "tab:pink",
    "tab:olive",
]


def _float(a: Array, name: str = "points") -> np.ndarray:
    """Tensor, float array or Fraction array as a float64 numpy array; complex, non-numeric, nan
    and inf entries raise ``ValueError`` naming ``name``."""
    raw = a.detach().cpu().numpy() if hasattr(a, "detach") else np.asarray(a)
    if raw.dtype.kind == "c" or (raw.dtype.kind not in "fiuO"):
        raise ValueError(f"{name} must be real numbers, got dtype {raw.dtype}")
    try:
        out = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be real numbers (floats, ints or Fractions)") from None
    if not np.isfinite(out).all():
        raise ValueError(f"{name} contains nan or inf")
    return out


def _check_ax(ax) -> None:
    if not (hasattr(ax, "scatter") and hasattr(ax, "plot")):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")


def _check_indices(name: str, indices, n: int) -> list[int]:
    out = [int(i) for i in indices]
    bad = [i for i in out if not 0 <= i < n]
    if bad:
        raise ValueError(f"{name} {bad} are not token indices in [0, {n})")
    return out


def _label_plane(ax, title: str | None):
    """Axis labels ``x_1, x_2``, equal aspect and the optional title of every drawing here."""
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.set_aspect("equal", adjustable="datalim")
    if title:
        ax.set_title(title)
    return ax


def plot_trajectory(
    ax,
    traj: Array,
    *,
    leaders: list[int] | None = None,
    hull: bool = True,
    title: str | None = None,
):
    """Draw the paths ``traj [steps + 1, n, 2]`` of 2-D tokens: grey paths, initial tokens (blue),
    final tokens (red), the given leaders (stars) and the convex hull of the initial cloud.

    Refuses (``TypeError``/``ValueError``): an ``ax`` that is not an Axes, a ``traj`` of another
    shape or with complex/nan/inf entries, and leader indices outside ``[0, n)``."""
    _check_ax(ax)
    T = _float(traj, "traj")
    if T.ndim != 3 or T.shape[-1] != 2 or T.shape[1] == 0:
        raise ValueError(f"traj must have shape [steps + 1, n, 2] with n >= 1, got {T.shape}")
    leaders = _check_indices("leaders", leaders or [], T.shape[1])
    for i in range(T.shape[1]):
        ax.plot(T[:, i, 0], T[:, i, 1], color="0.7", lw=0.8, zorder=1)
    ax.scatter(T[0, :, 0], T[0, :, 1], s=14, color="tab:blue", label="initial tokens", zorder=2)
    ax.scatter(
        T[-1, :, 0],
        T[-1, :, 1],
        s=40,
        color="tab:red",
        marker="x",
        label="after the last layer",
        zorder=3,
    )
    if leaders:
        ax.scatter(
            T[0, leaders, 0],
            T[0, leaders, 1],
            s=160,
            facecolor="none",
            edgecolor="k",
            marker="*",
            label="leaders",
            zorder=4,
        )
    if hull and T.shape[1] >= 3:
        H = convex_hull_2d(T[0])
        ring = T[0, H + H[:1]]
        ax.plot(ring[:, 0], ring[:, 1], "k--", lw=0.8, label="convex hull", zorder=1)
    return _label_plane(ax, title)


def plot_before_after(
    ax, X: Array, Y: Array, *, title: str | None = None, highlight: list[int] | None = None
):
    """Draw one layer ``X -> Y`` of 2-D tokens: arrows from each token to its image, ``X`` in blue,
    ``Y`` in red, and the tokens in ``highlight`` circled.

    Refuses (``TypeError``/``ValueError``): an ``ax`` that is not an Axes, ``X`` and ``Y`` not
    both ``[n, 2]`` with the same ``n``, complex/nan/inf entries, and highlight indices outside
    ``[0, n)``."""
    _check_ax(ax)
    X, Y = _float(X, "X"), _float(Y, "Y")
    if X.shape != Y.shape or X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"X and Y must both have shape [n, 2], got {X.shape} and {Y.shape}")
    highlight = _check_indices("highlight", highlight or [], X.shape[0])
    for x, y in zip(X, Y):
        if np.any(x != y):
            ax.annotate(
                "", xy=y, xytext=x, arrowprops={"arrowstyle": "->", "color": "0.6", "lw": 0.8}
            )
    ax.scatter(X[:, 0], X[:, 1], s=18, color="tab:blue", label="before", zorder=2)
    ax.scatter(Y[:, 0], Y[:, 1], s=60, color="tab:red", marker="x", label="after", zorder=3)
    if highlight:
        ax.scatter(
            X[highlight, 0],
            X[highlight, 1],
            s=180,
            facecolor="none",
            edgecolor="k",
            label="hypothesis fails",
            zorder=4,
        )
    return _label_plane(ax, title)


def plot_tokens(
    ax,
    sequences: Sequence,
    targets: Sequence | None = None,
    *,
    title: str | None = None,
    legend: bool = True,
):
    """Scatter the 2-D tokens of each sequence ``X_j [n_j, 2]`` (own marker and colour; the size
    grows with the number of tokens at one point) and, if given, the targets ``Y_j [m_j, 2]`` as open
    diamonds of the same colour (chapters 13 and 14). The legend (``legend=True``) is placed to the
    right of the axes, with one marker size for every entry (:func:`uniform_legend_markers`).

    ``sequences`` (and ``targets``) are sequences (lists, tuples, or a ``[J, n, 2]`` array) of 2-D
    point arrays with at least one point each, at most one target set per sequence. Refuses
    (``TypeError``/``ValueError``, naming the sequence): an ``ax`` that is not an Axes, a single
    ``[n, 2]`` array (its rows are not sequences), other shapes, empty sequences,
    complex/nan/inf entries and more target sets than sequences."""
    _check_ax(ax)
    if isinstance(sequences, (str, bytes)) or not hasattr(sequences, "__len__"):
        raise TypeError(
            f"sequences must be a list of [n, 2] arrays, got {type(sequences).__name__}"
        )
    if targets is not None:
        if isinstance(targets, (str, bytes)) or not hasattr(targets, "__len__"):
            raise TypeError(
                f"targets must be a list of [m, 2] arrays, got {type(targets).__name__}"
            )
        if len(targets) > len(sequences):
            raise ValueError(f"{len(targets)} target sets for {len(sequences)} sequences")
        for j, Y in enumerate(targets):
            y = _float(Y, f"target {j}")
            if y.ndim != 2 or y.shape[1] != 2 or y.shape[0] == 0:
                raise ValueError(f"target {j} must have shape [m, 2] with m >= 1, got {y.shape}")
    for j, X in enumerate(sequences):
        pts = _float(X, f"sequence {j}")
        if pts.ndim != 2 or pts.shape[1] != 2 or pts.shape[0] == 0:
            raise ValueError(f"sequence {j} must have shape [n, 2] with n >= 1, got {pts.shape}")
        uniq, counts = np.unique(pts, axis=0, return_counts=True)
        ax.scatter(
            uniq[:, 0],
            uniq[:, 1],
            s=40 + 25 * (counts - 1),
            marker=MARKERS[j % 8],
            color=COLORS[j % 8],
            alpha=0.8,
            label=f"$X_{j + 1}$" + (f" ({len(pts)} tokens)" if len(uniq) < len(pts) else ""),
        )
    for j, Y in enumerate(targets if targets is not None else []):
        y = _float(Y)
        ax.scatter(
            y[:, 0],
            y[:, 1],
            s=150,
            marker="D",
            facecolors="none",
            edgecolors=COLORS[j % 8],
            lw=1.5,
            label=f"$Y_{j + 1}$",
        )
    _label_plane(ax, title)
    if (
        legend
    ):  # outside the data, to the right; one marker size per entry, so markers never overlap
        uniform_legend_markers(
            ax.legend(
                fontsize=10,
                loc="upper left",
                bbox_to_anchor=(1.02, 1.0),
                borderaxespad=0.0,
                scatterpoints=1,
                labelspacing=0.9,
                handletextpad=0.5,
                frameon=False,
            )
        )
    return ax


def uniform_legend_markers(legend, size: float = LEGEND_MARKER_SIZE):
    """Draw every scatter marker of ``legend`` at area ``size`` (points^2), so that markers of
    different drawn sizes neither overlap nor crowd their labels; return the legend.

    Use it on a legend built from :func:`plot_tokens` handles (e.g. one shared legend for several
    panels). Raises ``TypeError`` when ``legend`` is not a matplotlib Legend, ``ValueError`` when
    ``size`` is not a positive number."""
    handles = getattr(legend, "legend_handles", None)
    if handles is None:
        raise TypeError(f"legend must be a matplotlib Legend, got {type(legend).__name__}")
    if isinstance(size, bool) or not isinstance(size, (int, float)) or not size > 0:
        raise ValueError(f"size must be a positive number, got {size!r}")
    for handle in handles:
        if hasattr(handle, "set_sizes"):
            handle.set_sizes([size])
    return legend
