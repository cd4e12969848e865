"""Sweeps of the chapter "Beyond two bits".

``beyond-two-bits``: three heads on 3-sparse parity (exact enumeration of ``{+1,-1}^d``) from
three initialisation schemes, with ``m < d``: records ``mode="descent"`` hold population gradient
descent at a few step sizes, records ``mode="one-step"`` one huge population step on many more
instances, with the collisions (two heads on the same position) among the failures, to be
compared with the rate ``3!/3^3 = 2/9`` of independent uniform choices
(:func:`seeds_to_separate` says how many instances that comparison needs).

Every scheme and step size sees the same embeddings, supports and ``theta0`` (:func:`k3_instances`).
"""

from __future__ import annotations

import math

import torch

from ..results import finite_or_none
from ..xor.dynamics import first_success
from ..xor.kparity import parity_descent, parity_inits
from ..xor.model import attention_kind
from ..xor.sweeps import random_instances
from . import register, size_config

INIT_SCHEMES = ["star", "antipodal", "random"]
#: Rate at which three independent uniform choices among three targets form a permutation.
PERMUTATION_RATE = 2 / 9
K3_SIZES = {
    "ci": {
        "d": 8,
        "m": 5,
        "seeds": 12,
        "steps": 60,
        "etas": [30.0, 300.0],
        "one_step_seeds": 200,
        "one_step_etas": [1e4, 1e8],
    },
    "full": {
        "d": 10,
        "m": 6,
        "seeds": 60,
        "steps": 200,
        "etas": [10.0, 100.0, 1000.0],
        "one_step_seeds": 2000,
        "one_step_etas": [1e4, 1e8],
    },
}


