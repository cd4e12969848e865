"""Tables, fits and figures of the ``trained-depth`` experiment (section 15c): the first depths at
which half and 90% of the seeds interpolate, with exact intervals, and the growth of that depth in
``N`` (a least-squares slope of ``log2 L`` on ``log2 N`` with a bootstrap interval over seeds)."""

from __future__ import annotations

import math
import random

from .why_transformer_reliability import clopper_pearson

__all__ = ["censored_bounds", "depth_table", "growth_fit", "plot_depth"]


def depth_table(records: list[dict], level: float = 0.95) -> list[dict]:
    """Per ``(n, m, N)``: the construction's block counts (min and max over seeds), the runs,
    and for each depth ``L`` tried the successes, the seeds and the Clopper-Pearson ``level``
    interval; ``L_half`` and ``L_90``, the smallest ``L`` with success rate ``>= 1/2`` and
    ``>= 0.9`` (``None`` when no ``L`` tried reached it: censored at the largest ``L`` tried)."""
    out = []
    keys = sorted({(r["n"], r["m"], r["N"]) for r in records if r["kind"] == "depth"})
    for n, m, N in keys:
        rows = [
            r for r in records if r["kind"] == "depth" and (r["n"], r["m"], r["N"]) == (n, m, N)
        ]
        per_L = []
        for L in sorted({r["L"] for r in rows}):
            hits = [r["interpolates"] for r in rows if r["L"] == L]
            lo, hi = clopper_pearson(sum(hits), len(hits), level)
            per_L.append({"L": L, "successes": sum(hits), "runs": len(hits), "ci": [lo, hi]})

        def first(rate: float, per_L: list = per_L) -> int | None:
            return next((p["L"] for p in per_L if p["successes"] >= rate * p["runs"]), None)

        blocks = [r["construction_blocks"] for r in rows]
        out.append(
            {
                "n": n,
                "m": m,
                "N": N,
                "construction_blocks": [min(blocks), max(blocks)],
                "L_max_tried": max(p["L"] for p in per_L),
                "L_half": first(0.5),
                "L_90": first(0.9),
                "per_L": per_L,
                "diverged": sum(r["diverged"] for r in rows),
            }
        )
    return out


def _l_half(hits: dict[int, list[bool]], rate: float = 0.5) -> int | None:
    """The first depth (ascending) whose successes reach ``rate`` of its runs, or ``None``."""
    return next((L for L in sorted(hits) if sum(hits[L]) >= rate * len(hits[L])), None)


def _slope(points: list, groups: list) -> float | None:
    """Least-squares slope of ``log2 L`` on ``log2 N`` with one intercept per group (a common
    slope), or ``None`` when no group has two distinct ``N``."""
    by: dict = {}
    for (N, L), g in zip(points, groups):
        by.setdefault(g, []).append((math.log2(N), math.log2(L)))
    sxy = sxx = 0.0
    for pts in by.values():
        if len({x for x, _ in pts}) < 2:
            continue
        mx = sum(x for x, _ in pts) / len(pts)
        my = sum(y for _, y in pts) / len(pts)
        sxy += sum((x - mx) * (y - my) for x, y in pts)
        sxx += sum((x - mx) ** 2 for x, _ in pts)
    return sxy / sxx if sxx > 0 else None


