"""Which implementation a one-step call of :mod:`sxor.xor.population` takes, and what it returns.

The result types of :func:`~sxor.xor.population.one_step` and
:func:`~sxor.xor.population.one_step_and_limit`, the entry into the C kernel of
:mod:`sxor.xor.native` (its conditions, checked before every call, and the call itself) and the
record of the path the last call took (:func:`last_path`). Everything here is re-exported by
:mod:`sxor.xor.population` and documented there.
"""

from __future__ import annotations

from typing import NamedTuple

import torch


class OneStepResult(NamedTuple):
    """State after one population gradient step from the antisymmetric init ``(theta0, -theta0)``."""

    theta: torch.Tensor  #: query of the first head after the step, ``[..., m]``
    theta_tilde: torch.Tensor  #: query of the second head after the step, ``[..., m]``
    loss: torch.Tensor  #: population loss after the step, ``[...]``
    attention: torch.Tensor  #: weights of the first head after the step, ``[..., d]``
    attention_tilde: torch.Tensor  #: weights of the second head after the step, ``[..., d]``


class StepAndLimit(NamedTuple):
    """:func:`one_step_and_limit`: one step of size ``eta`` and its ``eta -> infinity`` limit."""

    step: OneStepResult  #: the step of size ``eta``
    head: (
        torch.Tensor
    )  #: ``argmax_i <v_i, -dL/dtheta>``, where head 1 sits as ``eta -> infinity``, ``[...]``
    head_tilde: torch.Tensor  #: ``argmax_i <v_i, -dL/dtheta~>``, ``[...]``


class StepPath(NamedTuple):
    """Which implementation the last one-step call took (:func:`last_path`)."""

    path: str  #: ``"native"`` (the C kernel of :mod:`sxor.xor.native`) or ``"torch"``
    reason: str  #: why it took that path (the kernel's conditions, or the first one that failed)


class _PathRecord:
    """Where :func:`_set_path` keeps the last path (module state, set without a global statement)."""

    last = StepPath("none", "no one-step call yet")


def last_path() -> StepPath:
    """The implementation the last call of :func:`one_step`, :func:`one_step_and_limit` or
    :func:`one_step_and_limit_factored` in this process took, and why."""
    return _PathRecord.last


def _set_path(path: str, reason: str) -> None:
    _PathRecord.last = StepPath(path, reason)


#: The least bytes of ``V`` the form of the native kernel is measured on, where the call has them
#: (more than the caches hold, so that the timed calls read ``V`` from memory, as the call does).
PROBE_BYTES = 32 << 20


