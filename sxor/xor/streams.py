"""Nested sample streams and the empirical gradient along them.

A *sample stream* is an infinite sequence of inputs ``x_1, x_2, ...`` uniform on ``{+1,-1}^d``,
one stream per instance. The sample of size ``n`` is the first ``n`` samples of the stream, so the
samples of size ``n < n'`` are nested: a larger sample only adds data. This is what makes a
sample-complexity measurement well posed (success as a function of ``n`` changes only through the
extra samples, not through a fresh draw at every ``n``).

The bits are a counter-based hash of ``(key, sample index, word)``: bit ``j`` of sample ``k`` of
the stream with key ``key`` is the same number whatever the chunking, the batch of instances, the
device or the library version, and sample ``k`` can be produced without producing samples
``0..k-1``. The hash (``lowbias32`` of C. Wellons) is evaluated in int64 arithmetic that never
overflows, so it is exact on every backend.
"""

from __future__ import annotations

import itertools

import torch

from .checks import (
    check_device,
    check_embeddings,
    check_int,
    check_memory,
    check_query,
    check_support,
)
from .model import attention_kind, scores

_MASK32 = 0xFFFFFFFF
_GOLDEN = 0x9E3779B9


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """``(x * c) mod 2^32`` for ``0 <= x < 2^32`` without int64 overflow (``c`` split in 16-bit halves)."""
    lo, hi = c & 0xFFFF, c >> 16
    return (x * lo + (((x * hi) & 0xFFFF) << 16)) & _MASK32


def hash32(x: torch.Tensor) -> torch.Tensor:
    """The ``lowbias32`` integer hash, elementwise on int64 tensors holding values in ``[0, 2^32)``."""
    x = x & _MASK32
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def _byte_table(dtype: torch.dtype, device) -> torch.Tensor:
    """``T[b, j] = 1 - 2 * bit_j(b)``: the eight signs encoded by a byte ``b``."""
    bits = (torch.arange(256, device=device).unsqueeze(-1) >> torch.arange(8, device=device)) & 1
    return (1 - 2 * bits).to(dtype)


def _check_keys(keys: torch.Tensor, device) -> torch.Tensor:
    keys = torch.as_tensor(keys, device=device)
    if keys.dim() != 1 or keys.is_floating_point() or keys.dtype == torch.bool:
        raise ValueError(
            f"keys must be a 1-d integer tensor, got shape {tuple(keys.shape)} and dtype {keys.dtype}"
        )
    if bool((keys < 0).any()) or bool((keys > _MASK32).any()):
        raise ValueError("keys must lie in [0, 2^32)")
    return keys.to(torch.int64)


def stream_length(d: int) -> int:
    """How many samples a stream of dimension ``d`` has: :math:`2^{32} / \\lceil d / 32 \\rceil`.

    The word counter is 32 bits wide, so sample ``k`` and sample ``k + stream_length(d)`` would be
    equal; the stream functions refuse samples at or beyond this index."""
    return 2**32 // (-(-int(d) // 32))


def _check_range(start: object, count: object, d: int) -> tuple[int, int]:
    start, count = check_int("start", start, 0), check_int("count", count, 1)
    if start + count > stream_length(d):
        raise ValueError(
            f"samples start .. start + count - 1 = {start} .. {start + count - 1} reach beyond the "
            f"stream's length 2^32 / ceil(d / 32) = {stream_length(d)} at d = {d} (they would repeat "
            "its first samples)"
        )
    return start, count


