"""What "learned sparse XOR" means, as numbers computed from the two heads' attention.

Success is defined once here and used by every chapter:

* the population loss is below ``loss_threshold`` (default ``0.01``, i.e. a root-mean-square
  error of ``sqrt(2 * 0.01) ~ 0.14`` on labels of size 1), and
* the two heads put mass at least ``mass_threshold`` (default ``0.9``) on *different* targets:
  one head on ``i*`` and the other on ``j*``.

The loss condition alone already forces specialisation (the loss is at least
``(1 - g_a h_b - g_b h_a)^2 / 2``, see the chapter on the population gradient); the mass
condition makes the criterion readable and classifies the failures.
"""

from __future__ import annotations

import torch


def target_masses(attention: torch.Tensor, attention_tilde: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """Mass of each head on each target: ``M [..., 2, 2]`` with ``M[..., h, t]`` the weight that
    head ``h`` (0: ``gamma``, 1: ``gamma~``) puts on target ``t`` (0: ``i*``, 1: ``j*``)."""
    heads = torch.stack(torch.broadcast_tensors(attention, attention_tilde), dim=-2)  # [..., 2, d]
    idx = support.to(heads.device).unsqueeze(-2).expand(*heads.shape[:-1], 2)
    return heads.gather(-1, idx)


def specialised(masses: torch.Tensor, mass_threshold: float = 0.9) -> torch.Tensor:
    """True where one head has mass ``>= mass_threshold`` on ``i*`` and the other on ``j*``."""
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
    """The success criterion of the module docstring, per instance."""
    masses = target_masses(attention, attention_tilde, support)
    return (loss < loss_threshold) & specialised(masses, mass_threshold)
