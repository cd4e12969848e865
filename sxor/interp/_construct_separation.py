"""Phase 1 of the construction: hat moves that make the sequence means pairwise distinct.

Part of :mod:`sxor.interp.construct`, which re-exports it (see there for the phases and routes).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .exact import Token, fmt, mean
from .hats import conditioned_direction, hat_move
from .network import FFLayer, SALayer, mean_sa


def _values(states: list[np.ndarray]) -> set[Token]:
    return {tuple(row) for s in states for row in s}


def _replace(states: list[np.ndarray], old: Token, new: Token) -> list[np.ndarray]:
    """The states after a move ``old -> new`` as the hat lemma predicts it (every token equal to
    ``old`` becomes ``new``); :meth:`InterpolatingTransformer.map` checks it with the real layers."""
    out = []
    for s in states:
        moved = s.copy()
        for i in range(moved.shape[0]):
            if tuple(moved[i]) == old:
                moved[i] = np.array(new, dtype=object)
        out.append(moved)
    return out


@dataclass(frozen=True)
class Separation:
    r"""Result of :func:`~sxor.interp.construct.separation_phase`.

    The move FFs, the shift SA (or None), the new states, and the next moment-curve parameter to try.
    """

    moves: tuple[FFLayer, ...]
    shift: SALayer | None
    states: list[np.ndarray]
    start: int


def separation_phase(
    states: list[np.ndarray], d: int, *, shift: bool, start: int = 1
) -> Separation:
    r"""Phase 1 (Lemmas 13.3-13.4): hat moves until the sequence means are pairwise distinct.

    At most :math:`N - 1` moves. With ``shift=True`` it then adds the SA
    :math:`x \mapsto x + \lambda \operatorname{mean}(X_j)` that makes the token sets pairwise
    disjoint, and does nothing at all when they already are. With ``shift=False`` (mean route) it
    always makes the means distinct and adds no SA.

    Parameters
    ----------
    states
        The current input sequences, ``[n_j, d]`` each (exact).
    d
        Token dimension.
    shift
        Whether to add the disjoining SA (leader route) or not (mean route).
    start
        First moment-curve parameter :math:`t` tried by
        :func:`~sxor.interp.hats.injective_direction`.
    """
    if shift:
        owners: dict[Token, int] = {}
        overlap = any(
            owners.setdefault(tuple(row), j) != j for j, s in enumerate(states) for row in s
        )
        if not overlap:
            return Separation((), None, states, start)
    direction = tuple(Fraction(c + 1) for c in range(d))
    moves: list[FFLayer] = []
    while True:
        means = [mean(s) for s in states]
        pair = next(
            ((j, k) for j in range(len(states)) for k in range(j) if means[j] == means[k]), None
        )
        if pair is None:
            break
        j, k = pair
        rows_k = {tuple(row) for row in states[k]}
        if states[j].shape[0] != states[k].shape[0]:
            p = tuple(states[j][0])
        else:  # equal sizes and distinct sets: X_j has a token that X_k lacks
            p = next(tuple(row) for row in states[j] if tuple(row) not in rows_k)
        values = _values(states)
        contains = [any(tuple(row) == p for row in s) for s in states]
        bad = (len(values) + 1) * len(states) ** 2 + 2  # Lemma 13.4: finitely many bad t
        for t in range(1, bad + 1):
            D = tuple(t * c for c in direction)
            new_p = tuple(a + b for a, b in zip(p, D))
            if new_p in values:
                continue
            new_means = [
                tuple(m + (Dc / s.shape[0] if contains[i] else 0) for m, Dc in zip(means[i], D))
                for i, s in enumerate(states)
            ]
            if new_means[j] != new_means[k] and all(
                means[a] == means[b] or new_means[a] != new_means[b]
                for a in range(len(states))
                for b in range(a)
            ):
                break
        else:  # pragma: no cover - excluded by Lemma 13.4
            raise AssertionError(f"no displacement separates the means of inputs {k} and {j}")
        layer = hat_move(
            values,
            p,
            D,
            d,
            flat=False,
            role=f"separate: move {fmt(p)}",
            direction=conditioned_direction(values, d),
        )
        moves.append(layer)
        states = _replace(states, p, new_p)
    if not shift:
        return Separation(tuple(moves), None, states, start)
    means = [mean(s) for s in states]
    total = sum(s.shape[0] for s in states)
    lam = 1
    while (
        len(
            {
                tuple(x + lam * m for x, m in zip(row, means[j]))
                for j, s in enumerate(states)
                for row in s
            }
        )
        != total
    ):
        lam += 1
    shift_sa = mean_sa(d, Fraction(1), Fraction(lam), f"separate: x + {lam} mean")
    states = [s + np.array([lam * m for m in means[j]], dtype=object) for j, s in enumerate(states)]
    return Separation(tuple(moves), shift_sa, states, start)
