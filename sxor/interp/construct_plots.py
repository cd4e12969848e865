"""Figures of the interpolation construction (chapters 13 and 14): tokens of several sequences."""

from __future__ import annotations

from typing import Sequence

import numpy as np

MARKERS = ["o", "*", "^", "s", "P", "X", "v", "D"]
COLORS = ["tab:blue", "tab:green", "tab:orange", "tab:purple", "tab:red", "tab:brown", "tab:pink", "tab:olive"]


def plot_tokens(ax, sequences: Sequence, targets: Sequence | None = None, *, title: str | None = None,
                legend: bool = True):
    """Scatter the 2-D tokens of each sequence (own marker and colour; the size grows with the
    number of tokens at one point) and, if given, the targets as open diamonds of the same colour."""
    for j, X in enumerate(sequences):
        pts = np.asarray(np.asarray(X, dtype=object).astype(float))
        uniq, counts = np.unique(pts, axis=0, return_counts=True)
        ax.scatter(uniq[:, 0], uniq[:, 1], s=40 + 25 * (counts - 1), marker=MARKERS[j % 8], color=COLORS[j % 8],
                   alpha=0.8, label=f"$X_{j + 1}$" + (f" ({len(pts)} tokens)" if len(uniq) < len(pts) else ""))
    if targets is not None:
        for j, Y in enumerate(targets):
            y = np.asarray(np.asarray(Y, dtype=object).astype(float))
            ax.scatter(y[:, 0], y[:, 1], s=150, marker="D", facecolors="none", edgecolors=COLORS[j % 8], lw=1.5,
                       label=f"$Y_{j + 1}$")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.set_aspect("equal", adjustable="datalim")
    if title:
        ax.set_title(title)
    if legend:
        ax.legend(fontsize=8, loc="best")
    return ax
