r"""Closed-form population loss and gradient of ``k`` heads on ``k``-sparse parity.

For ``x`` uniform on :math:`\{\pm1\}^d` the moments of the coordinates follow from the cumulants
of one Rademacher variable, :math:`\kappa_2 = 1,\ \kappa_4 = -2,\ \kappa_6 = 16,\ \kappa_8 = -272`
(odd ones vanish): for any indices :math:`i_1, \dots, i_n`,

.. math::  \mathbb E[x_{i_1}\cdots x_{i_n}] = \sum_{\pi} \prod_{B \in \pi}
           \kappa_{|B|}\,[\text{the } i_s,\ s \in B, \text{ coincide}],

the sum over the partitions :math:`\pi` of :math:`\{1,\dots,n\}` into blocks of even size. For
:math:`n = 6` these are the 15 pairings, the 15 splits into a block of four and a pair (each with
:math:`\kappa_4 = -2`) and the single block of six (:math:`\kappa_6 = 16`). With :math:`n = 2k`
slots, two per head, the second moment of the product of ``k`` heads is

.. math::  \mathbb E\Big[\prod_{r=1}^k (\gamma^{(r)}\cdot x)^2\Big]
           = \sum_{\pi} \prod_{B\in\pi} \kappa_{|B|} \sum_{i=1}^d \prod_{s \in B} \gamma^{(r(s))}_i ,

a polynomial in the "monomial sums" :math:`S_c = \sum_i \prod_r (\gamma^{(r)}_i)^{c_r}`,
:math:`c \in \{0,1,2\}^k`, each costing :math:`O(d)`. With :math:`y = -\chi_S` and
:math:`f = -\prod_r(\gamma^{(r)}\cdot x)`, :math:`L = \tfrac12\mathbb E[f^2]
- \operatorname{perm}(\Gamma) + \tfrac12` (chapter 9), :math:`\Gamma_{rt} = \gamma^{(r)}_{S_t}`.
Everything holds for any weight vectors, softmax or not; ``k = 2`` is
:func:`sxor.xor.population.loss_from_weights`.
"""

from __future__ import annotations

import functools
import itertools
import math

import torch

from .checks import check_embeddings, check_query, check_support, check_tensor
from .model import attention_kind

#: Largest number of heads the closed form is built for (the partitions of ``2k`` slots grow
#: fast: 31 for ``k = 3``, 379 for ``k = 4``, 6 556 for ``k = 5``).
MAX_HEADS = 5


def rademacher_cumulant(n: int) -> int:
    r"""The ``n``-th cumulant :math:`\kappa_n` of a Rademacher variable (exact integer).

    From the moments :math:`\mu_n = [n \text{ even}]` by

    .. math::

       \kappa_n = \mu_n - \sum_{j=1}^{n-1}\binom{n-1}{j-1}\kappa_j\mu_{n-j}.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    kappa = [0] * (n + 1)
    for p in range(1, n + 1):
        mu = 1 if p % 2 == 0 else 0
        kappa[p] = mu - sum(
            math.comb(p - 1, j - 1) * kappa[j] * (1 if (p - j) % 2 == 0 else 0) for j in range(1, p)
        )
    return kappa[n]


def even_partitions(n: int) -> list[list[tuple[int, ...]]]:
    """All partitions of ``range(n)`` into blocks of even size (each block a sorted tuple)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0 or n % 2:
        raise ValueError(f"n must be an even integer >= 0, got {n!r}")

    def rec(items: tuple[int, ...]) -> list[list[tuple[int, ...]]]:
        if not items:
            return [[]]
        first, rest = items[0], items[1:]
        out = []
        for size in range(1, len(rest) + 1, 2):  # the block holds first and an odd number more
            for others in itertools.combinations(rest, size):
                left = tuple(i for i in rest if i not in others)
                out.extend([[(first, *others), *tail] for tail in rec(left)])
        return out

    return rec(tuple(range(n)))


def moment_formula(indices: tuple[int, ...]) -> int:
    r""":math:`\mathbb E[x_{i_1}\cdots x_{i_n}]` by the sum over even partitions (module docstring).

    A check of the cumulant expansion against the direct rule (1 if every index occurs an even
    number of times, else 0). Odd ``n`` gives 0.
    """
    n = len(indices)
    if n % 2:
        return 0
    total = 0
    for part in even_partitions(n):
        if all(len({indices[s] for s in block}) == 1 for block in part):
            total += math.prod(rademacher_cumulant(len(block)) for block in part)
    return total


