r"""What the attention maps can represent: the best population loss reachable at all, and floors.

The chapter "Why exact softmax" asks whether linear and erf attention fail because of their
training dynamics or because no pair of queries reaches a low loss. Two tools answer it:

* :func:`~sxor.xor.representation.minimise_loss` runs L-BFGS on the closed-form population loss
  (:func:`sxor.xor.population.population_loss`, exact gradient
  :func:`sxor.xor.population.population_grad`) over both queries from given starts: the smallest
  loss found is an *upper* bound on the infimum, the measured "best loss reachable";
* :func:`~sxor.xor.representation.starts` builds the starts: the antisymmetric initialisation,
  random queries, queries aimed at the two targets (:math:`c v_a, c v_b`), and least-squares aims
  (the query whose linear weights come closest to :math:`e_a`, likewise :math:`e_b`);
* two *lower* bounds proved in the chapter: ``ERF_LOSS_FLOOR``, valid for every pair of queries
  whenever the origin lies in the convex hull of the non-target embeddings
  (:func:`~sxor.xor.representation.erf_floor_probability` is the probability of that by Wendel's
  theorem), and :func:`~sxor.xor.representation.linear_loss_floor`, a floor for linear attention
  from the leverages of :math:`\operatorname{span}(\mathbf{1}, V)`;
* :func:`~sxor.xor.representation.origin_in_hull` certifies the erf floor's hypothesis per
  instance (:func:`~sxor.xor.representation.erf_floor_certified`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import torch

from ._depth import (
    _int_rows,
    depth_upper_bound_lp,
    exact_corral_separates,
    exact_signs,
    solve_exact,
)
from .checks import check_embeddings, check_support
from .population import population_grad_unchecked, population_loss

# The public names, in the order of the API page; depth_upper_bound_lp is defined in _depth.py.
__all__ = [  # noqa: RUF022 (the API page's order, which is the order of the code)
    "ERF_LOSS_FLOOR",
    "START_NAMES",
    "starts",
    "minimise_loss",
    "best_losses",
    "wendel",
    "erf_floor_probability",
    "linear_loss_floor",
    "min_norm_point",
    "origin_in_hull",
    "erf_floor_certified",
    "erf_depth_floor",
    "depth_two_certified",
    "depth_upper_bound",
    "depth_upper_bound_lp",
]

#: Erf attention has :math:`L \ge \frac{1}{2}(121/225)^2` if 0 is in the convex hull of :math:`\{v_j : j \ne a, b\}`.
ERF_LOSS_FLOOR = 0.5 * (121 / 225) ** 2
#: The start families of :func:`~sxor.xor.representation.starts`, in order.
START_NAMES = ("antisymmetric", "random", "aimed c=1", "aimed c=4", "aimed c=16", "least squares")


def starts(
    V: torch.Tensor,
    theta0: torch.Tensor,
    support: torch.Tensor,
    *,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    r"""Starting query pairs ``[len(START_NAMES), 2, m]`` for one instance, in the order of ``START_NAMES``.

    ``antisymmetric`` is :math:`(\theta_0, -\theta_0)`; ``random`` two independent uniform unit
    vectors; ``aimed c`` is :math:`(c v_a, c v_b)`; ``least squares`` is :math:`(q_a, q_b)` with
    :math:`q_t` minimising :math:`\lVert P V q - d P e_t \rVert` (:math:`P` the centring
    projection): the query whose linear weights :math:`1/d + P V q / d` come closest to :math:`e_t`,
    which they equal when :math:`\operatorname{rank}(PV) = d - 1`.

    Parameters
    ----------
    V
        Key embeddings ``[d, m]``.
    theta0
        Antisymmetric initial query ``[m]``.
    support
        The pair :math:`(a, b)`, ``[2]``.
    generator
        Random generator for the random start.
    """
    d, m = check_embeddings(V)
    if V.dim() != 2 or theta0.shape != (m,) or support.shape != (2,):
        raise ValueError(
            f"starts takes one instance: V [d, m], theta0 [m], support [2]; got "
            f"{tuple(V.shape)}, {tuple(theta0.shape)}, {tuple(support.shape)}"
        )
    check_support(support, d)
    a, b = int(support[0]), int(support[1])
    z = torch.randn(2, m, generator=generator, dtype=V.dtype).to(V.device)
    out = [torch.stack([theta0, -theta0]), z / z.norm(dim=-1, keepdim=True)]
    out += [torch.stack([c * V[a], c * V[b]]) for c in (1.0, 4.0, 16.0)]
    PV = V - V.mean(0, keepdim=True)
    targets = -torch.ones(d, 2, dtype=V.dtype, device=V.device)
    targets[a, 0] += d
    targets[b, 1] += d
    q = torch.linalg.lstsq(PV, targets).solution  # [m, 2]; d P e_t = d e_t - 1
    out.append(q.T)
    return torch.stack(out)


def minimise_loss(
    V: torch.Tensor, support: torch.Tensor, start: torch.Tensor, kind: str, *, max_iter: int = 400
) -> tuple[float, torch.Tensor]:
    r"""L-BFGS (strong Wolfe line search) on the population loss of one instance over both queries, with the exact closed-form gradient.

    Returns ``(loss, queries [2, m])`` at the end; the loss is the smallest value the run reached, an
    upper bound on :math:`\inf L`. A run that produces a non-finite loss is stopped and reports the
    last finite point.

    Parameters
    ----------
    V
        Key embeddings ``[d, m]``.
    support
        The pair :math:`(a, b)`, ``[2]``.
    start
        Starting queries ``[2, m]``.
    kind
        Name of the attention map.
    max_iter
        Largest number of L-BFGS iterations.
    """
    _d, m = check_embeddings(V)
    if start.shape != (2, m):
        raise ValueError(f"start must have shape (2, {m}), got {tuple(start.shape)}")
    q = start.detach().clone().to(V.dtype).requires_grad_(True)
    opt = torch.optim.LBFGS(
        [q],
        lr=1,
        max_iter=max_iter,
        tolerance_grad=1e-14,
        tolerance_change=1e-16,
        history_size=20,
        line_search_fn="strong_wolfe",
    )
    best_loss = float(population_loss(V, q[0].detach(), q[1].detach(), support, kind))
    best_q = q.detach().clone()

    def closure():
        nonlocal best_loss, best_q
        opt.zero_grad()
        with torch.no_grad():
            loss = population_loss(V, q[0], q[1], support, kind)
            if not torch.isfinite(loss):
                q.grad = torch.zeros_like(q)
                return torch.tensor(math.inf, dtype=V.dtype)
            g0, g1 = population_grad_unchecked(V, q[0], q[1], support, kind)
            q.grad = torch.stack([g0, g1])
        if float(loss) < best_loss:
            best_loss, best_q = float(loss), q.detach().clone()
        return loss

    opt.step(closure)
    return best_loss, best_q


def best_losses(
    V: torch.Tensor,
    theta0: torch.Tensor,
    support: torch.Tensor,
    kind: str,
    *,
    names: tuple[str, ...] = START_NAMES,
    seed: int = 0,
    max_iter: int = 400,
) -> torch.Tensor:
    r"""Smallest loss :func:`~sxor.xor.representation.minimise_loss` reaches from each start, for each of ``S`` instances, ``[S, len(names)]``.

    Parameters
    ----------
    V
        Key embeddings ``[S, d, m]``.
    theta0
        Antisymmetric initial queries ``[S, m]``.
    support
        Supports ``[S, 2]``.
    kind
        Name of the attention map.
    names
        A non-empty subset of ``START_NAMES`` (the starts of
        :func:`~sxor.xor.representation.starts`).
    seed
        Seed of the generator of the random starts.
    max_iter
        Largest number of L-BFGS iterations per run.

    Raises
    ------
    ValueError
        unless ``V`` is ``[S, d, m]`` and ``names`` is a non-empty subset of ``START_NAMES``.
    """
    if V.dim() != 3:
        raise ValueError(f"V must have shape [S, d, m], got {tuple(V.shape)}")
    unknown = set(names) - set(START_NAMES)
    if unknown or not names:
        raise ValueError(f"names must be a non-empty subset of {START_NAMES}, got {names}")
    gen = torch.Generator().manual_seed(seed)
    out = torch.empty(V.shape[0], len(names), dtype=torch.float64)
    for s in range(V.shape[0]):
        all_starts = starts(V[s], theta0[s], support[s], generator=gen)
        for k, name in enumerate(names):
            out[s, k] = minimise_loss(
                V[s], support[s], all_starts[START_NAMES.index(name)], kind, max_iter=max_iter
            )[0]
    return out


def wendel(N: int, m: int) -> float:
    r"""Probability that :math:`N` i.i.d. uniform points on :math:`S^{m-1}` lie in some open half-space (Wendel, 1962).

    It is :math:`2^{-(N-1)} \sum_{k<m} \binom{N-1}{k}`, and 1 for :math:`N \le m`.

    Parameters
    ----------
    N
        Number of points.
    m
        Dimension of the ambient space.
    """
    if N < 1 or m < 1:
        raise ValueError(f"N and m must be positive, got N={N}, m={m}")
    return min(1.0, sum(math.comb(N - 1, k) for k in range(m)) / 2 ** (N - 1))


def erf_floor_probability(d: int, m: int) -> float:
    r"""A lower bound on the probability that ``ERF_LOSS_FLOOR`` holds for every pair of queries.

    It is :math:`1 - \mathrm{wendel}(d - 2, m)`: the origin is then in the convex hull of the
    :math:`d - 2` non-target embeddings, almost surely.

    Parameters
    ----------
    d
        Number of positions.
    m
        Embedding dimension.
    """
    return 1.0 - wendel(d - 2, m)


def linear_loss_floor(V: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    r"""The chapter's floor for linear attention, valid for every pair of queries, shape ``[...]``.

    .. math::
       \begin{aligned}
       L &\ge \frac{1}{2} - \frac{\tau^2}{1 - \varepsilon},\\
       \varepsilon &= \sum_i \lVert \Pi e_i \rVert^4,\\
       \tau^2 &= \tfrac{1}{2}\big(\lVert \Pi e_a \rVert^2 \lVert \Pi e_b \rVert^2
       + \langle \Pi e_a, \Pi e_b \rangle^2\big),
       \end{aligned}

    with :math:`\Pi` the orthogonal projection onto :math:`\operatorname{span}(\mathbf{1}, V)`;
    ``nan`` where :math:`\varepsilon \ge 1` (the bound says nothing).

    Parameters
    ----------
    V
        Key embeddings ``[..., d, m]``.
    support
        The pair :math:`(a, b)`, ``[..., 2]``.
    """
    d, _m = check_embeddings(V)
    check_support(support, d)
    basis = torch.cat([torch.ones(*V.shape[:-1], 1, dtype=V.dtype, device=V.device), V], -1)
    Q, _ = torch.linalg.qr(basis)  # orthonormal basis of span(1, V), [..., d, m + 1]
    lev = (Q * Q).sum(-1)  # ||Pi e_i||^2
    eps = (lev * lev).sum(-1)
    qa = Q.gather(-2, support[..., :1].unsqueeze(-1).expand(*Q.shape[:-2], 1, Q.shape[-1])).squeeze(
        -2
    )
    qb = Q.gather(-2, support[..., 1:].unsqueeze(-1).expand(*Q.shape[:-2], 1, Q.shape[-1])).squeeze(
        -2
    )
    tau2 = ((qa * qa).sum(-1) * (qb * qb).sum(-1) + (qa * qb).sum(-1) ** 2) / 2
    floor = 0.5 - tau2 / (1 - eps)
    return torch.where(eps < 1, floor, torch.full_like(floor, math.nan))


def min_norm_point(
    points: torch.Tensor, *, max_iter: int = 10_000
) -> tuple[torch.Tensor, list[int], torch.Tensor]:
    r"""Wolfe's (1976) algorithm for the point of smallest norm in the convex hull of ``points [N, m]``.

    Float64 on the CPU. Returns ``(x, corral, weights)``: ``x [m]``, the indices of the affinely
    independent points whose convex combination with positive ``weights`` is ``x``. A
    floating-point result: :func:`~sxor.xor.representation.origin_in_hull` turns it into a
    certificate.

    Parameters
    ----------
    points
        The points ``[N, m]``, :math:`N \ge 1`.
    max_iter
        Largest number of iterations.

    Raises
    ------
    ValueError
        unless ``points`` has shape ``[N, m]`` with ``N >= 1``.
    """
    if points.dim() != 2 or points.shape[0] < 1:
        raise ValueError(f"points must have shape [N, m] with N >= 1, got {tuple(points.shape)}")
    P = points.detach().to("cpu", torch.float64)
    scale = float((P * P).sum(-1).max())
    tol = 1e-12 * max(scale, 1e-300)
    j = int((P * P).sum(-1).argmin())
    S, w = [j], torch.ones(1, dtype=torch.float64)
    for _ in range(max_iter):
        x = w @ P[S]
        dots = P @ x
        j = int(dots.argmin())
        if float(x @ x - dots[j]) <= tol or j in S or len(S) > P.shape[1]:
            break
        S, w = [*S, j], torch.cat([w, torch.zeros(1, dtype=torch.float64)])
        for _ in range(max_iter):  # minor cycle: move towards the affine minimiser of the corral
            Q = P[S]
            k = len(S)
            kkt = torch.zeros(k + 1, k + 1, dtype=torch.float64)
            kkt[:k, :k], kkt[:k, k], kkt[k, :k] = Q @ Q.T, 1.0, 1.0
            rhs = torch.zeros(k + 1, dtype=torch.float64)
            rhs[k] = 1.0
            alpha = torch.linalg.lstsq(kkt, rhs.unsqueeze(-1)).solution[:k, 0]
            if bool((alpha > 1e-15).all()):
                w = alpha
                break
            neg = alpha <= 1e-15
            ratio = w[neg] / (w[neg] - alpha[neg])
            theta = float(ratio.min()) if ratio.numel() else 1.0
            w = (1 - theta) * w + theta * alpha
            keep = w > 1e-15
            S, w = [s for s, k_ in zip(S, keep.tolist()) if k_], w[keep]
            w = w / w.sum()
    return w @ P[S], S, w


def origin_in_hull(points: torch.Tensor) -> int:
    r"""Certify whether 0 lies in the convex hull of ``points [N, m]``.

    Returns ``+1`` certified inside, ``-1`` certified outside, ``0`` undecided (rounding could change
    the answer).

    *Outside*: the min-norm point :math:`x` of :func:`~sxor.xor.representation.min_norm_point` is a
    strictly separating direction if :math:`\min_j \langle p_j, x \rangle > 0`, checked in exact
    rational arithmetic. *Inside*: the corral has :math:`m + 1` points; the barycentric coordinates
    :math:`\lambda` of 0 in that simplex solve :math:`A \lambda = e_{m+1}` with
    :math:`A = [P_S^\top; \mathbf{1}^\top]`. That system is solved exactly, in rational arithmetic
    on the float64 points (``solve_exact``, fraction-free elimination); if every coordinate is
    :math:`\ge 0`, then :math:`0 = \sum_j \lambda_j p_j` is in the (closed) hull. Both verdicts
    are exact statements about the stored float64 points: no step is rounded.

    Parameters
    ----------
    points
        The points ``[N, m]``.
    """
    return _origin_in_hull(points)[0]


def _origin_in_hull(points: torch.Tensor) -> tuple[int, list[int], torch.Tensor]:
    """The verdict of :func:`origin_in_hull`, the corral and the min-norm point it was computed from."""
    P = points.detach().to("cpu", torch.float64)
    _N, m = P.shape
    x, S, _ = min_norm_point(P)
    if float(x.norm()) > 0 and min(exact_signs(_int_rows(P.tolist()), x)) > 0:
        return -1, S, x
    if len(S) != m + 1:
        return (-1 if exact_corral_separates(P, S) else 0), S, x
    A = torch.cat([P[S].T, torch.ones(1, m + 1, dtype=torch.float64)])
    e = torch.zeros(m + 1, dtype=torch.float64)
    e[m] = 1.0
    lam = solve_exact(A, e)
    if lam is not None and min(lam) >= 0:
        return 1, S, x
    if exact_corral_separates(P, S):  # the float direction missed by its rounding
        return -1, S, x
    return 0, S, x


def erf_floor_certified(V: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    r"""Per instance, whether the hypothesis of the chapter's erf floor holds, ``[S]`` int8.

    :func:`~sxor.xor.representation.origin_in_hull` of the non-target embeddings: ``+1`` certified,
    ``-1`` certified to fail, ``0`` undecided.

    Parameters
    ----------
    V
        Key embeddings ``[S, d, m]``.
    support
        Supports ``[S, 2]``.
    """
    if V.dim() != 3 or support.shape != (V.shape[0], 2):
        raise ValueError(
            f"need V [S, d, m] and support [S, 2], got {tuple(V.shape)}, {tuple(support.shape)}"
        )
    d, _ = check_embeddings(V)
    check_support(support, d)
    out = torch.empty(V.shape[0], dtype=torch.int8)
    for s in range(V.shape[0]):
        keep = torch.ones(d, dtype=torch.bool)
        keep[support[s].cpu()] = False
        out[s] = origin_in_hull(V[s].cpu()[keep])
    return out


def erf_depth_floor(k: int, *, tol: Fraction | None = None) -> tuple[Fraction, Fraction]:
    r"""Certified value of the chapter's depth-:math:`k` floor for erf attention, in exact rationals.

    If every query gives at least ``k`` non-target scores :math:`s_j \ge 0`, each head has
    :math:`g_{i^*} \le c`, :math:`g_{i^*} + g_{j^*} \le u` with :math:`c = 2/(2+k)`,
    :math:`u = 4/(4+k)`, and the loss is at least

    .. math::
       \begin{aligned}
       F_k(p, q) = \frac12\big[&(1-p-q)^2\\
       &+ \frac k2 (p^2+q^2)\big]
       \end{aligned}

    with :math:`p = g_{i^*}\tilde g_{j^*}`, :math:`q = g_{j^*}\tilde g_{i^*}`; its minimum lies where
    :math:`g_{i^*} + g_{j^*} = \tilde g_{i^*} + \tilde g_{j^*} = u`. With :math:`x = g_{i^*}`,
    :math:`y = \tilde g_{j^*}` in :math:`[u - c, c]` this is a function of two variables, and a
    branch and bound over squares in exact rational arithmetic bounds it below: on a square,
    :math:`p` and :math:`q` lie in exact intervals (both are monotone in :math:`x` and
    :math:`y`), and

    .. math::
       \begin{aligned}
       F_k \ge \frac12[&(1-p_{\max}-q_{\max})^2\\
       &+ \frac k2(p_{\min}^2+q_{\min}^2)].
       \end{aligned}

    Returns ``(lower, attained)``: ``lower`` is a proved lower bound on :math:`\min F_k`, and
    ``attained`` the value of :math:`F_k` at a feasible point, so :math:`\min F_k` lies in
    ``[lower, attained]`` and ``attained - lower <= tol``.

    Parameters
    ----------
    k
        The number of non-negative non-target scores every query is assumed to have, ``k >= 1``.
    tol
        Largest gap ``attained - lower`` accepted; default :math:`10^{-4}`.

    Raises
    ------
    ValueError
        unless ``k`` is an integer ``>= 1`` and ``tol`` is positive.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    tol = Fraction(1, 10**4) if tol is None else Fraction(tol)
    if tol <= 0:
        raise ValueError(f"tol must be positive, got {tol}")
    c, u = Fraction(2, 2 + k), Fraction(4, 4 + k)

    def value(x: Fraction, y: Fraction) -> Fraction:
        p, q = x * y, (u - x) * (u - y)
        return ((1 - p - q) ** 2 + k * (p * p + q * q) / 2) / 2

    lo = u - c
    attained = min(value(x, y) for x in (lo, c, u / 2) for y in (lo, c, u / 2))
    lower = None
    stack = [(lo, c, lo, c)]
    while stack:
        x0, x1, y0, y1 = stack.pop()
        xm, ym = (x0 + x1) / 2, (y0 + y1) / 2
        attained = min(attained, value(xm, ym))
        p_hi, q_hi, p_lo, q_lo = x1 * y1, (u - x0) * (u - y0), x0 * y0, (u - x1) * (u - y1)
        bound = ((1 - p_hi - q_hi) ** 2 + k * (p_lo * p_lo + q_lo * q_lo) / 2) / 2
        if (
            1 - p_hi - q_hi < 0
        ):  # cannot happen: p_hi, q_hi <= c^2 and 1 - 2 c^2 > 0; kept as a guard
            bound = Fraction(0)
        if bound >= attained - tol:
            lower = bound if lower is None else min(lower, bound)
            continue
        stack += [(x0, xm, y0, ym), (xm, x1, y0, ym), (x0, xm, ym, y1), (xm, x1, ym, y1)]
    assert lower is not None
    return lower, attained


