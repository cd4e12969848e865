"""Sweeps of the section "Three bits at scale": one huge step for three heads.

``kparity-one-step``: the success rate, in the large-step limit
(:func:`sxor.xor.kparity_one_step.limit_success`), of one population step for three heads, from
the chapter's baselines and three candidates meant to beat the chance rate 2/9:

* ``star`` and ``random``: the initialisations of chapter 9 (baselines);
* ``ladder``: the random start with query norms 4, 2, 1 (one head's weights on the targets
  dominate, and the other two then face a two-target problem);
* ``per-head``: every head but the first gets keys of its own (independent of the others');
* ``two-step``: from the star, a normalised step of length ``c`` that separates the heads, then
  the huge step.

Instances ``0 .. n - 1`` of :func:`sxor.xor.kparity_descent.kparity_instances` at each ``d``, with
``m = 2 log2 d`` (and more ``m`` at one ``d``).
"""

from __future__ import annotations

import torch

from ..xor.kparity_descent import kparity_instances
from ..xor.kparity_one_step import limit_heads, limit_success, separating_step
from . import register, size_config

CANDIDATES = [
    ("star", 0.0),
    ("random", 0.0),
    ("ladder", 0.0),
    ("per-head", 0.0),
    ("two-step", 2.0),
    ("two-step", 5.0),
    ("two-step", 10.0),
    ("two-step", 20.0),
]
ONE_STEP_SIZES = {
    "ci": {"n": 300, "cells": [(256, 16)], "candidates": [("star", 0.0), ("two-step", 5.0)]},
    "full": {
        "n": 300,
        "cells": [(256, 16), (1024, 20), (4096, 24), (1024, 10), (1024, 40)],
        "candidates": CANDIDATES,
    },
}


def candidate_run(name: str, c: float, n: int, d: int, m: int, seed: int = 0) -> dict:
    """Successes and collisions of one candidate on ``n`` instances at ``(d, m)``."""
    scheme = "random" if name in ("random", "ladder") else "star"
    V, thetas, support = kparity_instances(n, d, m, 3, scheme, seed=seed)
    Vs = V.unsqueeze(-3).expand(n, 3, d, m).clone()
    if name == "per-head":
        gen = torch.Generator().manual_seed(seed + 10**6)
        extra = torch.randn(n, 2, d, m, generator=gen, dtype=V.dtype)
        Vs[:, 1:] = extra / extra.norm(dim=-1, keepdim=True)
    if name == "ladder":
        thetas = thetas * torch.tensor([4.0, 2.0, 1.0], dtype=V.dtype).view(1, 3, 1)
    if name == "two-step":
        thetas = separating_step(Vs, thetas, support, c)
    heads = limit_heads(Vs, thetas, support)
    won = limit_success(heads, support)
    collide = (heads[:, 0] == heads[:, 1]) | (heads[:, 0] == heads[:, 2])
    collide |= heads[:, 1] == heads[:, 2]
    return {
        "candidate": name,
        "c": c,
        "d": d,
        "m": m,
        "n": n,
        "successes": int(won.sum()),
        "collisions": int(collide.sum()),
    }


@register(
    "kparity-one-step",
    "three heads, one huge step: baselines and candidates against the chance rate 2/9",
)
def run_kparity_one_step(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    cfg = size_config(size, ONE_STEP_SIZES)
    records = []
    for d, m in cfg["cells"]:
        cands = cfg["candidates"] if m == 2 * d.bit_length() - 2 else cfg["candidates"][:1]
        cands = cands + ([("two-step", 5.0)] if cands == cfg["candidates"][:1] else [])
        for name, c in cands:
            records.append(candidate_run(name, c, cfg["n"], d, m))
    return {"n": cfg["n"], "cells": [list(x) for x in cfg["cells"]]}, records
