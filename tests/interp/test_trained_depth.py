"""The trained-depth experiment's bookkeeping (section 15c): thresholds, censoring, intervals."""

from __future__ import annotations

from sxor.experiments.trained_depth import SIZES, depth_table


def _rec(L, seed, hit, N=2):
    return {
        "kind": "depth", "N": N, "m": 1, "n": 3, "seed": seed, "L": L,
        "interpolates": hit, "diverged": False, "construction_blocks": 3,
    }  # fmt: skip


def test_smallest_depths_and_censoring():
    records = [_rec(1, s, s == 0) for s in range(4)]  # 1 of 4
    records += [_rec(2, s, s < 2) for s in range(4)]  # 2 of 4: half
    records += [_rec(3, s, True) for s in range(4)]  # 4 of 4
    records += [_rec(1, s, False, N=4) for s in range(4)]  # never: censored
    records.append({"kind": "scan", "N": 9})
    by_N = {t["N"]: t for t in depth_table(records)}
    assert by_N[2]["L_half"] == 2 and by_N[2]["L_90"] == 3
    assert by_N[4]["L_half"] is None and by_N[4]["L_max_tried"] == 1
    lo, hi = by_N[2]["per_L"][0]["ci"]
    assert 0 < lo < 0.25 < hi < 1
    assert by_N[4]["per_L"][0]["ci"][0] == 0.0


def test_ci_cells_are_full_cells_with_full_settings():
    ci, full = SIZES["ci"], SIZES["full"]
    for key in ("d", "steps", "polish", "lr", "objective", "tol"):
        assert ci[key] == full[key]
    assert set(ci["Ns"]) <= set(full["Ns"]) and set(ci["ms"]) <= set(full["ms"])
    assert set(ci["ns"]) <= set(full["ns"]) and ci["seeds"] <= full["seeds"]
