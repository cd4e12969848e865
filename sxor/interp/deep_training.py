r"""Training a transformer of depth ``L`` on data no teacher produced (section 15c).

The block is the construction's (chapters 13 and 14, Figure 3 of the paper): FF then SA,

* :math:`\mathrm{FF}(x) = \eta x + W \operatorname{relu}(U x + b)`, ``U [w, d]``, ``b [w]``,
  ``W [d, w]``, scalar ``eta``;
* :math:`\mathrm{SA}(Z)_i = \rho z_i + V \sum_l \pi_{il} z_l`, :math:`\pi_i =
  \operatorname{softmax}_l \langle A z_i, z_l\rangle` with the book's :math:`A = \alpha I + q
  k^\top` (``alpha`` scalar, ``q, k [d]``), scalar ``rho`` and a full ``V [d, d]`` (the
  construction uses :math:`V = \beta I`; chapter 15's model a full ``V``).

The temperature is fixed at 1: a softmax layer at temperature :math:`\tau` is the same layer
with :math:`\alpha/\tau` and :math:`q/\tau`, so nothing is lost (:func:`from_construction` does
this conversion). Every block of a softmax network of :func:`sxor.interp.construct.construct` is
of this form (FF layers of smaller width are padded with zero units, which contribute
:math:`\operatorname{relu}(0) = 0`).

Parameters are a dict of tensors stacked over the ``L`` blocks (:data:`PARAMETER_NAMES`):
``eta, rho, alpha [L]``, ``W [L, d, w]``, ``U [L, w, d]``, ``b [L, w]``, ``q, k [L, d]``,
``V [L, d, d]``.

Loss: :math:`J(\theta) = \frac1N \sum_j d_H(T_\theta(X_j), Y_j)^2`, the mean squared Hausdorff
distance between the output token set and the target set (a sequence with fewer targets is
padded by repeating one of them, which leaves the set unchanged). The network *interpolates* when
:math:`\max_j d_H(T(X_j), Y_j) \le \mathrm{tol} \cdot s`, evaluated in float64, with
:math:`s = \max(\|X\|_\infty, \|Y\|_\infty)` the data's scale (:func:`interpolation_error`).

Training (:func:`train`): Adam (default learning rate ``1e-3``, cosine-annealed to 0 over the
run, full batch; the experiment of section 15c uses ``1e-2``, 400 steps and the chamfer
objective), optional penalty ``epsilon/2 |theta|^2`` (``epsilon = 0`` here, since the question
is interpolation), followed by an L-BFGS polish (strong Wolfe line search) that takes an Adam end
point close to an interpolant down to rounding level; the polish is this book's addition, since
Adam alone at these settings stops far above ``1e-6``. Chapter 15's model differs in its block
(SA then FF, with ``A = q k^T``); this module keeps the construction's order and form.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np
import torch

from ._training_polish import gauss_newton_polish
from .network import InterpolatingTransformer

#: The names of the parameters, each a tensor with a leading axis of length ``L``.
PARAMETER_NAMES = ("eta", "W", "U", "b", "rho", "alpha", "q", "k", "V")

__all__ = [
    "OBJECTIVES",
    "PARAMETER_NAMES",
    "data_scale",
    "dataset_tensors",
    "forward",
    "from_construction",
    "init_network",
    "interpolation_error",
    "layer_statistics",
    "loss",
    "num_blocks",
    "train",
]


def _int(name: str, value: object, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} of type {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _real(name: str, value: object, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    x = float(value)
    if not math.isfinite(x) or x < minimum:
        raise ValueError(f"{name} must be finite and >= {minimum}, got {x}")
    return x


def _check_tokens(name: str, X: object, dims: str) -> torch.Tensor:
    if not isinstance(X, torch.Tensor) or not X.is_floating_point():
        raise TypeError(f"{name} must be a float tensor {dims}, got {type(X).__name__}")
    if X.ndim != 3 or min(X.shape) < 1:
        raise ValueError(
            f"{name} must have shape {dims} with every size >= 1, got {tuple(X.shape)}"
        )
    if not bool(torch.isfinite(X).all()):
        raise ValueError(f"{name} contains nan or inf")
    return X


def num_blocks(theta: dict[str, torch.Tensor]) -> int:
    """The depth ``L`` of ``theta`` (the length of the leading axis of every parameter)."""
    _check_theta(theta, None)
    return int(theta["eta"].shape[0])


def _check_theta(theta: object, X: torch.Tensor | None) -> None:
    if not isinstance(theta, dict) or set(theta) != set(PARAMETER_NAMES):
        got = sorted(theta) if isinstance(theta, dict) else type(theta).__name__
        raise ValueError(f"theta must be a dict with the keys {list(PARAMETER_NAMES)}, got {got}")
    for name in PARAMETER_NAMES:
        p = theta[name]
        if not isinstance(p, torch.Tensor) or not p.is_floating_point():
            raise TypeError(f"theta[{name!r}] must be a float tensor, got {type(p).__name__}")
        if X is not None and p.dtype != X.dtype:
            raise TypeError(f"theta[{name!r}] has dtype {p.dtype} but X has {X.dtype}")
        if not bool(torch.isfinite(p.detach()).all()):
            raise ValueError(f"theta[{name!r}] contains nan or inf")
    L = theta["eta"].shape[0] if theta["eta"].ndim == 1 else -1
    d = theta["V"].shape[-1] if theta["V"].ndim == 3 else -1
    w = theta["b"].shape[-1] if theta["b"].ndim == 2 else -1
    if X is not None and X.shape[-1] != d:
        raise ValueError(f"X has tokens of dimension {X.shape[-1]}, theta of dimension {d}")
    shapes = {"eta": (L,), "rho": (L,), "alpha": (L,), "W": (L, d, w), "U": (L, w, d)}
    shapes.update({"b": (L, w), "q": (L, d), "k": (L, d), "V": (L, d, d)})
    for name, shape in shapes.items():
        if tuple(theta[name].shape) != shape or L < 1 or d < 1:
            raise ValueError(
                f"theta[{name!r}] must have shape {shape} for L = {L} blocks, d = {d}, width "
                f"w = {w}; got {tuple(theta[name].shape)}"
            )


def init_network(
    L: int,
    d: int,
    width: int = 4,
    *,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> dict[str, torch.Tensor]:
    r"""The random initialisation: residual blocks, PyTorch's default for every matrix and bias.

    ``eta = rho = 1`` (the residual form of the construction's identity layers) and ``alpha = 0``;
    every other entry i.i.d. :math:`U[-1/\sqrt{f}, 1/\sqrt{f}]` with :math:`f` the fan-in
    (``d`` for ``U, b, V, q, k``; ``width`` for ``W``), as ``nn.Linear`` draws them. Drawn from a
    private generator seeded with ``seed``; every parameter requires grad."""
    L, d, width = _int("L", L), _int("d", d), _int("width", width)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int, got {seed!r}")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    gen = torch.Generator(device=device or "cpu").manual_seed(int(seed))

    def uniform(shape: tuple[int, ...], fan_in: int) -> torch.Tensor:
        u = torch.rand(*shape, generator=gen, dtype=dtype, device=device)
        return (2 * u - 1) / math.sqrt(fan_in)

    theta = {
        "eta": torch.ones(L, dtype=dtype, device=device),
        "W": uniform((L, d, width), width),
        "U": uniform((L, width, d), d),
        "b": uniform((L, width), d),
        "rho": torch.ones(L, dtype=dtype, device=device),
        "alpha": torch.zeros(L, dtype=dtype, device=device),
        "q": uniform((L, d), d),
        "k": uniform((L, d), d),
        "V": uniform((L, d, d), d),
    }
    return {name: p.requires_grad_(True) for name, p in theta.items()}


def _forward(X: torch.Tensor, th: dict[str, torch.Tensor], trace: list | None = None):
    for i in range(th["eta"].shape[0]):
        Z = th["eta"][i] * X + torch.relu(X @ th["U"][i].T + th["b"][i]) @ th["W"][i].T
        S = th["alpha"][i] * Z @ Z.transpose(-1, -2)
        S = S + (Z @ th["k"][i]).unsqueeze(-1) * (Z @ th["q"][i]).unsqueeze(-2)
        P = torch.softmax(S, dim=-1)
        X = th["rho"][i] * Z + (P @ Z) @ th["V"][i].T
        if trace is not None:
            trace.append((X, P))
    return X


def forward(X: torch.Tensor, theta: dict[str, torch.Tensor], trace: list | None = None):
    """``T_theta(X)`` for ``X [N, n, d]``: the ``L`` blocks FF then SA in turn. With a list
    ``trace``, appends ``(tokens after block l, attention weights [N, n, n] of block l)`` for
    each block."""
    X = _check_tokens("X", X, "[N, n, d]")
    _check_theta(theta, X)
    return _forward(X, theta, trace)


def _hausdorff_sq(T: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    D = ((T.unsqueeze(-2) - Y.unsqueeze(-3)) ** 2).sum(-1)  # [N, n, m]
    return torch.maximum(D.amin(-1).amax(-1), D.amin(-2).amax(-1))


def _chamfer_sq(T: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    D = ((T.unsqueeze(-2) - Y.unsqueeze(-3)) ** 2).sum(-1)  # [N, n, m]
    return D.amin(-1).mean(-1) + D.amin(-2).mean(-1)


#: The per-sequence objectives :func:`train` offers; both vanish exactly at an interpolant.
OBJECTIVES = {"hausdorff": _hausdorff_sq, "chamfer": _chamfer_sq}


def _check_pair(X: object, Y: object, theta: object) -> tuple[torch.Tensor, torch.Tensor]:
    X = _check_tokens("X", X, "[N, n, d]")
    Y = _check_tokens("Y", Y, "[N, m, d]")
    if Y.dtype != X.dtype or Y.shape[0] != X.shape[0] or Y.shape[2] != X.shape[2]:
        raise ValueError(
            f"Y must be a {X.dtype} tensor [N, m, d] with N = {X.shape[0]}, d = {X.shape[2]}; "
            f"got {tuple(Y.shape)} {Y.dtype}"
        )
    _check_theta(theta, X)
    return X, Y


def loss(X: torch.Tensor, Y: torch.Tensor, theta: dict[str, torch.Tensor]) -> torch.Tensor:
    """``J(theta) = mean_j d_H(T(X_j), Y_j)^2`` for ``X [N, n, d]``, ``Y [N, m, d]`` (same dtype
    as ``theta``); differentiable in ``theta``. Bad input raises a one-line error."""
    X, Y = _check_pair(X, Y, theta)
    return _hausdorff_sq(_forward(X, theta), Y).mean()


def data_scale(X: torch.Tensor, Y: torch.Tensor) -> float:
    """``s = max(|X|_inf, |Y|_inf)``, the data's scale the tolerances are relative to."""
    return max(float(X.abs().max()), float(Y.abs().max()), 1e-300)


def interpolation_error(X: torch.Tensor, Y: torch.Tensor, theta: dict[str, torch.Tensor]) -> float:
    """``max_j d_H(T(X_j), Y_j) / s`` with ``s = max(|X|_inf, |Y|_inf)``, evaluated in float64."""
    X, Y = _check_pair(X, Y, theta)
    th = {k: v.detach().double() for k, v in theta.items()}
    X, Y = X.double(), Y.double()
    err = _hausdorff_sq(_forward(X, th), Y).amax().sqrt()
    return float(err) / data_scale(X, Y)


def dataset_tensors(inputs, targets, *, dtype=torch.float64, device=None):
    """``(X [N, n, d], Y [N, m, d])`` from the lists of :func:`sxor.interp.dataset.random_dataset`
    (exact entries converted to floats). Every input must have the same length ``n``; targets
    shorter than the longest are padded by repeating their first row (the same set)."""
    if not isinstance(inputs, (list, tuple)) or not isinstance(targets, (list, tuple)):
        raise TypeError("inputs and targets must be lists of arrays [n_j, d] and [m_j, d]")
    if len(inputs) != len(targets) or not inputs:
        raise ValueError(
            f"need as many targets as inputs (>= 1), got {len(inputs)}, {len(targets)}"
        )
    xs = [np.asarray(x, dtype=float) for x in inputs]
    ys = [np.asarray(y, dtype=float) for y in targets]
    if len({x.shape for x in xs}) != 1 or xs[0].ndim != 2:
        raise ValueError("every input must be an array [n, d] of the same shape")
    m = max(y.shape[0] for y in ys)
    if any(y.ndim != 2 or y.shape[1] != xs[0].shape[1] or y.shape[0] < 1 for y in ys):
        raise ValueError(f"every target must be an array [m_j, d] with d = {xs[0].shape[1]}")
    ys = [np.concatenate([y, np.repeat(y[:1], m - y.shape[0], axis=0)]) for y in ys]
    kw = {"dtype": dtype, "device": device}
    return torch.tensor(np.stack(xs), **kw), torch.tensor(np.stack(ys), **kw)


def from_construction(T: InterpolatingTransformer, width: int | None = None) -> dict:
    """The parameters (float64, no grad) of a softmax network of
    :func:`sxor.interp.construct.construct` in this module's form: ``alpha/tau``, ``q/tau`` (so
    the temperature is 1), ``V = beta I``, FF layers padded with zero units to ``width`` (default
    the network's largest width). ``ValueError`` for a hardmax network (no finite temperature)."""
    if not isinstance(T, InterpolatingTransformer):
        raise TypeError(f"T must be an InterpolatingTransformer, got {type(T).__name__}")
    if T.attention != "softmax":
        raise ValueError("only a softmax network has a temperature; construct with 'softmax'")
    w = max(T.max_width, 1) if width is None else _int("width", width)
    if w < T.max_width:
        raise ValueError(f"width must be >= the network's largest FF width {T.max_width}")
    tau, d = Fraction(T.tau), T.d
    out: dict[str, list] = {name: [] for name in PARAMETER_NAMES}
    for blk in T.blocks:
        ff, sa = blk.ff, blk.sa
        W, U, b = np.zeros((d, w)), np.zeros((w, d)), np.zeros(w)
        k = ff.width
        W[:, :k] = np.asarray(ff.W, dtype=float).reshape(d, k)
        U[:k] = np.asarray(ff.U, dtype=float).reshape(k, d)
        b[:k] = np.asarray(ff.b, dtype=float).reshape(k)
        vals = {"eta": float(ff.eta), "W": W, "U": U, "b": b, "rho": float(sa.rho)}
        vals["alpha"] = float(Fraction(sa.alpha) / tau)
        vals["q"] = np.array([float(Fraction(v) / tau) for v in sa.q])
        vals["k"] = np.asarray(sa.k, dtype=float)
        vals["V"] = float(sa.beta) * np.eye(d)
        for name in PARAMETER_NAMES:
            out[name].append(vals[name])
    return {name: torch.tensor(np.array(v), dtype=torch.float64) for name, v in out.items()}


def layer_statistics(X: torch.Tensor, theta: dict[str, torch.Tensor], tol: float) -> dict:
    """What each block does, for ``X [N, n, d]``: ``distinct [L][N]``, the number of distinct
    token values per sequence after block ``l`` (token ``i`` is new when no earlier token of its
    sequence lies within ``tol``, Euclidean), and ``entropy [L][N]``, the attention entropy of
    block ``l`` in nats averaged over the queries of a sequence (``log n`` is uniform attention,
    ``0`` a hard choice). ``tol >= 0`` finite; evaluated in float64 without gradients."""
    X = _check_tokens("X", X, "[N, n, d]")
    _check_theta(theta, X)
    tol = _real("tol", tol)
    trace: list = []
    with torch.no_grad():
        _forward(X.double(), {k: v.detach().double() for k, v in theta.items()}, trace)
    n = X.shape[1]
    earlier = torch.ones(n, n, dtype=torch.bool, device=X.device).tril(-1)
    distinct, entropy = [], []
    for Z, P in trace:
        close = (torch.cdist(Z, Z) <= tol) & earlier
        distinct.append((~close.any(-1)).sum(-1).tolist())
        ent = -(P * torch.log(P.clamp_min(1e-300))).sum(-1).mean(-1)
        entropy.append(ent.tolist())
    return {"distinct": distinct, "entropy": entropy}


def train(
    X: torch.Tensor,
    Y: torch.Tensor,
    theta: dict[str, torch.Tensor],
    steps: int = 2000,
    *,
    lr: float = 1e-3,
    epsilon: float = 0.0,
    polish: int = 200,
    tol: float = 1e-6,
    objective: str = "hausdorff",
    newton: int = 0,
) -> dict:
    """Train ``theta`` in place: ``steps`` Adam steps (learning rate ``lr`` cosine-annealed to 0,
    full batch), then at most ``polish`` L-BFGS iterations (strong Wolfe; ``0`` skips it), both
    on the same objective plus the penalty ``epsilon/2 |theta|^2`` (counted once, in both
    phases). Returns ``loss_adam`` (``J`` after Adam), ``loss`` (final ``J``), ``error``
    (:func:`interpolation_error`), ``interpolates`` (``error <= tol``) and ``diverged`` (a
    nan/inf loss: the run is kept and counted as failed, with ``theta`` restored to the last
    point whose loss was finite: the Adam iterate before the step that diverged, or the Adam end
    point when the polish diverges). ``objective`` is ``"hausdorff"`` (``J``, the
    default) or ``"chamfer"``: per sequence the mean over output tokens of the squared distance
    to the nearest target plus the mean over targets of the squared distance to the nearest
    output token, which vanishes exactly where ``d_H`` does but is smooth in a single target
    (``J`` is a maximum over tokens, on which L-BFGS converges slowly). ``newton > 0`` adds at
    most that many Gauss-Newton (Levenberg-Marquardt) steps on the Chamfer residuals after the
    L-BFGS polish (``sxor.interp._training_polish``; only with ``epsilon = 0``, since it solves
    for a zero of the residuals), and ``newton_steps``, the steps it kept, to the result."""
    X, Y = _check_pair(X, Y, theta)
    steps, polish = _int("steps", steps, 0), _int("polish", polish, 0)
    newton = _int("newton", newton, 0)
    lr, epsilon, tol = _real("lr", lr), _real("epsilon", epsilon), _real("tol", tol)
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {sorted(OBJECTIVES)}, got {objective!r}")
    if newton and epsilon:
        raise ValueError("newton > 0 polishes the unpenalised objective: it needs epsilon = 0")
    per_sequence = OBJECTIVES[objective]
    params = [theta[name] for name in PARAMETER_NAMES]
    if not all(p.requires_grad for p in params):
        raise ValueError("every parameter of theta must require grad (init_network does this)")

    def total() -> torch.Tensor:
        J = per_sequence(_forward(X, theta), Y).mean()
        return J + epsilon / 2 * sum((p**2).sum() for p in params) if epsilon else J

    diverged, saved = False, [p.detach().clone() for p in params]
    if steps:  # the penalty is the explicit term of total(), so Adam adds no weight decay
        opt = torch.optim.Adam(params, lr=lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
        for _ in range(steps):
            opt.zero_grad()
            J = total()
            if not bool(torch.isfinite(J)):
                diverged = True
                break
            saved = [p.detach().clone() for p in params]  # the last point with a finite loss
            J.backward()
            opt.step()
            sched.step()
    loss_adam = float(_hausdorff_sq(_forward(X, theta), Y).mean().detach())
    if polish and not diverged and math.isfinite(loss_adam):
        saved = [p.detach().clone() for p in params]
        lbfgs = torch.optim.LBFGS(
            params, max_iter=polish, tolerance_grad=1e-300, tolerance_change=1e-300,
            history_size=50, line_search_fn="strong_wolfe",
        )  # fmt: skip

        def closure() -> torch.Tensor:
            lbfgs.zero_grad()
            J = total()
            J.backward()
            return J

        lbfgs.step(closure)
    newton_steps = 0
    if newton and not diverged:
        after = float(_hausdorff_sq(_forward(X, theta), Y).mean().detach())
        if math.isfinite(after):
            newton_steps = gauss_newton_polish(_forward, X, Y, theta, newton)["steps"]
    final = float(_hausdorff_sq(_forward(X, theta), Y).mean().detach())
    if diverged or not math.isfinite(final):
        diverged = True
        with torch.no_grad():
            for p, s in zip(params, saved):
                p.copy_(s)
        final = float(_hausdorff_sq(_forward(X, theta), Y).mean().detach())
    error = interpolation_error(X, Y, theta) if math.isfinite(final) else math.inf
    return {
        "loss_adam": loss_adam,
        "loss": final,
        "error": error,
        "interpolates": bool(error <= tol),
        "diverged": diverged,
        **({"newton_steps": newton_steps} if newton else {}),
    }
