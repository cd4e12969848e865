r"""An ordinary one-layer, two-head transformer with a CLS token that computes exactly :math:`f(x)`.

Tokens live in :math:`\mathbb{R}^D`, :math:`D = m + 3`, laid out as
``[position (m) | bit one-hot (2) | CLS flag (1)]``. An input token :math:`i`
(:math:`i = 1, \dots, d`) is

.. math::
   z_i = (v_i, \mathbb{1}\{x_i = +1\}, \mathbb{1}\{x_i = -1\}, 0),

the sum of a positional embedding (the frozen :math:`v_i`) and a bit embedding, and the CLS
token, prepended at index 0, is :math:`z_0 = e_\mathrm{CLS} = (0, \dots, 0, 0, 0, 1)`
(:math:`m + 2` zeros, then 1).

Head :math:`h` has ``W_Q^h, W_K^h [m, D]`` and ``W_V^h [1, D]``, and standard (unscaled)
softmax attention with a structural mask: no token attends to the CLS token. Structural zeros
make the keys depend on the position only and the values on the bit only:

.. math::
   \begin{aligned}
   W_Q^h &= \theta_h e_\mathrm{CLS}^\top,\quad W_K^h = [I_m\;0\;0\;0],\\
   W_V^h &= (0, \dots, 0, 1, -1, 0),
   \end{aligned}

so the CLS query of head :math:`h` is :math:`\theta_h`, its scores are :math:`v_i \cdot \theta_h`
and its output is :math:`o_h = \sum_i \gamma_i^h x_i`. The read-out is a fixed two-unit layer
with square activation, which by polarisation is :math:`f(x)`:

.. math::
   \begin{aligned}
   f &= -\tfrac{1}{4} (o_1 + o_2)^2 + \tfrac{1}{4} (o_1 - o_2)^2\\
   &= -o_1 o_2.
   \end{aligned}
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from .checks import (
    ArgumentTypeError,
    check_embeddings,
    check_int,
    check_like,
    check_query,
    check_support,
    check_tensor,
)
from .data import all_inputs, sparse_xor_labels

#: Read-out mixing ``W_O = [[1, 1], [1, -1]]`` of the two head outputs, ``u = W_O o``.
READOUT_MIX = ((1.0, 1.0), (1.0, -1.0))
#: Read-out output weights ``r = (-1/4, 1/4)``, ``f = sum_k r_k u_k^2``.
READOUT_OUT = (-0.25, 0.25)


class CLSWeights(NamedTuple):
    """Weights of the two heads (head axis of size 2 after the batch axes)."""

    W_Q: torch.Tensor  #: queries ``[..., 2, m, D]``
    W_K: torch.Tensor  #: keys ``[..., 2, m, D]``
    W_V: torch.Tensor  #: values ``[..., 2, 1, D]``


def token_embeddings(x: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    r"""Token matrix ``Z [..., n, d + 1, m + 3]`` of the module docstring (CLS token first).

    Parameters
    ----------
    x
        Inputs ``[..., n, d]`` with entries in :math:`\{+1, -1\}`.
    V
        Positional embeddings ``[..., d, m]``.

    Raises
    ------
    ArgumentTypeError
        unless ``V`` is a real floating tensor and ``x`` a real tensor.
    ValueError
        unless ``x [..., n, d]`` matches ``V``, has entries in :math:`\{+1, -1\}` and the batch
        shapes broadcast.
    """
    d, m = check_embeddings(V)
    check_tensor("x", x, 2)
    if x.is_complex() or x.dtype == torch.bool:
        raise ArgumentTypeError(
            f"x must be a real tensor with entries in {{+1, -1}}, got dtype {x.dtype}"
        )
    if x.shape[-1] != d:
        raise ValueError(f"x has last dimension {x.shape[-1]} but the embeddings have d={d}")
    if not bool(((x == 1) | (x == -1)).all()):
        raise ValueError("x must have entries in {+1, -1}")
    x = x.to(V.dtype)
    batch = torch.broadcast_shapes(x.shape[:-2], V.shape[:-2])
    n = x.shape[-2]
    position = V.unsqueeze(-3).expand(*batch, n, d, m)
    bits = torch.stack([(1 + x) / 2, (1 - x) / 2], dim=-1).expand(*batch, n, d, 2)
    inputs = torch.cat([position, bits, torch.zeros_like(bits[..., :1])], dim=-1)
    cls = torch.zeros(*batch, n, 1, m + 3, dtype=V.dtype, device=V.device)
    cls[..., -1] = 1.0
    return torch.cat([cls, inputs], dim=-2)


def attention_mask(d: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    r"""Boolean mask ``[d + 1, d + 1]``, True where query token :math:`t` may attend to key token :math:`u`.

    Every query attends to the :math:`d` input tokens and never to the CLS token.

    Parameters
    ----------
    d
        Number of input tokens, at least 1.
    device
        Device of the result.

    Raises
    ------
    ArgumentTypeError
        unless ``d`` is an integer.
    ValueError
        unless ``d >= 1``.
    """
    d = check_int("d", d, 1)
    mask = torch.ones(d + 1, d + 1, dtype=torch.bool, device=device)
    mask[:, 0] = False
    return mask


def cls_weights(theta: torch.Tensor, theta_tilde: torch.Tensor) -> CLSWeights:
    r"""The map :math:`(\theta, \tilde\theta) \mapsto (W_Q, W_K, W_V)` of the module docstring (batched).

    Parameters
    ----------
    theta, theta_tilde
        Queries of the two heads, ``[..., m]``.

    Raises
    ------
    ArgumentTypeError
        unless both queries are real floating tensors.
    ValueError
        unless they share one length ``m``, dtype and device, are finite and their batch shapes
        broadcast.
    """
    check_tensor("theta", theta, 1, real=True)
    m = theta.shape[-1]
    check_query("theta", theta, m)
    check_query("theta_tilde", theta_tilde, m, like=theta)
    check_like("theta_tilde", theta_tilde, "theta", theta)
    try:
        torch.broadcast_shapes(theta.shape, theta_tilde.shape)
    except RuntimeError:
        raise ValueError(
            f"theta and theta_tilde batch shapes do not broadcast: {tuple(theta.shape)}, "
            f"{tuple(theta_tilde.shape)}"
        ) from None
    queries = torch.stack(torch.broadcast_tensors(theta, theta_tilde), dim=-2)  # [..., 2, m]
    D = m + 3
    e_cls = torch.zeros(D, dtype=theta.dtype, device=theta.device)
    e_cls[-1] = 1.0
    W_Q = queries.unsqueeze(-1) * e_cls  # theta_h e_CLS^T
    W_K = torch.cat(
        [
            torch.eye(m, dtype=theta.dtype, device=theta.device),
            torch.zeros(m, 3, dtype=theta.dtype, device=theta.device),
        ],
        dim=-1,
    )
    W_V = torch.zeros(1, D, dtype=theta.dtype, device=theta.device)
    W_V[0, m], W_V[0, m + 1] = 1.0, -1.0
    heads = queries.shape[:-1]
    return CLSWeights(W_Q, W_K.expand(*heads, m, D), W_V.expand(*heads, 1, D))


def queries(weights: CLSWeights) -> tuple[torch.Tensor, torch.Tensor]:
    r""":math:`(\theta, \tilde\theta)` read back from ``W_Q``: the CLS column :math:`W_Q^h e_\mathrm{CLS}` of each head.

    Parameters
    ----------
    weights
        Weights of the two heads.
    """
    _check_cls_weights(weights)
    return weights.W_Q[..., 0, :, -1], weights.W_Q[..., 1, :, -1]


def head_outputs(x: torch.Tensor, V: torch.Tensor, weights: CLSWeights) -> torch.Tensor:
    r"""Attention outputs ``o [..., n, 2]`` of the two heads at the CLS token.

    Standard masked softmax attention, :math:`\mathrm{softmax}(Q K^\top + \mathrm{mask})\, U` with
    :math:`Q = Z W_Q^\top`, :math:`K = Z W_K^\top`, :math:`U = Z W_V^\top` (no :math:`1/\sqrt{m}`
    scaling: it would only rescale :math:`\theta`).

    Parameters
    ----------
    x
        Inputs ``[..., n, d]`` in :math:`\{+1, -1\}`.
    V
        Positional embeddings ``[..., d, m]``.
    weights
        Weights of the two heads.

    Raises
    ------
    ArgumentTypeError, ValueError
        as :func:`~sxor.xor.cls_transformer.token_embeddings` does, and ValueError unless the
        weights match the tokens' dimension, dtype and device.
    """
    _check_cls_weights(weights)
    check_like("weights.W_Q", weights.W_Q, "V", V)
    Z = token_embeddings(x, V).unsqueeze(-3)  # [..., n, 1, d + 1, D], the 1 broadcasts over heads
    d = Z.shape[-2] - 1
    if weights.W_Q.shape[-1] != Z.shape[-1]:
        raise ValueError(
            f"weights have token dimension {weights.W_Q.shape[-1]} but the tokens have {Z.shape[-1]}"
        )
    W_Q, W_K, W_V = (w.unsqueeze(-4) for w in weights)  # add the sample axis n
    Q, K, U = Z @ W_Q.transpose(-1, -2), Z @ W_K.transpose(-1, -2), Z @ W_V.transpose(-1, -2)
    out = F.scaled_dot_product_attention(
        Q, K, U, attn_mask=attention_mask(d, device=Z.device), scale=1.0
    )
    return out[..., 0, 0]  # CLS row, value dimension 1: [..., n, 2]


def _check_cls_weights(weights: object) -> None:
    if not isinstance(weights, CLSWeights):
        raise ArgumentTypeError(
            f"weights must be CLSWeights (from cls_weights), got {type(weights).__name__}"
        )
    for name, w in zip(CLSWeights._fields, weights):
        check_tensor(f"weights.{name}", w, 3, real=True, finite=True)
        if w.shape[-3] != 2:
            raise ValueError(
                f"weights.{name} must have a head axis of size 2, got shape {tuple(w.shape)}"
            )


def readout(o: torch.Tensor) -> torch.Tensor:
    r"""Read-out :math:`f = \sum_k r_k (W_O o)_k^2` with the fixed ``READOUT_MIX`` and ``READOUT_OUT``; equals :math:`-o_1 o_2`.

    Parameters
    ----------
    o
        Head outputs ``[..., 2]``.

    Raises
    ------
    ArgumentTypeError
        unless ``o`` is a real floating tensor.
    ValueError
        unless its last dimension is 2 and it is finite.
    """
    check_tensor("o", o, 1, real=True, finite=True)
    if o.shape[-1] != 2:
        raise ValueError(
            f"o must have last dimension 2 (one output per head), got shape {tuple(o.shape)}"
        )
    mix = torch.tensor(READOUT_MIX, dtype=o.dtype, device=o.device)
    out = torch.tensor(READOUT_OUT, dtype=o.dtype, device=o.device)
    return (o @ mix.T) ** 2 @ out


def cls_forward(x: torch.Tensor, V: torch.Tensor, weights: CLSWeights) -> torch.Tensor:
    r"""Transformer output ``[..., n]`` for inputs ``x [..., n, d]``.

    Parameters
    ----------
    x
        Inputs ``[..., n, d]`` in :math:`\{+1, -1\}`.
    V
        Positional embeddings ``[..., d, m]``.
    weights
        Weights of the two heads.

    Raises
    ------
    ArgumentTypeError, ValueError
        as :func:`~sxor.xor.cls_transformer.head_outputs` does.
    """
    return readout(head_outputs(x, V, weights))


def cls_enumerated_loss(
    V: torch.Tensor, weights: CLSWeights, support: torch.Tensor
) -> torch.Tensor:
    r"""Population loss :math:`\frac{1}{2} E[(f(x) - y)^2]` of the transformer by summing over all :math:`2^d` inputs.

    Parameters
    ----------
    V
        Positional embeddings ``[..., d, m]``.
    weights
        Weights of the two heads.
    support
        The pair :math:`(i^*, j^*)`, ``[..., 2]``.

    Raises
    ------
    ArgumentTypeError, ValueError
        as :func:`~sxor.xor.cls_transformer.head_outputs` and :func:`~sxor.xor.data.all_inputs` do,
        and for an invalid ``support``.
    """
    d, _ = check_embeddings(V)
    check_support(support, d)
    x = all_inputs(d, dtype=V.dtype, device=V.device)
    y = sparse_xor_labels(x, support)
    return 0.5 * ((cls_forward(x, V, weights) - y) ** 2).mean(-1)
