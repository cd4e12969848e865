r"""What "learned sparse XOR" means, as numbers computed from the two heads' attention.

Success is defined once here and used by every chapter:

* the population loss is below ``loss_threshold`` (default ``0.01``, i.e. a root-mean-square
  error of :math:`\sqrt{2 \cdot 0.01} \approx 0.14` on labels of size 1), and
* the two heads put mass at least ``mass_threshold`` (default ``0.9``) on *different* targets:
  one head on :math:`i^*` and the other on :math:`j^*`.

Neither condition implies the other. The mass condition gives the sign on every input: if one
head has mass :math:`\mu` on :math:`i^*` and the other on :math:`j^*`, then
:math:`|f(x) - y(x)| \le 2 (1 - \mu^2)` for every :math:`x`
(:func:`sxor.xor.analysis.sup_error_bound`), below 0.38 at :math:`\mu = 0.9`. The
loss condition bounds the average error, but it does not force mass 0.9: the loss is
:math:`(1 - g_a h_b - g_b h_a)^2 / 2` plus the weight on wrong pairs, and leakage spread thinly over
many non-targets costs little (at :math:`d = 1000`, heads :math:`0.88\, e_a + 0.12\, u` and
:math:`0.99\, e_b + 0.01\, u`, :math:`u` uniform on the non-targets, have loss 0.0083 and mass 0.88). The chapter on the
population gradient states and proves both facts.
"""

from __future__ import annotations

import torch

from .checks import as_support, check_support, check_tensor


def target_masses(
    attention: torch.Tensor, attention_tilde: torch.Tensor, support: torch.Tensor
) -> torch.Tensor:
    r"""Mass of each head on each target: ``M [..., 2, 2]`` with ``M[..., h, t]`` the weight that
    head ``h`` (0: :math:`\gamma`, 1: :math:`\tilde\gamma`) puts on target ``t`` (0: :math:`i^*`, 1: :math:`j^*`).

    Parameters
    ----------
    attention
        Weights :math:`\gamma` of the first head, ``[..., d]``.
    attention_tilde
        Weights :math:`\tilde\gamma` of the second head, ``[..., d]``.
    support
        The targets :math:`(i^*, j^*)`, an integer tensor ``[..., 2]`` of distinct positions.

    Raises
    ------
    ValueError
        unless ``attention`` and ``attention_tilde`` are tensors and ``support`` holds pairs of
        distinct positions in ``[0, d)`` (both heads on one target is never a success).
    """
    check_tensor("attention", attention, 1)
    check_tensor("attention_tilde", attention_tilde, 1)
    check_support(as_support(support), attention.shape[-1])
    heads = torch.stack(torch.broadcast_tensors(attention, attention_tilde), dim=-2)  # [..., 2, d]
    idx = support.to(heads.device, torch.int64).unsqueeze(-2).expand(*heads.shape[:-1], 2)
    return heads.gather(-1, idx)


def specialised(masses: torch.Tensor, mass_threshold: float = 0.9) -> torch.Tensor:
    r"""True where one head has mass ``>= mass_threshold`` on :math:`i^*` and the other on :math:`j^*`.

    Parameters
    ----------
    masses
        Target masses ``[..., 2, 2]`` from :func:`~sxor.xor.metrics.target_masses`.
    mass_threshold
        Least mass a head must put on its target.
    """
    straight = (masses[..., 0, 0] >= mass_threshold) & (masses[..., 1, 1] >= mass_threshold)
    crossed = (masses[..., 0, 1] >= mass_threshold) & (masses[..., 1, 0] >= mass_threshold)
    return straight | crossed


def success(
    loss: torch.Tensor,
    attention: torch.Tensor,
    attention_tilde: torch.Tensor,
    support: torch.Tensor,
    *,
    loss_threshold: float = 0.01,
    mass_threshold: float = 0.9,
) -> torch.Tensor:
    """The success criterion of the module docstring, per instance (a boolean tensor ``[...]``).

    Parameters
    ----------
    loss
        Population loss per instance, ``[...]``.
    attention
        Weights of the first head, ``[..., d]``.
    attention_tilde
        Weights of the second head, ``[..., d]``.
    support
        The targets, an integer tensor ``[..., 2]``.
    loss_threshold
        The loss must be strictly below this.
    mass_threshold
        Each head's mass on its own target must be at least this.
    """
    masses = target_masses(attention, attention_tilde, support)
    return (loss < loss_threshold) & specialised(masses, mass_threshold)


#: Names of the outcomes returned by :func:`~sxor.xor.metrics.failure_modes`, indexed by their integer code.
FAILURE_MODES: tuple[str, ...] = ("success", "off_target", "same_target", "under_stepped")


def failure_modes(
    loss: torch.Tensor,
    attention: torch.Tensor,
    attention_tilde: torch.Tensor,
    support: torch.Tensor,
    *,
    loss_threshold: float = 0.01,
    mass_threshold: float = 0.9,
) -> torch.Tensor:
    """Classify each instance into one code of ``FAILURE_MODES`` (exhaustive, exclusive):

    * ``0 success``: :func:`~sxor.xor.metrics.success` holds;
    * ``1 off_target``: otherwise, some head's largest weight is on a non-target position
      (mass leaks to the wrong place);
    * ``2 same_target``: otherwise, both heads' largest weights sit on the same target;
    * ``3 under_stepped``: the heads' largest weights sit on different targets, but the loss or the
      mass is short of its threshold (the step was too small to sharpen the attention).

    Parameters
    ----------
    loss, attention, attention_tilde, support, loss_threshold, mass_threshold
        As in :func:`~sxor.xor.metrics.success`.
    """
    ok = success(
        loss,
        attention,
        attention_tilde,
        support,
        loss_threshold=loss_threshold,
        mass_threshold=mass_threshold,
    )
    top, top_tilde = torch.broadcast_tensors(attention.argmax(-1), attention_tilde.argmax(-1))
    support = support.to(top.device)
    a, b = support[..., 0], support[..., 1]

    def on_target(t: torch.Tensor) -> torch.Tensor:
        return (t == a) | (t == b)

    codes = torch.full(ok.shape, 3, dtype=torch.long, device=ok.device)
    codes = torch.where(top == top_tilde, torch.full_like(codes, 2), codes)
    codes = torch.where(~on_target(top) | ~on_target(top_tilde), torch.full_like(codes, 1), codes)
    return torch.where(ok, torch.zeros_like(codes), codes)


def mode_fractions(codes: torch.Tensor) -> dict[str, float]:
    """Fraction of instances in each mode of ``FAILURE_MODES`` (over all entries of ``codes``).

    Parameters
    ----------
    codes
        Integer codes from :func:`~sxor.xor.metrics.failure_modes`, any shape.

    Raises
    ------
    ValueError
        if ``codes`` is empty, floating or holds a code outside ``0..3``.
    """
    if codes.numel() == 0:
        raise ValueError("codes is empty: no instances to classify")
    if codes.is_floating_point() or bool(((codes < 0) | (codes >= len(FAILURE_MODES))).any()):
        raise ValueError(f"codes must be integers in 0..{len(FAILURE_MODES) - 1}")
    counts = torch.bincount(codes.flatten().cpu(), minlength=len(FAILURE_MODES))
    return {name: float(c) / codes.numel() for name, c in zip(FAILURE_MODES, counts.tolist())}
