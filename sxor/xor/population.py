"""Closed-form population loss and gradient, and the one-step update of Part I.

For ``x`` uniform on ``{+1,-1}^d`` the Rademacher fourth moment is

.. math::  \\mathbb E[x_i x_j x_k x_l] = \\delta_{ij}\\delta_{kl} + \\delta_{ik}\\delta_{jl}
           + \\delta_{il}\\delta_{jk} - 2\\,\\delta_{ijkl},

so for any weight vectors ``g, h`` (not only softmax ones) and ``y = -x_a x_b``, ``a != b``:

.. math::  L(g, h) &= \\tfrac12\\mathbb E[(f(x) - y)^2] \\\\
           &= \\tfrac12\\|g\\|^2\\|h\\|^2 + (g\\cdot h)^2 - \\textstyle\\sum_i g_i^2 h_i^2 \\\\
           &\\quad - (g_a h_b + g_b h_a) + \\tfrac12 .

Everything here costs ``O(d)`` per instance once the weights are known, and ``O(d m)`` to get
them, with no sampling and no enumeration.
"""

from __future__ import annotations

import torch

from ._softmax_rows import _loss_rows, _softmax_pullback_rows
from ._step_path import (
    OneStepResult,
    StepAndLimit,
    StepPath,
    _native_or_none,
    _native_step,
    _set_path,
    last_path,
)
from .checks import (
    batch_shape,
    check_embeddings,
    check_finite,
    check_query,
    check_step_inputs,
    check_support,
    check_weights_and_support,
)
from .model import attention_kind
from .model import scores_unchecked as scores

# The public names. Defined here, or in _step_path.py (the result types and last_path, beside the
# native kernel's entry) and documented here. The API page lists them in this order (autodoc's
# "bysource" follows __all__), which is the order of the code, hence not sorted.
__all__ = [  # noqa: RUF022 (the API page's order, see above)
    "loss_from_weights",
    "grad_from_weights",
    "check_model_inputs",
    "population_loss",
    "population_grad",
    "population_grad_unchecked",
    "OneStepResult",
    "StepAndLimit",
    "StepPath",
    "last_path",
    "one_step",
    "one_step_and_limit",
    "one_step_and_limit_factored",
]


