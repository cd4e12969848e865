"""This book's exact interpolation construction (Part II, chapters 13 and 14).

Given inputs ``X_1..X_N`` (``X_j [n_j, d]``) and targets ``Y_1..Y_N`` (``Y_j [m_j, d]``,
``1 <= m_j <= n_j``, ``d >= 2``), :func:`construct` returns a transformer ``T`` of blocks
``FF -> SA`` with ``{T(X_j)_i} = {y^j_k}`` as sets, for every ``j``. Four phases:

1. **separation** (``s <= N - 1`` blocks; none if the sequences are already disjoint): hat FFs
   move ``r <= N - 1`` chosen token values until the sequence means are pairwise distinct, then
   one SA with ``A = 0, rho = 1, V = lam I`` maps ``x -> x + lam mean(X_j)``: the token sets
   become pairwise disjoint.
2. **leader selection** (``sum m_j`` FFs): a translation puts every token in ``[1, R]^d``;
   hat FFs send one *leader* of sequence ``j`` to ``c_j 1`` (``c_j > R``) and ``m_j - 1`` more
   tokens to *parking spots* on the circle ``|q| = R_q`` in the negative quadrant of the first two
   coordinates.
3. **collapse** (one SA, ``A = I, rho = 0, V = I``, in the last leader block): every other token
   attends only to its leader, the leader and the parked tokens only to themselves.
4. **interpolation** (``sum m_j`` FFs): flat-top hat FFs move each of the ``sum m_j`` remaining
   points onto its target.

Blocks: ``L = s + 2 sum m_j <= 2 sum m_j + N - 1``. FF width ``<= 4``. SA parameters are
structured, ``A = alpha I + q k^T`` and ``V = beta I`` (``2d + 3`` numbers); an FF of width ``w``
has ``w (2d + 1) + 1``. Identity layers (``W = 0`` of width 0; ``rho = 1, V = 0``) are stored and
counted like any other layer. Everything is exact in :class:`fractions.Fraction`; every layer is
evaluated by :mod:`sxor.interp.layers`.

With ``attention="softmax"`` the same network is used at temperature ``tau``: every SA except the
collapse has equal scores (``A = 0``) or is the identity, so it is exact for every ``tau``; the
collapse moves each token by at most ``epsilon(tau) = max_j (n_j - 1) D_j exp(-Delta / tau)``, and
the flat-top hats then translate each small ball rigidly, so ``d_H(T(X_j), Y_j) <= epsilon(tau)``
for ``tau < tau_max`` (see chapter 13 for the proof).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence

import mpmath
import numpy as np
import torch

from .layers import feed_forward, hausdorff_squared, is_exact, self_attention
from .softmax import softmax_attention_enclosure

Token = tuple  # a token as a tuple of d Fractions (hashable)

ATTENTIONS = ("hardmax", "softmax")

#: Working precision (bits) of the interval softmax used on exact input.
ENCLOSURE_BITS = 200


def _rational(x) -> Fraction:
    """``x`` as a Fraction (a float is converted exactly)."""
    return x if isinstance(x, Fraction) else Fraction(x)


# --------------------------------------------------------------------------------------------
# layers with structured parameters
# --------------------------------------------------------------------------------------------


def _zeros(*shape: int) -> np.ndarray:
    out = np.empty(shape, dtype=object)
    out.fill(Fraction(0))
    return out


@dataclass(frozen=True)
class FFLayer:
    """``FF(x) = eta x + W relu(U x + b)`` with ``U [w, d]``, ``b [w]``, ``W [d, w]`` (Fractions).

    ``w = 0`` (with ``eta = 1``) is the identity layer. Parameters: ``w (2d + 1) + 1``."""

    eta: Fraction
    U: np.ndarray
    b: np.ndarray
    W: np.ndarray
    role: str = ""
    gap: Fraction | None = None  # hats: distance from <v, p> to the nearest other projection
    v_l1: Fraction | None = None  # hats: |v|_1

    @property
    def width(self) -> int:
        return int(self.U.shape[0])

    @property
    def num_parameters(self) -> int:
        return 1 + self.U.size + self.b.size + self.W.size

    @property
    def is_identity(self) -> bool:
        return self.eta == 1 and self.width == 0

    def __call__(self, X):
        """Apply the layer with :func:`sxor.interp.layers.feed_forward` (identity: ``X``).

        Token-wise, so on exact input it is evaluated once per distinct token of ``X [n, d]``."""
        if self.is_identity:
            return X
        if not is_exact(X) or X.ndim != 2:
            return feed_forward(X, self.eta, self.W, self.U, self.b)
        index: dict[Token, int] = {}
        rows = [index.setdefault(tuple(row), len(index)) for row in X]
        unique = np.array(list(index), dtype=object).reshape(len(index), X.shape[1])
        return feed_forward(unique, self.eta, self.W, self.U, self.b)[rows]


def identity_ff(d: int) -> FFLayer:
    """The identity FF layer (``eta = 1``, width 0)."""
    return FFLayer(Fraction(1), _zeros(0, d), _zeros(0), _zeros(d, 0), "identity")


@dataclass(frozen=True)
class SALayer:
    """``SA(X)_i = rho x_i + V sum_l pi_il x_l`` with ``A = alpha I + q k^T`` and ``V = beta I``.

    Parameters: ``rho, alpha, beta, q [d], k [d]``, i.e. ``2d + 3``. ``rho = 1, beta = 0`` is the
    identity layer; ``alpha = 0, q = 0`` (``A = 0``) gives equal scores, hence uniform weights for
    hardmax *and* every softmax temperature."""

    rho: Fraction
    alpha: Fraction
    q: np.ndarray
    k: np.ndarray
    beta: Fraction
    role: str = ""

    @property
    def d(self) -> int:
        return int(self.q.shape[0])

    @property
    def num_parameters(self) -> int:
        return 3 + self.q.size + self.k.size

    @property
    def is_identity(self) -> bool:
        return self.rho == 1 and self.beta == 0

    @property
    def scores_constant(self) -> bool:
        """``A = 0``: all scores equal, so the weights are ``1/n`` for every ``tau``."""
        return self.alpha == 0 and all(v == 0 for v in self.q)

    @property
    def A(self) -> np.ndarray:
        eye = _zeros(self.d, self.d)
        for i in range(self.d):
            eye[i, i] = Fraction(1)
        return self.alpha * eye + np.outer(self.q, self.k)

    @property
    def V(self) -> np.ndarray:
        out = _zeros(self.d, self.d)
        for i in range(self.d):
            out[i, i] = self.beta
        return out

    def __call__(self, X, tau=0):
        """Apply the layer with :func:`sxor.interp.layers.self_attention` at temperature ``tau``.

        The identity returns ``X``; a layer with ``A = 0`` is evaluated with ``tau = 0`` (its
        softmax weights equal its hardmax weights, ``1/n``, exactly). Softmax on exact input has
        irrational outputs: it returns the midpoint of the rigorous rational enclosure of
        :func:`sxor.interp.softmax.softmax_attention_enclosure` at ``ENCLOSURE_BITS`` bits (a
        rational point within about ``n 2^-ENCLOSURE_BITS`` of the true output)."""
        if self.is_identity:
            return X
        if self.scores_constant:
            tau = 0
        if tau != 0 and is_exact(X):
            lo, hi = softmax_attention_enclosure(X, self.A, self.rho, self.V, _rational(tau), ENCLOSURE_BITS)
            return (lo + hi) / 2
        return self_attention(X, self.A, self.rho, self.V, tau)


def identity_sa(d: int) -> SALayer:
    """The identity SA layer (``rho = 1``, ``V = 0``, ``A = 0``)."""
    return SALayer(Fraction(1), Fraction(0), _zeros(d), _zeros(d), Fraction(0), "identity")


@dataclass(frozen=True)
class Block:
    """One transformer block: ``SA(FF(X))`` (Figure 3 of the paper: FF first, then SA)."""

    ff: FFLayer
    sa: SALayer
    phase: str

    @property
    def num_parameters(self) -> int:
        return self.ff.num_parameters + self.sa.num_parameters


# --------------------------------------------------------------------------------------------
# the transformer
# --------------------------------------------------------------------------------------------


@dataclass
class InterpolatingTransformer:
    """The network built by :func:`construct`; ``T(X)`` maps tokens ``[n, d]`` to ``[n, d]``.

    ``attention`` is ``"hardmax"`` (``tau = 0``) or ``"softmax"`` (temperature ``tau``).
    For softmax, ``tau_max`` is the threshold below which :meth:`error_bound` holds, and
    ``gap`` (``Delta``) and ``spread`` (``max_j (n_j - 1) D_j``) define
    ``epsilon(tau) = spread * exp(-gap / tau)``."""

    blocks: list[Block]
    d: int
    attention: str = "hardmax"
    tau: float | Fraction = 0
    gap: Fraction | None = None
    spread: Fraction | None = None
    radius: Fraction | None = None
    info: dict = field(default_factory=dict)

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)

    @property
    def num_parameters(self) -> int:
        """Every entry of every stored (structured) parameter, identity layers included."""
        return sum(block.num_parameters for block in self.blocks)

    @property
    def max_width(self) -> int:
        return max((block.ff.width for block in self.blocks), default=0)

    def phase_counts(self) -> dict[str, int]:
        """Number of blocks of each phase."""
        counts: dict[str, int] = {}
        for block in self.blocks:
            counts[block.phase] = counts.get(block.phase, 0) + 1
        return counts

    @property
    def tau_max(self) -> float:
        """The largest temperature of the softmax guarantee.

        ``tau_max = gap / log(spread / radius)``, so that ``epsilon(tau) < radius`` for
        ``0 < tau < tau_max`` (``inf`` when ``spread <= radius``). Hardmax transformers return 0."""
        if self.gap is None:
            return 0.0
        ratio = self.spread / self.radius
        return math.inf if ratio <= 1 else float(self.gap) / math.log(float(ratio))

    def error_bound(self, tau) -> mpmath.mpf:
        """``epsilon(tau) = spread * exp(-gap / tau)`` (valid for ``0 < tau < tau_max``)."""
        if self.gap is None:
            raise ValueError("error_bound is defined for softmax transformers only (hardmax is exact)")
        tau = mpmath.mpf(tau.numerator) / tau.denominator if isinstance(tau, Fraction) else mpmath.mpf(tau)
        if not tau > 0:
            raise ValueError(f"tau must be > 0, got {tau}")
        return mpmath.mpf(self.spread.numerator) / self.spread.denominator * mpmath.exp(
            -(mpmath.mpf(self.gap.numerator) / self.gap.denominator) / tau
        )

    def trajectory(self, X) -> list:
        """Tokens after each layer: ``[X, FF_1(X), SA_1(FF_1(X)), ...]`` (length ``2L + 1``)."""
        states = [X]
        for block in self.blocks:
            states.append(block.ff(states[-1]))
            states.append(block.sa(states[-1], self.tau))
        return states

    def __call__(self, X):
        """Output tokens ``T(X) [n, d]`` (exact for Fraction ``X`` and hardmax)."""
        for block in self.blocks:
            X = block.sa(block.ff(X), self.tau)
        return X

    def snapshots(self, sequences: Sequence) -> dict[str, list]:
        """Tokens of every sequence at the end of each phase: ``"input"``, ``"separation"``
        (if any), ``"leaders"`` (just before the collapse SA), ``"collapse"``, ``"interpolation"``."""
        states = list(sequences)
        out = {"input": states}
        for k, block in enumerate(self.blocks):
            states = _apply_ff(block.ff, states)
            last_of_phase = k + 1 == len(self.blocks) or self.blocks[k + 1].phase != block.phase
            if block.phase == "collapse":
                out["leaders"] = states
            states = [block.sa(s, self.tau) for s in states]
            if last_of_phase:
                out[block.phase] = states
        return out

    def map(self, sequences: Sequence) -> list:
        """``[T(X) for X in sequences]``, with each FF applied once to all sequences' tokens."""
        states = list(sequences)
        for block in self.blocks:
            states = _apply_ff(block.ff, states)
            states = [block.sa(s, self.tau) for s in states]
        return states


