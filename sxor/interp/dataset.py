"""Datasets for the interpolation construction: hypothesis checks and random admissible instances."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from .exact import Token, exact_tokens, fmt


def check_dataset(inputs: Sequence, targets: Sequence) -> tuple[list[np.ndarray], list[np.ndarray]]:
    r"""Validate a dataset and return it as object arrays of Fractions.

    Exact entries only: int, Fraction, numpy integers, rational strings; floats are refused, see
    :mod:`sxor.interp.exact`. Accepts what :func:`sxor.interp.construct.construct` can interpolate:

    * :math:`N \ge 1` pairs, one token dimension :math:`d \ge 1` everywhere,
      :math:`1 \le m_j \le n_j`;
    * pairwise distinct tokens within every input and every target sequence;
    * :math:`d \ge 2`, or :math:`d = 1` when every :math:`m_j = 1` (the mean route needs no second
      coordinate);
    * input sequences pairwise distinct *as sets*, except that two inputs with the same tokens may
      appear when their targets are the same set too (a permutation-equivariant network gives them
      the same output set, so the pair is redundant, not contradictory).

    Parameters
    ----------
    inputs
        List of :math:`N` input sequences :math:`X_j`, each ``[n_j, d]``.
    targets
        List of :math:`N` target sequences :math:`Y_j`, each ``[m_j, d]``.

    Raises
    ------
    ValueError
        naming the sequence and the tokens otherwise (in particular: two equal input sets with
        different targets, repeated tokens, :math:`m_j > n_j`, empty sequences, mixed dimensions,
        :math:`d = 1` with some :math:`m_j > 1`).
    """
    if isinstance(inputs, np.ndarray) or isinstance(targets, np.ndarray):
        raise ValueError(
            "inputs and targets must be lists of [n_j, d] arrays (one per sequence), not one array"
        )
    for name, value in (("inputs", inputs), ("targets", targets)):
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise TypeError(
                f"{name} must be a list of [n_j, d] sequences (one per sequence), "
                f"got {type(value).__name__}"
            )
    if len(inputs) != len(targets):
        raise ValueError(f"got {len(inputs)} input sequences but {len(targets)} target sequences")
    if len(inputs) == 0:
        raise ValueError("the dataset is empty (N = 0)")
    X = [exact_tokens(x, f"inputs[{j}]") for j, x in enumerate(inputs)]
    Y = [exact_tokens(y, f"targets[{j}]") for j, y in enumerate(targets)]
    d = X[0].shape[1]
    if d < 1:
        raise ValueError(f"the token dimension must be d >= 1, got d = {d}")
    for name, seqs in (("inputs", X), ("targets", Y)):
        for j, s in enumerate(seqs):
            if s.shape[1] != d:
                raise ValueError(
                    f"{name}[{j}] has tokens of dimension {s.shape[1]}, expected d = {d}"
                )
            if s.shape[0] == 0:
                raise ValueError(f"{name}[{j}] is empty; every sequence needs at least one token")
            seen: dict[Token, int] = {}
            for i, row in enumerate(s):
                t = tuple(row)
                if t in seen:
                    raise ValueError(
                        f"{name}[{j}] repeats the token {fmt(t)} at positions {seen[t]} and {i}; "
                        "tokens within a sequence must be pairwise distinct"
                    )
                seen[t] = i
    for j, (x, y) in enumerate(zip(X, Y)):
        if y.shape[0] > x.shape[0]:
            raise ValueError(
                f"targets[{j}] has m = {y.shape[0]} tokens but inputs[{j}] only n = {x.shape[0]}; need m <= n"
            )
    if d == 1 and any(y.shape[0] > 1 for y in Y):
        raise ValueError(
            "d = 1 is supported only when every m_j = 1 (the mean route); with some m_j > 1 the "
            "collapse needs d >= 2: append a zero coordinate to every token"
        )
    sets: dict[frozenset, int] = {}
    for j, x in enumerate(X):
        key = frozenset(tuple(row) for row in x)
        if key in sets:
            k = sets[key]
            if frozenset(map(tuple, Y[k])) != frozenset(map(tuple, Y[j])):
                raise ValueError(
                    f"inputs[{k}] and inputs[{j}] contain the same tokens "
                    f"{{{', '.join(fmt(t) for t in sorted(key))}}} but their targets differ; a "
                    "permutation-equivariant network gives equal input sets equal output sets"
                )
        else:
            sets[key] = j
    return X, Y


def distinct_indices(X: Sequence[np.ndarray]) -> list[int]:
    r"""Indices of the first input of each distinct token set (the others repeat one of them).

    Parameters
    ----------
    X
        List of input sequences.
    """
    seen: set[frozenset] = set()
    out = []
    for j, x in enumerate(X):
        key = frozenset(tuple(row) for row in x)
        if key not in seen:
            seen.add(key)
            out.append(j)
    return out


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


#: Largest dataset :func:`random_dataset` draws: :math:`d \sum_j (n_j + m_j) \le 10^6` coordinates
#: (each a Fraction; the construction's cost grows much faster than this).
MAX_DATASET_ENTRIES = 10**6


def random_dataset(
    N: int, n, m, d: int, *, seed: int = 0, denominator: int = 4, overlap: bool = True
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    r"""A random admissible dataset of Fractions: ``N`` inputs ``[n_j, d]`` and targets ``[m_j, d]``.

    Coordinates are multiples of ``1/denominator`` in :math:`[-4, 4]` (a grid of
    :math:`(8\,\mathrm{denominator} + 1)^d` points). Seeded by ``seed`` only.

    Parameters
    ----------
    N
        Number of input-target pairs, at least 1.
    n
        Input lengths: an int (the same for every sequence) or a list of ``N`` ints.
    m
        Target lengths: an int or a list of ``N`` ints, with :math:`m_j \le n_j`.
    d
        Token dimension, at least 1.
    seed
        Seed of the random generator.
    denominator
        Grid spacing is ``1/denominator``, at least 1.
    overlap
        ``True`` draws every input from one shared pool of :math:`\max_j n_j + 2` tokens (more if
        needed for ``N`` distinct subsets), so the inputs share many tokens (separation is needed);
        ``False`` draws each input independently.

    Raises
    ------
    ValueError
        for ``N < 1``, ``d < 1``, ``denominator < 1``, non-int sizes, :math:`m_j > n_j`,
        :math:`d = 1` with some :math:`m_j > 1` (see :func:`~sxor.interp.dataset.check_dataset`) and
        any request the grid cannot hold (more distinct tokens than grid points, or fewer distinct
        subsets of the pool than ``N``); for a non-int ``seed``; and for more than
        ``MAX_DATASET_ENTRIES`` coordinates in all (:math:`d \sum_j (n_j + m_j)`), refused
        before anything is drawn.
    """
    N, d, denominator = (
        _positive_int("N", N),
        _positive_int("d", d),
        _positive_int("denominator", denominator),
    )
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an int, got {seed!r}")

    def too_big(total: int) -> None:
        if total > MAX_DATASET_ENTRIES:
            raise ValueError(
                f"N = {N} sequences of d = {d} coordinates with these lengths n, m hold {total} "
                f"coordinates, above MAX_DATASET_ENTRIES = {MAX_DATASET_ENTRIES}: choose smaller sizes"
            )

    if (
        isinstance(n, (int, np.integer))
        and isinstance(m, (int, np.integer))
        and not isinstance(n, bool)
        and not isinstance(m, bool)
    ):
        too_big(N * (max(int(n), 0) + max(int(m), 0)) * d)

    def lengths(name: str, value: object) -> list:
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return [value] * N
        if isinstance(value, (list, tuple, np.ndarray)):
            return list(value)
        raise ValueError(f"{name}_j must be an int or a list of N = {N} ints, got {value!r}")

    n, m = lengths("n", n), lengths("m", m)
    if len(n) != N or len(m) != N:
        raise ValueError(f"n and m must be ints or lists of N = {N} ints, got {n}, {m}")
    n = [_positive_int("n_j", v) for v in n]
    m = [_positive_int("m_j", v) for v in m]
    if any(mj > nj for nj, mj in zip(n, m)):
        raise ValueError(f"need 1 <= m_j <= n_j, got n = {n}, m = {m}")
    if d == 1 and any(mj > 1 for mj in m):
        raise ValueError("d = 1 needs every m_j = 1")
    too_big((sum(n) + sum(m)) * d)
    grid = (8 * denominator + 1) ** d
    counts = {nj: n.count(nj) for nj in set(n)}

    def enough(points_available: int) -> bool:  # N distinct input sets can be drawn
        return all(math.comb(points_available, nj) >= c for nj, c in counts.items())

    size = max(n) + 2 if overlap else grid
    while overlap and size <= grid and not enough(size):
        size += 1
    if size > grid or max(m) > grid or not enough(min(size, grid)):
        raise ValueError(
            f"the grid of multiples of 1/{denominator} in [-4, 4]^{d} has {grid} points, too few for "
            f"N = {N} distinct inputs of lengths {n} (and targets of lengths {m}); raise denominator or d"
        )
    rng = random.Random(seed)

    def points(count: int) -> list[Token]:
        out: dict[Token, None] = {}
        while len(out) < count:  # count <= grid, checked above
            out[
                tuple(
                    Fraction(rng.randint(-4 * denominator, 4 * denominator), denominator)
                    for _ in range(d)
                )
            ] = None
        return list(out)

    pool = points(size) if overlap else None
    inputs, keys = [], set()
    for nj in n:
        while True:  # terminates: more distinct subsets than N, checked above
            rows = rng.sample(pool, nj) if pool is not None else points(nj)  # pool iff overlap
            if frozenset(rows) not in keys:
                break
        keys.add(frozenset(rows))
        inputs.append(np.array(rows, dtype=object).reshape(nj, d))
    targets = [np.array(points(mj), dtype=object).reshape(mj, d) for mj in m]
    return inputs, targets


def equal_means_dataset(
    N: int, d: int = 2, m: int = 1
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    r"""An adversarial family for the separation phase, in which every input has mean 0.

    :math:`X_j = \{0, a_j, -a_j\}` with :math:`a_j = (j + 1, 1, 0, \dots, 0)` (:math:`a_j = j + 1`
    when :math:`d = 1`), so every input has mean 0 and all of them share the token 0, and targets
    :math:`Y_j = \{(j, 5 + i, 0, \dots) : i < m\}`. Every token other than 0 belongs to one
    sequence, so a move changes one mean at a time and separation needs exactly :math:`N - 1` moves
    (chapter 14).

    Parameters
    ----------
    N
        Number of pairs, at least 1.
    d
        Token dimension, at least 1.
    m
        Target length, in ``1..3`` (1 when ``d = 1``).

    Raises
    ------
    ValueError
        for ``N < 1``, ``d < 1``, ``m`` outside ``1..3`` and ``d = 1`` with ``m > 1``.
    """
    N, d, m = _positive_int("N", N), _positive_int("d", d), _positive_int("m", m)
    if m > 3:
        raise ValueError(f"each input has 3 tokens, so m must be <= 3, got {m}")
    if d == 1 and m > 1:
        raise ValueError("d = 1 needs m = 1")

    def point(*coords) -> list[Fraction]:
        return [Fraction(c) for c in coords][:d] + [Fraction(0)] * max(0, d - len(coords))

    inputs = [
        np.array([point(0, 0), point(j + 1, 1), point(-(j + 1), -1)], dtype=object)
        for j in range(N)
    ]
    targets = [np.array([point(j, 5 + i) for i in range(m)], dtype=object) for j in range(N)]
    return inputs, targets
