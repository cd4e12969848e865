"""Tables, fits and figures of the ``trained-depth`` experiment (section 15c): the first depths at
which half and 90% of the seeds interpolate, with exact intervals, and the growth of that depth in
``N`` (a least-squares slope of ``log2 L`` on ``log2 N`` with a bootstrap interval over seeds)."""

from __future__ import annotations

import math
import random

from .why_transformer_reliability import clopper_pearson

__all__ = [
    "censored_bounds",
    "depth_table",
    "fisher_exact",
    "growth_fit",
    "mcnemar_exact",
    "paired_runs",
    "plot_depth",
]


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


def fisher_exact(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided p-value of Fisher's exact test of ``k1`` successes in ``n1`` runs against ``k2``
    in ``n2``: the probability, given the total number of successes, of a table at most as
    likely as the one observed (hypergeometric; exact in rationals up to the final division)."""
    for name, v in (("k1", k1), ("n1", n1), ("k2", k2), ("n2", n2)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name} must be a non-negative int, got {v!r}")
    if k1 > n1 or k2 > n2:
        raise ValueError(f"successes must not exceed runs: {k1}/{n1}, {k2}/{n2}")
    total = k1 + k2
    weight = {k: math.comb(n1, k) * math.comb(n2, total - k)
              for k in range(max(0, total - n2), min(n1, total) + 1)}  # fmt: skip
    seen = weight[k1]
    return min(1.0, sum(w for w in weight.values() if w <= seen) / math.comb(n1 + n2, total))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided p-value of the exact McNemar test: ``b`` pairs that succeed only under the first
    setting and ``c`` only under the second, each discordant pair equally likely to fall either
    way under the null hypothesis (a two-sided binomial test with ``p = 1/2``)."""
    for name, v in (("b", b), ("c", c)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name} must be a non-negative int, got {v!r}")
    k, n = min(b, c), b + c
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n) if n else 1.0


def paired_runs(first: list[dict], second: list[dict]) -> dict:
    """The depth runs of two records lists that share ``(n, m, N, seed, L)`` (the same dataset,
    initialisation and depth under two optimiser settings): how many interpolate in both, only in
    the first, only in the second, and the exact McNemar p-value of the difference (which treats
    the pairs as independent); the same counts per ``N`` under ``"by_N"``. Since the runs of one
    dataset at several depths share its data and initialisation, also a test over datasets:
    ``datasets_first_more`` (``_second_more``) counts the datasets ``(n, m, N, seed)`` with more
    shared runs succeeding only under the first (second) setting, and ``p_sign_datasets`` is the
    two-sided sign test of those two counts."""
    key = ("n", "m", "N", "seed", "L")

    def runs(records: list[dict]) -> dict:
        return {
            tuple(r[k] for k in key): r["interpolates"] for r in records if r["kind"] == "depth"
        }

    a, b = runs(first), runs(second)
    common = sorted(set(a) & set(b))

    def counts(keys: list) -> dict:
        only_a = sum(a[k] and not b[k] for k in keys)
        only_b = sum(b[k] and not a[k] for k in keys)
        return {
            "runs": len(keys),
            "both": sum(a[k] and b[k] for k in keys),
            "only_first": only_a,
            "only_second": only_b,
            "first": sum(a[k] for k in keys),
            "second": sum(b[k] for k in keys),
            "p_mcnemar": mcnemar_exact(only_a, only_b),
        }

    out = counts(common)
    # the runs of one dataset (and initialisation) at several depths are not independent: a sign
    # test over the datasets whose runs favour one setting more often than the other
    lean: dict[tuple, int] = {}
    for k in common:
        lean[k[:4]] = lean.get(k[:4], 0) + int(a[k]) - int(b[k])
    first_more = sum(x > 0 for x in lean.values())
    second_more = sum(x < 0 for x in lean.values())
    out["datasets"] = len(lean)
    out["datasets_first_more"], out["datasets_second_more"] = first_more, second_more
    out["p_sign_datasets"] = mcnemar_exact(first_more, second_more)
    out["by_N"] = {
        N: counts([k for k in common if k[2] == N]) for N in sorted({k[2] for k in common})
    }
    return out


def plot_depth(results: dict):
    """The first depth tried at which at least half of the seeds interpolated (``L_half``)
    against ``N`` (one panel per ``n``), one colour per ``m`` (markers of different ``m`` set
    slightly apart in ``N``); a hollow triangle pointing up at ``L_max + 1`` marks a censored cell
    (no depth tried reached half: ``L_half > L_max``, its value unknown), the construction's block
    count dashed."""
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
                marker = "^" if censored else "o"  # censored: L_half > L_max, value unknown
                ax.plot([t["N"] * shift], [y], marker, mfc=face, color=colour, ms=8)
            ax.plot([], [], "o-", color=colour, label=f"m = {m}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("N (sequences)")
        ax.set_ylabel("blocks")
        ax.set_title(f"n = {n}: trained (dots), construction (dashed)", fontsize=11)
        ax.legend(fontsize=10, frameon=False)
    fig.tight_layout()
    return fig
