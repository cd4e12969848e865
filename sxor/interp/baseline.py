r"""A ResNet that interpolates sequences by reading them as one long vector (chapter 14's baseline).

This book's baseline, in the spirit of the ResNet / neural-ODE interpolation constructions of
Ruiz-Balet & Zuazua (2023): flatten each input ``X_j [n, d]`` to :math:`z_j \in \mathbb{R}^{nd}`
(row by row) and move the :math:`N` points one at a time with residual hat blocks
:math:`z \mapsto z + W \operatorname{relu}(U z + b)` (width 3, the same hat as
:mod:`sxor.interp.hats`), from :math:`z_j` to :math:`(\operatorname{vec} Y'_j, 0)`, where
:math:`Y'_j` is :math:`Y_j` padded to :math:`m = \max_j m_j` tokens by repeating its last token;
the output is the first :math:`m d` coordinates, read as :math:`m` tokens (so its *set* is
:math:`Y_j`, as for the transformer). It has :math:`N` blocks of
:math:`3 (2 n d + 1) + 1 = 6 n d + 4` parameters: its size grows linearly with the input length
:math:`n`, unlike the transformer's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .dataset import check_dataset
from .hats import hat_move
from .network import FFLayer


@dataclass
class ResNetInterpolator:
    r""":math:`N` residual hat blocks on :math:`\mathbb{R}^{nd}`; calling it maps ``X [n, d]`` to ``[m, d]``.

    Parameters
    ----------
    blocks
        The residual hat layers, one per input.
    n
        Input length.
    m
        Output length, :math:`\max_j m_j`.
    d
        Token dimension.
    """

    blocks: list[FFLayer]
    n: int
    m: int
    d: int

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    @property
    def num_parameters(self) -> int:
        return sum(layer.num_parameters for layer in self.blocks)

    def __call__(self, X):
        z = np.asarray(X, dtype=object).reshape(1, self.n * self.d)
        for layer in self.blocks:
            z = layer(z)
        return z[0, : self.m * self.d].reshape(self.m, self.d)


def resnet_interpolate(inputs: Sequence, targets: Sequence) -> ResNetInterpolator:
    r"""Build the baseline for inputs of one length :math:`n` (targets of any lengths :math:`m_j \le n`).

    Parameters
    ----------
    inputs
        Input sequences ``[n, d]``, exact.
    targets
        Target sequences ``[m_j, d]``, exact.

    Raises
    ------
    ValueError
        when input lengths differ or when a padded target equals a flattened input of another
        sequence (the hat would move both).
    """
    X, Y = check_dataset(inputs, targets)
    n, d = X[0].shape[0], X[0].shape[1]
    m = max(y.shape[0] for y in Y)
    if any(x.shape[0] != n for x in X):
        raise ValueError("the ResNet baseline needs inputs of one length n")
    points = [tuple(x.reshape(-1)) for x in X]
    padded = [np.concatenate([y, np.repeat(y[-1:], m - y.shape[0], axis=0)]) for y in Y]
    goals = [tuple(y.reshape(-1)) + (Fraction(0),) * ((n - m) * d) for y in padded]
    if len(set(points)) != len(points):
        raise ValueError("two flattened inputs coincide (same tokens in the same order)")
    if set(goals) & set(points):
        raise ValueError("a padded target equals a flattened input; the baseline would move both")
    blocks = []
    current = set(points)
    for p, goal in zip(points, goals):
        D = tuple(a - b for a, b in zip(goal, p))
        blocks.append(hat_move(current, p, D, n * d, flat=False, role="resnet hat"))
        current = (current - {p}) | {goal}
    return ResNetInterpolator(blocks, n, m, d)
