r"""The network of chapter 13: structured FF and SA layers, blocks, and the transformer.

A block is FF followed by SA (Figure 3 of the paper: FF first, then SA):

* :math:`\mathrm{FF}(x) = \eta x + W \operatorname{relu}(U x + b)` with ``U [w, d]``, ``b [w]``,
  ``W [d, w]``: :math:`w (2d + 1) + 1` stored numbers (:class:`~sxor.interp.network.FFLayer`);
* :math:`\mathrm{SA}(X)_i = \rho x_i + V \sum_l \pi_{il} x_l` with :math:`A = \alpha I + q k^\top`
  and :math:`V = \beta I`: :math:`2d + 3` stored numbers (:class:`~sxor.interp.network.SALayer`);
  :attr:`~sxor.interp.network.SALayer.dense_parameters` counts a dense head instead (full
  :math:`Q, K, V \in \mathbb{R}^{d \times d}` and :math:`\rho`), :math:`3 d^2 + 1`.

Every layer is evaluated by :mod:`sxor.interp.layers` (float or exact). All classes are frozen:
:func:`sxor.interp.construct.construct` builds the network complete, and
:meth:`~sxor.interp.network.InterpolatingTransformer.at_temperature` returns a copy at another
temperature.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath
import numpy as np

from .enclosures import softmax_attention_enclosure
from .exact import Token, as_exact, exact_scalar, identity, is_exact, short, zeros
from .layers import feed_forward, self_attention

ATTENTIONS = ("hardmax", "softmax")

#: Working precision (bits) of the interval softmax used on exact input. The enclosure is centred
#: on the exact hardmax output and encloses only the deviation from it, so its width is about
#: ``2^-ENCLOSURE_BITS`` times the deviation, whatever the size of the coordinates.
ENCLOSURE_BITS = 200


@dataclass(frozen=True)
class FFLayer:
    r"""Feed-forward layer :math:`\mathrm{FF}(x) = \eta x + W \operatorname{relu}(U x + b)` with Fraction parameters.

    :math:`w = 0` (with :math:`\eta = 1`) is the identity layer. Stored numbers: :math:`w (2d + 1) + 1`.

    Parameters
    ----------
    eta
        Weight :math:`\eta` of the skip connection.
    U
        Input weights ``[w, d]``.
    b
        Hidden biases ``[w]``.
    W
        Output weights ``[d, w]``.
    role
        Name of the layer's job in the construction (for reports).
    gap
        For a hat: the distance from :math:`\langle v, p \rangle` to the nearest other projection;
        ``None`` for other layers.
    v_l1
        For a hat: :math:`\lVert v \rVert_1`; ``None`` for other layers.
    """

    eta: Fraction
    U: np.ndarray
    b: np.ndarray
    W: np.ndarray
    role: str = ""
    gap: Fraction | None = None
    v_l1: Fraction | None = None

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
        r"""Apply the layer with :func:`sxor.interp.layers.feed_forward` (identity: ``X``).

        Token-wise, so on exact input it is evaluated once per distinct token of ``X [n, d]``.
        """
        if self.is_identity:
            return X
        if not is_exact(X) or X.ndim != 2:
            return feed_forward(X, self.eta, self.W, self.U, self.b)
        index: dict[Token, int] = {}
        rows = [index.setdefault(tuple(row), len(index)) for row in X]
        unique = np.array(list(index), dtype=object).reshape(len(index), X.shape[1])
        return feed_forward(unique, self.eta, self.W, self.U, self.b)[rows]


def identity_ff(d: int) -> FFLayer:
    r"""The identity FF layer (:math:`\eta = 1`, width 0) in dimension ``d``."""
    return FFLayer(Fraction(1), zeros(0, d), zeros(0), zeros(d, 0), "identity")


@dataclass(frozen=True)
class SALayer:
    r"""Self-attention layer :math:`\mathrm{SA}(X)_i = \rho x_i + V \sum_l \pi_{il} x_l` with :math:`A = \alpha I + q k^\top`, :math:`V = \beta I`.

    Stored numbers: :math:`\rho, \alpha, \beta, q \in \mathbb{R}^d, k \in \mathbb{R}^d`, i.e.
    :math:`2d + 3`. :math:`\rho = 1, \beta = 0` is the identity layer; :math:`\alpha = 0, q = 0`
    (:math:`A = 0`) gives equal scores, hence uniform weights for hardmax *and* every softmax
    temperature.

    Parameters
    ----------
    rho
        Weight :math:`\rho` of the skip connection.
    alpha
        Multiple :math:`\alpha` of the identity in :math:`A`.
    q, k
        Vectors ``[d]`` of the rank-one part :math:`q k^\top` of :math:`A`.
    beta
        Scale :math:`\beta` of the value matrix.
    role
        Name of the layer's job in the construction (for reports).
    """

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
    def dense_parameters(self) -> int:
        r"""Stored numbers of a dense head, full ``Q, K, V [d, d]`` (:math:`A = Q^\top K`) and :math:`\rho`, i.e. :math:`3 d^2 + 1`."""
        return 3 * self.d * self.d + 1

    @property
    def is_identity(self) -> bool:
        return self.rho == 1 and self.beta == 0

    @property
    def scores_constant(self) -> bool:
        r"""Whether :math:`A = 0`, so that all scores are equal and the weights are :math:`1/n` for every :math:`\tau`."""
        return self.alpha == 0 and all(v == 0 for v in self.q)

    @property
    def A(self) -> np.ndarray:
        return self.alpha * identity(self.d) + np.outer(self.q, self.k)

    @property
    def V(self) -> np.ndarray:
        return self.beta * identity(self.d)

    def __call__(self, X, tau=0):
        r"""Apply the layer with :func:`sxor.interp.layers.self_attention` at temperature ``tau``.

        The identity returns ``X``; a layer with :math:`A = 0` is evaluated with :math:`\tau = 0` (its
        softmax weights equal its hardmax weights, :math:`1/n`, exactly). Softmax on exact input has
        irrational outputs: it returns the midpoint of the rigorous rational enclosure of
        :func:`sxor.interp.enclosures.softmax_attention_enclosure` at ``ENCLOSURE_BITS`` bits (a rational
        point within about :math:`2^{-\mathrm{ENCLOSURE\_BITS}}` times the softmax-hardmax deviation of
        the true output, plus :math:`e^{-2\,\mathrm{ENCLOSURE\_BITS}}`).

        Parameters
        ----------
        X
            Tokens ``[n, d]``.
        tau
            Temperature, ``>= 0`` (0 is hardmax).
        """
        if self.is_identity:
            return X
        if self.scores_constant:
            tau = 0
        if tau != 0 and is_exact(X):
            lo, hi = softmax_attention_enclosure(
                X, self.A, self.rho, self.V, as_exact(tau, "tau").item(), ENCLOSURE_BITS
            )
            return (lo + hi) / 2
        return self_attention(X, self.A, self.rho, self.V, tau)


def identity_sa(d: int) -> SALayer:
    r"""The identity SA layer (:math:`\rho = 1`, :math:`V = 0`, :math:`A = 0`) in dimension ``d``."""
    return SALayer(Fraction(1), Fraction(0), zeros(d), zeros(d), Fraction(0), "identity")


def mean_sa(
    d: int, rho: Fraction = Fraction(0), beta: Fraction = Fraction(1), role: str = ""
) -> SALayer:
    r"""Mean attention, :math:`A = 0`: :math:`x \mapsto \rho x + \beta \operatorname{mean}(X)`, the same at every temperature.

    Parameters
    ----------
    d
        Token dimension.
    rho
        Weight :math:`\rho` of the skip connection.
    beta
        Scale :math:`\beta` of the value matrix.
    role
        Name of the layer's job in the construction.
    """
    return SALayer(Fraction(rho), Fraction(0), zeros(d), zeros(d), Fraction(beta), role)


@dataclass(frozen=True)
class Block:
    r"""One transformer block, :math:`\mathrm{SA}(\mathrm{FF}(X))`, with the name of the phase it belongs to.

    Parameters
    ----------
    ff
        The feed-forward layer, applied first.
    sa
        The self-attention layer.
    phase
        Name of the construction phase.
    """

    ff: FFLayer
    sa: SALayer
    phase: str

    @property
    def num_parameters(self) -> int:
        return self.ff.num_parameters + self.sa.num_parameters

    @property
    def dense_parameters(self) -> int:
        return self.ff.num_parameters + self.sa.dense_parameters


def _apply_ff(layer: FFLayer, states: list[np.ndarray]) -> list[np.ndarray]:
    """Apply a token-wise layer to all sequences at once (one call on the stacked tokens)."""
    sizes = np.cumsum([0] + [s.shape[0] for s in states])
    out = layer(np.concatenate(states, axis=0))
    return [out[a:b] for a, b in itertools.pairwise(sizes)]


def _gap_over_log_floor(gap: Fraction, ratio: Fraction) -> mpmath.mpf:
    r"""A 53-bit lower bound of :math:`\mathrm{gap} / \log(\mathrm{ratio})` for ``ratio > 1``."""
    libmp = mpmath.libmp
    if gap <= 0:  # no temperature is guaranteed (a hand-built network): admit none
        return mpmath.mpf(0)
    excess = ratio - 1
    if excess.numerator.bit_length() - excess.denominator.bit_length() < -40:
        # log r <= r - 1, and the fixed-precision enclosure of log r could contain 0 here
        q = gap / excess
        return mpmath.mpf(libmp.from_rational(q.numerator, q.denominator, 53, libmp.round_floor))
    iv = mpmath.iv
    saved, iv.prec = iv.prec, 80  # enclose with 27 guard bits, then round the lower end to 53
    try:
        num = iv.mpf(gap.numerator) / iv.mpf(gap.denominator)
        log = iv.log(iv.mpf(ratio.numerator) / iv.mpf(ratio.denominator))
        low = (num / log)._mpi_[0]
    finally:
        iv.prec = saved
    value = mpmath.mpf(libmp.mpf_pos(low, 53, libmp.round_floor))
    if not (mpmath.isfinite(value) and value > 0):  # never: log r > 2^-42 is enclosed above 0
        raise ValueError(f"tau_max could not be bounded (gap {gap}, spread/radius {ratio})")
    return value


@dataclass(frozen=True)
class InterpolatingTransformer:
    r"""The network built by :func:`sxor.interp.construct.construct`; :math:`T(X)` maps tokens ``[n, d]`` to ``[n, d]``.

    Frozen: build it complete, change the temperature with
    :meth:`~sxor.interp.network.InterpolatingTransformer.at_temperature`. For a softmax network,
    ``gap`` (:math:`\Delta`) and ``spread`` (:math:`\max_j (n_j - 1) D_j`) define the collapse error
    :math:`\epsilon(\tau) = \mathrm{spread} \cdot e^{-\Delta / \tau}`, ``radius`` is the largest
    collapse error the later layers absorb exactly, and
    :attr:`~sxor.interp.network.InterpolatingTransformer.tau_max` is the temperature below which
    :math:`\epsilon(\tau) < \mathrm{radius}`.

    Parameters
    ----------
    blocks
        The blocks, in order.
    d
        Token dimension.
    attention
        ``"hardmax"`` (:math:`\tau = 0`) or ``"softmax"`` (temperature ``tau``).
    tau
        Temperature of a softmax network.
    gap
        Score gap :math:`\Delta` of the softmax collapse; ``None`` for a softmax network with no
        temperature-dependent layer (exact at every :math:`\tau`).
    spread
        :math:`\max_j (n_j - 1) D_j`, the prefactor of the collapse error.
    radius
        Largest collapse error the later layers absorb exactly.
    info
        Record of the construction (``N``, ``n``, ``m``, ``route``, ``separation_moves``, ...).
    """

    blocks: tuple[Block, ...]
    d: int
    attention: str = "hardmax"
    tau: Fraction | float = 0
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
    def dense_parameters(self) -> int:
        """The same network with dense heads (full ``Q, K, V``) in every attention layer."""
        return sum(block.dense_parameters for block in self.blocks)

    def parameters(self) -> list[Fraction]:
        """Every stored (structured) parameter, in block order, as Fractions."""
        out: list[Fraction] = []
        for block in self.blocks:
            ff, sa = block.ff, block.sa
            out += [ff.eta, *ff.U.flat, *ff.b.flat, *ff.W.flat]
            out += [sa.rho, sa.alpha, sa.beta, *sa.q.flat, *sa.k.flat]
        return [Fraction(p) for p in out]

    def parameter_sizes(self) -> tuple[Fraction, int]:
        r"""``(max |parameter|, max bit length)`` of the stored parameters.

        The largest absolute value of a stored parameter and the largest bit length of a numerator or
        denominator among them (the size of the numbers, which grows as hats get steeper: a hat's slopes
        are :math:`1/\mathrm{gap}`).
        """
        params = self.parameters()
        big = max((abs(p) for p in params), default=Fraction(0))
        bits = max(
            (max(p.numerator.bit_length(), p.denominator.bit_length()) for p in params), default=0
        )
        return big, bits

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
    def tau_max_mp(self) -> mpmath.mpf:
        r"""``tau_max`` as an ``mpmath.mpf`` (53-bit mantissa, unbounded exponent), rounded *down*.

        A lower bound of :math:`\Delta / \log(\mathrm{spread} / \mathrm{radius})`: it is computed in
        interval arithmetic (``mpmath.iv``, directed rounding) from the exact ``gap``, ``spread``
        and ``radius``, and the lower end of the enclosure is returned; when
        :math:`r = \mathrm{spread}/\mathrm{radius}` is within :math:`2^{-40}` of 1 (where a
        fixed-precision enclosure of :math:`\log r` would contain 0) it is the exact rational
        :math:`\Delta / (r - 1) \le \Delta / \log r` rounded down (:math:`\log r \le r - 1`;
        relative loss below :math:`2^{-40}`). Always finite and :math:`> 0` for a network with
        :math:`\Delta > 0` and :math:`r > 1`. So every
        :math:`\tau < \tau_\mathrm{max}` it admits is below the proven threshold (rounding to
        nearest could exceed it by one unit in the last place). No conversion to float: it neither
        overflows nor underflows whatever the size of the coordinates.
        """
        if self.attention != "softmax":
            return mpmath.mpf(0)
        if self.gap is None:
            return mpmath.inf
        assert self.spread is not None and self.radius is not None, "set with gap by construct"
        ratio = self.spread / self.radius
        if ratio <= 1:
            return mpmath.inf
        return _gap_over_log_floor(self.gap, ratio)

    def _tau_below_max(self, tau: Fraction) -> None:
        """Refuse a temperature at or above the (rounded-down) ``tau_max``: no guarantee holds there."""
        top = self.tau_max_mp
        if not mpmath.isfinite(top):
            return
        man, exp = mpmath.mpf(top).man_exp
        bound = Fraction(man) * Fraction(2) ** exp
        if not tau < bound:
            raise ValueError(
                f"tau = {short(tau, 30)} is not below tau_max = {mpmath.nstr(top, 17)} (rounded down): "
                "above it the construction does not guarantee T(X_j) = Y_j; pass a smaller tau, or evaluate "
                "at any tau with sxor.interp.softmax_certificate(T, X, Y, tau)"
            )

    @property
    def tau_max(self) -> float:
        r"""The largest temperature of the softmax guarantee, :math:`\Delta / \log(\mathrm{spread} / \mathrm{radius})`.

        So that :math:`\epsilon(\tau) < \mathrm{radius}` for :math:`0 < \tau < \tau_\mathrm{max}`;
        ``inf`` when :math:`\mathrm{spread} \le \mathrm{radius}` or when no layer depends on the
        temperature. Hardmax transformers return 0. A float: a value beyond the float range reads
        ``inf`` (and one below it ``0.0``);
        :attr:`~sxor.interp.network.InterpolatingTransformer.tau_max_mp` holds it exactly in range, and
        :func:`sxor.interp.construct.construct` uses that one.
        """
        return float(self.tau_max_mp)

    def error_bound(self, tau) -> mpmath.mpf:
        r"""The collapse error :math:`\epsilon(\tau) = \mathrm{spread} \cdot e^{-\Delta/\tau}` at :math:`\tau > 0`.

        0 for a softmax network with no temperature-dependent layer.

        Parameters
        ----------
        tau
            Temperature, finite and :math:`> 0`.

        Raises
        ------
        ValueError
            for hardmax networks and ``tau <= 0``, NaN or infinity.
        """
        if self.attention != "softmax":
            raise ValueError(
                "error_bound is defined for softmax transformers only (hardmax is exact)"
            )
        if isinstance(tau, (bool, str, complex)) or not isinstance(tau, (numbers.Real, Fraction)):
            raise TypeError(
                f"tau must be a real number > 0, got {tau!r} of type {type(tau).__name__}"
            )
        tau = (
            mpmath.mpf(tau.numerator) / tau.denominator
            if isinstance(tau, Fraction)
            else mpmath.mpf(tau)
        )
        if not (tau > 0 and mpmath.isfinite(tau)):
            raise ValueError(f"tau must be finite and > 0, got {tau}")
        if self.gap is None:
            return mpmath.mpf(0)
        assert self.spread is not None, "set with gap by construct"
        return (
            mpmath.mpf(self.spread.numerator)
            / self.spread.denominator
            * mpmath.exp(-(mpmath.mpf(self.gap.numerator) / self.gap.denominator) / tau)
        )

    def at_temperature(self, tau) -> InterpolatingTransformer:
        r"""A copy of this softmax network at temperature ``tau``.

        Parameters
        ----------
        tau
            New temperature, an int or Fraction, :math:`0 < \tau < \tau_\mathrm{max}` (see
            :func:`~sxor.interp.network.check_temperature` and
            :attr:`~sxor.interp.network.InterpolatingTransformer.tau_max_mp`).

        Raises
        ------
        ValueError
            for a hardmax network, a temperature :func:`~sxor.interp.network.check_temperature`
            refuses, and :math:`\tau \ge \tau_\mathrm{max}` (the message gives
            :math:`\tau_\mathrm{max}`): there the network need not interpolate.
        """
        if self.attention != "softmax":
            raise ValueError("only a softmax transformer has a temperature")
        tau = check_temperature(tau)
        self._tau_below_max(tau)
        return dataclasses.replace(self, tau=tau)

    def _check(self, X) -> None:
        shape = tuple(X.shape) if hasattr(X, "shape") else np.shape(X)
        if len(shape) < 2 or shape[-1] != self.d:
            raise ValueError(
                f"this network maps tokens of dimension d = {self.d}; got a sequence of shape {shape}"
                + (f" (tokens of dimension {shape[-1]})" if len(shape) >= 2 else "")
            )

    def trajectory(self, X) -> list:
        r"""Tokens after each layer: :math:`[X, \mathrm{FF}_1(X), \mathrm{SA}_1(\mathrm{FF}_1(X)), \dots]` (length :math:`2L + 1`).

        Parameters
        ----------
        X
            Input tokens ``[n, d]``.
        """
        self._check(X)
        states = [X]
        for block in self.blocks:
            states.append(block.ff(states[-1]))
            states.append(block.sa(states[-1], self.tau))
        return states

    def __call__(self, X):
        r"""Output tokens :math:`T(X)`, ``[n, d]``.

        Exact for Fraction ``X`` and hardmax; float for float ``X``.

        Parameters
        ----------
        X
            Input tokens ``[n, d]``.

        Raises
        ------
        ValueError
            for a sequence whose token dimension is not ``d``.
        """
        self._check(X)
        for block in self.blocks:
            X = block.sa(block.ff(X), self.tau)
        return X

    def snapshots(self, sequences: Sequence) -> dict[str, list]:
        r"""Tokens of every sequence at the end of each phase.

        Keys: ``"input"``, then each phase name in order, and ``"leaders"`` (just before the collapse
        SA) when there is a collapse.

        Parameters
        ----------
        sequences
            List of input sequences ``[n_j, d]``.
        """
        states = list(sequences)
        for s in states:
            self._check(s)
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
        r"""``[T(X) for X in sequences]``, with each FF applied once to all sequences' tokens.

        Parameters
        ----------
        sequences
            A list (or tuple) of input sequences ``[n_j, d]``.

        Raises
        ------
        TypeError
            unless ``sequences`` is a list (or tuple) of sequences; and as ``T(X)`` does for each of
            them.
        """
        if not isinstance(sequences, (list, tuple)):
            raise TypeError(
                f"sequences must be a list of [n, d] sequences, got {type(sequences).__name__}"
            )
        states = list(sequences)
        for s in states:
            self._check(s)
        for block in self.blocks:
            states = _apply_ff(block.ff, states)
            states = [block.sa(s, self.tau) for s in states]
        return states


def check_temperature(tau) -> Fraction:
    r"""A softmax temperature as a Fraction.

    The exact side of Part II refuses floats (see :mod:`sxor.interp.exact`): pass
    ``Fraction(0.1)`` or ``Fraction("0.1")`` on purpose.

    Parameters
    ----------
    tau
        An int or Fraction :math:`> 0`.

    Raises
    ------
    ValueError
        for ``tau <= 0``, floats (NaN and infinity included), bool, complex and strings.
    """
    if isinstance(tau, (float, np.floating)):
        if not math.isfinite(float(tau)):
            raise ValueError(f"tau must be finite and > 0, got {tau}")
        raise ValueError(
            f"tau must be an int or Fraction > 0, got the float {tau}: pass Fraction({tau!r}) "
            "to use its exact binary value, or a decimal Fraction such as Fraction('1/10')"
        )
    if isinstance(tau, str):
        raise ValueError(f"tau must be an int or Fraction > 0, got the string {tau!r}")
    tau = exact_scalar("tau", tau)
    if not tau > 0:
        raise ValueError(f"softmax needs tau > 0, got tau={short(tau, 30)}")
    return tau