def seeds_to_separate(
    p: float, p0: float = PERMUTATION_RATE, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Instances needed for a two-sided level-``alpha`` test of ``rate = p0`` to detect a true rate
    ``p`` with probability ``power`` (normal approximation to the binomial):
    ``n = ((z_{1-alpha/2} sqrt(p0 (1-p0)) + z_power sqrt(p (1-p))) / (p - p0))^2``, rounded up."""
    for name, v in [("p", p), ("p0", p0), ("alpha", alpha), ("power", power)]:
        if not 0 < v < 1:
            raise ValueError(f"{name} must lie in (0, 1), got {v}")
    if p == p0:
        raise ValueError("p equals p0: no number of instances separates them")
    normal = torch.distributions.Normal(0.0, 1.0)
    za = float(normal.icdf(torch.tensor(1 - alpha / 2, dtype=torch.float64)))
    zb = float(normal.icdf(torch.tensor(power, dtype=torch.float64)))
    n = ((za * math.sqrt(p0 * (1 - p0)) + zb * math.sqrt(p * (1 - p))) / (p - p0)) ** 2
    return math.ceil(n)


def collisions(weights: torch.Tensor) -> torch.Tensor:
    """True where two of the three heads (``weights [..., 3, d]``) put their largest weight on the same position."""
    top = weights.argmax(-1)
    return (
        (top[..., 0] == top[..., 1]) | (top[..., 0] == top[..., 2]) | (top[..., 1] == top[..., 2])
    )


def k3_instances(num: int, d: int, m: int, scheme: str, *, seed: int = 0, device=None):
    """Instances for 3-sparse parity: :func:`sxor.xor.sweeps.random_instances` supplies ``V`` and
    ``theta0``; the support is three distinct positions and the three initial queries come from
    :func:`sxor.xor.kparity.parity_inits`, all from a generator seeded with ``seed``."""
    inst = random_instances(num, d, m, seed=seed, device=device)
    gen = torch.Generator(device=inst.V.device).manual_seed(seed)
    support = torch.stack(
        [torch.randperm(d, generator=gen, device=inst.V.device)[:3] for _ in range(num)]
    )
    return inst.V, parity_inits(inst.theta0, scheme, generator=gen), support


def two_bit_one_step(
    num: int, d: int, m: int, etas, *, seed: int = 0, device=None
) -> dict[float, int]:
    """The two-bit control at the same ``(d, m)``: ``{eta: successes}`` of one population step of size
    ``eta`` from the antisymmetric initialisation (:func:`sxor.xor.population.one_step`, softmax) on
    the instances ``seed, ..., seed + num - 1`` of :func:`sxor.xor.sweeps.random_instances`, success
    as everywhere in the book (:func:`sxor.xor.metrics.success`)."""
    from ..xor.metrics import success
    from ..xor.population import one_step

    if isinstance(num, bool) or int(num) != num or num < 1:
        raise ValueError(f"num must be a positive integer, got {num}")
    inst = random_instances(num, d, m, seed=seed, device=device)
    out = {}
    for eta in etas:
        if not float(eta) > 0:
            raise ValueError(f"every eta must be positive, got {eta}")
        res = one_step(inst.V, inst.theta0, inst.support, float(eta), "softmax")
        out[float(eta)] = int(
            success(res.loss, res.attention, res.attention_tilde, inst.support).sum()
        )
    return out


@register(
    "beyond-two-bits",
    "three heads on 3-sparse parity: population GD from three init schemes",
    plot=lambda r: plot_k3(r),  # noqa: PLW0108 (plot_k3 is defined below)
)
def run_k3(size: str, device: torch.device) -> tuple[dict, list[dict]]:
    cfg = size_config(size, K3_SIZES)
    records = []
    for scheme in INIT_SCHEMES:
        V, thetas0, support = k3_instances(cfg["seeds"], cfg["d"], cfg["m"], scheme, device=device)
        for eta in cfg["etas"]:
            tr = parity_descent(V, thetas0, support, eta, cfg["steps"])
            first = first_success(tr.success)
            records.append(
                {
                    "mode": "descent",
                    "scheme": scheme,
                    "eta": eta,
                    "success_rate": float((first >= 0).double().mean()),
                    "first_success": first.tolist(),
                    "median_loss": [float(x) for x in tr.loss.nanmedian(-1).values],
                    "final_loss": [finite_or_none(float(x)) for x in tr.loss[-1]],
                }
            )
    for scheme in INIT_SCHEMES:
        V, thetas0, support = k3_instances(
            cfg["one_step_seeds"], cfg["d"], cfg["m"], scheme, seed=1, device=device
        )
        for eta in cfg["one_step_etas"]:
            tr = parity_descent(V, thetas0, support, eta, 1)
            weights = attention_kind("softmax").weights(
                (V.unsqueeze(-3) @ tr.thetas.unsqueeze(-1)).squeeze(-1)
            )
            failed = ~tr.success[1]
            records.append(
                {
                    "mode": "one-step",
                    "scheme": scheme,
                    "eta": eta,
                    "seeds": cfg["one_step_seeds"],
                    "successes": int(tr.success[1].sum()),
                    "failures": int(failed.sum()),
                    "collisions_among_failures": int((collisions(weights) & failed).sum()),
                    "median_loss": float(tr.loss[1].median()),
                }
            )
    return {
        "d": cfg["d"],
        "m": cfg["m"],
        "seeds": cfg["seeds"],
        "steps": cfg["steps"],
        "schemes": INIT_SCHEMES,
        "one_step_seeds": cfg["one_step_seeds"],
        "one_step_etas": cfg["one_step_etas"],
    }, records


def plot_k3(results: dict):
    """Median population loss over the steps, one line per (init scheme, eta)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    for i, scheme in enumerate(results["params"]["schemes"]):
        rows = [
            r
            for r in results["records"]
            if r["scheme"] == scheme and r.get("mode", "descent") == "descent"
        ]
        for j, rec in enumerate(rows):
            ax.plot(
                rec["median_loss"],
                color=f"C{i}",
                alpha=0.4 + 0.6 * (j + 1) / len(rows),
                label=f"{scheme}, eta={rec['eta']:g} ({rec['success_rate']:.0%} succeed)",
            )
    ax.set_yscale("log")
    ax.set_xlabel("gradient step")
    ax.set_ylabel("median population loss")
    p = results["params"]
    ax.set_title(f"3-sparse parity, three heads, d={p['d']}, m={p['m']}, {p['seeds']} seeds")
    # below the axes, so that no line is hidden
    ax.legend(fontsize=10, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.15))
    fig.tight_layout()
    return fig