# --------------------------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------------------------


def _fraction(name: str, value: object) -> Fraction:
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} contains a bool")
    if isinstance(value, (numbers.Rational, np.integer)):
        return Fraction(int(value)) if isinstance(value, np.integer) else Fraction(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            raise ValueError(f"{name} contains a non-finite value {value}")
        return Fraction(float(value))  # exact: a float is a dyadic rational
    raise ValueError(f"{name} contains {value!r} of type {type(value).__name__}; expected int, Fraction or float")


def _exact_tokens(name: str, a: object) -> np.ndarray:
    """``a`` as an object array ``[n, d]`` of Fractions (floats converted exactly)."""
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().numpy() if a.is_floating_point() else a.tolist()
    arr = np.asarray(a, dtype=object)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array [tokens, d], got shape {arr.shape}")
    out = np.empty(arr.shape, dtype=object)
    for idx, value in np.ndenumerate(arr):
        out[idx] = _fraction(name, value)
    return out


def _fmt(token: Token) -> str:
    return "(" + ", ".join(str(v) for v in token) + ")"


def check_dataset(inputs: Sequence, targets: Sequence) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Validate a dataset and return it as object arrays of Fractions.

    Requires (the theorem's hypotheses): ``N >= 1`` pairs; ``d >= 2`` and the same ``d``
    everywhere; ``1 <= m_j <= n_j``; pairwise distinct tokens within every input and every target
    sequence; pairwise distinct input sequences *as sets* (a transformer is permutation
    equivariant, so two inputs with the same tokens have the same output set). Raises
    ``ValueError`` naming the sequence and the tokens."""
    if len(inputs) != len(targets):
        raise ValueError(f"got {len(inputs)} input sequences but {len(targets)} target sequences")
    if len(inputs) == 0:
        raise ValueError("the dataset is empty (N = 0)")
    X = [_exact_tokens(f"inputs[{j}]", x) for j, x in enumerate(inputs)]
    Y = [_exact_tokens(f"targets[{j}]", y) for j, y in enumerate(targets)]
    d = X[0].shape[1]
    if d < 2:
        raise ValueError(f"the token dimension must be d >= 2, got d = {d}")
    for name, seqs in (("inputs", X), ("targets", Y)):
        for j, s in enumerate(seqs):
            if s.shape[1] != d:
                raise ValueError(f"{name}[{j}] has tokens of dimension {s.shape[1]}, expected d = {d}")
            if s.shape[0] == 0:
                raise ValueError(f"{name}[{j}] is empty; every sequence needs at least one token")
            seen: dict[Token, int] = {}
            for i, row in enumerate(s):
                t = tuple(row)
                if t in seen:
                    raise ValueError(
                        f"{name}[{j}] repeats the token {_fmt(t)} at positions {seen[t]} and {i}; "
                        "tokens within a sequence must be pairwise distinct"
                    )
                seen[t] = i
    for j, (x, y) in enumerate(zip(X, Y)):
        if y.shape[0] > x.shape[0]:
            raise ValueError(
                f"targets[{j}] has m = {y.shape[0]} tokens but inputs[{j}] only n = {x.shape[0]}; need m <= n"
            )
    sets: dict[frozenset, int] = {}
    for j, x in enumerate(X):
        key = frozenset(tuple(row) for row in x)
        if key in sets:
            raise ValueError(
                f"inputs[{sets[key]}] and inputs[{j}] contain the same tokens "
                f"{{{', '.join(_fmt(t) for t in sorted(key))}}}; input sequences must be distinct as sets"
            )
        sets[key] = j
    return X, Y


# --------------------------------------------------------------------------------------------
# geometry helpers (exact)
# --------------------------------------------------------------------------------------------


def _dot(u: Sequence[Fraction], x: Sequence[Fraction]) -> Fraction:
    return sum((a * b for a, b in zip(u, x)), Fraction(0))


def injective_direction(values: Sequence[Token], d: int, start: int = 1) -> tuple[Fraction, ...]:
    """The first ``v = (1, t, ..., t^(d-1))``, ``t = start, start + 1, ...``, whose projections
    ``<v, x>`` are pairwise distinct on ``values``. It exists: two distinct points have equal
    projections for at most ``d - 1`` values of ``t`` (a nonzero polynomial of degree ``<= d - 1``
    in ``t``), so at most ``(d - 1) K (K - 1) / 2`` values of ``t`` fail for ``K`` points."""
    values = list(set(values))
    t = start
    while True:
        v = tuple(Fraction(t) ** i for i in range(d))
        if len({_dot(v, x) for x in values}) == len(values):
            return v
        t += 1


def hat_move(values: set[Token], p: Token, displacement: Sequence[Fraction], d: int, *, flat: bool,
          translation: Sequence[Fraction] | None = None, role: str = "", start: int = 1) -> FFLayer:
    """A residual hat FF ``x -> x + h(<v, x>) D (+ t)`` with ``h(<v, p>) = 1`` and ``h = 0`` at
    every other value in ``values``.

    ``v`` is :func:`injective_direction` of ``values``; ``g`` the distance from ``s = <v, p>`` to
    the nearest other projection. ``flat=False``: triangle of half-width ``g/2`` (3 ReLUs);
    ``flat=True``: trapezoid equal to 1 on ``|t - s| <= g/4`` and 0 for ``|t - s| >= g/2``
    (4 ReLUs). ``translation`` adds a constant neuron (``U = 0, b = 1``). ``start``: first ``t``
    tried by :func:`injective_direction` (the previous move's ``t`` usually still works)."""
    if p not in values:
        raise ValueError(f"the point to move {_fmt(p)} is not in values")
    if len(p) != d or len(displacement) != d:
        raise ValueError(f"p and displacement must have d = {d} coordinates, got {len(p)} and {len(displacement)}")
    v = injective_direction(values, d, start)
    s = _dot(v, p)
    others = [abs(_dot(v, x) - s) for x in values if x != p]
    g = min(others) if others else Fraction(1)
    if flat:
        r = g / 4
        offsets, coefs = [2 * r, r, -r, -2 * r], [1 / r, -1 / r, -1 / r, 1 / r]
    else:
        r = g / 2
        offsets, coefs = [r, Fraction(0), -r], [1 / r, -2 / r, 1 / r]
    rows = [list(v) for _ in offsets]
    biases = [o - s for o in offsets]
    cols = [[c * D for D in displacement] for c in coefs]
    if translation is not None:
        rows.append([Fraction(0)] * d)
        biases.append(Fraction(1))
        cols.append(list(translation))
    U = np.array(rows, dtype=object)
    b = np.array(biases, dtype=object)
    W = np.array(cols, dtype=object).T.copy()
    return FFLayer(Fraction(1), U, b, W, role, g, sum(abs(c) for c in v))


def _all_values(states: list[np.ndarray]) -> set[Token]:
    return {tuple(row) for s in states for row in s}


def _replace(states: list[np.ndarray], old: Token, new: Token) -> list[np.ndarray]:
    """The states after a hat move ``old -> new`` as the hat lemma predicts it (every token equal
    to ``old`` becomes ``new``, every other token is unchanged); :meth:`InterpolatingTransformer.map`
    checks the prediction with the real layers."""
    out = []
    for s in states:
        s = s.copy()
        for i in range(s.shape[0]):
            if tuple(s[i]) == old:
                s[i] = np.array(new, dtype=object)
        out.append(s)
    return out


def _apply_ff(layer: FFLayer, states: list[np.ndarray]) -> list[np.ndarray]:
    """Apply a token-wise layer to all sequences at once (one call on the stacked tokens)."""
    sizes = np.cumsum([0] + [s.shape[0] for s in states])
    out = layer(np.concatenate(states, axis=0))
    return [out[a:b] for a, b in zip(sizes[:-1], sizes[1:])]


def _mean(s: np.ndarray) -> Token:
    n = s.shape[0]
    return tuple(sum(s[:, c], Fraction(0)) / n for c in range(s.shape[1]))


# --------------------------------------------------------------------------------------------
# the four phases
# --------------------------------------------------------------------------------------------


def _separation(states: list[np.ndarray], d: int, hint: list[int]) -> tuple[list[FFLayer], SALayer | None, list[np.ndarray]]:
    """Phase 1. Returns the move FFs, the shift SA (None if already disjoint) and the new states.
    ``hint[0]``: the moment-curve parameter of the last direction (updated in place)."""
    owners: dict[Token, int] = {}
    overlap = False
    for j, s in enumerate(states):
        for row in s:
            t = tuple(row)
            if t in owners and owners[t] != j:
                overlap = True
            owners[t] = j
    if not overlap:
        return [], None, states
    direction = tuple(Fraction(c + 1) for c in range(d))
    moves: list[FFLayer] = []
    while True:
        means = [_mean(s) for s in states]
        pair = next(((j, k) for j in range(len(states)) for k in range(j) if means[j] == means[k]), None)
        if pair is None:
            break
        j, k = pair
        rows_k = {tuple(row) for row in states[k]}
        if states[j].shape[0] != states[k].shape[0]:
            p = tuple(states[j][0])
        else:  # equal sizes and distinct sets: X_j has a token that X_k lacks
            p = next(tuple(row) for row in states[j] if tuple(row) not in rows_k)
        values = _all_values(states)
        contains = [any(tuple(row) == p for row in s) for s in states]
        for t in range(1, 10_000):
            D = tuple(t * c for c in direction)
            new_p = tuple(a + b for a, b in zip(p, D))
            if new_p in values:
                continue
            new_means = [
                tuple(m + (Dc / s.shape[0] if contains[i] else 0) for m, Dc in zip(means[i], D))
                for i, s in enumerate(states)
            ]
            refines = all(
                (means[a] == means[b]) or (new_means[a] != new_means[b])
                for a in range(len(states)) for b in range(a)
            )
            if refines and new_means[j] != new_means[k]:
                break
        else:  # unreachable by Lemma 4 of chapter 13 (finitely many bad t)
            raise RuntimeError(f"no displacement separates the means of inputs {k} and {j}")
        layer = hat_move(values, p, D, d, flat=False, role=f"separate: move {_fmt(p)}", start=hint[0])
        hint[0] = int(layer.U[0, 1])
        moves.append(layer)
        states = _replace(states, p, new_p)
    means = [_mean(s) for s in states]
    total = sum(s.shape[0] for s in states)
    lam = 1
    while len({tuple(x + lam * m for x, m in zip(row, means[j])) for j, s in enumerate(states) for row in s}) != total:
        lam += 1
    shift = SALayer(Fraction(1), Fraction(0), _zeros(d), _zeros(d), Fraction(lam), f"separate: x + {lam} mean")
    states = [s + np.array([lam * m for m in means[j]], dtype=object) for j, s in enumerate(states)]
    return moves, shift, states


def _parking_spot(i: int, count: int, radius: Fraction, d: int) -> Token:
    """A rational point of the circle ``|q| = radius`` with ``q_1, q_2 < 0`` and ``q_c = 0``
    for ``c > 2``: inverse stereographic projection at ``t = i / (count + 1)`` in ``(0, 1)``."""
    t = Fraction(i, count + 1)
    q = [-radius * 2 * t / (1 + t * t), -radius * (1 - t * t) / (1 + t * t)] + [Fraction(0)] * (d - 2)
    return tuple(q)


def construct(inputs: Sequence, targets: Sequence, attention: str = "hardmax", tau=None) -> InterpolatingTransformer:
    """Build a transformer that interpolates ``inputs[j] -> targets[j]`` exactly (as sets).

    ``inputs[j] [n_j, d]``, ``targets[j] [m_j, d]`` (Fractions, ints, or floats converted exactly);
    hypotheses checked by :func:`check_dataset`. ``attention="hardmax"``: exact,
    ``d_H(T(X_j), Y_j) = 0``. ``attention="softmax"``: the same blocks at temperature ``tau``
    (default ``tau_max / 2``); ``d_H(T(X_j), Y_j) <= T.error_bound(tau)`` when
    ``0 < tau < T.tau_max``. Blocks ``<= 2 sum m_j + N - 1``, FF width ``<= 4``."""
    if attention not in ATTENTIONS:
        raise ValueError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
    if attention == "hardmax" and tau not in (None, 0):
        raise ValueError(f"hardmax attention has tau = 0, got tau={tau}")
    X, Y = check_dataset(inputs, targets)
    d = X[0].shape[1]
    states = [x.copy() for x in X]

    # phase 1: separation
    hint = [1]
    sep_moves, shift, states = _separation(states, d, hint)

    # phase 2: leader selection (the first FF also translates everything into [1, R]^d)
    lows = [min(s[:, c].min() for s in states) for c in range(d)]
    translation = tuple(1 - lo for lo in lows)
    box = max(max(s[:, c].max() for s in states) + translation[c] for c in range(d))  # R: tokens in [1, R]^d
    ybig = max(abs(v) for y in Y for v in y.flat)
    y1 = max(sum(abs(v) for v in row) for y in Y for row in y)
    num_parked = sum(y.shape[0] - 1 for y in Y)
    park_radius = 1 + max(box, y1)  # > |y|_1 >= |y|_2: parking spots differ from every target
    plan: list[tuple[Token, Token]] = []  # (post-translation value, destination)
    parked = 0
    for j, (s, y) in enumerate(zip(states, Y)):
        lead = tuple(v + t for v, t in zip(s[0], translation))
        plan.append((lead, tuple([max(box, ybig) + j + 1] * d)))
        for i in range(1, y.shape[0]):
            parked += 1
            plan.append((tuple(v + t for v, t in zip(s[i], translation)), _parking_spot(parked, num_parked, park_radius, d)))
    lead_moves: list[FFLayer] = []
    for idx, (p, dest) in enumerate(plan):
        D = tuple(a - b for a, b in zip(dest, p))
        if idx == 0:
            p0 = tuple(v - t for v, t in zip(p, translation))
            layer = hat_move(_all_values(states), p0, D, d, flat=False, translation=translation, start=hint[0],
                          role=f"translate by {_fmt(translation)}; leader {_fmt(p)} -> {_fmt(dest)}")
            states = [s + np.array(translation, dtype=object) for s in states]
        else:
            layer = hat_move(_all_values(states), p, D, d, flat=False, start=hint[0],
                          role=f"select {_fmt(p)} -> {_fmt(dest)}")
        hint[0] = int(layer.U[0, 1])
        lead_moves.append(layer)
        states = _replace(states, p, dest)

    # phase 3: collapse (A = I, rho = 0, V = I): by the collapse lemma every token except the
    # leader (row 0) and the parked tokens (rows 1..m_j-1) lands on the leader
    collapse = SALayer(Fraction(0), Fraction(1), _zeros(d), _zeros(d), Fraction(1), "collapse onto leaders")
    pre_collapse = states
    states = [np.concatenate([s[: y.shape[0]], np.repeat(s[:1], s.shape[0] - y.shape[0], axis=0)])
              for s, y in zip(states, Y)]

    # phase 4: interpolation onto the targets (flat-top hats)
    interp_moves: list[FFLayer] = []
    destinations = [dest for _, dest in plan]
    goals = [tuple(row) for y in Y for row in y]
    for p, goal in zip(destinations, goals):
        D = tuple(a - b for a, b in zip(goal, p))
        layer = hat_move(_all_values(states), p, D, d, flat=True, role=f"interpolate {_fmt(p)} -> {_fmt(goal)}",
                      start=hint[0])
        hint[0] = int(layer.U[0, 1])
        interp_moves.append(layer)
        states = _replace(states, p, goal)

    # blocks: FF then SA
    blocks: list[Block] = []
    if shift is not None:
        ffs = sep_moves or [identity_ff(d)]
        for i, ff in enumerate(ffs):
            blocks.append(Block(ff, shift if i == len(ffs) - 1 else identity_sa(d), "separation"))
    for i, ff in enumerate(lead_moves):
        last = i == len(lead_moves) - 1
        blocks.append(Block(ff, collapse if last else identity_sa(d), "collapse" if last else "leaders"))
    for ff in interp_moves:
        blocks.append(Block(ff, identity_sa(d), "interpolation"))

    T = InterpolatingTransformer(blocks, d)
    T.info = {"N": len(X), "n": [x.shape[0] for x in X], "m": [y.shape[0] for y in Y],
              "separation_moves": len(sep_moves), "shift": shift is not None,
              "box": box, "park_radius": park_radius}
    if attention == "softmax":
        T.attention = "softmax"
        T.gap, T.spread = _collapse_margins(pre_collapse, collapse)
        T.radius = min(layer.gap / (4 * layer.v_l1) for layer in interp_moves)
        if tau is None:
            tau = T.tau_max / 2 if math.isfinite(T.tau_max) else 1.0
        if not tau > 0:
            raise ValueError(f"softmax needs tau > 0, got tau={tau}")
        T.tau = tau
    return T


def _collapse_margins(states: list[np.ndarray], collapse: SALayer) -> tuple[Fraction, Fraction]:
    """``Delta``: the smallest score gap ``s_{i i*} - max_{l != i*} s_il`` over all tokens of all
    sequences at the collapse layer; ``spread = max_j (n_j - 1) D_j`` with ``D_j`` the largest
    l1 distance between two tokens of sequence ``j`` (an upper bound on the l2 one)."""
    A = collapse.A
    gap: Fraction | None = None
    spread = Fraction(0)
    for s in states:
        S = (s @ A.T) @ s.T
        n = s.shape[0]
        for i in range(n):
            row = sorted(S[i], reverse=True)
            if n > 1:
                g = row[0] - row[1]
                gap = g if gap is None else min(gap, g)
        diam = max((sum(abs(a - b) for a, b in zip(s[i], s[l])) for i in range(n) for l in range(n)), default=Fraction(0))
        spread = max(spread, (n - 1) * diam)
    return (gap if gap is not None else Fraction(1)), spread


def interpolation_errors(T: InterpolatingTransformer, inputs: Sequence, targets: Sequence) -> list[Fraction]:
    """Squared Hausdorff distances ``d_H(T(X_j), Y_j)^2``, exact Fractions. Hardmax: the exact
    outputs. Softmax: the outputs with the collapse replaced by the midpoint of its rigorous
    enclosure (see ``SALayer.__call__`` and :func:`softmax_certificate`)."""
    X, Y = check_dataset(inputs, targets)
    return [hausdorff_squared(out, y) for out, y in zip(T.map(X), Y)]


def block_bound(m: Sequence[int], attention: str = "hardmax") -> int:
    """The theorems' block counts: ``2 sum m_j + 2N + 1`` (hardmax), ``2 sum m_j + 3N`` (softmax)."""
    N = len(m)
    return 2 * sum(m) + (2 * N + 1 if attention == "hardmax" else 3 * N)


def parameter_bound(m: Sequence[int], d: int) -> int:
    """This construction's parameter bound ``(2 sum m_j + N - 1)(10 d + 8) <= (30 d + 24) sum m_j``."""
    return (2 * sum(m) + len(m) - 1) * (10 * d + 8)


def softmax_certificate(T: InterpolatingTransformer, inputs: Sequence, targets: Sequence, tau=None) -> dict:
    """Rigorous check of the softmax bound at temperature ``tau`` (default ``T.tau``).

    Runs the exact layers up to the collapse, encloses the softmax collapse output in rational
    boxes (:func:`sxor.interp.softmax.softmax_attention_enclosure`), and returns

    * ``deviation``: a rigorous upper bound on ``max_i |SA_tau(Z)_i - SA_0(Z)_i|_1`` over all
      tokens (the collapse error, l1 >= l2);
    * ``bound``: ``epsilon(tau)`` as a float; ``radius``: the flat-top margin;
    * ``certified``: ``deviation <= radius``, which (hat lemma) makes every later FF a rigid
      translation of each cluster, so ``d_H(T(X_j), Y_j) <= deviation``;
    * ``hausdorff``: exact ``d_H`` of the rational midpoint path, per sequence (floats)."""
    if T.attention != "softmax":
        raise ValueError("softmax_certificate needs a transformer built with attention='softmax'")
    tau = _rational(T.tau if tau is None else tau)
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    X, Y = check_dataset(inputs, targets)
    states = list(X)
    at = next(i for i, block in enumerate(T.blocks) if block.phase == "collapse")
    for block in T.blocks[:at]:
        states = [block.sa(s, 0) for s in _apply_ff(block.ff, states)]
    states = _apply_ff(T.blocks[at].ff, states)
    collapse = T.blocks[at].sa
    deviation = Fraction(0)
    outputs = []
    for s in states:
        hard = collapse(s, 0)
        lo, hi = softmax_attention_enclosure(s, collapse.A, collapse.rho, collapse.V, tau, ENCLOSURE_BITS)
        for i in range(s.shape[0]):
            dev = sum(max(abs(a - c), abs(b - c)) for a, b, c in zip(lo[i], hi[i], hard[i]))
            deviation = max(deviation, dev)
        outputs.append((lo + hi) / 2)
    for block in T.blocks[at + 1:]:
        outputs = [block.sa(o, 0) for o in _apply_ff(block.ff, outputs)]
    return {
        "tau": float(tau),
        "deviation": deviation,
        "bound": float(T.error_bound(tau)),
        "radius": T.radius,
        "certified": deviation <= T.radius,
        "hausdorff": [float(mpmath.sqrt(mpmath.mpf(h.numerator) / h.denominator))
                      for h in (hausdorff_squared(o, y) for o, y in zip(outputs, Y))],
    }


def random_dataset(N: int, n, m, d: int, *, seed: int = 0, denominator: int = 4, overlap: bool = True
                   ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """A random admissible dataset of Fractions: ``N`` inputs ``[n_j, d]`` and targets ``[m_j, d]``.

    ``n``, ``m``: an int (the same for every sequence) or a list of ``N`` ints. Coordinates are
    multiples of ``1/denominator`` in ``[-4, 4]``. ``overlap=True`` draws every input from one
    shared pool of ``max n_j + 2`` tokens (more if needed for ``N`` distinct subsets), so the inputs share many tokens (separation is
    needed); ``overlap=False`` draws each input independently. Seeded by ``seed`` only."""
    import random

    n = [n] * N if isinstance(n, int) else list(n)
    m = [m] * N if isinstance(m, int) else list(m)
    if len(n) != N or len(m) != N:
        raise ValueError(f"n and m must be ints or lists of N = {N} ints, got {n}, {m}")
    if any(mj < 1 or mj > nj for nj, mj in zip(n, m)):
        raise ValueError(f"need 1 <= m_j <= n_j, got n = {n}, m = {m}")
    if d < 2:
        raise ValueError(f"d must be >= 2, got {d}")
    rng = random.Random(seed)

    def points(count: int) -> list[Token]:
        out: dict[Token, None] = {}
        while len(out) < count:
            out[tuple(Fraction(rng.randint(-4 * denominator, 4 * denominator), denominator) for _ in range(d))] = None
        return list(out)

    size = max(n) + 2
    while min(math.comb(size, nj) for nj in n) < N:  # enough distinct subsets for N inputs
        size += 1
    pool = points(size) if overlap else None
    inputs, keys = [], set()
    for nj in n:
        while True:
            rows = rng.sample(pool, nj) if overlap else points(nj)
            if frozenset(rows) not in keys:
                break
        keys.add(frozenset(rows))
        inputs.append(np.array(rows, dtype=object).reshape(nj, d))
    targets = [np.array(points(mj), dtype=object).reshape(mj, d) for mj in m]
    return inputs, targets