def _native_step(
    X,
    sd: int,
    sm: int,
    theta0,
    support,
    eta,
    kind: str,
    *,
    scale=None,
    check_rows: bool,
    limit: bool,
    transposed: bool = False,
):
    """One step through the native kernel, or ``None`` (with the reason recorded) when it does not
    apply. ``X`` holds the embeddings of a batch ``[B, ...]`` or one instance, with entry ``(i, j)``
    of ``V`` (row ``i < d``, column ``j < m``) at element offset ``i * sd + j * sm`` of each instance
    (times ``scale [.., d]`` when given); one of ``sd``, ``sm`` must be 1. ``transposed``: ``X`` is
    ``V^T [..., m, d]`` (the factored step's ``Z``, with or without ``scale``)."""
    from . import native

    reason = None
    if kind != "softmax":
        reason = f"kind {kind!r} (the kernel is written for softmax heads)"
    elif X.device.type != "cpu":
        reason = f"device {X.device.type} (the kernel runs on the CPU)"
    elif X.dtype not in (torch.float32, torch.float64):
        reason = f"dtype {X.dtype}"
    elif X.layout != torch.strided:
        reason = f"layout {X.layout} (the kernel reads dense strided memory)"
    elif X.is_neg() or X.is_conj():
        reason = "embeddings with a lazy negation (the kernel reads the stored values)"
    elif torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (X, theta0, eta, scale)
    ):
        reason = "an autograd graph is being recorded"
    elif X.dim() not in (2, 3):
        reason = f"{X.dim() - 2} batch dimensions (the kernel takes at most one)"
    elif 1 not in (sd, sm):
        reason = "embeddings strided along both d and m"
    lib = native.library() if reason is None else None
    if lib is None:
        # with no reason of its own, the kernel is unavailable and native.py says why (a string
        # whenever library() returns None)
        _set_path("torch", reason if reason is not None else str(native.unavailable_reason()))
        return None
    single = X.dim() == 2
    Xb = X.unsqueeze(0) if single else X
    B = Xb.shape[0]
    d, m = (Xb.shape[-1], Xb.shape[-2]) if transposed else (Xb.shape[-2], Xb.shape[-1])
    dtype = X.dtype
    if single and (
        theta0.dim() > 1
        or support.dim() > 1
        or eta.dim() > 0
        or (scale is not None and scale.dim() > 1)
    ):
        th = None
    else:
        try:
            # resolve_neg: a lazily negated view (torch._neg_view) stores the un-negated values
            th = theta0.to(dtype).expand(B, m).resolve_neg().contiguous()
            sup = support.to(torch.int64).expand(B, 2).resolve_neg().contiguous()
            et = eta.to(dtype).expand(B).resolve_neg().contiguous()
            sc = None if scale is None else scale.to(dtype).expand(B, d).resolve_neg().contiguous()
        except RuntimeError:
            th = None
    if th is None:
        _set_path("torch", "the queries, support or eta carry batch dimensions that V does not")
        return None
    # The kernel indexes the weights at the support and reads m query coordinates per instance:
    # anything the unchecked entry points let through that would read or write out of bounds (or
    # that the torch path broadcasts differently, or refuses) goes to the torch path.
    if (
        theta0.dim() == 0
        or theta0.shape[-1] != m
        or support.dim() == 0
        or support.shape[-1] != 2
        or (scale is not None and (scale.dim() == 0 or scale.shape[-1] not in (1, d)))
    ):
        reason = "the queries, support or scale do not match the embeddings' d and m"
    elif support.is_floating_point() or support.is_complex() or support.dtype == torch.bool:
        reason = f"support of dtype {support.dtype} (the kernel takes integer positions)"
    elif B and bool(((sup < 0) | (sup >= d)).any() or (sup[:, 0] == sup[:, 1]).any()):
        reason = "a support position outside [0, d) or with i* == j*"
    elif any(t.data_ptr() % t.element_size() for t in (Xb, th, et) + (() if sc is None else (sc,))):
        reason = "embeddings, queries or scale not aligned to their element size"
    if reason is not None:
        _set_path("torch", reason)
        return None
    theta1, theta1t = torch.empty(B, m, dtype=dtype), torch.empty(B, m, dtype=dtype)
    loss, g1, h1 = (
        torch.empty(B, dtype=dtype),
        torch.empty(B, d, dtype=dtype),
        torch.empty(B, d, dtype=dtype),
    )
    head, headt, bad = (torch.empty(B, dtype=torch.int64) for _ in range(3))
    fn = lib.sxor_one_step_f64 if dtype == torch.float64 else lib.sxor_one_step_f32
    # as the kernel caps them (MAX_THREADS), and fewer where other processes hold the cores
    threads, fewer = native.threads_for(max(1, min(torch.get_num_threads(), B, 256)))

    def call(count: int, fused: bool) -> int:
        """The kernel on the first ``count`` instances, in one form."""
        return fn(
            count,
            d,
            m,
            Xb.data_ptr(),
            Xb.stride(0) if B > 1 else 0,
            sd,
            sm,
            None if sc is None else sc.data_ptr(),
            d,
            th.data_ptr(),
            m,
            sup.data_ptr(),
            2,
            et.data_ptr(),
            1,
            int(limit),
            int(check_rows),
            int(fused),
            threads,
            theta1.data_ptr(),
            theta1t.data_ptr(),
            loss.data_ptr(),
            g1.data_ptr(),
            h1.data_ptr(),
            head.data_ptr(),
            headt.data_ptr(),
            bad.data_ptr(),
        )

    # which form: forced, planned earlier, or measured now (the outputs it writes are written again
    # below) on as many instances as threads, and at least PROBE_BYTES of V where the call has them:
    # instances small enough to stay in the cache between timed calls would time the arithmetic
    # alone, where the call itself reads V from memory
    per_instance = max(1, d * m * X.element_size())
    probe = max(1, min(B, max(threads, -(-PROBE_BYTES // per_instance))))
    layout = "[m, d]" if sd == 1 else "[d, m]"
    plan = (
        native.plan_form(d, m, X.element_size(), layout, threads, probe, lambda f: call(probe, f))
        if B
        else None
    )
    fused = plan is not None and plan.fused
    nbad = call(B, fused)
    if nbad < 0:
        raise MemoryError("the native one-step kernel could not allocate its workspace")
    if nbad > 0 and check_rows:
        _set_path("torch", "a score of the first pass was not finite (the torch path checks V)")
        return None
    # bad == 2: the instance's fused first pass would have cancelled badly, so the kernel redid it
    # in three reads of V (a head saturated on a support position); said, not hidden
    redone = int((bad == 2).sum()) if fused and B else 0
    form = (
        "three reads of V"
        if not fused
        else (
            f"two reads of V, {redone} of {B} instances in three (cancellation)"
            if redone
            else "two reads of V"
        )
    )
    _set_path(
        "native",
        f"C kernel, {threads} threads ({'OpenMP' if lib.sxor_openmp() else 'POSIX'})"
        f"{f' ({fewer})' if fewer else ''}, {layout} layout, {dtype}, {form}"
        f"{f'; {plan.describe()}' if plan else ''}",
    )
    if single:
        theta1, theta1t, loss, g1, h1, head, headt = (
            t[0] for t in (theta1, theta1t, loss, g1, h1, head, headt)
        )
    result = OneStepResult(theta1, theta1t, loss, g1, h1)
    return StepAndLimit(result, head, headt) if limit else result


def _native_or_none(V, theta0, support, eta, kind, *, check_rows, limit):
    """:func:`_native_step` for embeddings ``V [..., d, m]`` in any layout."""
    if V.layout != torch.strided:
        _set_path("torch", f"layout {V.layout} (the kernel reads dense strided memory)")
        return None
    return _native_step(
        V,
        V.stride(-2),
        V.stride(-1),
        theta0,
        support,
        eta,
        kind,
        check_rows=check_rows,
        limit=limit,
    )