def depth_two_certified(points: torch.Tensor) -> int:
    r"""Certify whether every closed half-space :math:`\{x: \langle x, \theta\rangle \ge 0\}` contains at least two of ``points [N, m]``.

    That holds if and only if 0 stays in the convex hull when any one point is removed (the
    origin has Tukey depth at least 2). The certificate of
    :func:`~sxor.xor.representation.origin_in_hull` for all points uses a corral of :math:`m+1`
    points; removing a point outside it leaves that certificate valid, so only the removals of
    corral points are checked, each with :func:`~sxor.xor.representation.origin_in_hull`.

    Returns ``+1`` certified, ``-1`` certified to fail (0 not in the hull, or some removal leaves
    it outside), ``0`` undecided.

    Parameters
    ----------
    points
        The points ``[N, m]``.
    """
    if not isinstance(points, torch.Tensor):
        raise TypeError(f"points must be a torch.Tensor, got {type(points).__name__}")
    P = points.detach().to("cpu", torch.float64)
    if P.dim() != 2 or P.shape[0] < 1:
        raise ValueError(f"points must have shape [N, m] with N >= 1, got {tuple(P.shape)}")
    full, S, _ = _origin_in_hull(P)  # S: the corral whose simplex certified 0 inside
    if full != 1:
        return full
    worst = 1
    for r in S:
        keep = torch.ones(P.shape[0], dtype=torch.bool)
        keep[r] = False
        worst = min(worst, origin_in_hull(P[keep]))
        if worst == -1:
            return -1
    return worst


