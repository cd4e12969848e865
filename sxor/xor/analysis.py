"""Leading-order predictions for one gradient step from the antisymmetric initialisation.

This is the book's own derivation (the paper's constants are not available): chapters
"The antisymmetric initialisation", "One step: step size and success" and "The smallest m and the
failure modes" derive every formula to leading order (not as bounds) and check it numerically.
Notation: scores ``s_i = <v_i, theta0>``, support ``(a, b) = (i*, j*)``, ``D = s_a - s_b``,
``rho = <v_a, v_b>`` and ``M(t) = E exp(t <v, theta0>)`` for ``v`` uniform on ``S^(m-1)``.
At ``theta~ = -theta0`` the exact population gradient is, to leading order in ``1/d``,

.. math::

   \\begin{aligned}
   \\nabla_\\theta L &= -\\frac{e^{D} v_a + e^{-D} v_b}{d^2 M(1)^2}
       + \\frac{\\beta}{d^2}\\,\\theta_0 + O(d^{-5/2}),\\\\
   \\nabla_{\\tilde\\theta} L &= -\\frac{e^{-D} v_a + e^{D} v_b}{d^2 M(1)^2}
       - \\frac{\\beta}{d^2}\\,\\theta_0 + O(d^{-5/2}),
   \\end{aligned}

with :func:`bulk_coefficient` ``beta``. The functions below evaluate these predictions, the
``eta -> infinity`` (argmax) limit of one step, semi-analytic failure probabilities, and the fits
of the smallest sufficient ``m`` against ``log d`` and ``log^2 d``.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import torch

from .checks import check_dims, check_embeddings, check_query, check_support
from .population import population_grad
from .sphere import inner_product_tail

#: Infimum of the population loss over the symmetric set ``theta = theta~``: with ``g = h`` the
#: model output ``-(g.x)^2`` is never positive, while ``y = +1`` on half of the inputs, so
#: ``L >= 1/2 * 1/2 * 1``; ``g = (e_a + e_b)/2`` attains it.
SYMMETRIC_INFIMUM = 0.25


def sphere_mgf(
    t: torch.Tensor | float, m: int, *, derivative: int = 0, terms: int = 80
) -> torch.Tensor:
    """``M(t) = E exp(t s)`` for ``s = <v, u>``, ``v`` uniform on ``S^(m-1)``, or its first derivative.

    ``M(t) = 0F1(; m/2; t^2/4) = sum_k (t^2/4)^k / (k! (m/2)_k)``, from the even moments
    ``E s^(2k) = (2k-1)!! / (m (m+2) ... (m+2k-2))``; ``derivative=1`` differentiates term by term.
    """
    check_dims(2, m)
    if derivative not in (0, 1):
        raise ValueError(f"derivative must be 0 or 1, got {derivative}")
    t = torch.as_tensor(t, dtype=torch.float64)
    k = torch.arange(terms, dtype=torch.float64, device=t.device)
    # log of 1 / (4^k k! (m/2)_k), with (m/2)_k = Gamma(m/2 + k) / Gamma(m/2)
    log_c = -k * math.log(4.0) - torch.lgamma(k + 1) - torch.lgamma(m / 2 + k) + math.lgamma(m / 2)
    tt = t.unsqueeze(-1)
    if derivative == 0:
        return (torch.exp(log_c) * tt ** (2 * k)).sum(-1)
    return (torch.exp(log_c[1:]) * 2 * k[1:] * tt ** (2 * k[1:] - 1)).sum(-1)


def bulk_coefficient(D: torch.Tensor | float, m: int) -> torch.Tensor:
    """``beta`` in the module docstring: the ``theta0``-component of ``d^2 grad_theta L``.

    ``beta = 2 cosh(D) M'(1) / M(1)^3 + M(2) M'(2) / M(1)^4 - (M(2)^2 + 2) M'(1) / M(1)^5``;
    the first term comes from the label through the softmax normalisation, the others from the
    fit term ``||h||^2 g + 2 (g.h) h``. For large ``m``, ``beta = 1/m + O(m^-2)``.
    """
    D = torch.as_tensor(D, dtype=torch.float64)
    M1, dM1 = sphere_mgf(1.0, m), sphere_mgf(1.0, m, derivative=1)
    M2, dM2 = sphere_mgf(2.0, m), sphere_mgf(2.0, m, derivative=1)
    return 2 * torch.cosh(D) * dM1 / M1**3 + M2 * dM2 / M1**4 - (M2**2 + 2) * dM1 / M1**5


class PredictedGradient(NamedTuple):
    """Leading-order gradient at ``(theta0, -theta0)`` (module docstring), each ``[..., m]``."""

    grad: torch.Tensor  #: prediction for ``dL/dtheta``
    grad_tilde: torch.Tensor  #: prediction for ``dL/dtheta~``
    signal: (
        torch.Tensor
    )  #: ``d^2 M^2 x`` coefficients of ``(v_a, v_b)`` in ``-grad``: ``(e^D, e^-D)``, ``[..., 2]``
    beta: torch.Tensor  #: bulk coefficient, ``[...]``


def predicted_gradient(
    V: torch.Tensor, theta0: torch.Tensor, support: torch.Tensor
) -> PredictedGradient:
    """Evaluate the leading-order gradient of the module docstring for embeddings ``V [..., d, m]``,
    initial query ``theta0 [..., m]`` and support ``[..., 2]``."""
    d, m = check_embeddings(V)
    check_query("theta0", theta0, m)
    check_support(support, d)
    v_a, v_b = _rows(V, support)
    D = (v_a * theta0).sum(-1) - (v_b * theta0).sum(-1)
    scale = d**2 * sphere_mgf(1.0, m).to(V) ** 2
    beta = bulk_coefficient(D, m).to(V)
    e_plus, e_minus = torch.exp(D).unsqueeze(-1), torch.exp(-D).unsqueeze(-1)
    bulk = beta.unsqueeze(-1) * theta0 / d**2
    grad = -(e_plus * v_a + e_minus * v_b) / scale + bulk
    grad_tilde = -(e_minus * v_a + e_plus * v_b) / scale - bulk
    return PredictedGradient(grad, grad_tilde, torch.stack([torch.exp(D), torch.exp(-D)], -1), beta)


def _rows(V: torch.Tensor, support: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(v_a, v_b)``, each ``[..., m]``."""
    shape = torch.broadcast_shapes(V.shape[:-2], support.shape[:-1])
    V = V.expand(*shape, *V.shape[-2:])
    idx = (
        support.to(V.device, torch.int64)
        .expand(*shape, 2)
        .unsqueeze(-1)
        .expand(*shape, 2, V.shape[-1])
    )
    rows = V.gather(-2, idx)
    return rows[..., 0, :], rows[..., 1, :]