@functools.cache
def moment_polynomial(k: int) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, tuple], ...]]:
    r"""The polynomial :math:`\mathbb E[\prod_r(\gamma^{(r)}\cdot x)^2] = \sum_T a_T \prod_{c\in T} S_c`.

    Returns ``(monomials, terms)``: ``monomials`` the count vectors :math:`c \in \{0,1,2\}^k`
    that occur, ``terms`` pairs ``(a_T, T)`` with ``T`` a sorted tuple of indices into
    ``monomials`` (one per block of the partition) and ``a_T`` the integer sum of
    :math:`\prod_B\kappa_{|B|}` over the partitions with that multiset of blocks.
    """
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_HEADS:
        raise ValueError(f"k must be an integer in [1, {MAX_HEADS}], got {k!r}")
    monomials: dict[tuple[int, ...], int] = {}
    coef: dict[tuple[int, ...], int] = {}
    for part in even_partitions(2 * k):
        weight = math.prod(rademacher_cumulant(len(block)) for block in part)
        key = []
        for block in part:
            c = tuple(sum(1 for s in block if s // 2 == r) for r in range(k))
            key.append(monomials.setdefault(c, len(monomials)))
        t = tuple(sorted(key))
        coef[t] = coef.get(t, 0) + weight
    terms = tuple((a, t) for t, a in sorted(coef.items()) if a != 0)
    return tuple(monomials), terms


def _check_weights(weights: object, support: object) -> tuple[int, int]:
    """Validate ``weights [..., k, d]`` (real floating) and ``support [..., k]``; return ``(k, d)``."""
    w = check_tensor("weights", weights, 2, real=True)
    k, d = w.shape[-2], w.shape[-1]
    check_support(support, d, k=None)
    assert isinstance(support, torch.Tensor)  # for mypy: check_support refused anything else
    if support.shape[-1] != k:
        raise ValueError(f"need one head per support position: {k} heads, k={support.shape[-1]}")
    if not 1 <= k <= MAX_HEADS:
        raise ValueError(f"the closed form is built for 1 <= k <= {MAX_HEADS} heads, got k={k}")
    return k, d


def _monomial_sums(w: torch.Tensor, monomials) -> torch.Tensor:
    """``S [..., n_mono + 1]``: the monomial sums, then a constant 1 (the padding of short terms)."""
    sums = []
    for c in monomials:
        prod = None
        for r, p in enumerate(c):
            if p:
                f = w[..., r, :] if p == 1 else w[..., r, :] ** 2
                prod = f if prod is None else prod * f
        assert prod is not None  # every block holds at least two slots
        sums.append(prod.sum(-1))
    sums.append(torch.ones_like(sums[0]))
    return torch.stack(sums, -1)


def _term_table(k: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """``(idx [n_terms, k], coef [n_terms])``: terms padded with the index of the constant 1."""
    monomials, terms = moment_polynomial(k)
    pad = len(monomials)
    idx = torch.tensor([list(t) + [pad] * (k - len(t)) for _, t in terms], device=device)
    coef = torch.tensor([float(a) for a, _ in terms], dtype=torch.float64, device=device)
    return idx, coef


def product_second_moment(weights: torch.Tensor) -> torch.Tensor:
    r""":math:`\mathbb E[\prod_r(\gamma^{(r)}\cdot x)^2]` for weights ``[..., k, d]``, shape ``[...]``.

    Exact for any real weights, at :math:`O(3^k d)` per instance (module docstring).

    Raises
    ------
    ArgumentTypeError, ValueError
        unless ``weights`` is a real floating tensor ``[..., k, d]`` with ``1 <= k <= 5``.
    """
    w = check_tensor("weights", weights, 2, real=True)
    k = w.shape[-2]
    if not 1 <= k <= MAX_HEADS:
        raise ValueError(f"the closed form is built for 1 <= k <= {MAX_HEADS} heads, got k={k}")
    return _second_moment(w, k)[0]


def _second_moment(w: torch.Tensor, k: int):
    monomials, _ = moment_polynomial(k)
    S = _monomial_sums(w, monomials)
    idx, coef = _term_table(k, w.device)
    factors = S[..., idx]  # [..., n_terms, k]
    return factors.prod(-1) @ coef.to(w.dtype), S, factors, idx, coef


def _permanent_and_grad(G: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``perm(G)`` and its gradient ``d perm / d G`` for ``G [..., k, k]`` (sum over ``k!``)."""
    k = G.shape[-1]
    perm = torch.zeros(G.shape[:-2], dtype=G.dtype, device=G.device)
    grad = torch.zeros_like(G)
    for p in itertools.permutations(range(k)):
        entries = [G[..., r, p[r]] for r in range(k)]
        perm = perm + math.prod(entries[1:], start=entries[0])
        for r in range(k):
            others = [entries[s] for s in range(k) if s != r]
            grad[..., r, p[r]] += math.prod(others[1:], start=others[0]) if others else 1.0
    return perm, grad


def _target_matrix(w: torch.Tensor, support: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``Gamma [..., k, k]`` (head ``r``'s weight on target ``t``) and the broadcast support."""
    k = w.shape[-2]
    shape = torch.broadcast_shapes(w.shape[:-2], support.shape[:-1])
    w = w.expand(*shape, *w.shape[-2:])
    idx = support.to(w.device, torch.int64).expand(*shape, k)
    return w.gather(-1, idx.unsqueeze(-2).expand(*shape, k, k)), idx


def kparity_loss_from_weights(weights: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    r""":math:`L = \tfrac12\mathbb E[f^2] - \operatorname{perm}(\Gamma) + \tfrac12` for weights
    ``[..., k, d]`` and support ``[..., k]``, shape ``[...]`` (broadcast batch shapes).

    Raises
    ------
    ArgumentTypeError, ValueError
        unless ``weights`` is real floating ``[..., k, d]`` with ``1 <= k <= 5`` and ``support``
        holds ``k`` distinct integer positions in ``[0, d)``.
    """
    k, _ = _check_weights(weights, support)
    G, _ = _target_matrix(weights, support)
    perm, _ = _permanent_and_grad(G)
    return 0.5 * _second_moment(weights, k)[0] - perm + 0.5


def kparity_grad_from_weights(
    weights: torch.Tensor, support: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The loss and its gradient with respect to the weights, ``([...], [..., k, d])``.

    .. math::
       \partial S_c/\partial\gamma^{(r)}_i = c_r(\gamma^{(r)}_i)^{c_r-1}
       \prod_{s\ne r}(\gamma^{(s)}_i)^{c_s},

    chained through the polynomial; the permanent's gradient is the permanent of the minors. Raises as :func:`kparity_loss_from_weights` does.
    """
    k, _ = _check_weights(weights, support)
    w = weights
    second, S, factors, idx, coef = _second_moment(w, k)
    # dE/dS_c: for each term and each slot j, the product of the term's other factors.
    adj = torch.zeros_like(S)
    for j in range(k):
        others = torch.cat([factors[..., :j], factors[..., j + 1 :]], -1).prod(-1) * coef.to(
            w.dtype
        )
        adj = adj.index_add(-1, idx[:, j], others)
    monomials, _ = moment_polynomial(k)
    grad = torch.zeros_like(w)
    for n, c in enumerate(monomials):
        for r in range(k):
            if not c[r]:
                continue
            part = adj[..., n : n + 1] * (2 * w[..., r, :] if c[r] == 2 else 1.0)
            for s in range(k):
                if s != r and c[s]:
                    part = part * (w[..., s, :] if c[s] == 1 else w[..., s, :] ** 2)
            grad[..., r, :] += part
    grad = 0.5 * grad
    G, sidx = _target_matrix(w, support)
    perm, dperm = _permanent_and_grad(G)
    shape = torch.broadcast_shapes(grad.shape[:-2], sidx.shape[:-1])
    grad = grad.expand(*shape, *grad.shape[-2:]).clone()
    grad.scatter_add_(-1, sidx.unsqueeze(-2).expand(*shape, k, k), -dperm)
    return 0.5 * second - perm + 0.5, grad


def _weights_of(V, thetas, support, kind):
    d, m = check_embeddings(V)
    check_query("thetas", thetas, m, like=V)
    check_tensor("thetas", thetas, 2)
    check_support(support, d, k=None)
    phi = attention_kind(kind)
    s = (V.unsqueeze(-3) @ thetas.unsqueeze(-1)).squeeze(-1)  # [..., k, d]
    return phi, s, phi.weights(s)


def kparity_population_loss(
    V: torch.Tensor, thetas: torch.Tensor, support: torch.Tensor, kind: str = "softmax"
) -> torch.Tensor:
    r"""Exact population loss of ``k`` heads in closed form, :math:`O(dm)` per instance, ``[...]``.

    The same number as :func:`sxor.xor.kparity.parity_population_loss` (enumeration, ``d <= 16``)
    for every ``d``. Differentiable.

    Parameters
    ----------
    V
        Key embeddings ``[..., d, m]``.
    thetas
        Queries ``[..., k, m]``, ``1 <= k <= 5``.
    support
        Positions ``[..., k]``: one head per position.
    kind
        Name of the attention map.

    Raises
    ------
    ArgumentTypeError, ValueError
        for embeddings, queries or a support that are malformed (types, shapes, dtypes, devices,
        non-finite entries, positions out of range or repeated), or a head count off the support.
    """
    _, _, w = _weights_of(V, thetas, support, kind)
    return kparity_loss_from_weights(w, support)


def kparity_population_grad(
    V: torch.Tensor, thetas: torch.Tensor, support: torch.Tensor, kind: str = "softmax"
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The loss ``[...]`` and its gradient with respect to the queries, ``[..., k, m]``.

    :math:`\nabla_{\theta_r} L = V^\top J_\phi(s_r)^\top \nabla_{\gamma^{(r)}} L` with the
    hand-derived :func:`kparity_grad_from_weights`; no autograd. Raises as
    :func:`kparity_population_loss` does.
    """
    phi, s, w = _weights_of(V, thetas, support, kind)
    loss, du = kparity_grad_from_weights(w, support)
    r = phi.pullback(s, w, du)  # [..., k, d]
    return loss, r @ V