def growth_fit(records: list[dict], draws: int = 2000, seed: int = 0) -> list[dict]:
    """The growth of ``L_half`` (first depth tried at which at least half of the seeds
    interpolate) in ``N``: for each ``(n, m)`` and pooled over them (one intercept per
    ``(n, m)``, a common slope), the least-squares slope ``b`` of ``log2 L_half`` on ``log2 N``
    over the uncensored cells, so that ``L_half ~ N^b``, with a 95% percentile-bootstrap interval
    (seeds resampled with replacement within every cell, ``L_half`` recomputed, cells censored in a
    draw left out; ``usable``: the share of draws with a slope). ``b = None``: fewer than two
    uncensored ``N``."""
    cells: dict = {}
    for r in records:
        if r["kind"] == "depth":
            cell = cells.setdefault((r["n"], r["m"], r["N"]), {})
            cell.setdefault(r["seed"], {})[r["L"]] = bool(r["interpolates"])
    rng = random.Random(seed)

    def fit(keys: list, resample: bool) -> float | None:
        points, groups = [], []
        for n, m, N in keys:
            per_seed = cells[(n, m, N)]
            chosen = [rng.choice(list(per_seed)) for _ in per_seed] if resample else list(per_seed)
            hits: dict[int, list[bool]] = {}
            for s in chosen:
                for L, ok in per_seed[s].items():
                    hits.setdefault(L, []).append(ok)
            L_half = _l_half(hits)
            if L_half is not None:
                points.append((N, L_half))
                groups.append((n, m))
        return _slope(points, groups)

    out = []
    nm = sorted({(n, m) for n, m, _ in cells})
    for group, pooled in [([g], False) for g in nm] + [(nm, True)]:
        keys = sorted(k for k in cells if (k[0], k[1]) in group)
        b = fit(keys, False)
        boots = sorted(x for x in (fit(keys, True) for _ in range(draws)) if x is not None)
        interval = (
            [boots[int(0.025 * len(boots))], boots[max(0, int(0.975 * len(boots)) - 1)]]
            if boots
            else None
        )
        out.append(
            {
                "n": None if pooled else group[0][0],
                "m": None if pooled else group[0][1],
                "slope": b,
                "interval_95": interval,
                "usable": len(boots) / draws,
            }
        )
    return out


def censored_bounds(records: list[dict]) -> list[dict]:
    """What the censored cells say about the growth: for each ``(n, m)`` with an uncensored cell
    and a censored cell of larger ``N``, the largest uncensored ``N0`` (its ``L0 = L_half``), the
    next censored ``N1``, and the lower bound ``b > log2(L_max / L0) / log2(N1 / N0)`` on the
    local exponent that ``L_half(N1) > L_max`` (the largest depth tried) implies."""
    out = []
    table = depth_table(records)
    for n, m in sorted({(t["n"], t["m"]) for t in table}):
        rows = sorted((t for t in table if (t["n"], t["m"]) == (n, m)), key=lambda t: t["N"])
        done = [t for t in rows if t["L_half"] is not None]
        if not done:
            continue
        t0 = max(done, key=lambda t: t["N"])
        later = [t for t in rows if t["N"] > t0["N"] and t["L_half"] is None]
        if later:
            t1 = later[0]
            bound = math.log2(t1["L_max_tried"] / t0["L_half"]) / math.log2(t1["N"] / t0["N"])
            out.append(
                {"n": n, "m": m, "N0": t0["N"], "L0": t0["L_half"], "N1": t1["N"],
                 "L_max": t1["L_max_tried"], "exponent_above": bound}
            )  # fmt: skip
    return out


def plot_depth(results: dict):
    """The first depth tried at which at least half of the seeds interpolated (``L_half``)
    against ``N`` (one panel per ``n``), one colour per ``m`` (markers of different ``m`` set
    slightly apart in ``N``); a hollow marker at ``L_max + 1`` marks a censored cell (no depth
    tried reached half), the construction's block count dashed."""
    import matplotlib.pyplot as plt

    table = depth_table(results["records"])
    ns = sorted({t["n"] for t in table})
    fig, axes = plt.subplots(1, len(ns), figsize=(4.2 * len(ns), 4.2), squeeze=False)
    for ax, n in zip(axes[0], ns):
        for m, colour in zip((1, 2, 3), ("tab:blue", "tab:orange", "tab:green")):
            rows = [t for t in table if t["n"] == n and t["m"] == m]
            if not rows:
                continue
            Ns = [t["N"] for t in rows]
            ax.plot(Ns, [t["construction_blocks"][1] for t in rows], "--", color=colour)
            for t in rows:
                censored = t["L_half"] is None
                y = t["L_max_tried"] + 1 if censored else t["L_half"]
                face = "none" if censored else colour
                shift = 2 ** (0.08 * (m - 2))  # side by side, so that equal values stay visible
                ax.plot([t["N"] * shift], [y], "o", mfc=face, color=colour, ms=8)
            ax.plot([], [], "o-", color=colour, label=f"m = {m}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("N (sequences)")
        ax.set_ylabel("blocks")
        ax.set_title(f"n = {n}: trained (dots), construction (dashed)", fontsize=11)
        ax.legend(fontsize=10, frameon=False)
    fig.tight_layout()
    return fig
