r"""The three collapse lemmas of hardmax self-attention, as constructions, predictions and checks.

All three use one hardmax layer (:math:`\tau = 0`) with :math:`\rho = 0` and :math:`V = I`, so
token :math:`i` moves to the mean of its argmax set
:math:`C_i = \operatorname{argmax}_l \langle A x_i, x_l \rangle`. The statements and proofs are in
the chapter "The collapse lemmas"; the exact characterisations below are this book's derivation
(the paper's text was not available), and each holds with no hypothesis at all:

* **rank one** :math:`A = v v^\top`: :math:`s_{il} = \langle v, x_i \rangle \langle v, x_l \rangle`,
  so :math:`C_i` is the set of tokens with the largest :math:`\langle v, x_l \rangle` if
  :math:`\langle v, x_i \rangle > 0`, with the smallest if :math:`\langle v, x_i \rangle < 0`, and
  every token if :math:`\langle v, x_i \rangle = 0`.
* **box** :math:`A = I`, tokens in :math:`[0, R]^d` containing the corner :math:`c = R \mathbf{1}`:
  :math:`C_i` is the set of the :math:`l` with :math:`x_{lk} = R` for every :math:`k` with
  :math:`x_{ik} > 0`.
* **sphere** :math:`A = I`: a token of largest norm attends exactly to its own copies.
* **identity plus rank one** :math:`A = a I + b\,u u^\top`
  (:func:`~sxor.interp.lemmas.low_rank_layer`): tokens of one sphere keep to themselves iff
  :math:`b/a` is below :func:`~sxor.interp.lemmas.low_rank_threshold` (section 13c, low-rank
  attention in the collapse); on the circle of chapter 13 it is at most
  :func:`~sxor.interp.lemmas.circle_threshold_bound` :math:`< 1/M`.

Every function works on exact object arrays of :class:`~fractions.Fraction` (see
:mod:`sxor.interp.layers`); random instances are drawn with an explicit ``torch.Generator``.
"""

from __future__ import annotations

import numbers
from fractions import Fraction

import numpy as np
import torch

from .exact import as_exact, dot
from .exact import mean as _exact_mean

# --------------------------------------------------------------------------------------------
# layer parameters: self_attention(X, **params)
# --------------------------------------------------------------------------------------------


