"""What the attention maps can represent: the best population loss reachable at all, and floors.

The chapter "Why exact softmax" asks whether linear and erf attention fail because of their
training dynamics or because no pair of queries reaches a low loss. Two tools answer it:

* :func:`minimise_loss` runs L-BFGS on the closed-form population loss
  (:func:`sxor.xor.population.population_loss`, exact gradient
  :func:`sxor.xor.population.population_grad`) over both queries from given starts: the smallest
  loss found is an *upper* bound on the infimum, the measured "best loss reachable";
* :func:`starts` builds the starts: the antisymmetric initialisation, random queries, queries
  aimed at the two targets (``c v_a, c v_b``), and least-squares aims (the query whose linear
  weights come closest to ``e_a``, likewise ``e_b``);
* two *lower* bounds proved in the chapter: :data:`ERF_LOSS_FLOOR`, valid for every pair of
  queries whenever the origin lies in the convex hull of the non-target embeddings
  (:func:`erf_floor_probability` is the probability of that by Wendel's theorem), and
  :func:`linear_loss_floor`, a floor for linear attention from the leverages of ``span(1, V)``.
"""

from __future__ import annotations

import math

import torch

from .checks import check_embeddings, check_support
from .population import population_grad_unchecked, population_loss

#: Erf attention has ``L >= (1/2)(121/225)^2`` if ``0`` is in the convex hull of ``{v_j : j != a, b}``.
ERF_LOSS_FLOOR = 0.5 * (121 / 225) ** 2
#: The start families of :func:`starts`, in order.
START_NAMES = ("antisymmetric", "random", "aimed c=1", "aimed c=4", "aimed c=16", "least squares")


def starts(V: torch.Tensor, theta0: torch.Tensor, support: torch.Tensor, *,
           generator: torch.Generator | None = None) -> torch.Tensor:
    """Starting query pairs ``[len(START_NAMES), 2, m]`` for one instance (``V [d, m]``,
    ``theta0 [m]``, ``support [2]``), in the order of :data:`START_NAMES`.

    ``antisymmetric`` is ``(theta0, -theta0)``; ``random`` two independent uniform unit vectors;
    ``aimed c`` is ``(c v_a, c v_b)``; ``least squares`` is ``(q_a, q_b)`` with ``q_t`` minimising
    ``||P V q - d P e_t||`` (``P`` the centring projection): the query whose linear weights
    ``1/d + P V q / d`` come closest to ``e_t``, which they equal when ``rank(PV) = d - 1``.
    """
    d, m = check_embeddings(V)
    if V.dim() != 2 or theta0.shape != (m,) or support.shape != (2,):
        raise ValueError(f"starts takes one instance: V [d, m], theta0 [m], support [2]; got "
                         f"{tuple(V.shape)}, {tuple(theta0.shape)}, {tuple(support.shape)}")
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


def minimise_loss(V: torch.Tensor, support: torch.Tensor, start: torch.Tensor, kind: str, *,
                  max_iter: int = 400) -> tuple[float, torch.Tensor]:
    """L-BFGS (strong Wolfe line search) on the population loss of one instance over both
    queries, from ``start [2, m]``, with the exact closed-form gradient.

    Returns ``(loss, queries [2, m])`` at the end; the loss is the smallest value the run reached,
    an upper bound on ``inf L``. A run that produces a non-finite loss is stopped and reports the
    last finite point.
    """
    d, m = check_embeddings(V)
    if start.shape != (2, m):
        raise ValueError(f"start must have shape (2, {m}), got {tuple(start.shape)}")
    q = start.detach().clone().to(V.dtype).requires_grad_(True)
    opt = torch.optim.LBFGS([q], lr=1, max_iter=max_iter, tolerance_grad=1e-14, tolerance_change=1e-16,
                            history_size=20, line_search_fn="strong_wolfe")
    best = [float(population_loss(V, q[0].detach(), q[1].detach(), support, kind)), q.detach().clone()]

    def closure():
        opt.zero_grad()
        with torch.no_grad():
            loss = population_loss(V, q[0], q[1], support, kind)
            if not torch.isfinite(loss):
                q.grad = torch.zeros_like(q)
                return torch.tensor(math.inf, dtype=V.dtype)
            g0, g1 = population_grad_unchecked(V, q[0], q[1], support, kind)
            q.grad = torch.stack([g0, g1])
        if float(loss) < best[0]:
            best[0], best[1] = float(loss), q.detach().clone()
        return loss

    opt.step(closure)
    return best[0], best[1]


def best_losses(V: torch.Tensor, theta0: torch.Tensor, support: torch.Tensor, kind: str, *,
                names: tuple[str, ...] = START_NAMES, seed: int = 0, max_iter: int = 400) -> torch.Tensor:
    """Smallest loss :func:`minimise_loss` reaches from the starts ``names`` of :func:`starts`, for
    each of ``S`` instances (``V [S, d, m]``, ``theta0 [S, m]``, ``support [S, 2]``): ``[S, len(names)]``."""
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
            out[s, k] = minimise_loss(V[s], support[s], all_starts[START_NAMES.index(name)], kind,
                                      max_iter=max_iter)[0]
    return out


def wendel(N: int, m: int) -> float:
    """Probability that ``N`` i.i.d. uniform points on ``S^(m-1)`` lie in some open half-space
    (Wendel, 1962): ``2^-(N-1) sum_{k<m} C(N-1, k)``; it is 1 for ``N <= m``."""
    if N < 1 or m < 1:
        raise ValueError(f"N and m must be positive, got N={N}, m={m}")
    return min(1.0, sum(math.comb(N - 1, k) for k in range(m)) / 2 ** (N - 1))


def erf_floor_probability(d: int, m: int) -> float:
    """A lower bound on the probability that :data:`ERF_LOSS_FLOOR` holds for every pair of queries:
    ``1 - wendel(d - 2, m)`` (the origin is then in the convex hull of the ``d - 2`` non-target
    embeddings, almost surely)."""
    return 1.0 - wendel(d - 2, m)


def linear_loss_floor(V: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """The chapter's floor for linear attention, valid for every pair of queries:
    ``L >= 1/2 - tau^2 / (1 - eps)`` with ``Pi`` the orthogonal projection onto ``span(1, V)``,
    ``eps = sum_i ||Pi e_i||^4`` and ``tau^2 = (||Pi e_a||^2 ||Pi e_b||^2 + <Pi e_a, Pi e_b>^2) / 2``.
    Shape ``[...]`` for ``V [..., d, m]``; ``nan`` where ``eps >= 1`` (the bound says nothing)."""
    d, m = check_embeddings(V)
    check_support(support, d)
    basis = torch.cat([torch.ones(*V.shape[:-1], 1, dtype=V.dtype, device=V.device), V], -1)
    Q, _ = torch.linalg.qr(basis)  # orthonormal basis of span(1, V), [..., d, m + 1]
    lev = (Q * Q).sum(-1)  # ||Pi e_i||^2
    eps = (lev * lev).sum(-1)
    qa = Q.gather(-2, support[..., :1].unsqueeze(-1).expand(*Q.shape[:-2], 1, Q.shape[-1])).squeeze(-2)
    qb = Q.gather(-2, support[..., 1:].unsqueeze(-1).expand(*Q.shape[:-2], 1, Q.shape[-1])).squeeze(-2)
    tau2 = ((qa * qa).sum(-1) * (qb * qb).sum(-1) + (qa * qb).sum(-1) ** 2) / 2
    floor = 0.5 - tau2 / (1 - eps)
    return torch.where(eps < 1, floor, torch.full_like(floor, math.nan))
