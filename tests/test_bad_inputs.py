"""Bad inputs to every public function of both parts: a clear error that names the argument.

One table, one row per bad input: the function (its name in ``sxor.__all__`` or
``sxor.interp.__all__``), what is wrong, the call, and a pattern the error message must contain
(the argument's name, or the mismatch it describes). Every row must raise :class:`ValueError` or
:class:`TypeError` (never a silent result, a hang, or an error from deep inside torch or numpy)
within a hang guard of 60 s (how fast a refusal is belongs in a benchmark, not here). A coverage test requires at least five rows per public function, so a new
public function needs its rows too.

Part I's contract is in :mod:`sxor.xor.checks` (sizes are integers, never floats, even
``6.0``; tensors of one call share one dtype and device). The Part II rows are the bad inputs
Part II already refuses clearly; those it does not yet refuse (a silent result, a hang, or a
message that does not name the argument) join the table once it does.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import NamedTuple

import numpy as np
import pytest
import torch

import sxor
import sxor.interp as I
from tests.hang_guard import hang_guard


class Row(NamedTuple):
    function: str
    what: str
    call: Callable[[], object]
    names: str  # regular expression the message must match (case-insensitive)


NAN, INF = float("nan"), float("inf")
f64, f32 = torch.float64, torch.float32

# --- Part I fixtures -------------------------------------------------------------------------
D, M = 6, 4
_gen = torch.Generator().manual_seed(0)
V = sxor.sphere_embeddings(D, M, generator=_gen)
TH = torch.randn(M, generator=_gen, dtype=f64)
SUP = torch.tensor([1, 3])
G = sxor.attention(V, TH)
H = sxor.attention(V, -TH)
X = sxor.all_inputs(D)[:8]
VB = sxor.sphere_embeddings(D, M, batch=(3,), generator=_gen)
THB = torch.randn(3, M, generator=_gen, dtype=f64)
SUPB = torch.tensor([[0, 1], [2, 3], [4, 5]])


def _nan_at(t: torch.Tensor) -> torch.Tensor:
    t = t.clone()
    t.view(-1)[0] = NAN
    return t


PART1: list[Row] = []


def p1(function: str, what: str, call: Callable[[], object], names: str) -> None:
    PART1.append(Row(function, what, call, names))


# all_inputs
p1("all_inputs", "d = 6.0 (a float size)", lambda: sxor.all_inputs(6.0), r"\bd\b.*integer")
p1("all_inputs", "d = 1", lambda: sxor.all_inputs(1), r"\bd\b")
p1("all_inputs", "d = 25 (2^25 rows)", lambda: sxor.all_inputs(25, device="meta"), r"d <= 24")
p1("all_inputs", "d = '6'", lambda: sxor.all_inputs("6"), r"\bd\b")
p1("all_inputs", "d = nan", lambda: sxor.all_inputs(NAN), r"\bd\b")
p1("all_inputs", "d = inf", lambda: sxor.all_inputs(INF), r"\bd\b")
p1("all_inputs", "bool dtype", lambda: sxor.all_inputs(4, dtype=torch.bool), r"dtype")
p1("all_inputs", "unsigned dtype", lambda: sxor.all_inputs(4, dtype=torch.uint8), r"dtype")
p1("all_inputs", "dtype as a string", lambda: sxor.all_inputs(4, dtype="float64"), r"dtype")
# attention
p1("attention", "float32 theta, float64 V", lambda: sxor.attention(V, TH.float()), r"theta.*dtype")
p1("attention", "complex theta", lambda: sxor.attention(V, TH.to(torch.complex128)), r"theta")
p1(
    "attention",
    "theta of the wrong length",
    lambda: sxor.attention(V, torch.zeros(M + 1, dtype=f64)),
    r"theta.*m=",
)
p1("attention", "nan in theta", lambda: sxor.attention(V, _nan_at(TH)), r"theta.*non-finite")
p1("attention", "unknown kind", lambda: sxor.attention(V, TH, "relu"), r"kind")
p1("attention", "kind not a string", lambda: sxor.attention(V, TH, ["softmax"]), r"kind")
p1("attention", "V a list", lambda: sxor.attention(V.tolist(), TH), r"\bV\b")
p1("attention", "integer V", lambda: sxor.attention(V.long(), TH), r"\bV\b")
p1("attention", "V with one row (d = 1)", lambda: sxor.attention(V[:1], TH), r"\bd\b")
# loss_from_weights and grad_from_weights share their checks
for _name in ("loss_from_weights", "grad_from_weights"):
    _fn = getattr(sxor, _name)
    p1(_name, "support with i* = j*", lambda f=_fn: f(G, H, torch.tensor([2, 2])), r"i\* != j\*")
    p1(
        _name,
        "support out of range",
        lambda f=_fn: f(G, H, torch.tensor([1, D])),
        r"support out of range",
    )
    p1(_name, "float support", lambda f=_fn: f(G, H, torch.tensor([1.0, 3.0])), r"support.*integer")
    p1(
        _name,
        "bool support",
        lambda f=_fn: f(G, H, torch.tensor([True, False])),
        r"support.*integer",
    )
    p1(
        _name,
        "three positions",
        lambda f=_fn: f(G, H, torch.tensor([0, 1, 2])),
        r"support.*last dimension 2",
    )
    p1(_name, "g and h of different d", lambda f=_fn: f(G, H[:-1], SUP), r"one length d")
    p1(_name, "float32 h, float64 g", lambda f=_fn: f(G, H.float(), SUP), r"\bh\b.*dtype")
    p1(_name, "g a list", lambda f=_fn: f(G.tolist(), H, SUP), r"\bg\b")
    p1(_name, "integer weights", lambda f=_fn: f(G.long(), H.long(), SUP), r"\bg\b")
    p1(
        _name,
        "batch shapes do not broadcast",
        lambda f=_fn: f(G.expand(3, D), H.expand(2, D), SUP),
        r"batch shapes",
    )
# one_step
p1("one_step", "complex eta", lambda: sxor.one_step(V, TH, SUP, 1 + 2j), r"eta")
p1("one_step", "string eta", lambda: sxor.one_step(V, TH, SUP, "100"), r"eta")
p1("one_step", "bool eta", lambda: sxor.one_step(V, TH, SUP, True), r"eta")
p1(
    "one_step",
    "eta shape not matching the batch",
    lambda: sxor.one_step(VB, THB, SUPB, torch.ones(2, dtype=f64)),
    r"eta.*batch",
)
p1("one_step", "negative eta", lambda: sxor.one_step(V, TH, SUP, -1.0), r"eta.*non-negative")
p1("one_step", "nan eta", lambda: sxor.one_step(V, TH, SUP, NAN), r"eta.*non-finite")
p1("one_step", "complex eta tensor", lambda: sxor.one_step(V, TH, SUP, torch.tensor(1j)), r"eta")
p1("one_step", "float32 theta0", lambda: sxor.one_step(V, TH.float(), SUP, 10.0), r"theta.*dtype")
p1(
    "one_step",
    "support with i* = j*",
    lambda: sxor.one_step(V, TH, torch.tensor([0, 0]), 10.0),
    r"i\* != j\*",
)
p1("one_step", "theta0 a list", lambda: sxor.one_step(V, TH.tolist(), SUP, 10.0), r"theta0")
p1("one_step", "unknown kind", lambda: sxor.one_step(V, TH, SUP, 10.0, kind="hard"), r"kind")
# population_loss and population_grad share their checks
for _name in ("population_loss", "population_grad"):
    _fn = getattr(sxor, _name)
    p1(_name, "nan in V", lambda f=_fn: f(_nan_at(V), TH, -TH, SUP), r"\bV\b.*non-finite")
    p1(_name, "complex theta", lambda f=_fn: f(V, TH.to(torch.complex128), -TH, SUP), r"theta")
    p1(
        _name,
        "float32 theta_tilde",
        lambda f=_fn: f(V, TH, -TH.float(), SUP),
        r"theta_tilde.*dtype",
    )
    p1(
        _name,
        "support with i* = j*",
        lambda f=_fn: f(V, TH, -TH, torch.tensor([4, 4])),
        r"i\* != j\*",
    )
    p1(
        _name,
        "theta_tilde of the wrong length",
        lambda f=_fn: f(V, TH, torch.zeros(2, dtype=f64), SUP),
        r"theta_tilde.*m=",
    )
    p1(
        _name,
        "batch shapes do not broadcast",
        lambda f=_fn: f(VB, THB[:2], -THB[:2], SUPB),
        r"batch shapes",
    )
    p1(_name, "unknown kind", lambda f=_fn: f(V, TH, -TH, SUP, "hard"), r"kind")
    p1(_name, "support a string", lambda f=_fn: f(V, TH, -TH, "ab"), r"support")
# predict
p1("predict", "nan in x", lambda: sxor.predict(_nan_at(X), V, TH, -TH), r"\bx\b.*non-finite")
p1("predict", "x of the wrong d", lambda: sxor.predict(X[:, :-1], V, TH, -TH), r"\bx\b.*d=")
p1("predict", "complex x", lambda: sxor.predict(X.to(torch.complex128), V, TH, -TH), r"\bx\b")
p1("predict", "nan in theta", lambda: sxor.predict(X, V, _nan_at(TH), -TH), r"theta.*non-finite")
p1(
    "predict",
    "float32 theta_tilde",
    lambda: sxor.predict(X, V, TH, -TH.float()),
    r"theta_tilde.*dtype",
)
p1("predict", "x one-dimensional", lambda: sxor.predict(X[0], V, TH, -TH), r"\bx\b")
p1("predict", "nan in V", lambda: sxor.predict(X, _nan_at(V), TH, -TH), r"\bV\b.*non-finite")
# predict_from_weights
p1(
    "predict_from_weights",
    "nan in gamma",
    lambda: sxor.predict_from_weights(X, _nan_at(G), H),
    r"gamma.*non-finite",
)
p1(
    "predict_from_weights",
    "nan in x",
    lambda: sxor.predict_from_weights(_nan_at(X), G, H),
    r"\bx\b.*non-finite",
)
p1(
    "predict_from_weights",
    "weights of different d",
    lambda: sxor.predict_from_weights(X, G, H[:-1]),
    r"one length d",
)
p1(
    "predict_from_weights",
    "x of the wrong d",
    lambda: sxor.predict_from_weights(X[:, :-1], G, H),
    r"\bx\b.*d=",
)
p1(
    "predict_from_weights",
    "complex gamma",
    lambda: sxor.predict_from_weights(X, G.to(torch.complex128), H),
    r"gamma",
)
p1(
    "predict_from_weights",
    "float32 gamma_tilde",
    lambda: sxor.predict_from_weights(X, G, H.float()),
    r"gamma_tilde.*dtype",
)
p1(
    "predict_from_weights",
    "x one-dimensional",
    lambda: sxor.predict_from_weights(X[0], G, H),
    r"\bx\b",
)
# random_support
p1("random_support", "d = 1", lambda: sxor.random_support(1), r"\bd\b")
p1("random_support", "d = 6.0", lambda: sxor.random_support(6.0), r"\bd\b.*integer")
p1("random_support", "d = '6'", lambda: sxor.random_support("6"), r"\bd\b")
p1("random_support", "batch = (2.5,)", lambda: sxor.random_support(6, batch=(2.5,)), r"batch")
p1("random_support", "batch = 5 (not a tuple)", lambda: sxor.random_support(6, batch=5), r"batch")
p1("random_support", "batch = (-1,)", lambda: sxor.random_support(6, batch=(-1,)), r"batch")
p1("random_support", "generator a seed", lambda: sxor.random_support(6, generator=0), r"generator")
# sample_sparse_xor
p1("sample_sparse_xor", "n = 0", lambda: sxor.sample_sparse_xor(0, D, (1, 3)), r"\bn\b")
p1(
    "sample_sparse_xor",
    "n = 2.5",
    lambda: sxor.sample_sparse_xor(2.5, D, (1, 3)),
    r"\bn\b.*integer",
)
p1("sample_sparse_xor", "d = 1", lambda: sxor.sample_sparse_xor(4, 1, (0, 0)), r"\bd\b")
p1(
    "sample_sparse_xor",
    "support (1, 1)",
    lambda: sxor.sample_sparse_xor(4, D, (1, 1)),
    r"i\* != j\*",
)
p1(
    "sample_sparse_xor",
    "support out of range",
    lambda: sxor.sample_sparse_xor(4, D, (1, 9)),
    r"support out of range",
)
p1(
    "sample_sparse_xor",
    "bool dtype",
    lambda: sxor.sample_sparse_xor(4, D, (1, 3), dtype=torch.bool),
    r"dtype",
)
p1(
    "sample_sparse_xor",
    "unsigned dtype",
    lambda: sxor.sample_sparse_xor(4, D, (1, 3), dtype=torch.uint8),
    r"dtype",
)
p1("sample_sparse_xor", "support a string", lambda: sxor.sample_sparse_xor(4, D, "ab"), r"support")
p1(
    "sample_sparse_xor",
    "float support",
    lambda: sxor.sample_sparse_xor(4, D, (0.5, 1.0)),
    r"support.*integer",
)
p1("sample_sparse_xor", "two supports", lambda: sxor.sample_sparse_xor(4, D, SUPB), r"one support")
# scores
p1("scores", "nan in V", lambda: sxor.scores(_nan_at(V), TH), r"\bV\b.*non-finite")
p1("scores", "nan in theta", lambda: sxor.scores(V, _nan_at(TH)), r"theta.*non-finite")
p1("scores", "float32 theta, float64 V", lambda: sxor.scores(V, TH.float()), r"theta.*dtype")
p1("scores", "complex theta", lambda: sxor.scores(V, TH.to(torch.complex128)), r"theta")
p1(
    "scores",
    "theta of the wrong length",
    lambda: sxor.scores(V, torch.zeros(M - 1, dtype=f64)),
    r"theta.*m=",
)
p1("scores", "V a list", lambda: sxor.scores(V.tolist(), TH), r"\bV\b")
p1("scores", "complex V", lambda: sxor.scores(V.to(torch.complex128), TH), r"\bV\b")
# sparse_xor_labels
p1(
    "sparse_xor_labels",
    "support with i* = j*",
    lambda: sxor.sparse_xor_labels(X, torch.tensor([2, 2])),
    r"i\* != j\*",
)
p1(
    "sparse_xor_labels",
    "support out of range",
    lambda: sxor.sparse_xor_labels(X, torch.tensor([0, D])),
    r"support out of range",
)
p1("sparse_xor_labels", "x one-dimensional", lambda: sxor.sparse_xor_labels(X[0], SUP), r"\bx\b")
p1(
    "sparse_xor_labels",
    "unsigned x",
    lambda: sxor.sparse_xor_labels(X.to(torch.uint8), SUP),
    r"\bx\b",
)
p1(
    "sparse_xor_labels",
    "float support",
    lambda: sxor.sparse_xor_labels(X, torch.tensor([0.0, 1.0])),
    r"support.*integer",
)
p1("sparse_xor_labels", "x a list", lambda: sxor.sparse_xor_labels(X.tolist(), SUP), r"\bx\b")
p1(
    "sparse_xor_labels",
    "batch shapes do not broadcast",
    lambda: sxor.sparse_xor_labels(X.expand(2, 8, D), SUPB),
    r"batch shapes",
)
# sphere_embeddings
p1("sphere_embeddings", "d = 1", lambda: sxor.sphere_embeddings(1, M), r"\bd\b")
p1("sphere_embeddings", "m = 0", lambda: sxor.sphere_embeddings(D, 0), r"\bm\b")
p1("sphere_embeddings", "d = 6.0", lambda: sxor.sphere_embeddings(6.0, M), r"\bd\b.*integer")
p1("sphere_embeddings", "m = nan", lambda: sxor.sphere_embeddings(D, NAN), r"\bm\b")
p1("sphere_embeddings", "m = inf", lambda: sxor.sphere_embeddings(D, INF), r"\bm\b")
p1(
    "sphere_embeddings",
    "complex dtype",
    lambda: sxor.sphere_embeddings(D, M, dtype=torch.complex128),
    r"dtype",
)
p1(
    "sphere_embeddings",
    "integer dtype",
    lambda: sxor.sphere_embeddings(D, M, dtype=torch.int64),
    r"dtype",
)
p1(
    "sphere_embeddings",
    "batch = (2.0,)",
    lambda: sxor.sphere_embeddings(D, M, batch=(2.0,)),
    r"batch",
)

# --- Part II fixtures ------------------------------------------------------------------------
F = Fraction
XE = I.as_exact([[1, 0], [0, 1], [1, 1]])
XF = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=f64)
AE, AF = I.identity_matrix(2), torch.eye(2, dtype=f64)
EYE3 = torch.eye(3, dtype=f64)
FF = {
    "eta": 1.0,
    "W": torch.zeros(2, 3, dtype=f64),
    "U": torch.zeros(3, 2, dtype=f64),
    "b": torch.zeros(3, dtype=f64),
}
FFE = {
    "eta": 1,
    "W": I.as_exact(np.zeros((2, 3), dtype=int)),
    "U": I.as_exact(np.zeros((3, 2), dtype=int)),
    "b": I.as_exact(np.zeros(3, dtype=int)),
}
PTS = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
SNAP = {"v": [1, 0], "s": 0, "h": F(1, 2), "p": [1, 1], "q": [1, 0]}
INPUTS, TARGETS = I.random_dataset(2, 3, 2, 2, seed=0)
T_HARD = I.construct(INPUTS, TARGETS)
T_SOFT = I.construct(INPUTS, TARGETS, "softmax")

# --- found by the hostile probes: meta tensors, index dtypes, batch mismatches, huge sizes -----
META = torch.device("meta")
p1(
    "attention",
    "V on the meta device",
    lambda: sxor.attention(V.to(META), TH.to(META)),
    r"\bV\b.*meta",
)
p1("scores", "theta on the meta device", lambda: sxor.scores(V, TH.to(META)), r"theta.*meta")
p1(
    "one_step",
    "V and theta0 on the meta device",
    lambda: sxor.one_step(V.to(META), TH.to(META), SUP.to(META), 0.1),
    r"meta",
)
p1(
    "predict",
    "x on the meta device",
    lambda: sxor.predict(X.to(META), V, TH, -TH),
    r"\bx\b.*meta",
)
p1(
    "attention",
    "theta batch (2,) against V batch (3,)",
    lambda: sxor.attention(VB, THB[:2]),
    r"batch.*theta.*V",
)
p1(
    "scores",
    "theta batch (2,) against V batch (3,)",
    lambda: sxor.scores(VB, THB[:2]),
    r"batch.*theta",
)
p1(
    "predict",
    "theta_tilde batch (2,) against V batch (3,)",
    lambda: sxor.predict(X, VB, THB, THB[:2]),
    r"batch.*theta_tilde",
)
p1(
    "predict_from_weights",
    "x batch (2,) against weights batch (3,)",
    lambda: sxor.predict_from_weights(X.expand(2, 8, D), G.expand(3, D), H.expand(3, D)),
    r"batch.*\bx\b",
)
p1("random_support", "d = 10^30", lambda: sxor.random_support(10**30), r"\bd\b.*2\^62")
p1("sphere_embeddings", "d = 2^63", lambda: sxor.sphere_embeddings(2**63, 2), r"\bd\b")


PART2: list[Row] = []


def p2(function: str, what: str, call: Callable[[], object], names: str) -> None:
    PART2.append(Row(function, what, call, names))


# as_exact
p2("as_exact", "float entries", lambda: I.as_exact([0.5, 1]), r"float")
p2("as_exact", "float tensor", lambda: I.as_exact(torch.tensor([0.5])), r"float")
p2("as_exact", "non-rational string", lambda: I.as_exact(["x"]), r"string")
p2("as_exact", "bool entry", lambda: I.as_exact([True, 1]), r"bool")
p2("as_exact", "complex array", lambda: I.as_exact(np.array([1j])), r"dtype complex")
p2("as_exact", "None", lambda: I.as_exact(None), r"None")
p2("as_exact", "nan", lambda: I.as_exact([NAN]), r"nan")
# attention_scores
p2(
    "attention_scores",
    "A of the wrong shape",
    lambda: I.attention_scores(XE, I.identity_matrix(3)),
    r"\bA\b",
)
p2("attention_scores", "float A with exact X", lambda: I.attention_scores(XE, np.eye(2)), r"\bA\b")
p2(
    "attention_scores",
    "X one-dimensional",
    lambda: I.attention_scores(torch.ones(3, dtype=f64), AF),
    r"\bX\b",
)
p2(
    "attention_scores",
    "X with no tokens",
    lambda: I.attention_scores(torch.ones(0, 2, dtype=f64), AF),
    r"\bX\b",
)
p2(
    "attention_scores",
    "nan in X",
    lambda: I.attention_scores(torch.tensor([[NAN, 0.0]]), AF),
    r"\bX\b.*non-finite",
)
p2(
    "attention_scores",
    "complex X",
    lambda: I.attention_scores(torch.ones(2, 2, dtype=torch.complex128), AF),
    r"\bX\b",
)
p2("attention_scores", "X a list", lambda: I.attention_scores([[1.0, 0.0]], AF), r"\bX\b")
p2(
    "attention_scores",
    "nan in A",
    lambda: I.attention_scores(XF, torch.tensor([[NAN, 0.0], [0.0, 1.0]])),
    r"\bA\b",
)
# attention_trajectory
p2(
    "attention_trajectory",
    "steps = -1",
    lambda: I.attention_trajectory(XF, AF, 0.5, 0.5 * AF, 0, -1),
    r"steps",
)
p2(
    "attention_trajectory",
    "steps = 1.5",
    lambda: I.attention_trajectory(XF, AF, 0.5, 0.5 * AF, 0, 1.5),
    r"steps",
)
p2(
    "attention_trajectory",
    "tau = -1",
    lambda: I.attention_trajectory(XF, AF, 0.5, 0.5 * AF, -1, 2),
    r"tau",
)
p2(
    "attention_trajectory",
    "rho = nan",
    lambda: I.attention_trajectory(XF, AF, NAN, 0.5 * AF, 0, 2),
    r"rho",
)
p2(
    "attention_trajectory",
    "V of the wrong shape",
    lambda: I.attention_trajectory(XF, AF, 0.5, EYE3, 0, 2),
    r"\bV\b",
)
# attention_weights
p2("attention_weights", "tau = -1", lambda: I.attention_weights(XF, AF, -1), r"tau")
p2("attention_weights", "tau = nan", lambda: I.attention_weights(XF, AF, NAN), r"tau")
p2("attention_weights", "tau = inf", lambda: I.attention_weights(XF, AF, INF), r"tau")
p2("attention_weights", "tau a string", lambda: I.attention_weights(XF, AF, "0.1"), r"tau")
p2("attention_weights", "tau a bool", lambda: I.attention_weights(XF, AF, True), r"tau")
p2("attention_weights", "softmax on exact X", lambda: I.attention_weights(XE, AE, F(1, 2)), r"tau")
p2("attention_weights", "A of the wrong shape", lambda: I.attention_weights(XF, EYE3), r"\bA\b")
# check_dataset
p2("check_dataset", "N = 0", lambda: I.check_dataset([], []), r"empty")
p2(
    "check_dataset",
    "d = 1 with some m_j > 1",
    lambda: I.check_dataset([[[1], [2]]], [[[1], [2]]]),
    r"\bd\b",
)
p2(
    "check_dataset",
    "a repeated token",
    lambda: I.check_dataset([[[1, 0], [1, 0]]], [[[0, 0]]]),
    r"inputs\[0\]",
)
p2(
    "check_dataset",
    "m > n",
    lambda: I.check_dataset([[[1, 0]]], [[[0, 0], [1, 1]]]),
    r"targets\[0\]",
)
p2(
    "check_dataset",
    "two inputs with one set of tokens",
    lambda: I.check_dataset([[[1, 0], [0, 1]], [[0, 1], [1, 0]]], [[[0, 0]], [[1, 1]]]),
    r"inputs\[0\]",
)
p2(
    "check_dataset",
    "mixed d",
    lambda: I.check_dataset([[[1, 0]], [[1, 0, 0]]], [[[0, 0]], [[1, 1, 1]]]),
    r"inputs\[1\]",
)
p2("check_dataset", "nan token", lambda: I.check_dataset([[[NAN, 0]]], [[[0, 0]]]), r"inputs\[0\]")
p2(
    "check_dataset",
    "string token",
    lambda: I.check_dataset([[["a", 0]]], [[[0, 0]]]),
    r"inputs\[0\]",
)
p2(
    "check_dataset",
    "more inputs than targets",
    lambda: I.check_dataset(INPUTS, TARGETS[:1]),
    r"target",
)
# construct
p2("construct", "unknown attention", lambda: I.construct(INPUTS, TARGETS, "linear"), r"attention")
p2(
    "construct",
    "attention not a string",
    lambda: I.construct(INPUTS, TARGETS, ["hardmax"]),
    r"attention",
)
p2(
    "construct",
    "hardmax with a temperature",
    lambda: I.construct(INPUTS, TARGETS, "hardmax", tau=0.1),
    r"tau",
)
p2(
    "construct",
    "softmax tau = nan",
    lambda: I.construct(INPUTS, TARGETS, "softmax", tau=NAN),
    r"tau",
)
p2("construct", "softmax tau = -1", lambda: I.construct(INPUTS, TARGETS, "softmax", tau=-1), r"tau")
p2("construct", "N = 0", lambda: I.construct([], []), r"empty")
p2("construct", "more inputs than targets", lambda: I.construct(INPUTS, TARGETS[:1]), r"target")
# feed_forward
p2(
    "feed_forward",
    "U of the wrong shape",
    lambda: I.feed_forward(XF, **{**FF, "U": torch.zeros(3, 3, dtype=f64)}),
    r"\bU\b",
)
p2(
    "feed_forward",
    "b of the wrong shape",
    lambda: I.feed_forward(XF, **{**FF, "b": torch.zeros(2, dtype=f64)}),
    r"\bb\b",
)
p2(
    "feed_forward",
    "W of the wrong shape",
    lambda: I.feed_forward(XF, **{**FF, "W": torch.zeros(3, 3, dtype=f64)}),
    r"\bW\b",
)
p2("feed_forward", "eta = nan", lambda: I.feed_forward(XF, **{**FF, "eta": NAN}), r"eta")
p2("feed_forward", "eta a string", lambda: I.feed_forward(XF, **{**FF, "eta": "1"}), r"eta")
p2(
    "feed_forward",
    "integer tensor X",
    lambda: I.feed_forward(torch.ones(2, 2, dtype=torch.long), **FF),
    r"\bX\b",
)
p2(
    "feed_forward",
    "float eta with exact X",
    lambda: I.feed_forward(XE, **{**FFE, "eta": 0.5}),
    r"eta",
)
p2(
    "feed_forward",
    "nan in U",
    lambda: I.feed_forward(XF, **{**FF, "U": torch.full((3, 2), NAN, dtype=f64)}),
    r"\bU\b",
)
# feed_forward_enclosure
p2(
    "feed_forward_enclosure",
    "lo > hi",
    lambda: I.feed_forward_enclosure([[1, 1]], [[0, 0]], **FFE),
    r"\blo\b",
)
p2(
    "feed_forward_enclosure",
    "lo and hi of different shapes",
    lambda: I.feed_forward_enclosure([[0, 0]], [[1, 1, 1]], **FFE),
    r"\blo\b",
)
p2(
    "feed_forward_enclosure",
    "float lo",
    lambda: I.feed_forward_enclosure([[0.5, 0]], [[1, 1]], **FFE),
    r"\blo\b",
)
p2(
    "feed_forward_enclosure",
    "U of the wrong shape",
    lambda: I.feed_forward_enclosure(
        [[0, 0]], [[1, 1]], **{**FFE, "U": I.as_exact(np.zeros((3, 3), dtype=int))}
    ),
    r"\bU\b",
)
p2(
    "feed_forward_enclosure",
    "float eta",
    lambda: I.feed_forward_enclosure([[0, 0]], [[1, 1]], **{**FFE, "eta": 0.5}),
    r"eta",
)
p2(
    "feed_forward_enclosure",
    "one-dimensional lo",
    lambda: I.feed_forward_enclosure([0, 0], [1, 1], **FFE),
    r"\blo\b",
)
# hausdorff and hausdorff_squared share their checks
for _name in ("hausdorff", "hausdorff_squared"):
    _fn = getattr(I, _name)
    p2(
        _name,
        "different token dimensions",
        lambda f=_fn: f(XF, torch.ones(2, 3, dtype=f64)),
        r"dimension d",
    )
    p2(_name, "P with no tokens", lambda f=_fn: f(torch.ones(0, 2, dtype=f64), XF), r"\bP\b")
    p2(_name, "nan in Q", lambda f=_fn: f(XF, torch.tensor([[NAN, 0.0]], dtype=f64)), r"\bQ\b")
    p2(_name, "P one-dimensional", lambda f=_fn: f(torch.ones(2, dtype=f64), XF), r"\bP\b")
    p2(_name, "P a string", lambda f=_fn: f("ab", XF), r"\bP\b")
    p2(_name, "float Q with exact P", lambda f=_fn: f(XE, [[0.5, 0.5]]), r"\bQ\b")
# identity_layer and identity_matrix share their checks
for _name in ("identity_layer", "identity_matrix"):
    _fn = getattr(I, _name)
    p2(_name, "d = 0", lambda f=_fn: f(0), r"\bd\b")
    p2(_name, "d = -1", lambda f=_fn: f(-1), r"\bd\b")
    p2(_name, "d = 1.5", lambda f=_fn: f(1.5), r"\bd\b")
    p2(_name, "d = 0.5", lambda f=_fn: f(0.5), r"\bd\b")
    p2(_name, "d = '2'", lambda f=_fn: f("2"), r"\bd\b")
# interpolation_errors
p2("interpolation_errors", "N = 0", lambda: I.interpolation_errors(T_HARD, [], []), r"empty")
p2(
    "interpolation_errors",
    "m > n",
    lambda: I.interpolation_errors(T_HARD, [[[1, 0]]], [[[0, 0], [1, 1]]]),
    r"targets\[0\]",
)
p2(
    "interpolation_errors",
    "a repeated token",
    lambda: I.interpolation_errors(T_HARD, [[[1, 0], [1, 0]]], [[[0, 0]]]),
    r"inputs\[0\]",
)
p2(
    "interpolation_errors",
    "string token",
    lambda: I.interpolation_errors(T_HARD, [[["a", "b"]]], [[[0, 0]]]),
    r"inputs\[0\]",
)
p2(
    "interpolation_errors",
    "nan token",
    lambda: I.interpolation_errors(T_HARD, [[[NAN, 0.0]]], [[[0, 0]]]),
    r"inputs\[0\]",
)
p2(
    "interpolation_errors",
    "mixed d in the dataset",
    lambda: I.interpolation_errors(T_HARD, [[[1, 0]], [[1, 0, 0]]], [[[0, 0]], [[1, 1, 1]]]),
    r"inputs\[1\]",
)
# leaders
p2(
    "leaders",
    "X three-dimensional",
    lambda: I.leaders(torch.ones(2, 2, 2, dtype=f64), AF),
    r"\bX\b",
)
p2("leaders", "A of the wrong shape", lambda: I.leaders(XF, EYE3), r"\bA\b")
p2("leaders", "nan in X", lambda: I.leaders(torch.tensor([[NAN, 0.0]]), AF), r"\bX\b")
p2("leaders", "X a string", lambda: I.leaders("abc", AF), r"\bX\b")
p2("leaders", "float A with exact X", lambda: I.leaders(XE, np.eye(2)), r"\bA\b")
p2("leaders", "X one-dimensional", lambda: I.leaders(torch.ones(2, dtype=f64), AF), r"\bX\b")
# random_dataset
p2("random_dataset", "d = 1", lambda: I.random_dataset(2, 3, 2, 1), r"\bd\b")
p2("random_dataset", "m > n", lambda: I.random_dataset(2, 2, 3, 2), r"m_j <= n_j")
p2(
    "random_dataset",
    "n a list of the wrong length",
    lambda: I.random_dataset(2, [3], 2, 2),
    r"\bn\b",
)
p2(
    "random_dataset",
    "m a list of the wrong length",
    lambda: I.random_dataset(2, 3, [2], 2),
    r"\bm\b",
)
p2("random_dataset", "n = 0", lambda: I.random_dataset(2, 0, 0, 2), r"n_j")
p2("random_dataset", "n = -1", lambda: I.random_dataset(2, -1, 1, 2), r"n_j")
# rank_one_layer
p2("rank_one_layer", "v = 0", lambda: I.rank_one_layer([0, 0]), r"\bv\b")
p2("rank_one_layer", "v two-dimensional", lambda: I.rank_one_layer([[1, 0]]), r"\bv\b")
p2("rank_one_layer", "empty v", lambda: I.rank_one_layer([]), r"\bv\b")
p2("rank_one_layer", "float v", lambda: I.rank_one_layer([0.5, 1]), r"\bv\b")
p2("rank_one_layer", "string v", lambda: I.rank_one_layer(["a", "b"]), r"\bv\b")
p2("rank_one_layer", "v = None", lambda: I.rank_one_layer(None), r"\bv\b")
# self_attention
p2("self_attention", "V of the wrong shape", lambda: I.self_attention(XF, AF, 0.0, EYE3), r"\bV\b")
p2("self_attention", "rho = nan", lambda: I.self_attention(XF, AF, NAN, AF), r"rho")
p2("self_attention", "rho a string", lambda: I.self_attention(XF, AF, "0", AF), r"rho")
p2("self_attention", "tau = -1", lambda: I.self_attention(XF, AF, 0.0, AF, -1), r"tau")
p2(
    "self_attention",
    "float A with exact X",
    lambda: I.self_attention(XE, np.eye(2), 0, AE),
    r"\bA\b",
)
p2("self_attention", "float rho with exact X", lambda: I.self_attention(XE, AE, 0.5, AE), r"rho")
# snap_layer
p2("snap_layer", "h = 0", lambda: I.snap_layer(**{**SNAP, "h": 0}), r"\bh\b")
p2("snap_layer", "h = -1", lambda: I.snap_layer(**{**SNAP, "h": -1}), r"\bh\b")
p2("snap_layer", "v = 0", lambda: I.snap_layer(**{**SNAP, "v": [0, 0]}), r"\bv\b")
p2("snap_layer", "p of another length", lambda: I.snap_layer(**{**SNAP, "p": [1, 1, 1]}), r"\bp\b")
p2("snap_layer", "v two-dimensional", lambda: I.snap_layer(**{**SNAP, "v": [[1, 0]]}), r"\bv\b")
# softmax_attention_enclosure
p2(
    "softmax_attention_enclosure",
    "tau = 0",
    lambda: I.softmax_attention_enclosure(XE, AE, 0, AE, 0),
    r"tau",
)
p2(
    "softmax_attention_enclosure",
    "tau = -1",
    lambda: I.softmax_attention_enclosure(XE, AE, 0, AE, -1),
    r"tau",
)
p2(
    "softmax_attention_enclosure",
    "float tau",
    lambda: I.softmax_attention_enclosure(XE, AE, 0, AE, 0.5),
    r"tau",
)
p2(
    "softmax_attention_enclosure",
    "X one-dimensional",
    lambda: I.softmax_attention_enclosure([1, 0], AE, 0, AE, 1),
    r"\bX\b",
)
p2(
    "softmax_attention_enclosure",
    "V of the wrong shape",
    lambda: I.softmax_attention_enclosure(XE, AE, 0, I.identity_matrix(3), 1),
    r"\bV\b",
)
p2(
    "softmax_attention_enclosure",
    "A of the wrong shape",
    lambda: I.softmax_attention_enclosure(XE, I.identity_matrix(3), 0, AE, 1),
    r"\bA\b",
)
# softmax_certificate
p2(
    "softmax_certificate",
    "tau = -1",
    lambda: I.softmax_certificate(T_SOFT, INPUTS, TARGETS, -1),
    r"tau",
)
p2(
    "softmax_certificate",
    "tau = 0",
    lambda: I.softmax_certificate(T_SOFT, INPUTS, TARGETS, 0),
    r"tau",
)
p2(
    "softmax_certificate",
    "tau = -1/2",
    lambda: I.softmax_certificate(T_SOFT, INPUTS, TARGETS, F(-1, 2)),
    r"tau",
)
p2(
    "softmax_certificate",
    "a hardmax network",
    lambda: I.softmax_certificate(T_HARD, INPUTS, TARGETS),
    r"softmax",
)
p2("softmax_certificate", "N = 0", lambda: I.softmax_certificate(T_SOFT, [], []), r"empty")
p2(
    "softmax_certificate",
    "a repeated token",
    lambda: I.softmax_certificate(T_SOFT, [[[1, 0], [1, 0]]], [[[0, 0]]]),
    r"inputs\[0\]",
)
# the returned network's methods
p2(
    "InterpolatingTransformer",
    "call on one-dimensional tokens",
    lambda: T_HARD(I.as_exact([1, 0])),
    r"dimension d = 2",
)
p2(
    "InterpolatingTransformer",
    "call on nan tokens",
    lambda: T_HARD(np.array([[NAN, 0.0]])),
    r"\bX\b",
)
p2("InterpolatingTransformer", "error_bound at tau = -1", lambda: T_SOFT.error_bound(-1), r"tau")
p2("InterpolatingTransformer", "error_bound at tau = nan", lambda: T_SOFT.error_bound(NAN), r"tau")
p2(
    "InterpolatingTransformer",
    "error_bound of a hardmax network",
    lambda: T_HARD.error_bound(0.1),
    r"softmax",
)
p2("InterpolatingTransformer", "error_bound at tau = 'x'", lambda: T_SOFT.error_bound("x"), r"tau")
p2("InterpolatingTransformer", "map of an int", lambda: T_HARD.map(5), r"sequences")
p2("check_dataset", "ints instead of lists", lambda: I.check_dataset(5, 5), r"inputs")
p2(
    "softmax_certificate",
    "T a string",
    lambda: I.softmax_certificate("T", INPUTS, TARGETS),
    r"\bT\b",
)
p2(
    "interpolation_errors",
    "T a string",
    lambda: I.interpolation_errors("T", INPUTS, TARGETS),
    r"\bT\b",
)
# the clustering helpers refuse what is not a real point cloud
p2(
    "convex_hull_2d",
    "a nan point",
    lambda: I.convex_hull_2d(np.array([[0, 0], [1, 0], [NAN, 1], [0, 1]])),
    r"points",
)
p2(
    "convex_hull_2d",
    "an inf point",
    lambda: I.convex_hull_2d(np.array([[0, 0], [1, 0], [np.inf, 1], [0, 1]])),
    r"points",
)
p2(
    "convex_hull_2d",
    "complex points",
    lambda: I.convex_hull_2d(np.array([[0, 0], [1, 0], [1j, 1], [0, 1]])),
    r"points",
)
p2(
    "convex_hull_2d",
    "one-dimensional input",
    lambda: I.convex_hull_2d(np.array([0, 1, 2])),
    r"points",
)
p2("convex_hull_2d", "a string", lambda: I.convex_hull_2d("abc"), r"points")
p2(
    "distinct_points",
    "tol = nan",
    lambda: I.distinct_points(np.array([[0.0, 1.0]]), tol=NAN),
    r"\btol\b",
)
p2(
    "distinct_points",
    "tol a string",
    lambda: I.distinct_points(np.array([[0.0, 1.0]]), tol="0"),
    r"\btol\b",
)
p2("distinct_points", "a nan row", lambda: I.distinct_points(np.array([[NAN, 0.0]])), r"\bX\b")
p2("distinct_points", "an inf row", lambda: I.distinct_points(np.array([[np.inf, 0.0]])), r"\bX\b")
p2("distinct_points", "a string", lambda: I.distinct_points("abc"), r"\bX\b")

# --- found by the hostile probes: meta tensors and allocations past the limit ---------------
p2(
    "attention_scores",
    "tokens on the meta device",
    lambda: I.attention_scores(torch.zeros(3, 2, device="meta"), torch.eye(2)),
    r"\bX\b.*meta",
)
p2(
    "construct",
    "an input on the meta device",
    lambda: I.construct([torch.zeros(3, 2, dtype=torch.long, device="meta")], [[[1, 1]]]),
    r"inputs\[0\].*meta",
)
p2(
    "self_attention",
    "10^5 tokens (a 37 GiB score matrix)",
    lambda: I.self_attention(torch.zeros(10**5, 2), torch.eye(2), 1.0, torch.eye(2), 1.0),
    r"scores.*GiB.*MAX_BYTES",
)
p2(
    "hausdorff",
    "10^5 tokens against 10^5 (74 GiB of differences)",
    lambda: I.hausdorff(torch.zeros(10**5, 2), torch.zeros(10**5, 2)),
    r"GiB.*MAX_BYTES",
)
p2(
    "as_exact",
    "a string with exponent 10^9",
    lambda: I.as_exact([["1e1000000000"]]),
    r"exponent",
)
p2("as_exact", "a string of 5000 digits", lambda: I.as_exact([["7" * 5000]]), r"digits")

#: Public names that take no argument to get wrong, with the reason.
EXEMPT = {
    "ATTENTION_KINDS": "a registry (dict), not a function; a bad name is a row of attention",
    "OneStepResult": "a NamedTuple of results, built only by one_step",
    "default_device": "takes no argument",
    "is_exact": "a predicate defined for every object (returns False for anything not an object array)",
}


def _run(row: Row) -> None:
    with (
        hang_guard(f"{row.function} with {row.what}"),
        pytest.raises((ValueError, TypeError)) as info,
    ):
        row.call()
    assert info.match(f"(?i){row.names}"), (
        f"{row.function} with {row.what}: message {str(info.value)!r}"
    )


@pytest.mark.parametrize("row", PART1, ids=[f"{r.function}: {r.what}" for r in PART1])
def test_part1_refuses_bad_input_clearly(row: Row) -> None:
    _run(row)


@pytest.mark.parametrize("row", PART2, ids=[f"{r.function}: {r.what}" for r in PART2])
def test_part2_refuses_bad_input_clearly(row: Row) -> None:
    _run(row)


@pytest.mark.parametrize("module, rows", [(sxor, PART1), (I, PART2)], ids=["sxor", "sxor.interp"])
def test_every_public_function_has_five_bad_inputs(module, rows) -> None:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.function] = counts.get(row.function, 0) + 1
    unknown = set(counts) - set(module.__all__)
    assert not unknown, f"rows for names not in {module.__name__}.__all__: {sorted(unknown)}"
    short = {
        name: counts.get(name, 0)
        for name in module.__all__
        if name not in EXEMPT and counts.get(name, 0) < 5
    }
    assert not short, f"public functions with fewer than five bad-input rows: {short}"


def test_integer_valued_float_sizes_are_refused_consistently() -> None:
    # The documented policy of sxor.xor.checks: sizes are integers, never floats, even 6.0.
    for call in (
        lambda: sxor.all_inputs(6.0),
        lambda: sxor.random_support(6.0),
        lambda: sxor.sphere_embeddings(6, 4.0),
        lambda: sxor.sample_sparse_xor(8.0, 6, (0, 1)),
    ):
        with pytest.raises(TypeError, match="integer"):
            call()
    # ... and integer scalars of numpy and torch are integers.
    assert sxor.all_inputs(np.int64(3)).shape == (8, 3)
    assert sxor.sphere_embeddings(torch.tensor(3), np.int32(2)).shape == (3, 2)


def test_propagation_that_is_allowed() -> None:
    # Non-finite weights are not refused by loss_from_weights: a diverging run records them.
    g = torch.full((D,), NAN, dtype=f64)
    assert bool(torch.isnan(sxor.loss_from_weights(g, H, SUP)))
    # Integer inputs x in {+1, -1} are converted exactly to the weights' dtype.
    y = sxor.predict_from_weights(X.long(), G, H)
    torch.testing.assert_close(y, sxor.predict_from_weights(X, G, H))


def test_allocations_above_the_available_memory_are_refused_before_allocating(monkeypatch):
    import sxor.results

    monkeypatch.setattr(sxor.results, "available_memory", lambda device=None: 2**20)
    with pytest.raises(ValueError, match=r"sphere_embeddings.*more than half the 0.000977 GiB"):
        sxor.sphere_embeddings(256, 1024)  # 2 MiB of float64
    with pytest.raises(ValueError, match=r"attention scores.*available"):
        I.attention_scores(torch.zeros(1024, 2), torch.eye(2))  # 4 MiB of float32
    assert sxor.sphere_embeddings(8, 4).shape == (8, 4)  # small tensors pass
    # on the meta device nothing is allocated, so only MAX_BYTES applies there
    assert sxor.sphere_embeddings(256, 1024, device="meta").shape == (256, 1024)


@pytest.mark.parametrize(
    "results, width, message",
    [
        ({"experiment": "x", "params": [1, 2], "meta": {}}, 100, r"results\['params'\].*dict"),
        ({"experiment": "x", "params": None, "meta": {}}, 100, r"results\['params'\]"),
        ({"experiment": "x", "params": {}, "meta": [1]}, 100, r"results\['meta'\]"),
        ([1, 2], 100, r"results must be a dict"),
        ({"experiment": "x", "params": {}, "meta": {}}, 0, r"width"),
        ({"experiment": "x", "params": {}, "meta": {}}, True, r"width"),
    ],
)
def test_describe_refuses_malformed_results_clearly(results, width, message):
    from sxor.results import describe

    with hang_guard("describe"), pytest.raises((ValueError, TypeError), match=message):
        describe(results, width)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.int32])
def test_every_integer_support_dtype_gives_the_same_result(dtype):
    # a uint8 support once failed deep inside torch's gather; now every integer dtype indexes
    sup = SUP.to(dtype)
    assert torch.equal(sxor.sparse_xor_labels(X, sup), sxor.sparse_xor_labels(X, SUP))
    gen = [torch.Generator().manual_seed(5) for _ in range(2)]
    a = sxor.sample_sparse_xor(6, D, sup, generator=gen[0])
    b = sxor.sample_sparse_xor(6, D, SUP, generator=gen[1])
    assert all(torch.equal(u, v) for u, v in zip(a, b))