def _pair(w: torch.Tensor, support: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(w_a, w_b)`` at the support ``(a, b) = (i*, j*)``, broadcasting the batch shapes."""
    shape = batch_shape(w.shape[:-1], support.shape[:-1])
    w = w.expand(*shape, w.shape[-1])
    picked = w.gather(-1, support.to(w.device, torch.int64).expand(*shape, 2))
    return picked[..., 0], picked[..., 1]


def loss_from_weights(g: torch.Tensor, h: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """Population loss ``L(g, h)`` of the module docstring for weights ``g, h [..., d]``, shape ``[...]``.

    Raises ArgumentTypeError unless ``g``, ``h`` are real floating tensors and ``support`` an
    integer tensor; ValueError unless ``g`` and ``h`` share one length ``d``, dtype and device, and
    ``support [..., 2]`` holds distinct positions ``i* != j*`` in ``[0, d)`` with broadcasting batch
    shapes. Non-finite weights are not refused: they give a non-finite loss (a diverging run).
    """
    support = check_weights_and_support(g, h, support)
    gg, hh, gh = (g * g).sum(-1), (h * h).sum(-1), (g * h).sum(-1)
    diag = (g * g * h * h).sum(-1)
    g_a, g_b = _pair(g, support)
    h_a, h_b = _pair(h, support)
    return 0.5 * (gg * hh + 2 * gh**2 - 2 * diag) - (g_a * h_b + g_b * h_a) + 0.5


def grad_from_weights(
    g: torch.Tensor, h: torch.Tensor, support: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradients of ``L(g, h)`` with respect to the weights:

    ``dL/dg = ||h||^2 g + 2 (g.h) h - 2 g h^2 - (h_b e_a + h_a e_b)`` and the same with
    ``g`` and ``h`` swapped. Raises as :func:`loss_from_weights` does.
    """
    support = check_weights_and_support(g, h, support)
    shape = batch_shape(g.shape[:-1], h.shape[:-1], support.shape[:-1])
    g, h = g.expand(*shape, g.shape[-1]), h.expand(*shape, h.shape[-1])
    support = support.to(g.device, torch.int64).expand(*shape, 2)  # gather takes int64
    gg, hh = (g * g).sum(-1, keepdim=True), (h * h).sum(-1, keepdim=True)
    gh = (g * h).sum(-1, keepdim=True)
    du_g = hh * g + 2 * gh * h - 2 * g * h * h
    du_h = gg * h + 2 * gh * g - 2 * h * g * g
    # The label term -(g_a h_b + g_b h_a) touches only the two support coordinates.
    h_at = h.gather(-1, support.flip(-1))  # (h_b, h_a)
    g_at = g.gather(-1, support.flip(-1))  # (g_b, g_a)
    du_g = du_g.scatter_add(-1, support, -h_at)
    du_h = du_h.scatter_add(-1, support, -g_at)
    return du_g, du_h


def check_model_inputs(V, theta, theta_tilde, support) -> None:
    """Validate embeddings, both queries and the support together (types, shapes, ranges, dtypes,
    finiteness), raising as :func:`population_loss` documents."""
    d, m = check_embeddings(V)
    check_query("theta", theta, m, like=V)
    check_query("theta_tilde", theta_tilde, m, like=V)
    check_support(support, d)
    batch_shape(V.shape[:-2], theta.shape[:-1], theta_tilde.shape[:-1], support.shape[:-1])


def population_loss(
    V: torch.Tensor,
    theta: torch.Tensor,
    theta_tilde: torch.Tensor,
    support: torch.Tensor,
    kind: str = "softmax",
) -> torch.Tensor:
    """Exact ``L = 1/2 E_x[(f(x) - y)^2]`` over ``x`` uniform on ``{+1,-1}^d``, shape ``[...]``.

    Raises ArgumentTypeError unless ``V``, ``theta``, ``theta_tilde`` are real floating tensors,
    ``support`` an integer tensor and ``kind`` a string; ValueError unless ``V [..., d, m]`` has
    ``d >= 2``, the queries are ``[..., m]`` in ``V``'s dtype and device, everything is finite,
    ``support [..., 2]`` holds ``i* != j*`` in ``[0, d)``, the batch shapes broadcast and ``kind``
    is registered.
    """
    check_model_inputs(V, theta, theta_tilde, support)
    phi = attention_kind(kind)
    return loss_from_weights(
        phi.weights(scores(V, theta)), phi.weights(scores(V, theta_tilde)), support
    )


def population_grad(
    V: torch.Tensor,
    theta: torch.Tensor,
    theta_tilde: torch.Tensor,
    support: torch.Tensor,
    kind: str = "softmax",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact gradient ``(dL/dtheta, dL/dtheta~)``, each ``[..., m]``.

    Chain rule through ``s = V theta``: ``dL/dtheta = V^T J_phi(s)^T dL/dg``; for softmax
    ``J^T u = g * u - g <g, u>``. Raises as :func:`population_loss` does.
    """
    check_model_inputs(V, theta, theta_tilde, support)
    return population_grad_unchecked(V, theta, theta_tilde, support, kind)


def population_grad_unchecked(
    V: torch.Tensor,
    theta: torch.Tensor,
    theta_tilde: torch.Tensor,
    support: torch.Tensor,
    kind: str = "softmax",
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`population_grad` without input validation, for loops that check their inputs once
    (and for trajectories allowed to diverge, whose non-finite queries must not raise)."""
    phi = attention_kind(kind)
    s, s_tilde = scores(V, theta), scores(V, theta_tilde)
    g, h = phi.weights(s), phi.weights(s_tilde)
    du_g, du_h = grad_from_weights(g, h, support)
    r, r_tilde = phi.pullback(s, g, du_g), phi.pullback(s_tilde, h, du_h)
    Vt = V.transpose(-1, -2)
    return (Vt @ r.unsqueeze(-1)).squeeze(-1), (Vt @ r_tilde.unsqueeze(-1)).squeeze(-1)


#: Rows per block when a long contraction over ``d`` is split (see :func:`_rows_times`): a block of
#: ``V`` then stays in cache, and MKL's matrix-vector products at ``d ~ 10^6`` run at the copy rate.
_BLOCK_ROWS = 4096


def _rows_times(A: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """``A @ V`` for ``A [..., k, d]`` and ``V [..., d, m]`` (one pass over ``V``), ``[..., k, m]``.

    For long ``d`` the contraction is split into blocks of ``_BLOCK_ROWS`` rows summed afterwards:
    the same products in a different order of summation (so equal to rounding).
    """
    d = V.shape[-2]
    if (
        d < 2 * _BLOCK_ROWS
        or d % _BLOCK_ROWS
        or A.shape[:-2] != V.shape[:-2]
        or not V.is_contiguous()
    ):
        return A @ V
    c = d // _BLOCK_ROWS
    Vb = V.reshape(*V.shape[:-2], c, _BLOCK_ROWS, V.shape[-1])
    Ab = A.reshape(*A.shape[:-1], c, _BLOCK_ROWS).transpose(-3, -2)
    return (Ab @ Vb).sum(-3)


#: Shortest ``d`` at which :func:`_queries_times` and :func:`_times_rows` switch from one batched
#: matrix product to matrix-vector products over blocks of ``_MV_BLOCK`` columns of ``V^T [m, d]``:
#: at these lengths MKL's skinny ``gemm`` streams ``V`` at about a third of the read rate and its
#: ``gemv`` at most of it, and the vectors of one block reuse that block from cache.
_MV_MIN_D = 2**16
_MV_BLOCK = 8192


def _mv_path(Vt: torch.Tensor, A: torch.Tensor) -> bool:
    """Whether ``A [..., k, *]`` times ``Vt [..., m, d]`` takes the blocked matrix-vector path: a
    CPU tensor, ``d >= _MV_MIN_D``, rows of ``Vt`` contiguous, at most 3 dimensions, same batch,
    and no autograd graph to record (the products write into slices of one output)."""
    if torch.is_grad_enabled() and (Vt.requires_grad or A.requires_grad):
        return False
    return (
        Vt.device.type == "cpu"
        and Vt.shape[-1] >= _MV_MIN_D
        and Vt.stride(-1) == 1
        and Vt.dim() in (2, 3)
        and A.dim() == Vt.dim()
        and A.shape[:-2] == Vt.shape[:-2]
    )


def _queries_times(Q: torch.Tensor, Vt: torch.Tensor) -> torch.Tensor:
    """``Q @ Vt`` for queries ``Q [..., k, m]`` and ``Vt = V^T [..., m, d]``: the scores of ``k``
    queries, ``[..., k, d]``, in one pass over ``V`` (see ``_MV_MIN_D``)."""
    if not _mv_path(Vt, Q):
        return Q @ Vt
    if Vt.dim() == 3:
        return torch.stack([_queries_times(q, v) for q, v in zip(Q, Vt)])
    d = Vt.shape[-1]
    out = torch.empty(Q.shape[0], d, dtype=Vt.dtype)
    for c in range(0, d, _MV_BLOCK):
        block = Vt[:, c : c + _MV_BLOCK].T
        for i in range(Q.shape[0]):
            torch.mv(block, Q[i], out=out[i, c : c + _MV_BLOCK])
    return out


def _times_rows(R: torch.Tensor, Vt: torch.Tensor) -> torch.Tensor:
    """``R @ Vt^T`` for rows ``R [..., k, d]`` and ``Vt = V^T [..., m, d]`` (``R V``), ``[..., k, m]``,
    in one pass over ``V``; blocked over ``d``, so the same products summed in another order."""
    if not _mv_path(Vt, R):
        return _rows_times(R, Vt.transpose(-1, -2))
    if Vt.dim() == 3:
        return torch.stack([_times_rows(r, v) for r, v in zip(R, Vt)])
    d = Vt.shape[-1]
    out = torch.zeros(R.shape[0], Vt.shape[0], dtype=Vt.dtype)
    for c in range(0, d, _MV_BLOCK):
        block = Vt[:, c : c + _MV_BLOCK]
        for i in range(R.shape[0]):
            out[i].addmv_(block, R[i, c : c + _MV_BLOCK])
    return out


#: Bytes of ``V`` per block of instances in :func:`one_step`: small enough for the CPU's last-level
#: cache, so that the second and third passes over a block read it from cache, not from memory.
_CACHE_BYTES = 4 * 2**20


def _cache_blocks(V, theta0, support, eta):
    """Split a batch ``V [B, d, m]`` (with ``theta0 [B, m]``, ``support [B, 2]``, ``eta`` scalar or
    ``[B]``) into blocks of at most ``_CACHE_BYTES`` of ``V`` on the CPU; ``None`` when there is
    nothing to gain (one block, a GPU, or broadcast batch shapes)."""
    if (
        V.device.type != "cpu"
        or V.dim() != 3
        or theta0.dim() != 2
        or support.dim() != 2
        or eta.dim() > 1
    ):
        return None
    B = V.shape[0]
    if B == 0 or V[0].numel() == 0:
        return None
    if theta0.shape[0] != B or support.shape[0] != B or (eta.dim() == 1 and eta.shape[0] != B):
        return None
    per = max(1, _CACHE_BYTES // (V[0].numel() * V.element_size()))
    if per >= B:
        return None
    if per == 1:  # one instance per block: plain matrix products, no batched kernels
        return [(V[i], theta0[i], support[i], eta[i] if eta.dim() == 1 else eta) for i in range(B)]
    return [
        (
            V[i : i + per],
            theta0[i : i + per],
            support[i : i + per],
            eta[i : i + per] if eta.dim() == 1 else eta,
        )
        for i in range(0, B, per)
    ]


def _one_step(
    Vt,
    theta0,
    support,
    eta,
    kind: str,
    *,
    scale=None,
    check_rows: bool = False,
    limit: bool = False,
):
    """One step from ``(theta0, -theta0)`` in three passes over ``Vt = V^T [..., m, d]``.

    Pass 1: the scores ``s = V theta0`` (head 2's are ``-s``); with ``check_rows`` a non-finite
    score flags a non-finite ``V`` at no extra pass (plus the row sums of ``V`` when ``theta0`` has
    a zero entry, which a BLAS may skip). For softmax the elementwise work between the passes is
    fused over the stacked heads (:func:`_softmax_pullback_rows`, :func:`_loss_rows`). Pass 2: both heads' gradients ``V^T [r, r~]`` in one product. Pass 3: both heads'
    new scores ``V [theta1, theta1~]`` (and ``V [-grad, -grad~]`` for the argmax limit). With
    ``scale [..., d]`` the embeddings are ``V = diag(scale) Vt^T`` (rows normalised on the fly).
    """
    phi = attention_kind(kind)
    theta0 = theta0.to(Vt.dtype)
    # A non-finite entry of V makes its score non-finite (inf * 0 = nan) unless BLAS skips a zero
    # query coordinate, so a row of ones joins the scores only when theta0 has a zero entry.
    ones = check_rows and bool((theta0 == 0).any())
    rows = torch.stack([theta0, torch.ones_like(theta0)], -2) if ones else theta0.unsqueeze(-2)
    first = _queries_times(rows, Vt)  # [..., 1 or 2, d]
    if check_rows and not bool(torch.isfinite(first[..., -1, :]).all()):
        check_finite("V", Vt)  # names the problem; passes only if a finite score overflowed
    s = first[..., 0, :] if scale is None else first[..., 0, :] * scale
    if kind == "softmax":
        r = _softmax_pullback_rows(s, support)
    else:
        g, h = phi.weights(s), phi.weights(-s)
        du_g, du_h = grad_from_weights(g, h, support)
        r = torch.stack([phi.pullback(s, g, du_g), phi.pullback(-s, h, du_h)], -2)  # [..., 2, d]
    if scale is not None:
        r = r * scale.unsqueeze(-2)
    grads = _times_rows(r, Vt)  # [..., 2, m]
    step = eta.unsqueeze(-1).unsqueeze(-1)
    new = torch.stack([theta0, -theta0], -2) - step * grads  # [..., 2, m]
    queries = torch.cat([new, -grads], -2) if limit else new
    new_scores = _queries_times(queries, Vt)  # [..., 2 or 4, d]
    if scale is not None:
        new_scores = new_scores * scale.unsqueeze(-2)
    weights = phi.weights(new_scores[..., :2, :])
    g1, h1 = weights[..., 0, :], weights[..., 1, :]
    loss = _loss_rows(weights, support) if kind == "softmax" else loss_from_weights(g1, h1, support)
    result = OneStepResult(new[..., 0, :], new[..., 1, :], loss, g1, h1)
    if not limit:
        return result
    heads = new_scores[..., 2:, :].argmax(-1)
    return StepAndLimit(result, heads[..., 0], heads[..., 1])


def one_step(
    V: torch.Tensor,
    theta0: torch.Tensor,
    support: torch.Tensor,
    eta: float | torch.Tensor,
    kind: str = "softmax",
) -> OneStepResult:
    """One population gradient step of size ``eta`` from ``(theta0, -theta0)``:

    ``theta1 = theta0 - eta dL/dtheta``, ``theta1~ = -theta0 - eta dL/dtheta~``.
    Finite for ``eta`` up to ``1e12`` because softmax is evaluated with log-sum-exp. Three passes
    over ``V`` as torch operations (the scores, both gradients in one product, both new scores in
    one product), two or three in the CPU kernel (:mod:`sxor.xor.native`); the input checks cost
    no further pass.

    Raises as :func:`population_loss` does (with ``theta_tilde = -theta0``), and
    ArgumentTypeError unless ``eta`` is a real number or tensor (not complex, bool or str);
    ValueError unless ``eta`` is finite, ``>= 0`` and broadcasts against the batch shape.
    """
    eta = check_step_inputs(V, theta0, support, eta)
    out = _native_or_none(V, theta0, support, eta, kind, check_rows=True, limit=False)
    if out is not None:
        return out
    parts = _cache_blocks(V, theta0, support, eta)
    if parts is None:
        return _one_step(V.transpose(-1, -2), theta0, support, eta, kind, check_rows=True)
    outs = [_one_step(v.transpose(-1, -2), t, s, e, kind, check_rows=True) for v, t, s, e in parts]
    join = torch.stack if parts[0][0].dim() == 2 else torch.cat
    return OneStepResult(*(join(field) for field in zip(*outs)))


def one_step_and_limit(
    V: torch.Tensor,
    theta0: torch.Tensor,
    support: torch.Tensor,
    eta: float | torch.Tensor,
    kind: str = "softmax",
    *,
    check: bool = True,
) -> StepAndLimit:
    """:func:`one_step` and, from the same reads of ``V``, where each head sits in the
    ``eta -> infinity`` limit (:func:`sxor.xor.analysis.argmax_limit`).

    ``check=False`` skips the input checks, for sweeps whose instances are drawn by the package.
    """
    eta = (
        check_step_inputs(V, theta0, support, eta)
        if check
        else torch.as_tensor(eta, dtype=V.dtype, device=V.device)
    )
    out = _native_or_none(V, theta0, support, eta, kind, check_rows=check, limit=True)
    if out is not None:
        return out
    return _one_step(V.transpose(-1, -2), theta0, support, eta, kind, check_rows=check, limit=True)


def one_step_and_limit_factored(
    Z: torch.Tensor,
    scale: torch.Tensor,
    theta0: torch.Tensor,
    support: torch.Tensor,
    eta: float | torch.Tensor,
    kind: str = "softmax",
) -> StepAndLimit:
    """:func:`one_step_and_limit` for embeddings given as ``V = diag(scale) Z^T`` with
    ``Z [..., m, d]`` and ``scale [..., d]`` (:class:`sxor.xor.sweeps.ScaledInstances`), without
    input checks: the sweeps draw these instances themselves and never materialise ``V``. With
    ``scale=None``, ``V = Z^T``."""
    eta = torch.as_tensor(eta, dtype=Z.dtype, device=Z.device)
    strided = Z.layout == torch.strided
    out = (
        None
        if not strided
        else _native_step(
            Z,
            Z.stride(-1),
            Z.stride(-2),
            theta0,
            support,
            eta,
            kind,
            scale=scale,
            check_rows=False,
            limit=True,
            transposed=True,
        )
    )
    if not strided:
        _set_path("torch", f"layout {Z.layout} (the kernel reads dense strided memory)")
    if out is not None:
        return out
    return _one_step(Z, theta0, support, eta, kind, scale=scale, limit=True)