def _int(name: str, value: object, minimum: int) -> int:
    """``value`` as an int ``>= minimum``: a float (even ``6.0``), bool, nan, inf or string is refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r} of type {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _generator(generator: object) -> torch.Generator:
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator (for reproducible draws), got {type(generator).__name__}"
        )
    return generator


def _positive(name: str, value: object) -> Fraction:
    x = as_exact(value, name)
    if x.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got shape {x.shape}")
    x = x.item()
    if x <= 0:
        raise ValueError(f"{name} must be positive, got {x}")
    return x


def identity_matrix(d: int) -> np.ndarray:
    r"""The exact :math:`d \times d` identity (object array of Fractions).

    Parameters
    ----------
    d
        Dimension, an int with :math:`1 \le d \le 1000` (a float, even ``2.0``, a bool, nan or inf
        is refused; above 1000 the :math:`d^2` Fractions would take gigabytes and minutes).
    """
    d = _int("d", d, 1)
    if d > 1000:
        raise ValueError(f"identity_matrix builds d^2 exact entries; d must be <= 1000, got d={d}")
    return as_exact(np.eye(d, dtype=int))


def rank_one_layer(v: object) -> dict[str, object]:
    r"""Parameters :math:`A = v v^\top`, :math:`\rho = 0`, :math:`V = I` of Lemma A, for ``self_attention(X, **p)``.

    Parameters
    ----------
    v
        A non-zero exact vector (ints, Fractions).

    Raises
    ------
    ValueError
        for floats, other shapes and ``v = 0``.
    """
    v = as_exact(v, "v")
    if v.ndim != 1 or v.shape[0] == 0:
        raise ValueError(f"v must be a non-empty vector, got shape {v.shape}")
    if all(x == 0 for x in v):
        raise ValueError("v must be nonzero (A = v v^T = 0 is the mean collapse, not Lemma A)")
    return {"A": np.outer(v, v), "rho": Fraction(0), "V": identity_matrix(v.shape[0])}


def identity_layer(d: int) -> dict[str, object]:
    r"""Parameters :math:`A = I`, :math:`\rho = 0`, :math:`V = I` of Lemmas B and C.

    Parameters
    ----------
    d
        Dimension, as in :func:`~sxor.interp.lemmas.identity_matrix`.
    """
    return {"A": identity_matrix(d), "rho": Fraction(0), "V": identity_matrix(d)}


def low_rank_layer(a: object, b: object, u: object) -> dict[str, object]:
    r"""Parameters of the layer :math:`A = a I + b\,u u^\top`, :math:`\rho = 0`, :math:`V = I`.

    For ``self_attention(X, **p)``; the letters :math:`a, b, u` are those of section 13c.

    Parameters
    ----------
    a, b
        Exact scalars (ints, Fractions).
    u
        A non-zero exact vector ``[d]``.

    Raises
    ------
    ValueError
        for floats, a ``u`` that is not a non-empty vector, and ``u = 0``.
    """
    u = as_exact(u, "u")
    if u.ndim != 1 or u.shape[0] == 0:
        raise ValueError(f"u must be a non-empty vector, got shape {u.shape}")
    if all(x == 0 for x in u):
        raise ValueError("u must be nonzero (A = a I + b u u^T)")
    a, b = (as_exact(value, name) for name, value in (("a", a), ("b", b)))
    if a.ndim != 0 or b.ndim != 0:
        raise ValueError(f"a and b must be scalars, got shapes {a.shape} and {b.shape}")
    d = u.shape[0]
    return {
        "A": a.item() * identity_matrix(d) + b.item() * np.outer(u, u),
        "rho": Fraction(0),
        "V": identity_matrix(d),
    }


# --------------------------------------------------------------------------------------------
# the lemmas' predictions (computed from the characterisations, not from the layer)
# --------------------------------------------------------------------------------------------


def _tokens(X: object) -> np.ndarray:
    X = as_exact(X, "X")
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must have shape [n, d] with n, d >= 1, got {X.shape}")
    return X


def _direction(X: np.ndarray, v: object) -> np.ndarray:
    v = as_exact(v, "v")
    if v.shape != (X.shape[1],):
        raise ValueError(
            f"v must have shape [d] = ({X.shape[1]},) (the token dimension of X), got {v.shape}"
        )
    return v


def _mean(X: np.ndarray, rows: list[int]) -> list[Fraction]:
    return list(_exact_mean(X, rows))


def rank_one_sets(X: object, v: object) -> list[list[int]]:
    r"""Argmax set :math:`C_i` of each token under :math:`A = v v^\top` (the exact characterisation).

    Parameters
    ----------
    X
        Tokens ``[n, d]``, exact (ints, Fractions).
    v
        Direction ``[d]``, exact.

    Raises
    ------
    ValueError
        for floats, other shapes and a ``v`` whose length is not ``d``.
    """
    X, v = _tokens(X), _direction(X, v)
    proj = [dot(X[i], v) for i in range(X.shape[0])]
    top = [l for l, p in enumerate(proj) if p == max(proj)]
    bottom = [l for l, p in enumerate(proj) if p == min(proj)]
    return [top if p > 0 else bottom if p < 0 else list(range(len(proj))) for p in proj]


def rank_one_prediction(X: object, v: object) -> np.ndarray:
    r"""Lemma A's output: token :math:`i` goes to the mean of its set in :func:`~sxor.interp.lemmas.rank_one_sets`.

    Parameters
    ----------
    X, v
        As in :func:`~sxor.interp.lemmas.rank_one_sets` (refusals as there).
    """
    X = _tokens(X)
    return np.array([_mean(X, C) for C in rank_one_sets(X, v)], dtype=object)


def rank_one_violations(X: object, v: object) -> list[str]:
    r"""The hypotheses of Lemma A that fail; empty when the lemma applies.

    The hypotheses: :math:`\langle v, x_i \rangle \ne 0` for all :math:`i`, and a unique token of
    largest (smallest) projection when some projection is positive (negative).

    Parameters
    ----------
    X, v
        As in :func:`~sxor.interp.lemmas.rank_one_sets`.
    """
    X, v = _tokens(X), _direction(X, v)
    proj = [dot(X[i], v) for i in range(X.shape[0])]
    problems = [f"<v, x_{i}> = 0" for i, p in enumerate(proj) if p == 0]
    if any(p > 0 for p in proj) and proj.count(max(proj)) > 1:
        problems.append(f"{proj.count(max(proj))} tokens tie for the largest <v, x>")
    if any(p < 0 for p in proj) and proj.count(min(proj)) > 1:
        problems.append(f"{proj.count(min(proj))} tokens tie for the smallest <v, x>")
    return problems


def box_sets(X: object, R: object) -> list[list[int]]:
    r"""Argmax set of each token under :math:`A = I` for tokens in :math:`[0, R]^d` that contain the corner :math:`R \mathbf{1}`.

    :math:`C_i = \{l : x_{lk} = R \text{ wherever } x_{ik} > 0\}`.

    Parameters
    ----------
    X
        Tokens ``[n, d]``, exact.
    R
        Side of the box, a positive exact scalar.

    Raises
    ------
    ValueError
        if the setting does not hold (a token outside the box, no corner token), for floats, and
        for a non-scalar or non-positive ``R``.
    """
    X, R = _tokens(X), _positive("R", R)
    if any(x < 0 or x > R for x in X.flat):
        raise ValueError(
            "a token lies outside the box [0, R]^d: the box characterisation does not apply"
        )
    if not any(all(x == R for x in row) for row in X):
        raise ValueError("no token sits at the corner R 1")
    n, d = X.shape
    return [
        [l for l in range(n) if all(X[l, k] == R for k in range(d) if X[i, k] > 0)]
        for i in range(n)
    ]


def box_prediction(X: object, R: object) -> np.ndarray:
    r"""Lemma B's output: token :math:`i` goes to the mean of its set in :func:`~sxor.interp.lemmas.box_sets`.

    Parameters
    ----------
    X, R
        As in :func:`~sxor.interp.lemmas.box_sets` (refusals as there).
    """
    X = _tokens(X)
    return np.array([_mean(X, C) for C in box_sets(X, R)], dtype=object)


def box_violations(X: object, R: object) -> list[str]:
    r"""Why Lemma B (every token collapses onto :math:`R \mathbf{1}`) fails; empty when it holds.

    The reasons: a token outside :math:`[0, R]^d`, no corner token, or a token :math:`x_i` and a
    token :math:`x_j \ne R \mathbf{1}` with :math:`x_{jk} = R` on all of
    :math:`\operatorname{supp}(x_i)` (a tie with the corner).

    Parameters
    ----------
    X
        Tokens ``[n, d]``, exact.
    R
        Side of the box, a positive exact scalar.

    Raises
    ------
    ValueError
        for a non-positive, non-scalar or float ``R``.
    """
    X, R = _tokens(X), _positive("R", R)
    outside = [i for i in range(X.shape[0]) if any(x < 0 or x > R for x in X[i])]
    if outside:
        return [f"x_{i} lies outside [0, R]^d" for i in outside]
    if not any(all(x == R for x in row) for row in X):
        return ["no token sits at the corner R 1"]
    corner = [R] * X.shape[1]
    return [
        f"x_{i} ties the corner with x_{j}"
        for i, C in enumerate(box_sets(X, R))
        for j in C
        if list(X[j]) != corner
    ]


def outermost_tokens(X: object) -> list[int]:
    r"""Indices of the tokens of largest Euclidean norm (those Lemma C keeps fixed).

    Parameters
    ----------
    X
        Tokens ``[n, d]``, exact.

    Raises
    ------
    ValueError
        for floats and other shapes.
    """
    X = _tokens(X)
    norms = [sum((x * x for x in row), Fraction(0)) for row in X]
    return [i for i, r in enumerate(norms) if r == max(norms)]


def low_rank_threshold(Q: object, u: object) -> Fraction | None:
    r"""The threshold :math:`\omega^*` on :math:`b/a` below which tokens of one sphere stay apart.

    Here :math:`A = a I + b\,u u^\top`. For pairwise distinct tokens :math:`\xi` of one
    Euclidean norm and :math:`a > 0`, :math:`b \ge 0`, token :math:`\xi` scores itself above
    every other :math:`\xi'` iff

    .. math::
        &a(\lVert \xi \rVert^2 - \langle \xi, \xi' \rangle) \\
        &\quad > b\,\langle u, \xi \rangle \langle u, \xi' - \xi \rangle.

    The left side is positive, so every :math:`\xi` attends only to itself iff
    :math:`b/a < \omega^*`, where (section 13c, the circle parking has a threshold)

    .. math::
        &\omega^* = \min\Big\{\frac{\lVert \xi \rVert^2 - \langle \xi, \xi' \rangle}
        {\langle u, \xi \rangle \langle u, \xi' - \xi \rangle} :\\
        &\quad \xi \ne \xi',\ \langle u, \xi \rangle \langle u, \xi' - \xi \rangle > 0\Big\}

    (``None`` when no pair has a positive denominator: every :math:`b/a \ge 0` works). Exact.

    Parameters
    ----------
    Q
        Tokens ``[n, d]``, exact, pairwise distinct, all of one norm.
    u
        Direction ``[d]``, exact, non-zero.

    Raises
    ------
    ValueError
        for floats, other shapes, ``u = 0``, repeated tokens and tokens of different norms.
    """
    Q = _tokens(Q)
    u = _direction(Q, u)
    if all(x == 0 for x in u):
        raise ValueError("u must be nonzero")
    rows = [tuple(r) for r in Q]
    if len(set(rows)) != len(rows):
        raise ValueError("the tokens of Q must be pairwise distinct")
    norms = {dot(r, r) for r in rows}
    if len(norms) != 1:
        raise ValueError(
            f"the tokens of Q must all have one norm, got {len(norms)} different norms"
        )
    (r2,) = norms
    best: Fraction | None = None
    for q in rows:
        for p in rows:
            if p == q:
                continue
            den = dot(u, q) * (dot(u, p) - dot(u, q))
            if den > 0:
                ratio = (r2 - dot(q, p)) / den
                best = ratio if best is None or ratio < best else best
    return best


def circle_threshold_bound(M: int) -> Fraction:
    r"""The bound :math:`\omega_+(M)` on the threshold :math:`\omega^*` of the :math:`M` circle spots.

    The spots are those of chapter 13, with :math:`u = \mathbf{1}`:

    .. math::
        \xi(t_i) &= -\varrho\,(2t_i, 1 - t_i^2, 0, \dots, 0) \\
        &\quad /(1 + t_i^2),

    :math:`t_i = i/(M + 1)`. For :math:`M \ge 3` the pair of the last two spots gives the ratio

    .. math::
        &\omega_+(M) \\
        &\ = \frac{(M + 1)(2M^2 + 2M + 1)}{2(M^2 - M - 1)(2M^2 + 4M + 1)} \\
        &\ = \frac{1}{2M} + O(M^{-2}) < \frac1M,

    so :math:`\omega^* \le \omega_+(M)` (section 13c, the circle threshold tends to zero).
    Exact.

    Parameters
    ----------
    M
        Number of parked tokens, an int :math:`\ge 3`.

    Raises
    ------
    TypeError
        for a non-int ``M``.
    ValueError
        for ``M < 3``.
    """
    if isinstance(M, bool) or not isinstance(M, (int, np.integer)):
        raise TypeError(f"M must be an int, got {M!r} of type {type(M).__name__}")
    if M < 3:
        raise ValueError(
            f"M must be >= 3 (the last two spots then lie beyond the diagonal), got {M}"
        )
    M = int(M)
    return Fraction(
        (M + 1) * (2 * M * M + 2 * M + 1), 2 * (M * M - M - 1) * (2 * M * M + 4 * M + 1)
    )


# --------------------------------------------------------------------------------------------
# random admissible instances
# --------------------------------------------------------------------------------------------


def random_rationals(
    shape: tuple[int, ...], generator: torch.Generator, bound: int = 4, den: int = 8
) -> np.ndarray:
    r"""Object array of Fractions :math:`p / q` with values in :math:`[-\mathrm{bound}, \mathrm{bound}]`.

    :math:`q` is uniform in :math:`\{1, \dots, \mathrm{den}\}`, then :math:`p` uniform in
    :math:`\{-\mathrm{bound}\, q, \dots, \mathrm{bound}\, q\}`.

    Parameters
    ----------
    shape
        A tuple of ints ``>= 0``.
    generator
        A ``torch.Generator``.
    bound
        An int ``>= 0``.
    den
        Largest denominator, an int ``>= 1``.
    """
    if not isinstance(shape, tuple):
        raise TypeError(f"shape must be a tuple of ints, got {shape!r}")
    shape = tuple(_int("shape entry", k, 0) for k in shape)
    generator = _generator(generator)
    bound, den = _int("bound", bound, 0), _int("den", den, 1)
    q = torch.randint(1, den + 1, shape, generator=generator)
    p = (
        torch.rand(shape, generator=generator, dtype=torch.float64) * (2 * bound * q + 1)
    ).floor().long() - bound * q
    out = np.empty(shape, dtype=object)
    for idx in np.ndindex(*shape):
        out[idx] = Fraction(int(p[idx]), int(q[idx]))
    return out


def random_rank_one_instance(
    n: int, d: int, generator: torch.Generator
) -> tuple[np.ndarray, np.ndarray]:
    r"""Random ``(X [n, d], v [d])`` satisfying Lemma A's hypotheses (redrawn until they do, at most 10 000 times).

    Parameters
    ----------
    n, d
        Number of tokens and dimension, ints ``>= 1``.
    generator
        A ``torch.Generator``.
    """
    n, d, generator = _int("n", n, 1), _int("d", d, 1), _generator(generator)
    for _ in range(10_000):
        X = random_rationals((n, d), generator)
        v = random_rationals((d,), generator, bound=3, den=3)
        if any(x != 0 for x in v) and not rank_one_violations(X, v):
            return X, v
    raise ValueError(
        f"no admissible rank-one instance with n = {n}, d = {d} in 10 000 draws"
    )  # pragma: no cover


def random_box_instance(n: int, d: int, generator: torch.Generator) -> tuple[np.ndarray, Fraction]:
    r"""Random ``(X [n, d], R)``: the corner :math:`R \mathbf{1}` and :math:`n - 1` other distinct tokens in :math:`(0, R]^d`, shuffled.

    All coordinates are positive, the sufficient hypothesis of Lemma B. The coordinates are
    :math:`R p / q` with :math:`1 \le p \le q \le 8`: 22 distinct values, so at most :math:`22^d`
    distinct tokens.

    Parameters
    ----------
    n
        Number of tokens, an int with :math:`1 \le n \le 22^d`.
    d
        Dimension, an int ``>= 1``.
    generator
        A ``torch.Generator``.

    Raises
    ------
    ValueError
        for a larger ``n`` (which could never be drawn).
    """
    n, d, generator = _int("n", n, 1), _int("d", d, 1), _generator(generator)
    if d < 8 and n > 22**d:
        raise ValueError(
            f"n = {n} distinct tokens do not exist on this grid: at most 22^d = {22**d} for d = {d}"
        )
    R = Fraction(
        int(torch.randint(1, 6, (), generator=generator)),
        int(torch.randint(1, 4, (), generator=generator)),
    )
    rows = [[R] * d]
    while len(rows) < n:
        q = torch.randint(1, 9, (d,), generator=generator)
        p = (torch.rand((d,), generator=generator) * q).floor().long() + 1  # 1..q: p / q in (0, 1]
        row = [R * Fraction(int(p[k]), int(q[k])) for k in range(d)]
        if row not in rows:
            rows.append(row)
    order = torch.randperm(n, generator=generator).tolist()
    return np.array([rows[k] for k in order], dtype=object).reshape(n, d), R


def random_grid_box_instance(
    n: int, d: int, generator: torch.Generator
) -> tuple[np.ndarray, Fraction]:
    r"""Random tokens on the grid :math:`\{0, R/2, R\}^d` plus the corner.

    Faces and zeros are common, so ties with the corner happen (to test the exact
    characterisation, not the lemma).

    Parameters
    ----------
    n, d
        Number of tokens (tokens may repeat) and dimension, ints ``>= 1``.
    generator
        A ``torch.Generator``.
    """
    n, d, generator = _int("n", n, 1), _int("d", d, 1), _generator(generator)
    R = Fraction(2)
    grid = torch.randint(0, 3, (n - 1, d), generator=generator)
    X = np.empty((n, d), dtype=object)
    X[0] = [R] * d
    for i in range(n - 1):
        X[i + 1] = [Fraction(int(g)) for g in grid[i]]
    return X, R


def rational_sphere_point(t: object, R: object) -> np.ndarray:
    r"""Rational point of the sphere :math:`\lVert x \rVert = R` in :math:`\mathbb{R}^{k+1}`, :math:`k` the length of :math:`t`.

    By inverse stereographic projection,
    :math:`x = R\, (2 t, \lVert t \rVert^2 - 1) / (\lVert t \rVert^2 + 1)` (rational for rational
    :math:`t` and :math:`R`).

    Parameters
    ----------
    t
        An exact vector (possibly empty: the point :math:`-R` of the 0-sphere).
    R
        Radius, a positive exact scalar.

    Raises
    ------
    ValueError
        for floats, a ``t`` that is not a vector and ``R <= 0``.
    """
    t, R = as_exact(t, "t"), _positive("R", R)
    if t.ndim != 1:
        raise ValueError(f"t must be a vector [d - 1], got shape {t.shape}")
    s = sum((x * x for x in t), Fraction(0))
    return np.array([R * 2 * x / (s + 1) for x in t] + [R * (s - 1) / (s + 1)], dtype=object)


def random_sphere_instance(
    n_sphere: int, n_inside: int, d: int, generator: torch.Generator
) -> tuple[np.ndarray, Fraction]:
    r"""Random ``(X, R)``: ``n_sphere`` distinct rational points on the sphere :math:`\lVert x \rVert = R` and ``n_inside`` with :math:`\lVert x \rVert < R`.

    The sphere points come first. They come from :math:`t` with entries :math:`p / q`,
    :math:`q \le 5`, :math:`|p / q| \le 3`: 61 values per entry, so at most :math:`61^{d-1}`
    distinct points.

    Parameters
    ----------
    n_sphere
        Number of points on the sphere, ``>= 1``.
    n_inside
        Number of points inside, ``>= 0``.
    d
        Dimension, :math:`2 \le d \le 6`.
    generator
        A ``torch.Generator``.

    Raises
    ------
    ValueError
        for a larger ``n_sphere``, ``d = 1`` (one reachable point) or ``d > 6`` (inside points too
        rare to draw).
    """
    n_sphere, n_inside, d = (
        _int("n_sphere", n_sphere, 1),
        _int("n_inside", n_inside, 0),
        _int("d", d, 2),
    )
    generator = _generator(generator)
    if d > 6:
        raise ValueError(f"d = {d} > 6: points inside the sphere are too rare in the cube to draw")
    if n_sphere > 61 ** (d - 1):
        raise ValueError(
            f"n_sphere = {n_sphere} distinct points do not exist on this grid: at most 61^(d-1) = "
            f"{61 ** (d - 1)} for d = {d}"
        )
    R = Fraction(int(torch.randint(1, 5, (), generator=generator)))
    on: list[np.ndarray] = []
    while len(on) < n_sphere:
        p = rational_sphere_point(random_rationals((d - 1,), generator, bound=3, den=5), R)
        if not any(list(p) == list(q) for q in on):
            on.append(p)
    inside: list[np.ndarray] = []
    while len(inside) < n_inside:
        p = random_rationals((d,), generator, bound=int(R), den=6)
        if sum(x * x for x in p) < R * R:
            inside.append(p)
    return np.array(on + inside, dtype=object).reshape(n_sphere + n_inside, d), R
