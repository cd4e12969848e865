"""Batched sweeps over random instances, streamed in chunks so memory stays bounded.

An *instance* is one draw of the randomness of Part I: embeddings ``V [d, m]`` on the sphere,
an initial query ``theta0`` on the sphere, and a support ``(i*, j*)``. Instance ``k`` of a sweep
is drawn from its own generator seeded with ``seed + k``, so it is the same instance whatever
the chunk size (on a given device type).

For a grid of embedding dimensions, :func:`sweep_m` draws each instance once with ``m_max``
columns (:func:`nested_instances`) and measures it at every ``m`` from its first ``m`` columns,
rows normalised (:func:`at_m`): rows are uniform on ``S^(m-1)`` for each ``m``, and the instances
of different ``m`` share their randomness.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from typing import NamedTuple

import torch

from ..progress import progress
from .checks import check_dims
from .data import random_support, sphere_embeddings


class Instances(NamedTuple):
    """A batch of random instances: ``V [S, d, m]``, ``theta0 [S, m]``, ``support [S, 2]``.

    :func:`random_instances` stores ``V`` as ``[S, m, d]`` and returns its transposed view, so
    ``V.transpose(-1, -2)`` is contiguous (the layout the one-step kernels read fastest)."""

    V: torch.Tensor
    theta0: torch.Tensor
    support: torch.Tensor


def random_instances(
    num: int,
    d: int,
    m: int,
    *,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> Instances:
    """Instances ``seed, seed + 1, ..., seed + num - 1``, stacked along a leading axis."""
    check_dims(d, m)
    device = torch.device(device) if device is not None else torch.device("cpu")
    # Stored [num, m, d] (contiguous along d, where the one-step kernels stream fastest) and
    # returned as the transposed view [num, d, m]: the same numbers as a contiguous draw.
    V = torch.empty(num, m, d, dtype=dtype, device=device).transpose(-1, -2)
    theta0 = torch.empty(num, m, dtype=dtype, device=device)
    support = torch.empty(num, 2, dtype=torch.long, device=device)
    gen = torch.Generator(device=device)
    for k in range(num):
        gen.manual_seed(seed + k)
        V[k] = sphere_embeddings(d, m, generator=gen, dtype=dtype, device=device)
        theta0[k] = sphere_embeddings(2, m, generator=gen, dtype=dtype, device=device)[0]
        support[k] = random_support(d, generator=gen, device=device)
    return Instances(V, theta0, support)


def chunk_size(
    d: int, m: int, *, dtype: torch.dtype = torch.float64, budget_bytes: float = 2e9
) -> int:
    """How many instances fit in ``budget_bytes``: ``V`` dominates, and one step holds about four
    ``[d, m]``-sized temporaries per instance (V, its transpose product, the generator draws)."""
    per_instance = 4 * d * m * torch.finfo(dtype).bits // 8
    return max(1, int(budget_bytes // per_instance))


def chunks(num: int, size: int) -> Iterator[range]:
    """Consecutive ranges of at most ``size`` covering ``0 .. num - 1``."""
    for start in range(0, num, size):
        yield range(start, min(num, start + size))


def sweep(
    measure: Callable[[Instances], dict[str, torch.Tensor]],
    num_seeds: int,
    d: int,
    m: int,
    *,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    budget_bytes: float = 2e9,
    desc: str | None = None,
) -> dict[str, torch.Tensor]:
    """Apply ``measure`` to ``num_seeds`` instances, chunk by chunk, and concatenate on the CPU.

    ``measure`` maps a batch of instances to a dict of per-instance tensors ``[S, ...]``. Peak
    memory is one chunk and the results, whatever ``num_seeds``. A tqdm bar shows progress (``TQDM_DISABLE=1``
    silences it, as CI does).
    """
    size = chunk_size(d, m, dtype=dtype, budget_bytes=budget_bytes)
    results: dict[str, torch.Tensor] = {}
    total = math.ceil(num_seeds / size)
    for block in progress(chunks(num_seeds, size), total=total, desc=desc or f"d={d}, m={m}"):
        batch = random_instances(
            len(block), d, m, seed=seed + block.start, dtype=dtype, device=device
        )
        _store(results, measure(batch), block, num_seeds)
        del batch
    return results


def _store(
    results: dict[str, torch.Tensor], values: dict[str, torch.Tensor], block: range, num: int
) -> None:
    """Copy one chunk's per-instance ``values`` into rows ``block`` of ``results`` (CPU tensors of
    ``num`` rows, allocated at the first chunk): nothing a later chunk allocates outlives it, so
    the allocator reuses the same memory for every chunk and the peak does not creep up with the
    number of chunks."""
    for key, value in values.items():
        dest = results.get(key)
        if dest is None:
            dest = results[key] = torch.empty(num, *value.shape[1:], dtype=value.dtype)
        dest[block.start : block.stop].copy_(value.detach())


class NestedInstances(NamedTuple):
    """Instances drawn once for a whole grid of embedding dimensions ``m <= m_max``.

    ``Z [S, m_max, d]`` holds the Gaussian matrix of each instance, stored transposed (column
    ``j`` of the ``d x m_max`` matrix is row ``j`` here, so the first ``m`` columns are a contiguous
    block); ``z_theta [S, m_max]`` the Gaussian vector of ``theta0``; ``support [S, 2]``. At each
    ``m`` the embeddings are the first ``m`` columns with every row normalised (:func:`at_m`), so
    the rows are uniform on ``S^(m-1)`` for every ``m``, and the instances of different ``m`` share
    their randomness.
    """

    Z: torch.Tensor
    z_theta: torch.Tensor
    support: torch.Tensor


class ScaledInstances(NamedTuple):
    """The instances of :class:`NestedInstances` at one ``m``, in factored form:
    ``V = diag(scale) Z^T`` with ``Z [S, m, d]`` the first ``m`` rows and ``scale [S, d]`` the
    inverse row norms; ``theta0 [S, m]`` is on the sphere, ``support [S, 2]``."""

    Z: torch.Tensor
    scale: torch.Tensor
    theta0: torch.Tensor
    support: torch.Tensor

    def dense(self) -> Instances:
        """The same instances with ``V [S, d, m]`` materialised (for checks and small sizes)."""
        return Instances(
            self.Z.transpose(-1, -2) * self.scale.unsqueeze(-1), self.theta0, self.support
        )


def nested_instances(
    num: int,
    d: int,
    m_max: int,
    *,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> NestedInstances:
    """Instances ``seed, ..., seed + num - 1`` for every ``m <= m_max`` at once: instance ``k``
    draws, from a generator seeded with ``seed + k``, a ``d x m_max`` Gaussian matrix, a Gaussian
    ``m_max``-vector and a support. The instance depends on ``m_max`` (keep it fixed to compare runs)."""
    check_dims(d, m_max)
    device = torch.device(device) if device is not None else torch.device("cpu")
    Z = torch.empty(num, m_max, d, dtype=dtype, device=device)
    z_theta = torch.empty(num, m_max, dtype=dtype, device=device)
    support = torch.empty(num, 2, dtype=torch.long, device=device)

    def draw(ks: range) -> None:
        gen = torch.Generator(device=device)
        for k in ks:
            gen.manual_seed(seed + k)
            torch.randn(m_max, d, generator=gen, dtype=dtype, device=device, out=Z[k])
            torch.randn(m_max, generator=gen, dtype=dtype, device=device, out=z_theta[k])
            support[k] = random_support(d, generator=gen, device=device)

    # Each instance has its own generator, so instances can be drawn on several threads at once
    # (torch releases the GIL while it draws) with the same numbers: on the CPU, when the draws
    # are large enough to be worth a thread, one contiguous range of instances per torch thread.
    threads = (
        min(torch.get_num_threads(), num) if device.type == "cpu" and m_max * d >= 2**16 else 1
    )
    if threads <= 1:
        draw(range(num))
    else:
        from concurrent.futures import ThreadPoolExecutor

        bounds = [num * t // threads for t in range(threads + 1)]
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(draw, [range(a, b) for a, b in itertools.pairwise(bounds)]))
    return NestedInstances(Z, z_theta, support)


def _accumulate_sq_norms(Z: torch.Tensor, acc: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """Add the squares of rows ``start .. stop - 1`` of ``Z [S, m_max, d]`` to ``acc [S, d]`` one row
    at a time, in place: the same order of summation whichever ``m`` are asked for, so a row norm
    at ``m`` is bit-identical across grids."""
    for j in range(start, stop):
        acc.addcmul_(Z[:, j], Z[:, j])
    return acc


def at_m(
    nested: NestedInstances, m: int, *, sq_norms: torch.Tensor | None = None
) -> ScaledInstances:
    """The instances at embedding dimension ``m``: the first ``m`` columns, rows normalised.
    ``sq_norms`` (the rows' squared norms over the first ``m`` columns, ``[S, d]``, summed by
    ``_accumulate_sq_norms``) may be passed when the caller accumulates them over increasing ``m``."""
    m_max = nested.Z.shape[-2]
    if not 1 <= m <= m_max:
        raise ValueError(f"m must lie in 1..m_max = 1..{m_max}, got m={m}")
    Z = nested.Z[:, :m]
    if sq_norms is None:
        sq_norms = _accumulate_sq_norms(nested.Z, torch.zeros_like(nested.Z[:, 0]), 0, m)
    z = nested.z_theta[:, :m]
    return ScaledInstances(Z, sq_norms.rsqrt(), z / z.norm(dim=-1, keepdim=True), nested.support)


def sweep_m(
    measure: Callable[[ScaledInstances], dict[str, torch.Tensor]],
    num_seeds: int,
    d: int,
    ms: list[int],
    *,
    m_max: int | None = None,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    budget_bytes: float = 1e9,
    desc: str | None = None,
) -> dict[int, dict[str, torch.Tensor]]:
    """Apply ``measure`` to ``num_seeds`` nested instances (:func:`nested_instances`) at every
    ``m`` in ``ms``: ``{m: {key: [num_seeds, ...]}}``, concatenated on the CPU.

    Each chunk of instances is drawn once, with ``m_max`` columns (default ``max(ms)``), and
    measured at every ``m``; chunks hold about ``budget_bytes``, so peak memory does not grow
    with ``num_seeds``.
    """
    ms = sorted(int(m) for m in ms)
    m_max = ms[-1] if m_max is None else int(m_max)
    check_dims(d, m_max)
    if not ms or ms[0] < 1 or ms[-1] > m_max:
        raise ValueError(f"every m must lie in 1..m_max = 1..{m_max}, got {ms}")
    # Z dominates; the measure's temporaries (scores, weights, one-hot heads) about double it.
    size = max(1, int(budget_bytes // (2 * d * m_max * torch.finfo(dtype).bits // 8)))
    results: dict[int, dict[str, torch.Tensor]] = {m: {} for m in ms}
    total = math.ceil(num_seeds / size)
    for block in progress(
        chunks(num_seeds, size), total=total, desc=desc or f"d={d}, m={ms[0]}..{ms[-1]}"
    ):
        nested = nested_instances(
            len(block), d, m_max, seed=seed + block.start, dtype=dtype, device=device
        )
        sq_norms, done = torch.zeros(len(block), d, dtype=dtype, device=nested.Z.device), 0
        for m in ms:
            _accumulate_sq_norms(nested.Z, sq_norms, done, m)
            done = m
            _store(results[m], measure(at_m(nested, m, sq_norms=sq_norms)), block, num_seeds)
        del nested, sq_norms
    return results