def depth_upper_bound(
    points: torch.Tensor,
    *,
    restarts: int = 256,
    steps: int = 300,
    generator: torch.Generator | None = None,
) -> tuple[int, torch.Tensor]:
    r"""An upper bound on the Tukey depth of 0 in ``points [N, m]``: a query with few non-negative scores.

    Minimises the smooth count :math:`\sum_j \sigma(\beta \langle p_j, \theta\rangle / \lVert\theta\rVert)`
    with Adam from ``restarts`` random directions (:math:`\beta` rising from 5 to 50) and returns
    ``(count, theta)``: ``count`` is the number of scores of ``theta [m]`` at or above
    :math:`-10^{-9}\lVert\theta\rVert`, so at most ``count`` scores are :math:`\ge 0`, and
    every uncounted score is negative by a margin rounding cannot cross. A search: the depth is
    at most ``count``, and may be smaller.

    Parameters
    ----------
    points
        The points ``[N, m]``.
    restarts
        Number of random starting directions.
    steps
        Adam steps per start.
    generator
        Random generator for the starts.
    """
    if not isinstance(points, torch.Tensor):
        raise TypeError(f"points must be a torch.Tensor, got {type(points).__name__}")
    P = points.detach().to("cpu", torch.float64)
    if P.dim() != 2 or P.shape[0] < 1:
        raise ValueError(f"points must have shape [N, m] with N >= 1, got {tuple(P.shape)}")
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (restarts, steps)):
        raise TypeError(f"restarts and steps must be integers, got {restarts!r}, {steps!r}")
    if restarts < 1 or steps < 0:
        raise ValueError(f"restarts must be >= 1 and steps >= 0, got {restarts}, {steps}")
    th = torch.randn(restarts, P.shape[1], generator=generator, dtype=torch.float64).requires_grad_(
        True
    )
    opt = torch.optim.Adam([th], lr=0.05)
    for it in range(steps):
        beta = 5 + 45 * it / max(steps, 1)
        smooth = torch.sigmoid(beta * (th @ P.T) / th.norm(dim=-1, keepdim=True)).sum()
        opt.zero_grad()
        smooth.backward()
        opt.step()
    with torch.no_grad():
        s = (th @ P.T) / th.norm(dim=-1, keepdim=True)
        count = (s >= -1e-9).sum(
            -1
        )  # scores in [-1e-9, 0) are counted as non-negative: an upper bound
    i = int(count.argmin())
    return int(count[i]), th[i].detach().clone()