def common_drift(V: torch.Tensor, theta0: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """The dominant part of the ``O(d^(-5/2))`` remainder of the gradient at ``(theta0, -theta0)``,
    the same for both heads: ``zeta = 2 cosh(D) / (d^3 M(1)^3) sum_{k != a, b} v_k``, ``[..., m]``.

    It comes from the label term ``(g_a h_b + g_b h_a) V^T g`` (head 2: ``V^T h``): the part of
    ``V^T g`` and ``V^T h`` even in the scores is ``sum_k v_k / (d M)`` in both heads. Its size is
    about ``2 d^(-5/2)``; what remains of the remainder is opposite in the two heads and smaller by
    a factor of order ``m^(-1/2)``.
    """
    d, m = check_embeddings(V)
    check_query("theta0", theta0, m)
    check_support(support, d)
    v_a, v_b = _rows(V, support)
    D = ((v_a - v_b) * theta0).sum(-1, keepdim=True)
    M1 = sphere_mgf(1.0, m).to(V)
    return 2 * torch.cosh(D) / (d**3 * M1**3) * (V.sum(-2) - v_a - v_b)


def natural_step(eta: torch.Tensor | float, d: int, m: int) -> torch.Tensor:
    """``lambda = eta / (d^2 M(1)^2)``: the step measured in units of the gradient's size, so that
    ``theta1 ~ theta0 + lambda (e^D v_a + e^-D v_b)``."""
    check_dims(d, m)
    return torch.as_tensor(eta, dtype=torch.float64) / (d**2 * sphere_mgf(1.0, m) ** 2)


#: ``c`` in the success grid's step size ``eta = c d^2 ln d`` (:func:`grid_eta`): the one home of
#: this constant, used by the one-step chapters, the sweeps and the benchmark.
GRID_C = 100.0


def grid_eta(d: int, c: float = GRID_C) -> float:
    """The step size of the success grid, ``eta = c d^2 ln d``: ``d^2`` undoes the ``1/d^2``
    gradient, and ``ln d`` makes the target beat ``d`` competitors by a factor ``d^c``-ish."""
    check_dims(d)
    if not c > 0:
        raise ValueError(f"c must be positive, got c={c}")
    return c * d**2 * math.log(d)


def critical_split(loss_threshold: float = 0.01) -> float:
    """The largest ``eps`` with loss below the threshold when the heads are
    ``(1-eps) e_a + eps e_b`` and ``eps e_a + (1-eps) e_b``: that loss is ``(2 eps (1-eps))^2``."""
    if not 0 < loss_threshold < 0.25:
        raise ValueError(f"loss_threshold must lie in (0, 1/4), got {loss_threshold}")
    return (1 - math.sqrt(1 - 2 * math.sqrt(loss_threshold))) / 2


class ArgmaxLimit(NamedTuple):
    """Where each head attends after one step with ``eta -> infinity``."""

    head: torch.Tensor  #: ``argmax_i <v_i, -dL/dtheta>``, ``[...]``
    head_tilde: torch.Tensor  #: ``argmax_i <v_i, -dL/dtheta~>``, ``[...]``
    success: (
        torch.Tensor
    )  #: the heads sit on ``i*`` and ``j*`` in some order (loss -> 0), ``[...]``


def argmax_limit(V: torch.Tensor, theta0: torch.Tensor, support: torch.Tensor) -> ArgmaxLimit:
    """The ``eta -> infinity`` limit of one step from ``(theta0, -theta0)``: the scores become
    ``eta <v_i, -grad>`` plus a bounded term, so each softmax tends to the indicator of the argmax."""
    grad, grad_tilde = population_grad(V, theta0, -theta0, support)
    head = (V @ -grad.unsqueeze(-1)).squeeze(-1).argmax(-1)
    head_tilde = (V @ -grad_tilde.unsqueeze(-1)).squeeze(-1).argmax(-1)
    a, b = support[..., 0], support[..., 1]
    ok = ((head == a) & (head_tilde == b)) | ((head == b) & (head_tilde == a))
    return ArgmaxLimit(head, head_tilde, ok)


def sup_error_bound(
    attention: torch.Tensor, attention_tilde: torch.Tensor, support: torch.Tensor
) -> torch.Tensor:
    """Bound on ``max_x |f(x) - y(x)|`` over all ``2^d`` inputs from the weights on the targets:
    ``2 (1 - mu)`` with ``mu = max(g_a h_b, g_b h_a)``, shape ``[...]``.

    Write ``g.x = g_a x_a + r`` with ``|r| <= 1 - g_a`` and ``h.x = h_b x_b + r~`` with
    ``|r~| <= 1 - h_b`` (weights are non-negative and sum to 1); then
    ``f - y = x_a x_b (1 - g_a h_b) - g_a x_a r~ - h_b x_b r - r r~``, whose size is at most
    ``1 - g_a h_b + g_a (1 - h_b) + h_b (1 - g_a) + (1 - g_a)(1 - h_b) = 2 (1 - g_a h_b)``; the
    other pairing gives ``2 (1 - g_b h_a)``. Below 1 the sign of ``f`` is right on every input.
    """
    heads = torch.stack(torch.broadcast_tensors(attention, attention_tilde), dim=-2)  # [..., 2, d]
    idx = support.to(heads.device, torch.int64).unsqueeze(-2).expand(*heads.shape[:-1], 2)
    w = heads.gather(-1, idx)  # w[..., h, t]: weight of head h on target t
    mu = torch.maximum(w[..., 0, 0] * w[..., 1, 1], w[..., 0, 1] * w[..., 1, 0])
    return 2 * (1 - mu)


def sphere_upper_tail(tau: torch.Tensor, m: int) -> torch.Tensor:
    """``P(<v, u> > tau)`` for ``v`` uniform on ``S^(m-1)`` and a fixed unit ``u``, vectorised.

    Interpolates ``log`` of :func:`sxor.xor.sphere.inner_product_tail` (exact, ``mpmath``) on a grid
    of ``tau in [0, 1]`` (relative error below ``1e-3`` for ``m <= 100``); the tail is
    ``1/2 I_{1-tau^2}((m-1)/2, 1/2)`` for ``tau >= 0`` and ``1 - P(<v,u> > -tau)`` for ``tau < 0``.
    """
    check_dims(2, m)
    tau = torch.as_tensor(tau, dtype=torch.float64)
    knots, log_values = _log_tail_table(int(m))
    upper = np.exp(np.interp(np.abs(tau.cpu().numpy()), knots, log_values))
    upper = torch.as_tensor(upper, dtype=torch.float64)
    return torch.where(tau >= 0, upper, 1 - upper).to(tau.device)


@functools.cache
def _log_tail_table(m: int, grid: int = 401) -> tuple[np.ndarray, np.ndarray]:
    knots = np.linspace(0.0, 1.0, grid)
    values = np.array([0.5 * inner_product_tail(float(k), m) for k in knots[:-1]] + [0.0])
    return knots, np.log(np.maximum(values, 1e-300))


class OffTargetPrediction(NamedTuple):
    """Predicted probability that a non-target wins a head in the ``eta -> infinity`` limit."""

    lower: torch.Tensor  #: bound from the larger of the two heads' per-competitor probabilities
    upper: torch.Tensor  #: bound from their sum (union bound per competitor)


def predicted_off_target(
    d: int, m: int, *, samples: int = 20000, seed: int = 0
) -> OffTargetPrediction:
    """Failure probability of the argmax limit predicted from the leading-order gradient.

    Head 1 attends ``argmax_i <v_i, w>`` with ``w = e^D v_a + e^-D v_b - M^2 beta theta0``; its
    best target is ``a`` if ``D > 0`` and ``b`` otherwise. A non-target ``v_i`` is independent of
    ``w``, so ``<v_i, w/|w|>`` has the sphere law and beats both targets with probability
    ``q1 = P(<v, u> > max(<v_a, w>, <v_b, w>)/|w|)`` (head 2 likewise, ``q2``). Given
    ``(v_a, v_b, theta0)`` the ``d - 2`` competitors are independent, so
    ``P(success) = E[(1 - p)^(d-2)]`` with ``max(q1, q2) <= p <= q1 + q2``; the expectation is a
    Monte Carlo average over ``samples`` draws of ``(v_a, v_b, theta0)``.
    """
    check_dims(d, m)
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(samples, 3, m, generator=gen, dtype=torch.float64)
    v_a, v_b, theta0 = (z / z.norm(dim=-1, keepdim=True)).unbind(-2)
    D = ((v_a - v_b) * theta0).sum(-1, keepdim=True)
    shift = (sphere_mgf(1.0, m) ** 2 * bulk_coefficient(D, m)) * theta0
    w1 = torch.exp(D) * v_a + torch.exp(-D) * v_b - shift
    w2 = torch.exp(-D) * v_a + torch.exp(D) * v_b + shift
    tau1 = torch.maximum((v_a * w1).sum(-1), (v_b * w1).sum(-1)) / w1.norm(dim=-1)
    tau2 = torch.maximum((v_a * w2).sum(-1), (v_b * w2).sum(-1)) / w2.norm(dim=-1)
    q1, q2 = sphere_upper_tail(tau1, m), sphere_upper_tail(tau2, m)
    fail_low = 1 - torch.exp((d - 2) * torch.log1p(-torch.maximum(q1, q2))).mean()
    fail_high = 1 - torch.exp((d - 2) * torch.log1p(-(q1 + q2).clamp(max=1.0))).mean()
    return OffTargetPrediction(fail_low, fail_high)


def predicted_under_stepped(
    m: int, lam: float, *, loss_threshold: float = 0.01, samples: int = 20000, seed: int = 0
) -> torch.Tensor:
    """Probability that one step of natural size ``lam`` leaves the heads split between the targets.

    To leading order head 1's score gap between its target and the other target is
    ``Delta = 2 lam sinh(D) (1 - rho) + D (1 - lam M^2 beta)`` (head 2 has the same gap), so head 1
    puts ``eps = 1/(1 + e^|Delta|)`` on the wrong target; the loss is below the threshold only if
    ``eps < critical_split(loss_threshold)``. Monte Carlo over ``(v_a, v_b, theta0)``.
    """
    check_dims(2, m)
    if not lam >= 0:
        raise ValueError(f"lam must be non-negative, got {lam}")
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(samples, 3, m, generator=gen, dtype=torch.float64)
    v_a, v_b, theta0 = (z / z.norm(dim=-1, keepdim=True)).unbind(-2)
    D = ((v_a - v_b) * theta0).sum(-1)
    rho = (v_a * v_b).sum(-1)
    shrink = 1 - lam * sphere_mgf(1.0, m) ** 2 * bulk_coefficient(D, m)
    gap = 2 * lam * torch.sinh(D) * (1 - rho) + D * shrink
    eps = critical_split(loss_threshold)
    return (gap.abs() < math.log((1 - eps) / eps)).double().mean()


def median_separating_step(
    m: int, *, loss_threshold: float = 0.01, samples: int = 20000, seed: int = 0
) -> float:
    """The natural step ``lam`` at which the *median* instance just separates the two targets:
    ``|Delta| = ln((1 - eps*)/eps*)`` with ``Delta = lam (2 sinh(D)(1 - rho) - D M^2 beta) + D``
    (:func:`predicted_under_stepped`), i.e. ``lam = ln((1-eps*)/eps*) / median|2 sinh(D)(1-rho) - D M^2 beta|``
    over ``samples`` draws of ``(v_a, v_b, theta0)`` (the ``+ D`` term is dropped: ``lam >> 1``)."""
    check_dims(2, m)
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(samples, 3, m, generator=gen, dtype=torch.float64)
    v_a, v_b, theta0 = (z / z.norm(dim=-1, keepdim=True)).unbind(-2)
    D, rho = ((v_a - v_b) * theta0).sum(-1), (v_a * v_b).sum(-1)
    per_lambda = (
        2 * torch.sinh(D) * (1 - rho) - D * sphere_mgf(1.0, m) ** 2 * bulk_coefficient(D, m)
    ).abs()
    eps = critical_split(loss_threshold)
    return math.log((1 - eps) / eps) / float(per_lambda.median())


def smallest_m(ms: npt.ArrayLike, rates: npt.ArrayLike, target: float = 0.95) -> float:
    """Smallest ``m`` with success rate ``>= target``, linearly interpolated between grid points:
    the crossing after the last grid point below ``target``; ``nan`` if the last rate is below it.

    Parameters
    ----------
    ms : ~numpy.typing.ArrayLike
        The grid of ``m``, 1-d and strictly increasing.
    rates : ~numpy.typing.ArrayLike
        The success rate at each grid point, of the same length.
    target
        The success rate to reach.
    """
    ms, rates = np.asarray(ms, dtype=float), np.asarray(rates, dtype=float)
    if ms.ndim != 1 or ms.shape != rates.shape or len(ms) < 1:
        raise ValueError(
            f"ms and rates must be 1-d of equal length, got {ms.shape} and {rates.shape}"
        )
    if np.any(np.diff(ms) <= 0):
        raise ValueError("ms must be strictly increasing")
    below = np.nonzero(rates < target)[0]
    if len(below) == 0:
        return float(ms[0])
    k = below[-1]
    if k == len(ms) - 1:
        return float("nan")
    r0, r1 = rates[k], rates[k + 1]
    return float(ms[k] + (target - r0) / (r1 - r0) * (ms[k + 1] - ms[k]))


class LineFit(NamedTuple):
    """Least-squares fit ``y = intercept + slope x``."""

    slope: float
    intercept: float
    rms_residual: float
    residuals: np.ndarray


def fit_line(x: np.ndarray | list, y: np.ndarray | list) -> LineFit:
    """Ordinary least squares of ``y`` on ``[1, x]`` (at least two distinct ``x``)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or len(np.unique(x)) < 2:
        raise ValueError("x and y must be 1-d of equal length with at least two distinct x")
    A = np.stack([np.ones_like(x), x], axis=1)
    (intercept, slope), *_ = np.linalg.lstsq(A, y, rcond=None)
    residuals = y - (intercept + slope * x)
    return LineFit(float(slope), float(intercept), float(np.sqrt(np.mean(residuals**2))), residuals)


def fit_log_models(d: np.ndarray | list, m_star: np.ndarray | list) -> dict[str, LineFit]:
    """Fit ``m* = A + B ln d`` and ``m* = A + B ln^2 d`` (finite ``m*`` only)."""
    d, m_star = np.asarray(d, dtype=float), np.asarray(m_star, dtype=float)
    keep = np.isfinite(m_star)
    log_d = np.log(d[keep])
    return {"log d": fit_line(log_d, m_star[keep]), "log^2 d": fit_line(log_d**2, m_star[keep])}


class SlopeBootstrap(NamedTuple):
    """:func:`bootstrap_smallest_m`: the smallest ``m`` per ``d`` and the fitted slope in ``ln d``,
    each with a percentile interval."""

    d: np.ndarray  #: the ``d`` used (those with a finite point estimate)
    m_star: np.ndarray  #: point estimate of the smallest ``m`` per ``d``
    m_low: np.ndarray  #: lower end of its interval
    m_high: np.ndarray  #: upper end of its interval
    slope: float  #: least-squares slope of ``m_star`` against ``ln d``
    intercept: float
    slope_low: float
    slope_high: float
    censored: float  #: fraction of (resample, d) pairs that never reached the target (set to the largest m)
    #: which ``d`` entered the line (a boolean mask over ``d``); ``None`` means all of them
    fit: np.ndarray | None = None
    #: censored resamples per ``d`` (counts, aligned with ``d``); ``None`` when not recorded
    censored_by_d: np.ndarray | None = None

    def fit_d(self) -> np.ndarray:
        """The ``d`` whose point estimates entered the least-squares line."""
        return self.d if self.fit is None else self.d[self.fit]


def bootstrap_smallest_m(
    curves: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]],
    target: float = 0.95,
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> SlopeBootstrap:
    """Percentile bootstrap for the smallest ``m`` with rate ``>= target`` (:func:`smallest_m`) and
    for the slope of its least-squares line in ``ln d``.

    ``curves[d] = (ms, successes, trials)`` per cell. Each resample redraws every cell's count as
    ``Binomial(trials, successes / trials)`` independently (a parametric bootstrap) and
    recomputes the smallest ``m`` and the slope. Cells that share instances (across ``m`` in a
    nested sweep) or seeds (across ``d``) are resampled as if independent: the bootstrap ignores
    these correlations, so its intervals may be too narrow. A resample whose curve never reaches ``target``
    at some ``d`` is kept, with that ``d``'s value set to the largest grid ``m`` (censored), and
    counted in ``censored``; only ``d`` with a finite point estimate enter.
    """
    if resamples < 2:
        raise ValueError(f"resamples must be >= 2, got {resamples}")
    rng = np.random.default_rng(seed)
    ds, points = [], []
    for d in sorted(curves):
        ms, k, n = (np.asarray(x, dtype=float) for x in curves[d])
        value = smallest_m(ms, k / n, target)
        if np.isfinite(value):
            ds.append(d)
            points.append(value)
    if len(ds) < 2:
        raise ValueError("need at least two d with a finite smallest m")
    samples = np.empty((resamples, len(ds)))
    censored = 0
    for j, d in enumerate(ds):
        ms, k, n = (np.asarray(a, dtype=float) for a in curves[d])
        draws = rng.binomial(n.astype(np.int64), k / n, size=(resamples, len(ms)))
        for r in range(resamples):
            value = smallest_m(ms, draws[r] / n, target)
            if not np.isfinite(value):
                value, censored = ms[-1], censored + 1
            samples[r, j] = value
    return summarise_bootstrap(ds, points, samples, level, censored / (resamples * len(ds)))


def summarise_bootstrap(
    ds: list[int],
    points: list[float],
    samples: np.ndarray,
    level: float,
    censored: float,
    used: np.ndarray | None = None,
    censored_by_d: np.ndarray | None = None,
) -> SlopeBootstrap:
    """The :class:`SlopeBootstrap` of the bootstrap ``samples`` ``[resamples, len(ds)]`` of the
    smallest ``m`` at each of ``ds`` (point estimates ``points``): percentile intervals at
    ``level`` for each ``d`` and for the least-squares slope in ``ln d`` over the ``d`` marked in
    ``used`` (all when ``None``); ``censored`` is the censored fraction to report."""
    keep = np.ones(len(ds), dtype=bool) if used is None else used
    x = np.log(np.array(ds, dtype=float))[keep]
    fit = fit_line(x, np.array(points)[keep])
    A = np.stack([np.ones_like(x), x], axis=1)
    slopes = np.linalg.lstsq(A, samples[:, keep].T, rcond=None)[0][1]
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
    m_low, m_high = np.percentile(samples, q, axis=0)
    slope_low, slope_high = np.percentile(slopes, q)
    return SlopeBootstrap(
        np.array(ds),
        np.array(points),
        m_low,
        m_high,
        fit.slope,
        fit.intercept,
        float(slope_low),
        float(slope_high),
        censored,
        used,
        censored_by_d,
    )


def wilson_interval(
    successes: torch.Tensor | np.ndarray, trials: int, z: float = 1.96
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a binomial proportion (valid near 0 and 1, unlike the normal one)."""
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    k = np.asarray(successes, dtype=float)
    p = k / trials
    centre = (p + z**2 / (2 * trials)) / (1 + z**2 / trials)
    half = z * np.sqrt(p * (1 - p) / trials + z**2 / (4 * trials**2)) / (1 + z**2 / trials)
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def predicted_same_target(d: int | np.ndarray) -> np.ndarray:
    """Probability that both heads pick the same target in the ``eta -> infinity`` limit.

    Head 1's score gap ``a - b`` is ``2(1 - rho) D - X`` and head 2's gap ``b - a`` is
    ``2(1 - rho) D + X`` (units ``1/(d^2 M^2)``, leading order, ``sinh D ~ D``), where
    ``X = (2/d) sum_{i != a,b} <v_a - v_b, v_i>`` comes from the common drift
    (:func:`common_drift`). The heads agree iff ``|X| > 2(1 - rho)|D|``; ``X`` and
    ``2(1 - rho) D`` are nearly independent centred normals whose standard deviations have ratio
    ``sigma = sqrt(d - 2) / (d (1 - rho)) ~ d^(-1/2)``, so the probability is that of
    ``|Cauchy| > 1/sigma``: ``(2/pi) arctan(sqrt(d - 2)/d)`` (at ``rho = 0``), independent of ``m``.
    """
    d = np.asarray(d, dtype=float)
    if np.any(d < 3):
        raise ValueError("d must be >= 3 (there must be at least one non-target)")
    return 2 / np.pi * np.arctan(np.sqrt(d - 2) / d)