def stream_bytes(keys: torch.Tensor, start: int, count: int, d: int) -> torch.Tensor:
    """The raw bits of samples ``start, ..., start + count - 1`` of the streams ``keys [S]``, as
    bytes: ``[S, count, 4 W]`` int64 in ``[0, 256)``, ``W = ceil(d / 32)``; bit ``i`` of byte ``j``
    is coordinate ``8 j + i`` (coordinates ``>= d`` are padding). ``x = 1 - 2 bit``."""
    words = -(-d // 32)
    counter = torch.arange(
        start * words, (start + count) * words, device=keys.device, dtype=torch.int64
    )
    base = hash32(keys).unsqueeze(-1)  # [S, 1]
    w = hash32(base + _mul32(counter & _MASK32, _GOLDEN).unsqueeze(0))  # [S, count * words]
    shifts = torch.arange(0, 32, 8, device=keys.device)
    return ((w.unsqueeze(-1) >> shifts) & 0xFF).reshape(len(keys), count, 4 * words)


def stream_inputs(
    keys: torch.Tensor,
    start: int,
    count: int,
    d: int,
    *,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Samples ``start, ..., start + count - 1`` of the streams ``keys [S]``: ``x [S, count, d]`` in ``{+1,-1}``.

    Sample ``k`` of stream ``key`` is built from the 32-bit words
    ``hash32(hash32(key) + (k * W + w) * 0x9E3779B9)``, ``w < W = ceil(d / 32)``, of which the first
    ``d`` bits are used. Distinct keys give (for all practical purposes) independent streams.

    Raises
    ------
    ValueError
        unless ``d >= 1``, ``start >= 0`` and ``count >= 1`` are integers (not floats, not bool),
        ``start + count`` is at most :func:`stream_length` ``(d)``, ``keys`` is a 1-d integer
        tensor in :math:`[0, 2^{32})`, ``device`` exists and is available, and the result fits
        :data:`sxor.xor.checks.MAX_BYTES` (estimated before allocating).
    """
    d = check_int("d", d, 1)
    start, count = _check_range(start, count, d)
    device = check_device("device", device)
    keys = _check_keys(keys, device)
    words = -(-d // 32)
    check_memory(
        "stream_inputs(keys, start, count, d)",
        (len(keys), count, 32 * words, 8),
        torch.int64,
        keys.device,
    )
    byte = stream_bytes(keys, start, count, d)  # [S, count, 4W]
    signs = _byte_table(dtype, keys.device)[byte]  # [S, count, 4W, 8]
    return signs.reshape(len(keys), count, 32 * words)[..., :d]


def stream_empirical_grads(
    keys: torch.Tensor,
    ns: list[int],
    V: torch.Tensor,
    theta: torch.Tensor,
    theta_tilde: torch.Tensor,
    support: torch.Tensor,
    kind: str = "softmax",
    *,
    block: int = 2048,
    start: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The empirical gradients ``(dL_n/dtheta, dL_n/dtheta~)`` on the first ``n`` samples of each
    instance's stream, for every ``n`` in the increasing list ``ns``: two tensors ``[len(ns), S, m]``.
    With ``start > 0`` the samples are ``start, ..., start + n - 1`` instead (a mini-batch).

    One pass over the streams up to ``max(ns)``: the sums ``sum_{k < n} r_k (h . x_k) x_k`` (and the
    same with ``g``) are accumulated in blocks of ``block`` samples and read off at each ``n``, so
    the cost is ``O(S max(ns) d)`` whatever the number of grid points. ``keys [S]``, ``V [S, d, m]``,
    ``theta, theta_tilde [S, m]``, ``support [S, 2]``. The result equals
    :func:`sxor.xor.dynamics.empirical_grad` on ``stream_inputs(keys, 0, n, d)`` up to rounding.
    """
    d, m = check_embeddings(V)
    check_query("theta", theta, m)
    check_query("theta_tilde", theta_tilde, m)
    check_support(support, d)
    S = V.shape[0]
    if (
        V.dim() != 3
        or theta.shape != (S, m)
        or theta_tilde.shape != (S, m)
        or support.shape != (S, 2)
    ):
        raise ValueError(
            "need V [S, d, m], theta and theta_tilde [S, m], support [S, 2] with one S"
        )
    if not isinstance(ns, (list, tuple)):
        raise ValueError(f"ns must be a list of sample sizes, got {type(ns).__name__}")
    ns = [check_int(f"ns[{i}]", n, 1) for i, n in enumerate(ns)]
    if not ns or any(b <= a for a, b in itertools.pairwise(ns)):
        raise ValueError(
            f"ns must be a non-empty strictly increasing list of positive integers, got {ns}"
        )
    block = check_int("block", block, 1)
    start, _ = _check_range(start, ns[-1], d)
    keys = _check_keys(keys, V.device)
    if keys.shape != (S,):
        raise ValueError(f"need one key per instance: keys of shape [{S}], got {tuple(keys.shape)}")
    phi = attention_kind(kind)
    s, s_tilde = scores(V, theta), scores(V, theta_tilde)
    g, h = phi.weights(s), phi.weights(s_tilde)
    # The inputs are never formed: with bytes b_kj of sample k, (g . x_k) = sum_j T_g[j, b_kj] for a
    # table T_g[j, v] = sum_i sign_i(v) g_(8j+i), and sum_k w_k x_k is read off the histograms
    # H[j, v] = sum_{k: b_kj = v} w_k as sum_v H[j, v] sign_i(v). Cost O(d/8) per sample and head.
    nb = 4 * (-(-d // 32))
    signs = _byte_table(V.dtype, V.device)  # [256, 8]
    padded = torch.zeros(S, 8 * nb, 2, dtype=V.dtype, device=V.device)
    padded[:, :d, 0], padded[:, :d, 1] = g, h
    table = (
        (padded.reshape(S, nb, 8, 2).transpose(-1, -2) @ signs.T)
        .transpose(-1, -2)
        .reshape(S * nb * 256, 2)
    )
    offset = (
        torch.arange(S, device=V.device).view(S, 1, 1) * nb + torch.arange(nb, device=V.device)
    ) * 256
    a, b = support[:, 0:1], support[:, 1:2]  # [S, 1]
    total = torch.zeros(S, 2, nb, 256, dtype=V.dtype, device=V.device)
    means: list[torch.Tensor] = []  # (dL/dg, dL/dh) over the first n samples, one per n of ns
    pending = list(ns)

    def accumulate(byte: torch.Tensor) -> None:
        nonlocal total
        count = byte.shape[1]
        flat = (byte + offset).reshape(-1)  # [S * count * nb]
        proj = table[flat].reshape(S, count, nb, 2).sum(2)  # (g . x_k, h . x_k), [S, count, 2]

        def bit(p: torch.Tensor) -> torch.Tensor:
            return (
                byte.gather(-1, (p // 8).expand(S, count).unsqueeze(-1)).squeeze(-1) >> (p % 8)
            ) & 1

        y = -(1 - 2 * bit(a)) * (1 - 2 * bit(b))
        residual = -proj[..., 0] * proj[..., 1] - y
        # dL/dg collects -r (h . x) x and dL/dh collects -r (g . x) x.
        weights = -(residual.unsqueeze(-1) * proj.flip(-1))  # [S, count, 2]
        for head in range(2):
            w = weights[..., head].unsqueeze(-1).expand(S, count, nb).reshape(-1)
            total[:, head] += torch.bincount(flat, weights=w, minlength=S * nb * 256).reshape(
                S, nb, 256
            )

    for lo in range(0, ns[-1], block):
        stop = min(lo + block, ns[-1])
        byte = stream_bytes(keys, start + lo, stop - lo, d)  # [S, b, nb]
        cut = lo
        while pending and pending[0] <= stop:
            n = pending.pop(0)
            if n > cut:
                accumulate(byte[:, cut - lo : n - lo])
            means.append((total @ signs).reshape(S, 2, 8 * nb)[..., :d] / n)
            cut = n
        if cut < stop:
            accumulate(byte[:, cut - lo :])
    du = torch.stack(means)  # [len(ns), S, 2, d]
    Vt = V.transpose(-1, -2)
    r = phi.pullback(s, g, du[:, :, 0])
    r_tilde = phi.pullback(s_tilde, h, du[:, :, 1])
    return (Vt @ r.unsqueeze(-1)).squeeze(-1), (Vt @ r_tilde.unsqueeze(-1)).squeeze(-1)
