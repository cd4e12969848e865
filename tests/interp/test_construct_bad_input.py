"""Table-driven bad input for the construction's public functions: each raises a ValueError with a
message naming the problem (never a deep numpy/torch error, a hang, or a silent result)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch

from sxor.interp import (
    check_dataset,
    construct,
    feed_forward_enclosure,
    interpolation_errors,
    random_dataset,
    snap_layer,
    softmax_attention_enclosure,
    softmax_certificate,
)
from sxor.interp.construct import collapse_layer, ellipse_parking_spots


def frac(rows) -> np.ndarray:
    return np.array([[Fraction(v) for v in r] for r in rows], dtype=object)


X_OK, Y_OK = (
    [frac([[0, 0], [1, 2]]), frac([[1, 1], [3, 0]])],
    [frac([[1, 1], [2, 2]]), frac([[5, 5]])],
)
T_SOFT = construct(X_OK, Y_OK, attention="softmax")
T_HARD = construct(X_OK, Y_OK)
I2 = frac([[1, 0], [0, 1]])

CASES = [
    # construct / check_dataset
    ("construct", lambda: construct(X_OK, Y_OK, attention="relu"), "attention must be one of"),
    ("construct", lambda: construct(X_OK, Y_OK, tau=Fraction(1)), "hardmax attention has tau = 0"),
    ("construct", lambda: construct(X_OK, Y_OK, "softmax", tau=float("inf")), "finite"),
    ("construct", lambda: construct(X_OK, Y_OK, "softmax", tau=float("nan")), "finite"),
    ("construct", lambda: construct(X_OK, Y_OK, "softmax", tau="1"), "string"),
    ("construct", lambda: construct(X_OK, Y_OK, "softmax", tau=True), "bool"),
    ("construct", lambda: construct(X_OK, Y_OK, "softmax", tau=1j), "tau"),
    ("check_dataset", lambda: check_dataset(X_OK[0], Y_OK[0]), "lists of"),
    ("check_dataset", lambda: check_dataset([torch.ones(2, 2)], [frac([[1, 1]])]), "float tensor"),
    (
        "check_dataset",
        lambda: check_dataset([frac([[0, 0], [1, 2]])], [frac([[1, 1, 1]])]),
        "dimension 3",
    ),
    (
        "check_dataset",
        lambda: check_dataset([np.array([[1j, 0]], dtype=object)], [frac([[1, 1]])]),
        "complex",
    ),
    (
        "check_dataset",
        lambda: check_dataset([np.array([[True, 0]], dtype=object)], [frac([[1, 1]])]),
        "bool",
    ),
    (
        "check_dataset",
        lambda: check_dataset([frac([[0, 0]])], [frac([[0, 0]]), frac([[1, 1]])]),
        "1 input",
    ),
    ("construct", lambda: construct(X_OK, Y_OK, low_rank=(1, 1)), "with collapse='identity'"),
    ("construct", lambda: construct(X_OK, Y_OK, collapse="low-rank", low_rank=(0, 1)), "a > 0"),
    ("construct", lambda: construct(X_OK, Y_OK, collapse="low-rank", low_rank=(1, -1)), "b >= 0"),
    ("construct", lambda: construct(X_OK, Y_OK, collapse="low-rank", low_rank=(0.5, 1)), "float"),
    ("construct", lambda: construct(X_OK, Y_OK, collapse="low-rank", low_rank=1), "pair"),
    ("construct", lambda: construct(X_OK, Y_OK, collapse="low-rank", low_rank=(1, 2, 3)), "pair"),
    # collapse_layer and ellipse_parking_spots
    ("collapse_layer", lambda: collapse_layer(2, "rank-two"), "collapse must be one of"),
    ("collapse_layer", lambda: collapse_layer(2, "low-rank", (0, 1)), "a > 0"),
    ("collapse_layer", lambda: collapse_layer(2, "low-rank", (1, Fraction(-1, 2))), "b >= 0"),
    ("collapse_layer", lambda: collapse_layer(2, "low-rank", (1, float("nan"))), "float|finite"),
    ("collapse_layer", lambda: collapse_layer(2, "low-rank", "ab"), "pair"),
    ("ellipse_parking_spots", lambda: ellipse_parking_spots(0, 1, 2, 1, 1), "count must be >= 1"),
    ("ellipse_parking_spots", lambda: ellipse_parking_spots(3, 1, 1, 1, 1), "d must be >= 2"),
    ("ellipse_parking_spots", lambda: ellipse_parking_spots(3, 0, 2, 1, 1), "radius must be > 0"),
    ("ellipse_parking_spots", lambda: ellipse_parking_spots(3, 1, 2, 0, 1), "a > 0"),
    ("ellipse_parking_spots", lambda: ellipse_parking_spots(3, 1.5, 2, 1, 1), "float"),
    # random_dataset
    ("random_dataset", lambda: random_dataset(0, 2, 1, 2), "N must be >= 1"),
    ("random_dataset", lambda: random_dataset(2, 2, 1, 2, denominator=0), "denominator"),
    ("random_dataset", lambda: random_dataset(2, 2, 1, 0), "d must be >= 1"),
    ("random_dataset", lambda: random_dataset(2, 2.0, 1, 2), "n_j must be an int"),
    ("random_dataset", lambda: random_dataset(2, 2, 3, 2), "m_j <= n_j"),
    ("random_dataset", lambda: random_dataset(100, 30, 1, 1, denominator=1), "grid"),
    # softmax_certificate and the network's methods
    ("softmax_certificate", lambda: softmax_certificate(T_HARD, X_OK, Y_OK), "attention='softmax'"),
    (
        "softmax_certificate",
        lambda: softmax_certificate(T_SOFT, X_OK, Y_OK, Fraction(0)),
        "tau > 0",
    ),
    (
        "softmax_certificate",
        lambda: softmax_certificate(T_SOFT, X_OK, Y_OK, float("inf")),
        "finite",
    ),
    ("softmax_certificate", lambda: softmax_certificate(T_SOFT, X_OK, Y_OK, 0.25), "float"),
    ("softmax_certificate", lambda: softmax_certificate(T_SOFT, X_OK[:1], Y_OK), "1 input"),
    (
        "softmax_certificate",
        lambda: softmax_certificate(
            T_SOFT, [frac([[0, 0, 1]]), frac([[1, 1, 1]])], [frac([[1, 1, 1]]), frac([[0, 0, 0]])]
        ),
        "dimension",
    ),
    (
        "interpolation_errors",
        lambda: interpolation_errors(T_HARD, [frac([[0, 0, 1]])], [frac([[1, 1, 1]])]),
        "dimension d = 2",
    ),
    (
        "interpolation_errors",
        lambda: interpolation_errors(T_HARD, X_OK, Y_OK[:1]),
        "target sequences",
    ),
    ("interpolation_errors", lambda: interpolation_errors(T_HARD, [], []), "empty"),
    (
        "interpolation_errors",
        lambda: interpolation_errors(T_HARD, [np.ones((2, 2))], [frac([[1, 1]])]),
        "float",
    ),
    (
        "interpolation_errors",
        lambda: interpolation_errors(T_HARD, [frac([[0, 0]])], [frac([[0, 0], [1, 1]])]),
        "m = 2",
    ),
    ("T.__call__", lambda: T_HARD(frac([[1, 2, 3]])), "dimension d = 2"),
    ("T.__call__", lambda: T_HARD(np.ones(3)), "dimension d = 2"),
    ("T.error_bound", lambda: T_HARD.error_bound(1), "softmax transformers only"),
    ("T.error_bound", lambda: T_SOFT.error_bound(-1), "tau must be finite and > 0"),
    ("T.error_bound", lambda: T_SOFT.error_bound(float("nan")), "tau must be finite and > 0"),
    ("T.at_temperature", lambda: T_HARD.at_temperature(Fraction(1)), "only a softmax"),
    ("T.at_temperature", lambda: T_SOFT.at_temperature(float("-inf")), "finite"),
    # enclosures and snap layers
    (
        "softmax_attention_enclosure",
        lambda: softmax_attention_enclosure(frac([[1, 0]]), I2, 0, I2, Fraction(0)),
        "tau",
    ),
    (
        "softmax_attention_enclosure",
        lambda: softmax_attention_enclosure(frac([[1, 0]]), I2, 0, I2, 0.5),
        "float",
    ),
    (
        "softmax_attention_enclosure",
        lambda: softmax_attention_enclosure(np.ones((2, 2)), I2, 0, I2, 1),
        "float64",
    ),
    (
        "softmax_attention_enclosure",
        lambda: softmax_attention_enclosure(frac([[1, 0]]), I2, 0, frac([[1]]), 1),
        "V must have shape",
    ),
    (
        "softmax_attention_enclosure",
        lambda: softmax_attention_enclosure(frac([[1, 0]])[0], I2, 0, I2, 1),
        "shape",
    ),
    (
        "feed_forward_enclosure",
        lambda: feed_forward_enclosure(frac([[1, 0]]), frac([[0, 0]]), 1, I2, I2, [0, 0]),
        "lo must be <= hi",
    ),
    (
        "feed_forward_enclosure",
        lambda: feed_forward_enclosure(frac([[0, 0]]), frac([[1, 0, 0]]), 1, I2, I2, [0, 0]),
        "one shape",
    ),
    (
        "feed_forward_enclosure",
        lambda: feed_forward_enclosure(frac([[0, 0]]), frac([[1, 0]]), 1, I2, I2, [0]),
        "need U",
    ),
    (
        "feed_forward_enclosure",
        lambda: feed_forward_enclosure(frac([[0, 0]]), frac([[1, 0]]), 0.5, I2, I2, [0, 0]),
        "float",
    ),
    (
        "feed_forward_enclosure",
        lambda: feed_forward_enclosure(frac([[0, 0]]), frac([[1, 0]]), 1, I2, [1, 0], [0]),
        "need U",
    ),
    ("snap_layer", lambda: snap_layer([1, 0], 0, 0, [0, 0], [1, 0]), "h"),
    ("snap_layer", lambda: snap_layer([0, 0], 0, 1, [0, 0], [1, 0]), "nonzero"),
    ("snap_layer", lambda: snap_layer([1, 0, 0], 0, 1, [0, 0], [1, 0]), "one length"),
    ("snap_layer", lambda: snap_layer([1.0, np.nan], 0, 1, [0, 0], [1, 0]), "finite"),
    ("snap_layer", lambda: snap_layer(["a", 0], 0, 1, [0, 0], [1, 0]), "real numbers|rational"),
]


@pytest.mark.parametrize(
    "name, call, message", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_bad_input_raises_a_clear_value_error(name, call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_at_least_five_cases_per_function():
    counts: dict[str, int] = {}
    for name, _, _ in CASES:
        counts[name.split(".")[0]] = counts.get(name.split(".")[0], 0) + 1
    assert all(c >= 5 for c in counts.values()), counts
