"""Batched sweeps over random instances, streamed in chunks so memory stays bounded.

An *instance* is one draw of the randomness of Part I: embeddings ``V [d, m]`` on the sphere,
an initial query ``theta0`` on the sphere, and a support ``(i*, j*)``. Instance ``k`` of a sweep
is drawn from its own generator seeded with ``seed + k``, so it is the same instance whatever
the chunk size (on a given device type).
"""

from __future__ import annotations

import math
from typing import Callable, Iterator, NamedTuple

import torch
from ..progress import progress

from .checks import check_dims
from .data import random_support, sphere_embeddings


class Instances(NamedTuple):
    """A batch of random instances: ``V [S, d, m]``, ``theta0 [S, m]``, ``support [S, 2]``."""

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
    V = torch.empty(num, d, m, dtype=dtype, device=device)
    theta0 = torch.empty(num, m, dtype=dtype, device=device)
    support = torch.empty(num, 2, dtype=torch.long, device=device)
    gen = torch.Generator(device=device)
    for k in range(num):
        gen.manual_seed(seed + k)
        V[k] = sphere_embeddings(d, m, generator=gen, dtype=dtype, device=device)
        theta0[k] = sphere_embeddings(2, m, generator=gen, dtype=dtype, device=device)[0]
        support[k] = random_support(d, generator=gen, device=device)
    return Instances(V, theta0, support)


def chunk_size(d: int, m: int, *, dtype: torch.dtype = torch.float64, budget_bytes: float = 2e9) -> int:
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
    memory is one chunk, whatever ``num_seeds``. A tqdm bar shows progress (``TQDM_DISABLE=1``
    silences it, as CI does).
    """
    size = chunk_size(d, m, dtype=dtype, budget_bytes=budget_bytes)
    parts: dict[str, list[torch.Tensor]] = {}
    total = math.ceil(num_seeds / size)
    for block in progress(chunks(num_seeds, size), total=total, desc=desc or f"d={d}, m={m}"):
        batch = random_instances(len(block), d, m, seed=seed + block.start, dtype=dtype, device=device)
        for key, value in measure(batch).items():
            parts.setdefault(key, []).append(value.detach().cpu())
    return {key: torch.cat(values) for key, values in parts.items()}
