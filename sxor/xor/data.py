r"""The sparse XOR task and the frozen positional embeddings.

The task: :math:`x` uniform on the hypercube :math:`\{+1, -1\}^d` and label
:math:`y = -x_{i^*} x_{j^*}` for an unknown support :math:`S = \{i^*, j^*\}`. The embeddings
:math:`v_1, \dots, v_d` are i.i.d. uniform on the sphere :math:`S^{m-1}`.
"""

from __future__ import annotations

import torch

from .checks import (
    as_support,
    batch_shape,
    check_batch,
    check_device,
    check_dims,
    check_dtype,
    check_generator,
    check_int,
    check_memory,
    check_signs,
    check_support,
    check_tensor,
)


def sphere_embeddings(
    d: int,
    m: int,
    *,
    batch: tuple[int, ...] = (),
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    r"""Positional embeddings ``V [*batch, d, m]`` with rows i.i.d. uniform on :math:`S^{m-1}`.

    A standard Gaussian vector divided by its norm is uniform on the sphere (rotation
    invariance), so :math:`v_i = z_i / \lVert z_i \rVert` with :math:`z_i \sim N(0, I_m)`.

    Parameters
    ----------
    d
        Number of positions (rows of ``V``), at least 2.
    m
        Embedding dimension (columns of ``V``), at least 1.
    batch
        Leading batch shape: one independent embedding matrix per batch entry.
    generator
        Random generator to draw from (the global one if ``None``).
    dtype
        Real floating dtype of the result.
    device
        Device of the result.

    Raises
    ------
    ArgumentTypeError
        (a TypeError and ValueError) unless ``d``, ``m`` are integers, ``batch`` a tuple of
        integers and ``dtype`` a real floating dtype (complex is refused).
    ValueError
        unless ``d >= 2``, ``m >= 1`` and every batch size ``>= 0``; for a ``device`` that does
        not exist or is not available (the message lists the available ones); and for a result
        above :data:`sxor.xor.checks.MAX_BYTES` (16 GiB), estimated before allocating.
    """
    check_dims(d, m)
    batch = check_batch(batch)
    check_dtype("dtype", dtype)
    check_generator(generator)
    device = check_device("device", device)
    check_memory("sphere_embeddings(d, m, batch)", (*batch, d, m), dtype, device)
    z = torch.randn(*batch, d, m, generator=generator, dtype=dtype, device=device)
    return z / z.norm(dim=-1, keepdim=True)


def random_support(
    d: int,
    *,
    batch: tuple[int, ...] = (),
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    r"""A uniformly random ordered pair :math:`(i^*, j^*)` of distinct positions, shape ``[*batch, 2]``.

    Parameters
    ----------
    d
        Number of positions; both entries lie in ``[0, d)``.
    batch
        Leading batch shape: one independent pair per batch entry.
    generator
        Random generator to draw from (the global one if ``None``).
    device
        Device of the result.

    Raises
    ------
    ArgumentTypeError
        unless ``d`` is an integer and ``batch`` a tuple of integers.
    ValueError
        unless ``d >= 2``; for an unavailable ``device``; and for a result above
        :data:`sxor.xor.checks.MAX_BYTES`, estimated before allocating.
    """
    check_dims(d)
    batch = check_batch(batch)
    check_generator(generator)
    device = check_device("device", device)
    check_memory("random_support(d, batch)", (*batch, 2), torch.int64, device)
    first = torch.randint(0, d, (*batch,), generator=generator, device=device)
    # j* is uniform over the d - 1 positions other than i*.
    offset = torch.randint(1, d, (*batch,), generator=generator, device=device)
    return torch.stack([first, (first + offset) % d], dim=-1)


def sample_sparse_xor(
    n: int,
    d: int,
    support: torch.Tensor | tuple[int, int],
    *,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``n`` samples ``x [n, d]`` uniform on :math:`\{+1,-1\}^d` with labels :math:`y = -x_{i^*} x_{j^*}`.

    Parameters
    ----------
    n
        Number of samples, at least 1.
    d
        Input dimension, at least 2.
    support
        The pair :math:`(i^*, j^*)` of distinct positions, a tensor of shape ``(2,)`` or a tuple.
    generator
        Random generator to draw from (the global one if ``None``).
    dtype
        Dtype of ``x`` and ``y``: real floating or signed integer.
    device
        Device of the result.

    Returns
    -------
    tuple
        ``(x, y)`` with ``x [n, d]`` and ``y [n]``.

    Raises
    ------
    ArgumentTypeError
        unless ``n``, ``d`` are integers, ``support`` integer and ``dtype`` a real floating or
        signed integer dtype (bool and unsigned cannot hold ``-1``).
    ValueError
        unless ``n >= 1``, ``d >= 2`` and ``support`` is one pair of distinct positions in ``[0, d)``;
        for an unavailable ``device``; and for samples above :data:`sxor.xor.checks.MAX_BYTES`,
        estimated before allocating.
    """
    check_dims(d)
    check_int("n", n, 1)
    check_dtype("dtype", dtype, integer=True)
    check_generator(generator)
    device = check_device("device", device)
    check_memory("sample_sparse_xor(n, d)", (n, d), torch.int64, device)
    support = as_support(support, device)
    check_support(support, d)
    if support.shape != (2,):
        raise ValueError(
            f"sample_sparse_xor takes one support of shape (2,), got {tuple(support.shape)}"
        )
    bits = torch.randint(0, 2, (n, d), generator=generator, device=device)
    x = (1 - 2 * bits).to(dtype)
    return x, sparse_xor_labels(x, support)


def sparse_xor_labels(x: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    r"""Labels :math:`y = -x_{i^*} x_{j^*}` for inputs ``x [..., n, d]`` and ``support [..., 2]``, shape ``[..., n]``.

    Parameters
    ----------
    x
        Inputs ``[..., n, d]`` with entries :math:`\pm 1`.
    support
        Pairs :math:`(i^*, j^*)` of distinct positions, ``[..., 2]`` (or one pair of ints); its
        batch shape broadcasts against that of ``x``.

    Raises
    ------
    ArgumentTypeError
        unless ``x`` is a tensor and ``support`` an integer tensor (or a pair of ints).
    ValueError
        unless ``x`` has at least 2 dimensions and entries :math:`\pm 1` only (0, 0.5, NaN and
        infinities are refused), ``support`` is pairs of distinct positions in ``[0, d)`` and the
        batch shapes broadcast.
    """
    check_tensor("x", x, 2)
    check_dtype("x", x.dtype, integer=True)
    check_signs("x", x)
    support = as_support(support, x.device)
    check_support(support, x.shape[-1])
    batch = batch_shape(x.shape[:-2], support.shape[:-1])
    n, d = x.shape[-2:]
    pair = x.expand(*batch, n, d).gather(-1, support.long().unsqueeze(-2).expand(*batch, n, 2))
    return -pair[..., 0] * pair[..., 1]


def all_inputs(
    d: int, *, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None
) -> torch.Tensor:
    r"""All :math:`2^d` points of the hypercube :math:`\{+1,-1\}^d` as a ``[2^d, d]`` tensor (for small :math:`d`).

    Parameters
    ----------
    d
        Dimension of the hypercube, between 2 and 24.
    dtype
        Dtype of the result: real floating or signed integer.
    device
        Device of the result.

    Raises
    ------
    ArgumentTypeError
        unless ``d`` is an integer and ``dtype`` a real floating or signed integer dtype (bool
        and unsigned dtypes cannot hold ``-1``).
    ValueError
        unless ``2 <= d <= 24`` (:math:`2^{24}` rows is the largest enumeration this book needs).
    """
    check_dims(d)
    check_dtype("dtype", dtype, integer=True)
    device = check_device("device", device)
    if d > 24:
        raise ValueError(f"enumerating 2^d inputs is only sensible for d <= 24, got d={d}")
    codes = torch.arange(2**d, device=device).unsqueeze(-1)
    bits = (codes >> torch.arange(d, device=device)) & 1
    return (1 - 2 * bits).to(dtype)
